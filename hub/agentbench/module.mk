# hub/agentbench/: `hub agentbench` (issue 35) as a library of its own. Like the case
# studies it drives the assistant, the agent's foundations and the runtime, so the hub
# links it before their libraries (hub/cli/module.mk). Interface: agentbench.h.
AGENTBENCH_SRCS := $(sort $(wildcard hub/agentbench/*.c))
LIBHUBBENCH := $(BUILD)/lib/libhubbench.a

$(LIBHUBBENCH): $(call objs,$(AGENTBENCH_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
