# hub/runtime/: the trusted core (spokes, calls, MCP, mediation, processes, the
# in-flight limit, hooks, scripted answers, the hub's audit and spans) as the runtime's
# library, which the other hub/ folders, the hub binary (hub/cli/module.mk) and the
# tests link. Its interface: runtime.h. Below it, read before this file: hub/net/ (the
# spokes' network and netproxy's supervision), hub/config/ (hub.json, manifests, the
# catalog, the pin) and hub/secrets/ (the store, stand-ins, the CA); the JSON Schema
# validator is lib/jsonschema/, the sub-commands' shared code hub/cmdline/.
HUB_SRCS := $(sort $(wildcard hub/runtime/*.c))
HUB_OBJS := $(call objs,$(HUB_SRCS))

# The held node's loader (held_node.cjs, a manifest's "warm"), compiled in as the bytes
# of one C string that held.c writes out; the bench reads the same file.
HELD_NODE_C := $(BUILD)/gen/held_node_js.c
HELD_NODE_O := $(BUILD)/obj/gen/held_node_js.o
HUB_OBJS += $(HELD_NODE_O)

$(HELD_NODE_C): hub/runtime/held_node.cjs hub/runtime/module.mk
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q){ echo 'extern const char held_node_js[];'; echo 'const char held_node_js[] = {'; \
		od -An -v -tu1 $< | sed 's/  */,/g; s/^,//; s/$$/,/'; echo '0};'; } >$@.tmp && mv $@.tmp $@

$(HELD_NODE_O): $(HELD_NODE_C)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

HUB_RUNTIME_LIB := $(BUILD)/lib/libhub.a
# What links the runtime links these, in this order (a static library before those it
# calls).
HUB_LIB := $(HUB_RUNTIME_LIB) $(LIBHUBNET) $(LIBHUBCONFIG) $(LIBHUBSECRETS)

# nsjail-lite as a library for the process and namespace modes: its module.mk (read
# before this one) builds it at this fixed path. Without it those modes say that this
# build lacks nsjail-lite.
ifneq ($(wildcard nsjail-lite/jail.c),)
$(call objs,hub/runtime/proc.c hub/net/net_proxy.c): ALL_CFLAGS += -DHUB_HAVE_JAIL
HUB_JAIL_LIB := $(BUILD)/lib/libnsjail-lite.a
HUB_LDLIBS := $(call pkg_libs,$(PKGS)) -lpthread
else
HUB_JAIL_LIB :=
HUB_LDLIBS := $(call pkg_libs,$(PKGS))
endif

# Transparent egress programs the gateway's nftables (hub/net/net_egress.c).
HUB_LDLIBS += $(call pkg_libs,libnftables)
MISSING_PKGS += $(shell pkg-config --exists libnftables 2>/dev/null || echo libnftables)

$(HUB_RUNTIME_LIB): $(HUB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
