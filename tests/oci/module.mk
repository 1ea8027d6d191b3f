# tests/oci: the MCP server put into the test images, linked statically (an image has
# none of the host's libraries) and without sanitizers (it runs in the jail's limits).
$(BUILD)/tests/oci/imgspoke: tests/oci/imgspoke.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static -o $@ $<

TEST_BINARIES += $(BUILD)/tests/oci/imgspoke
