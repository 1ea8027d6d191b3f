/* The hub <-> netproxy control channel: one JSON object per SOCK_SEQPACKET message,
 * with at most one descriptor attached by SCM_RIGHTS. Sequenced packets keep each
 * message whole and tie the descriptor to the message that names it.
 *
 * Messages (hub -> proxy), each answered by one reply in order:
 *   {"op":"add","spoke":"NAME","user":"ID","allow":["example.com",...],"ports":[443],
 *    "listen":"169.254.64.1:3128"}   + the listening socket for that spoke
 *   {"op":"remove","spoke":"NAME"}    closes the listener; open tunnels finish
 *   {"op":"ping"}
 * Replies (proxy -> hub): {"ok":true} or {"ok":false,"error":"why"}.
 * The proxy never binds spoke addresses itself: it only accepts on what it is given.
 *
 * netproxy's reading of "add" (netproxy/control.c):
 *   spoke   required, 1-64 of [A-Za-z0-9_.-], unique among live spokes
 *   allow   required array (may be empty: deny all) of registrable domains (eTLD+1) or
 *           exact IP literals; a public suffix or a subdomain is refused with a reason
 *   user    optional, recorded as isolate.user in the audit records
 *   ports   optional, default the proxy's --ports (443)
 *   listen  optional; when given it must equal the socket's bound address
 *   optional per-spoke settings (defaults: the proxy's command line):
 *     "max_tunnels": N (1..1000000; over it: 429), "max_pending": N (requests still
 *     being read), "report_only": true|false
 *   The socket must be a bound TCP socket (listen() is called if it is not listening
 *   yet); it may live in another network namespace. Unknown keys are errors. The
 *   proxy closes any descriptor it does not keep, also on errors.
 * "ping" replies {"ok":true,"spokes":N,"tunnels":N}. When the hub closes the channel,
 * the proxy stops accepting, lets open tunnels finish and exits 0. */
#ifndef ISOLATE_CTL_H
#define ISOLATE_CTL_H

#include <jansson.h>

#define CTL_MAX_MSG 65536

/* Sends msg (borrowed) and, when fd >= 0, the descriptor with it. 0 or -1 with errno. */
int ctl_send(int sock, json_t *msg, int fd);
/* Receives one message. Returns 1 with *msg set (and *fd the passed descriptor, close-
 * on-exec, or -1), 0 when the peer closed, -1 with errno on error: EMSGSIZE for a
 * message or control data cut short, EBADMSG for one that is not a JSON object. Extra
 * descriptors a peer sends are closed, never leaked. */
int ctl_recv(int sock, json_t **msg, int *fd);

#endif
