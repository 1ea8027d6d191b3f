# hub/casestudies.mk: `hub casestudies` (issue 6), hub/casestudies*.c, as a library of
# its own. It drives the agent and the runtime, so the hub links it before their
# libraries (hub/module.mk), and the runtime's library stays free of it.
CASES_SRCS := $(sort $(wildcard hub/casestudies*.c))
LIBHUBCASES := $(BUILD)/lib/libhubcases.a

$(LIBHUBCASES): $(call objs,$(CASES_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
