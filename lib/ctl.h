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
 * The proxy never binds spoke addresses itself: it only accepts on what it is given. */
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
