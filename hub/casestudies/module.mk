# hub/casestudies/: `hub casestudies` (issue 6) as a library of its own. It drives the
# assistant, the agent's foundations and the runtime, so the hub links it before their
# libraries (hub/cli/module.mk), and the runtime's library stays free of it.
# Interface: casestudies.h.
CASES_SRCS := $(sort $(wildcard hub/casestudies/*.c))
LIBHUBCASES := $(BUILD)/lib/libhubcases.a

$(LIBHUBCASES): $(call objs,$(CASES_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
