# tests/pyexec/: the repl-server's frame codec as a C unit test (linked with its library,
# hub/repl/), and the end-to-end scripts (sessions, hostile code, malformed frames).
PYEXEC_UNIT_SRCS := $(wildcard tests/pyexec/test_*.c)
PYEXEC_UNIT_TESTS := $(patsubst tests/pyexec/%.c,$(BUILD)/tests/pyexec/%,$(PYEXEC_UNIT_SRCS))
TEST_BINARIES += $(PYEXEC_UNIT_TESTS)

$(BUILD)/tests/pyexec/test_%: $(BUILD)/obj/tests/pyexec/test_%.o $(LIBHUBREPL) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)
