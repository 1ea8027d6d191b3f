# hub/llm/: the LLM client (OpenAI-compatible, HTTP and SSE), its audit records, and
# recording and replay, as a library of its own. With hub/memory/'s library it is
# $(LIBHUBAGENT), the agent's foundations (hub/memory/module.mk). Interface: llm.h.
LLM_SRCS := $(sort $(wildcard hub/llm/*.c))
AGENT_PKGS := libcurl hiredis jansson
LIBHUBLLM := $(BUILD)/lib/libhubllm.a

$(LIBHUBLLM): $(call objs,$(LLM_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
