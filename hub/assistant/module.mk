# hub/assistant/: the assistant on top of the runtime (agent: planner, baseline,
# sampling, memory wiring; permissions; the terminal and its line editor; the `hub`
# sub-command without a name, agent_cli.c). Its own library, so that the runtime's
# library stays free of the agent and the tests can link exactly what they test.
# Interface: assistant.h.
ASSIST_SRCS := $(sort $(wildcard hub/assistant/*.c))
LIBHUBASSIST := $(BUILD)/lib/libhubassist.a

$(LIBHUBASSIST): $(call objs,$(ASSIST_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
