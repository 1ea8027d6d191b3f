# tests/mcpservers/: the reference MCP servers (npm, make deps) the test adds as spokes,
# and the anchor of scripts/bench/mcpservers: the same server straight over a pipe.
TEST_BINARIES += $(BUILD)/bench/mcp-pipe

$(BUILD)/bench/mcp-pipe: $(BUILD)/obj/scripts/bench/mcp-pipe.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^
