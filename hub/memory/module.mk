# hub/memory/: the agent's memory (local and redis back ends) and the grants that
# scope it, as a library of its own. Interface: memory.h.
MEMORY_SRCS := $(sort $(wildcard hub/memory/*.c))
LIBHUBMEMORY := $(BUILD)/lib/libhubmemory.a

$(LIBHUBMEMORY): $(call objs,$(MEMORY_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The agent's foundations, LLM client and memory, that the hub binary and the tests
# link after the runtime's library. Built by `make` too, so that a compile error shows
# before the hub links them.
LIBHUBAGENT := $(LIBHUBLLM) $(LIBHUBMEMORY)
BINARIES += $(LIBHUBAGENT)

# TLS to Redis is OpenSSL's (hiredis 0.14 has none): whatever links the memory links it.
AGENT_PKGS += openssl
