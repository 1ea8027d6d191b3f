# tests/jsonschema/: the JSON Schema validator's own tests (lib/jsonschema), linked with
# that library and lib/ only.
JSONSCHEMA_TEST_SRCS := $(wildcard tests/jsonschema/test_*.c)
JSONSCHEMA_TESTS := $(patsubst tests/jsonschema/%.c,$(BUILD)/tests/jsonschema/%,$(JSONSCHEMA_TEST_SRCS))
TEST_BINARIES += $(JSONSCHEMA_TESTS)

$(BUILD)/tests/jsonschema/test_%: $(BUILD)/obj/tests/jsonschema/test_%.o $(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(PKGS))
