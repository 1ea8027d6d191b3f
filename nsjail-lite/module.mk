# nsjail-lite: the launcher (build/nsjail-lite) and the library the hub links
# ($(BUILD)/lib/libnsjail-lite.a with $(call pkg_libs,$(NSJAIL_PKGS)); the path is
# fixed so that rules read before this file can name it).
NSJAIL_PKGS := libseccomp libnl-3.0 libnl-route-3.0 jansson
NSJAIL_LIB_SRCS := $(filter-out nsjail-lite/main.c,$(wildcard nsjail-lite/*.c))
NSJAIL_LIB := $(BUILD)/lib/libnsjail-lite.a

$(NSJAIL_LIB): $(call objs,$(NSJAIL_LIB_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)$(AR) rcs $@ $^

$(BUILD)/nsjail-lite: $(call objs,nsjail-lite/main.c) $(NSJAIL_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,$(NSJAIL_PKGS)) -lpthread

BINARIES += $(BUILD)/nsjail-lite
