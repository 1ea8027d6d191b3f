# hub/net/: the spokes' network (the gateway namespace, its nftables for transparent
# egress, the veth pool, the slots, netproxy's supervision, a spoke's registration and
# the secrets netproxy injects), as a library below the runtime: it is handed what it
# needs (the configuration, the store, the proxy), never the hub. Interface: net.h.
NET_SRCS := $(sort $(wildcard hub/net/*.c))
LIBHUBNET := $(BUILD)/lib/libhubnet.a

$(LIBHUBNET): $(call objs,$(NET_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
