# tests/nsjail: the hostile spoke (not a test by itself: the scripts run it inside and
# outside the jail) and the C test of the library API.
$(BUILD)/tests/nsjail/hostile: $(call objs,tests/nsjail/hostile.c)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

$(BUILD)/tests/nsjail/test_jail_api: $(call objs,tests/nsjail/test_jail_api.c) \
		$(BUILD)/lib/libnsjail-lite.a $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,libseccomp libnl-3.0 libnl-route-3.0 jansson) -lpthread

TEST_BINARIES += $(BUILD)/tests/nsjail/hostile $(BUILD)/tests/nsjail/test_jail_api
