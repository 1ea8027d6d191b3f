# hub/agent.mk: the hub agent as two static libraries that the hub binary and the
# tests link: its foundations (LLM client, replay, memory, grants: $(LIBHUBAGENT)) and
# the assistant on top of the runtime ($(LIBHUBASSIST), below). hub/module.mk (the hub
# runtime) is separate and leaves both sets of files out of the runtime's library.
AGENT_SRCS := $(sort $(wildcard hub/llm*.c hub/replay*.c hub/memory*.c hub/grants*.c))
AGENT_OBJS := $(call objs,$(AGENT_SRCS))
AGENT_PKGS := libcurl hiredis jansson
LIBHUBAGENT := $(BUILD)/lib/libhubagent.a

$(LIBHUBAGENT): $(AGENT_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

# Built by `make` too, so that a compile error shows before the hub links it.
BINARIES += $(LIBHUBAGENT)

# The assistant on top of the runtime: agent (planner, baseline, sampling, memory
# wiring), permissions, and the terminal. Its own library, so that the runtime's
# library stays free of the agent and the tests can link exactly what they test.
ASSIST_SRCS := $(sort $(wildcard hub/agent*.c hub/planner*.c hub/perms*.c hub/term*.c \
	hub/lineedit*.c))
ASSIST_OBJS := $(call objs,$(ASSIST_SRCS))
LIBHUBASSIST := $(BUILD)/lib/libhubassist.a

$(LIBHUBASSIST): $(ASSIST_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^
