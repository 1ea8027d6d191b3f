# tests/nsjail: the hostile spoke (not a test by itself: the scripts run it inside and
# outside the jail) and the C test of the library API.
#
# The hostile program is built without sanitizers even for SAN=1: it runs inside the
# jail, under an RLIMIT_AS far smaller than ASan's shadow memory.
HOSTILE_CFLAGS := $(filter-out $(SAN_FLAGS),$(ALL_CFLAGS))
HOSTILE_LDFLAGS := $(filter-out $(SAN_FLAGS),$(ALL_LDFLAGS))

# (probes.c is shared with tests/matrix/escape_spoke, which is built the normal way and
# links the ordinary probes.o; hostile links this unsanitized copy.)
$(BUILD)/obj/tests/nsjail/%.nosan.o: tests/nsjail/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(HOSTILE_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/nsjail/hostile: $(BUILD)/obj/tests/nsjail/hostile.nosan.o \
		$(BUILD)/obj/tests/nsjail/probes.nosan.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(HOSTILE_LDFLAGS) -o $@ $^

# The resource attacks of tests/nsjail/test_cgroup.sh: unsanitized for the same reason.
$(BUILD)/tests/nsjail/memhog: $(BUILD)/obj/tests/nsjail/memhog.nosan.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(HOSTILE_LDFLAGS) -o $@ $^

$(BUILD)/tests/nsjail/test_jail_api $(BUILD)/tests/nsjail/test_cgroup_base \
		$(BUILD)/tests/nsjail/test_elfdeps $(BUILD)/tests/nsjail/test_cgroup_many: \
		$(BUILD)/tests/nsjail/%: $(BUILD)/obj/tests/nsjail/%.o \
		$(BUILD)/lib/libnsjail-lite.a $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(NSJAIL_PKGS)) -lpthread

# test_bindsrc.sh's stand-in for a host that refuses openat2 (a seccomp filter).
$(BUILD)/tests/nsjail/no_openat2: $(BUILD)/obj/tests/nsjail/no_openat2.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,libseccomp)

# The scripts run build/nsjail-lite: `make tests` must bring it up to date too.
TEST_BINARIES += $(BUILD)/tests/nsjail/hostile $(BUILD)/tests/nsjail/memhog \
	$(BUILD)/tests/nsjail/test_jail_api $(BUILD)/tests/nsjail/test_cgroup_base \
	$(BUILD)/tests/nsjail/test_elfdeps $(BUILD)/tests/nsjail/test_cgroup_many $(BUILD)/tests/nsjail/no_openat2 \
	$(BUILD)/nsjail-lite
