# tests/audit/: audit_writer, a writer of lib/audit.h records (chained and signed, or
# not) that the tamper tests and scripts/bench/audit drive.
AUDIT_WRITER := $(BUILD)/tests/audit/audit_writer
TEST_BINARIES += $(AUDIT_WRITER)

$(AUDIT_WRITER): $(call objs,tests/audit/audit_writer.c) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(call pkg_libs,jansson openssl)
