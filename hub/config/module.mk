# hub/config/: what the operator wrote, read and checked (hub.json, the manifests, the
# catalog, the pin, the host ids), as a library below the network and the runtime: it
# knows files and the secret store, never a running hub. Interface: config.h.
CONFIG_SRCS := $(sort $(wildcard hub/config/*.c))
LIBHUBCONFIG := $(BUILD)/lib/libhubconfig.a

$(LIBHUBCONFIG): $(call objs,$(CONFIG_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
