# tests/serve/: the lean MCP client that make bench and make load measure hub serve
# with (serve_client; not a test itself). The test scripts drive hub serve with the
# official TypeScript SDK client and conformance suite (npm, this directory's lockfile).
SERVE_CLIENT := $(BUILD)/tests/serve/serve_client
TEST_BINARIES += $(SERVE_CLIENT)

$(SERVE_CLIENT): $(call objs,tests/serve/serve_client.c) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson libevent)
