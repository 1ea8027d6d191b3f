# tests/netproxy: unit tests of netproxy's parser, canonicalisation, policy and guard,
# an attacker-side test of its seccomp filter, and the C helpers the shell tests and
# the benchmark drive (np_load: load generator and echo/sink server).
NP_TEST_SRCS := $(wildcard tests/netproxy/test_*.c)
NP_TESTS := $(patsubst tests/netproxy/%.c,$(BUILD)/tests/netproxy/%,$(NP_TEST_SRCS))
NP_HELPERS := $(BUILD)/tests/netproxy/np_load
TEST_BINARIES += $(NP_TESTS) $(NP_HELPERS)

$(BUILD)/tests/netproxy/test_%: $(BUILD)/obj/tests/netproxy/test_%.o $(NETPROXY_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NETPROXY_LIBS)

$(BUILD)/tests/netproxy/np_load: $(BUILD)/obj/tests/netproxy/np_load.o $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(PKGS))

# The benchmark's floor: a relay that only moves bytes (scripts/bench/floor-relay.c).
TEST_BINARIES += $(BUILD)/bench/floor-relay

$(BUILD)/bench/floor-relay: $(BUILD)/obj/scripts/bench/floor-relay.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^
