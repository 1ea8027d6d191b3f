# netproxy: the HTTPS CONNECT egress proxy (build/netproxy).
# A folder per path a connection takes, each with one header (docs/operations.md, "The source tree"):
# core/ (accept to splice, CONNECT's request), egress/ (the transparent path and the jail's
# resolver), intercept/ (TLS interception and injection), audit/ (records, metrics),
# control/ (the hub's channel, the configuration, privileges); netproxy.h the process.
NETPROXY_SRCS := $(sort $(wildcard netproxy/*/*.c))
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
