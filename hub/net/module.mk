# hub/net/: the spokes' network that needs no hub (the gateway namespace, its nftables
# for transparent egress, the veth pool, the slots), as a library below the runtime.
# netproxy's supervision and wiring a spoke in use the hub, and stay in hub/runtime/
# (net_proxy.c, net_spoke.c). Interface: net.h.
NET_SRCS := $(sort $(wildcard hub/net/*.c))
LIBHUBNET := $(BUILD)/lib/libhubnet.a

$(LIBHUBNET): $(call objs,$(NET_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
