# netproxy: the HTTPS CONNECT egress proxy (build/netproxy).
NETPROXY_SRCS := $(filter-out netproxy/main.c,$(wildcard netproxy/*.c))
NETPROXY_OBJS := $(call objs,$(NETPROXY_SRCS))
NETPROXY_LIB := $(BUILD)/lib/libnetproxy.a
# OpenSSL and nghttp2: the TLS it opens to put a secret in, HTTP/2 inside (intercept.h).
NETPROXY_LIBS := $(call pkg_libs,$(PKGS) libidn2 libevent_pthreads openssl libnghttp2)
MISSING_PKGS += $(shell pkg-config --exists libnghttp2 2>/dev/null || echo libnghttp2)
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
