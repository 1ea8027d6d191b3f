# tests/: C unit tests (tests/unit/test_*.c, one binary each, linked with lib/) and the
# per-component test programs that each tests/<component>/module.mk declares.
UNIT_TEST_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_TEST_SRCS))
TEST_BINARIES += $(UNIT_TESTS)

$(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(PKGS))

-include $(wildcard tests/*/module.mk)
