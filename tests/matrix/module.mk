# tests/matrix/: the escape matrix's hostile spoke (scripts/escape-matrix runs it
# through the hub in every isolation mode; test_escape_matrix.sh asserts on the
# result). It links the SDK, the case studies' attack code and the escape probes it
# shares with tests/nsjail/hostile.
ESCAPE_SPOKE := $(BUILD)/tests/matrix/escape_spoke
TEST_BINARIES += $(ESCAPE_SPOKE)

$(ESCAPE_SPOKE): $(call objs,tests/matrix/escape_spoke.c tests/matrix/escape_attempts.c \
		tests/nsjail/probes.c) $(SPOKE_ATTACK) $(SPOKE_SDK) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson)
