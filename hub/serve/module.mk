# hub/serve/: `hub serve`, the sandboxed apps for any MCP client (the MCP server side,
# stdio and Streamable HTTP, tokens, the questions to the client, audit, metrics) as a
# library of its own. Interface: serve.h; serve_impl.h the state its folders share:
# transport/ (stdio, HTTP, the listeners), session/ (sessions, protocol revisions, tools,
# the apps' spokes), background/ (the daemon, its control socket, attaching to it) and
# auth/ (tokens' gate, OAuth, questions and approvals), each with one header. TLS
# through libevent's OpenSSL bufferevents, token hashes through libcrypto: the hub
# binary links them.
SERVE_SRCS := $(sort $(wildcard hub/serve/*.c hub/serve/*/*.c))
LIBHUBSERVE := $(BUILD)/lib/libhubserve.a
HUB_LDLIBS += $(call pkg_libs,libevent_openssl openssl)

$(LIBHUBSERVE): $(call objs,$(SERVE_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
