/* Hub mode (--control FD): the hub adds and removes spokes over a SOCK_SEQPACKET
 * socket, one JSON message each, with the spoke's listening socket attached
 * (lib/ctl.h documents the messages). The proxy only ever accepts on sockets it is
 * given; it never binds a spoke address. When the hub closes the channel, the proxy
 * drains and exits. */
#ifndef NETPROXY_CONTROL_H
#define NETPROXY_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct control;

/* fd must be a SOCK_SEQPACKET socket; NULL and a message otherwise. */
struct control *control_new(struct proxy *px, int fd, char *err, size_t errlen);
void control_free(struct control *ctl);
/* Handles one message and returns the reply (never NULL). fds are the passed
 * descriptors: each consumed (set to -1) when used, else the caller closes it. */
json_t *control_handle(struct proxy *px, const json_t *msg, int *fds, size_t nfds);
/* Tells the hub that the spoke's resolver handed out a new synthetic address (any
 * thread; nothing in standalone mode). */
/* A traced tunnel's span for the hub to export (the spoke's op "trace" with "spans"):
 * name says where to, ok whether it was allowed and ended cleanly. */
struct conn;
void control_notify_span(struct proxy *px, const struct conn *c, const char *name, bool ok,
                         uint64_t bytes);
void control_notify_synthetic(struct proxy *px, const char *spoke, const char *name,
                              const char *ip);

/* The rest of netproxy/control/'s interface (this header is the folder's): the
 * configuration (config.h), the privileges dropped (privdrop.h) and the process's own
 * sandbox (sandbox.h). The spokes' registry (spoke.c) is reached through netproxy.h. */
#include "config.h"
#include "privdrop.h"
#include "sandbox.h"

#endif
