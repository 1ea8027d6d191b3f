# tests/secrets/: the secret store, stand-ins, redaction and key detection (C units,
# test_secrets_units), and the end-to-end tests of `hub secrets` and of injection at
# the egress (test_secrets_*.sh).
SECRETS_UNIT_SRCS := $(wildcard tests/secrets/test_*.c)
SECRETS_UNIT_TESTS := $(patsubst tests/secrets/%.c,$(BUILD)/tests/secrets/%,$(SECRETS_UNIT_SRCS))
TEST_BINARIES += $(SECRETS_UNIT_TESTS)

$(BUILD)/tests/secrets/test_%: $(BUILD)/obj/tests/secrets/test_%.o $(HUB_LIB) $(HUB_JAIL_LIB) \
		$(LIBJSONSCHEMA) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUB_LDLIBS)

