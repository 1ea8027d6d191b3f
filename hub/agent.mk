# hub/agent.mk: the hub agent's foundations (LLM client, replay, memory, grants) as a
# static library that the hub binary and the tests link. hub/module.mk (the hub
# runtime) is separate; this file only defines AGENT_* names and $(LIBHUBAGENT).
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
