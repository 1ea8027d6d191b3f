# tests/load: load generators for scripts/load/ (make load), built with the tests.
# hub_load drives many spokes through the hub's API; the netproxy load generator is
# tests/netproxy/np_load.
HUB_LOAD := $(BUILD)/tests/load/hub_load
TEST_BINARIES += $(HUB_LOAD)

$(HUB_LOAD): $(call objs,tests/load/hub_load.c) $(HUB_FIXTURE) $(HUB_LIB) $(HUB_JAIL_LIB) $(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)
