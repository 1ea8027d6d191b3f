# nsjail-lite: the launcher (build/nsjail-lite) and the library the hub links
# ($(BUILD)/lib/libnsjail-lite.a with $(call pkg_libs,$(NSJAIL_PKGS)) -lpthread; the
# path is fixed so that rules read before this file can name it).
NSJAIL_PKGS := libseccomp libnl-3.0 libnl-route-3.0 jansson
NSJAIL_LIB_SRCS := $(filter-out nsjail-lite/main.c nsjail-lite/seccomp_gen.c,\
	$(wildcard nsjail-lite/*.c))
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

# The launcher links these four from their Debian archives (.a), libc staying shared:
# every jail start is an exec of it, and loading libnl-route-3.so alone ran its
# constructors for every route object type, about 0.4 ms of a 4 ms start here
# (scripts/bench/serve, cold). Only the objects it calls are linked in. A library
# without its archive is linked shared, as before. (The hub links the shared ones.)
NSJAIL_LIBDIR := $(shell pkg-config --variable=libdir libseccomp 2>/dev/null)
NSJAIL_STATIC_L := $(filter-out -lpthread,$(shell pkg-config --static --libs-only-l \
	$(NSJAIL_PKGS) 2>/dev/null))
NSJAIL_HAVE_A := $(foreach l,$(NSJAIL_STATIC_L),$(wildcard $(NSJAIL_LIBDIR)/lib$(l:-l%=%).a))
NSJAIL_STATIC_LINK := -Wl,-Bstatic $(NSJAIL_STATIC_L) -Wl,-Bdynamic
NSJAIL_CLI_LIBS := $(if $(and $(NSJAIL_STATIC_L),$(filter $(words $(NSJAIL_STATIC_L)),\
	$(words $(NSJAIL_HAVE_A)))),$(NSJAIL_STATIC_LINK),$(call pkg_libs,$(NSJAIL_PKGS)))

$(BUILD)/nsjail-lite: $(call objs,nsjail-lite/main.c) $(NSJAIL_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NSJAIL_CLI_LIBS) -lpthread

BINARIES += $(BUILD)/nsjail-lite
