# hub/secrets/: the secret store (encryption at rest, stand-ins, what a key looks like,
# secrets in tool traffic) and the hub's CA, as a library below the runtime: it knows
# directories, not the hub's configuration (hub/config/config.c opens the store the
# configuration names). Interface: secrets.h.
SECRETS_SRCS := $(sort $(wildcard hub/secrets/*.c))
LIBHUBSECRETS := $(BUILD)/lib/libhubsecrets.a

$(LIBHUBSECRETS): $(call objs,$(SECRETS_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
