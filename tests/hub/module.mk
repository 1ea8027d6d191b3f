# tests/hub/: the spoke the hub's end-to-end tests run (testspoke, probes and attacks),
# a stand-in netproxy for the supervisor test, the hub that test_hub_slowstart.sh
# drives (slowstart), and C unit tests of the hub's parts.
HUB_TEST_SPOKE := $(BUILD)/tests/hub/testspoke
HUB_FAKE_PROXY := $(BUILD)/tests/hub/fake_netproxy
HUB_UNIT_SRCS := $(wildcard tests/hub/test_*.c)
HUB_UNIT_TESTS := $(patsubst tests/hub/%.c,$(BUILD)/tests/hub/%,$(HUB_UNIT_SRCS))
HUB_SLOWSTART := $(BUILD)/tests/hub/slowstart
HUB_RAW_SPOKE := $(BUILD)/tests/hub/rawspoke
HUB_CONC_SPOKE := $(BUILD)/tests/hub/concspoke
TEST_BINARIES += $(HUB_TEST_SPOKE) $(HUB_FAKE_PROXY) $(HUB_SLOWSTART) $(HUB_UNIT_TESTS) \
	$(HUB_RAW_SPOKE) $(HUB_CONC_SPOKE)

# The hostile spoke of test_hub_termtext.sh: raw JSON-RPC, no SDK (it breaks the rules).
$(HUB_RAW_SPOKE): $(call objs,tests/hub/rawspoke.c) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

# The spoke of test_hub_inflight: many calls at once, answered in any order, and the
# attacks on that (raw JSON-RPC on a poll loop).
$(HUB_CONC_SPOKE): $(call objs,tests/hub/concspoke.c) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

$(HUB_TEST_SPOKE): $(call objs,tests/hub/testspoke.c) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

$(HUB_FAKE_PROXY): $(call objs,tests/hub/fake_netproxy.c) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)

# hub_fixture.c: the configuration the C tests start their hub from.
HUB_FIXTURE := $(call objs,tests/hub/hub_fixture.c)

$(BUILD)/tests/hub/test_%: $(BUILD)/obj/tests/hub/test_%.o $(HUB_FIXTURE) $(HUB_LIB) $(HUB_JAIL_LIB) \
		$(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)

$(HUB_SLOWSTART): $(call objs,tests/hub/slowstart.c) $(HUB_LIB) $(HUB_JAIL_LIB) $(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)
