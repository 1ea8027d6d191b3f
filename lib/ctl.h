/* The hub <-> netproxy control channel: one JSON object per SOCK_SEQPACKET message,
 * with up to CTL_MAX_FDS descriptors attached by SCM_RIGHTS. Sequenced packets keep
 * each message whole and tie the descriptors to the message that names them.
 *
 * Messages (hub -> proxy), each answered by one reply in order:
 *   {"op":"add","spoke":"NAME","user":"ID","allow":["example.com",...],"ports":[443],
 *    "listen":"169.254.64.1:3128"}   + the listening socket for that spoke
 *                                      [+ its resolver's UDP socket, see "dns_listen"]
 *   {"op":"forward","spoke":"NAME","to":"127.0.0.1:6390"}   + a listening socket
 *   {"op":"synthetic","spoke":"NAME","names":{"api.example.com":"240.240.0.1",...}}
 *   {"op":"remove","spoke":"NAME"}    closes the listeners; open tunnels finish
 *   {"op":"tls","ca_cert":"PEM","ca_key":"PEM"}   the hub's CA, for the hosts whose TLS
 *                                      netproxy opens to put a secret in (set once)
 *   {"op":"secret","spoke":"NAME","secret":{BINDING}}   a secret's new value (rotation)
 *   {"op":"ping"}
 * Replies (proxy -> hub): {"ok":true} or {"ok":false,"error":"why"}.
 * Notifications (proxy -> hub, never in reply to anything; the hub tells them from
 * replies by the "event" key):
 *   {"event":"synthetic","spoke":"NAME","name":"api.example.com","ip":"240.240.0.1"}
 *   the spoke's resolver handed out a new synthetic address. The hub keeps them and
 *   sends them back in "synthetic" when it adds the spoke again after a restart, so
 *   that an address stays the name's for the spoke's whole life.
 * The proxy never binds spoke addresses itself: it only accepts on what it is given.
 *
 * netproxy's reading of "add" (netproxy/control/control.c):
 *   spoke   required, 1-64 of [A-Za-z0-9_.-], unique among live spokes
 *   allow   required array (may be empty: deny all) of registrable domains (eTLD+1) or
 *           exact IP literals; a public suffix or a subdomain is refused with a reason
 *   user    optional, recorded as isolate.user in the audit records
 *   ports   optional, default the proxy's --ports (443)
 *   listen  optional; when given it must equal the socket's bound address
 *   tcp     optional array of raw TCP grants "HOST:PORT" (a name, or an address in any
 *           spelling, "[v6]:PORT"); such a destination is relayed without looking at
 *           the bytes, and an address listed here may be loopback or private
 *   dns_listen  optional "ADDR:53": the spoke's resolver; its UDP socket (bound there)
 *           is the second descriptor
 *   synthetic   optional object {"name": "ip", ...}: addresses handed out before a
 *           restart, kept as they were
 *   secrets optional array of BINDINGs {"name","standin","value","hosts",["header"],
 *           ["query"]}: the spoke's stand-ins and the values netproxy puts in their place
 *           in requests to those hosts (docs/secrets.md). Values are wiped from the
 *           message once handled, and the buffers a message passes through are wiped.
 *   optional per-spoke settings (defaults: the proxy's command line):
 *     "max_tunnels": N (1..1000000; over it: 429), "max_pending": N (requests still
 *     being read), "report_only": true|false
 *   The socket must be a bound TCP socket (listen() is called if it is not listening
 *   yet); it may live in another network namespace. With IP_TRANSPARENT set on it (the
 *   hub's gateway, where nftables' tproxy sends every TCP connection of the spoke's
 *   veth to it) a connection whose original destination is not the socket's own
 *   address is transparent egress: its destination says where it goes (a synthetic
 *   address: the name it stands for). Unknown keys are errors. The proxy closes any
 *   descriptor it does not keep, also on errors.
 * "forward": connections accepted on the attached socket (the hub made it on the
 *   jail's own loopback) go to "to", which must be one of the spoke's tcp grants.
 * "synthetic": more of the addresses a spoke's resolver handed out before a restart
 *   (the hub sends them in chunks right after the add; a message is at most 64 KiB),
 *   each refused when the address is taken by another name or outside the range.
 * "ping" replies {"ok":true,"spokes":N,"tunnels":N}. When the hub closes the channel,
 * the proxy stops accepting, lets open tunnels finish and exits 0. */
#ifndef ISOLATE_CTL_H
#define ISOLATE_CTL_H

#include <jansson.h>
#include <stddef.h>

#define CTL_MAX_MSG 65536
#define CTL_MAX_FDS 4

/* Sends msg (borrowed) and, when fd >= 0, the descriptor with it. 0 or -1 with errno. */
int ctl_send(int sock, json_t *msg, int fd);
/* The same with nfds (at most CTL_MAX_FDS) descriptors, in order. */
int ctl_sendv(int sock, json_t *msg, const int *fds, size_t nfds);
/* Receives one message. Returns 1 with *msg set (and *fd the first passed descriptor,
 * close-on-exec, or -1), 0 when the peer closed, -1 with errno on error: EMSGSIZE for
 * a message or control data cut short, EBADMSG for one that is not a JSON object.
 * Extra descriptors a peer sends are closed, never leaked. */
int ctl_recv(int sock, json_t **msg, int *fd);
/* The same keeping up to maxfds descriptors in fds, in the order sent (*nfds of them);
 * the rest are closed. */
int ctl_recvv(int sock, json_t **msg, int *fds, size_t maxfds, size_t *nfds);

#endif
