# tests/llm: the LLM client against a stand-in OpenAI-compatible server, replay, and
# the wire format. openai_standin is a helper (not named test_*, so tests/run does not
# run it on its own).
LLM_TEST_HARNESS := $(call objs,tests/llm/harness.c)
LLM_TESTS := $(BUILD)/tests/llm/test_llm_client $(BUILD)/tests/llm/test_llm_replay \
	$(BUILD)/tests/llm/test_llm_wire
TEST_BINARIES += $(BUILD)/tests/llm/openai_standin $(LLM_TESTS)

$(BUILD)/tests/llm/openai_standin: $(call objs,tests/llm/openai_standin.c)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

$(LLM_TESTS): $(BUILD)/tests/llm/%: $(BUILD)/obj/tests/llm/%.o $(LLM_TEST_HARNESS) \
		$(LIBHUBAGENT) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(AGENT_PKGS))

# Test sources include tests/unit/test.h and the hub headers (as "llm/llm.h": -Ihub).
$(BUILD)/obj/tests/llm/%.o: ALL_CFLAGS += -Itests/unit
