# tests/cases/: the case studies (issue 6). test_cases_judge checks the verdict logic
# and the attacker's collection server against known inputs; test_cases_run.sh runs
# `hub casestudies` in every mode and asserts its JSON step by step.
CASES_UNIT_SRCS := $(wildcard tests/cases/test_*.c)
CASES_UNIT_TESTS := $(patsubst tests/cases/%.c,$(BUILD)/tests/cases/%,$(CASES_UNIT_SRCS))
TEST_BINARIES += $(CASES_UNIT_TESTS)

$(BUILD)/tests/cases/test_%: $(BUILD)/obj/tests/cases/test_%.o $(LIBHUBCASES) $(LIBHUBCMDLINE) $(HUB_LIB) $(LIBHUBAGENT) $(HUB_JAIL_LIB) $(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)
