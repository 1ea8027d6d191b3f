# tests/agent/: the assistant (planner, permissions, memory, terminal) end to end
# against tests/llm/openai_standin and a private redis-server, plus C unit tests of
# its parts. agentspoke is the apps the tests run (not named test_*).
AGENT_TEST_SPOKE := $(BUILD)/tests/agent/agentspoke
AGENT_UNIT_SRCS := $(wildcard tests/agent/test_*.c)
AGENT_UNIT_TESTS := $(patsubst tests/agent/%.c,$(BUILD)/tests/agent/%,$(AGENT_UNIT_SRCS))
TEST_BINARIES += $(AGENT_TEST_SPOKE) $(AGENT_UNIT_TESTS)

$(AGENT_TEST_SPOKE): $(call objs,tests/agent/agentspoke.c) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

$(BUILD)/tests/agent/test_%: $(BUILD)/obj/tests/agent/test_%.o $(LIBHUBASSIST) $(LIBHUBCMDLINE) $(HUB_LIB) \
		$(LIBHUBAGENT) $(HUB_JAIL_LIB) $(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)

$(BUILD)/obj/tests/agent/%.o: ALL_CFLAGS += -Itests/unit
