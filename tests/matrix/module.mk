# tests/matrix/: the escape matrix's hostile spoke (scripts/escape-matrix runs it
# through the hub in every isolation mode; test_escape_matrix.sh asserts on the
# result). It links the SDK, the case studies' attack code and the escape probes it
# shares with tests/nsjail/hostile.
ESCAPE_SPOKE := $(BUILD)/tests/matrix/escape_spoke
TEST_BINARIES += $(ESCAPE_SPOKE)

$(ESCAPE_SPOKE): $(call objs,tests/matrix/escape_spoke.c tests/matrix/escape_attempts.c \
		tests/nsjail/probes.c) $(SPOKE_ATTACK) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

# The node column's native addon (escape_addon.c), loaded by escape_spoke.mjs inside
# node: N-API headers from the nodejs package (NodeSource) or libnode-dev (Debian; make
# deps), and no sanitizer flags, since it runs in node, not in a sanitized program.
NODE_API_DIR := $(firstword $(dir $(wildcard /usr/include/node/node_api.h /usr/local/include/node/node_api.h)))
ESCAPE_ADDON := $(BUILD)/tests/matrix/escape_addon.node
ifneq ($(NODE_API_DIR),)
TEST_BINARIES += $(ESCAPE_ADDON)
endif

$(ESCAPE_ADDON): tests/matrix/escape_addon.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARNINGS) -fPIC -shared -I$(NODE_API_DIR) \
		-Wl,-z,relro,-z,now -o $@ $<
