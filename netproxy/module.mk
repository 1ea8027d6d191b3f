# netproxy: the HTTPS CONNECT egress proxy (build/netproxy).
NETPROXY_SRCS := $(filter-out netproxy/main.c,$(wildcard netproxy/*.c))
NETPROXY_OBJS := $(call objs,$(NETPROXY_SRCS))
NETPROXY_LIB := $(BUILD)/lib/libnetproxy.a
NETPROXY_LIBS := $(call pkg_libs,$(PKGS) libidn2 libevent_pthreads)
BINARIES += $(BUILD)/netproxy

# Everything but main, so that tests/netproxy can link the parser, policy and guard.
$(NETPROXY_LIB): $(NETPROXY_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)$(AR) rcs $@ $^

$(BUILD)/netproxy: $(call objs,netproxy/main.c) $(NETPROXY_LIB) $(LIBISOLATE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NETPROXY_LIBS)
