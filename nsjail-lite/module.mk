# nsjail-lite: the launcher (build/nsjail-lite) and the library the hub links
# ($(BUILD)/lib/libnsjail-lite.a with $(call pkg_libs,$(NSJAIL_PKGS)) -lpthread; the
# path is fixed so that rules read before this file can name it).
NSJAIL_PKGS := libseccomp libnl-3.0 libnl-route-3.0 jansson
comma := ,
NSJAIL_LIB_SRCS := $(filter-out nsjail-lite/main.c nsjail-lite/seccomp_gen.c \
	nsjail-lite/cgroup_scope_twin.c nsjail-lite/static_no_nss.c,$(wildcard nsjail-lite/*.c))
NSJAIL_LIB := $(BUILD)/lib/libnsjail-lite.a

# The seccomp presets are compiled at build time by the library's own code.
NSJAIL_GEN := $(BUILD)/tools/nsjail-lite-seccomp-gen
NSJAIL_BUILTIN_C := $(BUILD)/gen/seccomp_builtin.c
NSJAIL_BUILTIN_O := $(BUILD)/obj/gen/seccomp_builtin.o

$(NSJAIL_GEN): $(call objs,nsjail-lite/seccomp_gen.c nsjail-lite/seccomp.c \
		nsjail-lite/channel.c) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,libseccomp) -lpthread

$(NSJAIL_BUILTIN_C): $(NSJAIL_GEN)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$< >$@.tmp && mv $@.tmp $@

$(NSJAIL_BUILTIN_O): $(NSJAIL_BUILTIN_C)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(NSJAIL_LIB): $(call objs,$(NSJAIL_LIB_SRCS)) $(NSJAIL_BUILTIN_O)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The launcher is linked -static-pie (libc too) where the build allows it: every jail
# start is an exec of it, and the dynamic loader's work (libnl-route-3.so's
# constructors for every route object type, libc's relocations, the larger address
# space that init's clone copies) was about 0.8 ms of a 4 ms /bin/true here
# (scripts/bench/serve, cold). Only the objects it calls are linked in. It cannot
# dlopen libsystemd for a scope, so it execs its dynamic twin, nsjail-lite-dynamic,
# when it needs one (cgroup_scope_twin.c, linked ahead of the archive in its place),
# and resolves no names (static_no_nss.c).
# Sanitizer builds, or a library without its archive (.a), give the dynamic launcher
# alone, with the four libraries static if their archives are there. The hub links
# the shared libraries.
NSJAIL_LIBDIR := $(shell pkg-config --variable=libdir libseccomp 2>/dev/null)
NSJAIL_STATIC_L := $(filter-out -lpthread,$(shell pkg-config --static --libs-only-l \
	$(NSJAIL_PKGS) 2>/dev/null))
NSJAIL_HAVE_A := $(foreach l,$(NSJAIL_STATIC_L) -lc,$(wildcard $(NSJAIL_LIBDIR)/lib$(l:-l%=%).a))
NSJAIL_ALL_A := $(and $(NSJAIL_STATIC_L),$(filter $(words $(NSJAIL_STATIC_L) -lc),\
	$(words $(NSJAIL_HAVE_A))))
NSJAIL_DYN_LIBS := $(if $(NSJAIL_ALL_A),-Wl$(comma)-Bstatic $(NSJAIL_STATIC_L) \
	-Wl$(comma)-Bdynamic,$(call pkg_libs,$(NSJAIL_PKGS)))
NSJAIL_MAIN_O := $(call objs,nsjail-lite/main.c)

ifneq ($(and $(NSJAIL_ALL_A),$(if $(SAN_FLAGS),,yes)),)
$(BUILD)/nsjail-lite: $(NSJAIL_MAIN_O) $(call objs,nsjail-lite/cgroup_scope_twin.c \
		nsjail-lite/static_no_nss.c) $(NSJAIL_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@ (static)")
	$(Q)$(CC) -static-pie $(ALL_LDFLAGS) -o $@ $^ $(NSJAIL_STATIC_L) -lpthread

$(BUILD)/nsjail-lite-dynamic: $(NSJAIL_MAIN_O) $(NSJAIL_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NSJAIL_DYN_LIBS) -lpthread

BINARIES += $(BUILD)/nsjail-lite-dynamic
else
$(BUILD)/nsjail-lite: $(NSJAIL_MAIN_O) $(NSJAIL_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NSJAIL_DYN_LIBS) -lpthread
endif

BINARIES += $(BUILD)/nsjail-lite
