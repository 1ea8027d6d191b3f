# tests/faults/: a hostile spoke that leaves its process group (escapespoke), for the
# kill -9 of the hub (test_fault_hub.sh), and a spoke whose calls wait for the test
# (waitspoke: the apps waiter and holder), for the hub's full audit disk
# (test_fault_hub_diskfull.sh).
FAULT_ESCAPE_SPOKE := $(BUILD)/tests/faults/escapespoke
FAULT_WAIT_SPOKE := $(BUILD)/tests/faults/waitspoke
TEST_BINARIES += $(FAULT_ESCAPE_SPOKE) $(FAULT_WAIT_SPOKE)

$(FAULT_ESCAPE_SPOKE): $(call objs,tests/faults/escapespoke.c) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

$(FAULT_WAIT_SPOKE): $(call objs,tests/faults/waitspoke.c) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)
