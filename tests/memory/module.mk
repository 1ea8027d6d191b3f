# tests/memory: hub/memory/memory.h against a real private redis-server (test_memory.sh runs
# memory_check and owns the server) and scripts/redis-private itself.
TEST_BINARIES += $(BUILD)/tests/memory/memory_check

$(BUILD)/tests/memory/memory_check: $(BUILD)/obj/tests/memory/memory_check.o $(LIBHUBAGENT) \
		$(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(AGENT_PKGS))

$(BUILD)/obj/tests/memory/%.o: ALL_CFLAGS += -Itests/unit
