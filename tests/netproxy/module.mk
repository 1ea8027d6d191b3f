# tests/netproxy: unit tests of netproxy's parser, canonicalisation, policy and guard,
# an attacker-side test of its seccomp filter, and the C helpers the shell tests and
# the benchmark drive (np_load: load generator and echo/sink server).
NP_TEST_SRCS := $(wildcard tests/netproxy/test_*.c)
NP_TESTS := $(patsubst tests/netproxy/%.c,$(BUILD)/tests/netproxy/%,$(NP_TEST_SRCS))
NP_HELPERS := $(BUILD)/tests/netproxy/np_load $(BUILD)/tests/netproxy/np_egress_rules
TEST_BINARIES += $(NP_TESTS) $(NP_HELPERS)

$(BUILD)/tests/netproxy/test_%: $(BUILD)/obj/tests/netproxy/test_%.o $(NETPROXY_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NETPROXY_LIBS)

$(BUILD)/tests/netproxy/np_load: $(BUILD)/obj/tests/netproxy/np_load.o $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(PKGS))

# A real ClientHello for the sniffer's tests comes from OpenSSL.
$(BUILD)/tests/netproxy/test_np_egress_units: NETPROXY_LIBS += $(call pkg_libs,openssl)

# The hub's gateway rules for transparent egress, installed by the tests' own gateway.
$(BUILD)/tests/netproxy/np_egress_rules: $(BUILD)/obj/tests/netproxy/np_egress_rules.o \
		$(BUILD)/obj/hub/net/net_egress.o $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(PKGS) libnftables)

# The benchmark's floor: a relay that only moves bytes (scripts/bench/floor-relay.c).
TEST_BINARIES += $(BUILD)/bench/floor-relay

$(BUILD)/bench/floor-relay: $(BUILD)/obj/scripts/bench/floor-relay.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^
