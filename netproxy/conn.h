/* One client connection, from accept() to close: read the request head (bounded and
 * timed), decide (syntax, canonical host, policy, port, limits), resolve once, check
 * every answer, dial the checked address, answer 200 and relay; or answer the
 * refusal and close. Each step is one state of the machine in conn.c. */
#ifndef NETPROXY_CONN_H
#define NETPROXY_CONN_H

#include "connect.h"
#include "host.h"
#include "netaddr.h"
#include "reason.h"
#include "resolve.h"
#include "tunnel.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct proxy;
struct spoke;
struct worker;

enum conn_state {
    C_HEADER,  /* reading the request head */
    C_RESOLVE, /* waiting for DNS */
    C_CONNECT, /* waiting for the upstream's connect() */
    C_RELAY,   /* tunnel established */
    C_RESPOND, /* writing a refusal */
    C_LINGER,  /* refusal written; reading what the client still sends, then close */
};

struct conn {
    struct proxy *px;
    struct worker *w; /* the loop it lives on: every callback runs on its thread */
    struct spoke *spoke;
    struct conn *prev, *next;
    enum conn_state state;
    int cfd, ufd;
    struct event *cread, *cwrite, *uread, *uwrite, *timer;
    bool cread_on; /* cread is armed (it stays armed from the request into the relay) */
    struct sockaddr_storage src;
    char id[33];

    /* Timing (monotonic ns) and the wall clock at accept for event.start. */
    uint64_t t_accept, t_accept_real, t_dns_start, t_dns_end, t_connect_start, t_connected;
    uint64_t last_active;

    /* The request head while it is read; freed after the decision. */
    char *buf;
    size_t len, cap;
    struct req_parser rp;
    bool counted_pending, counted_tunnel;

    /* What was decided. */
    bool have_target;
    char method[16];
    char target[300]; /* raw target, userinfo redacted; the record caps it at 256 */
    char user_agent[128];
    bool have_host;
    struct host host;
    uint16_t port;
    const char *registered; /* into host.name */
    const char *rule;       /* the allowlist entry; owned by the spoke's policy */
    enum reason would_deny; /* report-only: what would have been refused */
    enum addr_class dst_class;
    const char *guard; /* verdict name for the pinned or refused address */
    bool have_dst;
    struct sockaddr_storage dst; /* the pinned (or refused) destination address */

    struct lookup *lookup;
    struct addr_list *addrs; /* checked answers, while dialling */
    unsigned next_addr;
    int connect_errno;

    struct half c2u, u2c;
    enum close_reason close_reason;

    /* A refusal being written, then lingering. */
    char *resp;
    size_t resp_len, resp_off;
    size_t lingered;
    bool no_linger;
};

/* Takes over an accepted, non-blocking socket, on worker w's thread. */
void conn_accept(struct worker *w, struct spoke *s, int fd, const struct sockaddr *sa,
                 socklen_t salen);
/* Drain timeout or exit: refuse or close at once, with the records written. */
void conn_abort(struct conn *c);

#endif
