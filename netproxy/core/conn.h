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
#include "sniff.h"
#include "tunnel.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct proxy;
struct spoke;
struct worker;
struct listener;
struct intercept;

/* How the connection reached us (netproxy/egress/egress.c tells them apart at accept). */
enum conn_mode {
    MODE_PROXY,       /* a CONNECT request to the proxy's own address */
    MODE_TRANSPARENT, /* straight to its destination, taken on the gateway by tproxy */
    MODE_DNS,         /* DNS over TCP to the spoke's resolver */
};

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
    enum conn_mode mode;
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

    /* Transparent egress: where the client connected (a synthetic address stands for
     * host.name), whether the destination is a raw TCP grant (relayed unread) or a name
     * whose first flight must name it (sniff), and what that flight named. */
    struct sockaddr_in orig_dst;
    bool synthetic;
    bool raw;
    struct sniff *sniff;
    enum sniff_proto proto;
    char named[256]; /* the ClientHello's server_name or the Host, canonical when it could be */

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
    bool relaying; /* the spliced relay runs (its halves are set up) */
    /* A tunnel of a spoke with stand-ins goes through intercept.h instead; answered:
     * the CONNECT's 200 went out already (intercept sends it before it peeks). */
    struct intercept *ic;
    bool answered;
    enum close_reason close_reason;

    /* A refusal being written, then lingering. */
    char *resp;
    size_t resp_len, resp_off;
    size_t lingered;
    bool no_linger;
    /* The hub's call this tunnel belongs to (its traceparent, taken from the spoke at
     * the decision; "" for none): both records carry its trace.id (audit.c). */
    char trace[56];
    /* The tunnel's own span under that call (its records' span.id), and whether the
     * hub takes it as a span when the tunnel ends (control_notify_span). */
    char span[17];
    bool spans;
};

/* Takes over a socket accepted on l, non-blocking, on worker w's thread. */
void conn_accept(struct worker *w, struct listener *l, int fd, const struct sockaddr *sa,
                 socklen_t salen);
/* Drain timeout or exit: refuse or close at once, with the records written. */
void conn_abort(struct conn *c);

/* For egress.c and the resolver: the steps of the machine they share with CONNECT. */
/* Refuses (an HTTP answer in proxy mode; a reset otherwise) with the record. */
void conn_deny(struct conn *c, enum reason r, const char *detail);
/* Whether a raw TCP grant names host:port; if so it becomes the rule (relayed unread). */
bool conn_take_grant(struct conn *c);
/* The destination is decided (host, port, rule): the limits, then resolve and dial. */
void conn_admit(struct conn *c);
/* Reads what the client sends until the sniffer (transparent) or the query (DNS) has
 * enough; each mode's decision follows from there. */
void conn_read_first(struct conn *c);
/* DNS over TCP: sends the answer (owned by the connection from now) and waits for the
 * next query. */
void conn_dns_reply(struct conn *c, uint8_t *answer, size_t len);
/* Closes at once, without a record (a DNS client over its budget). */
void conn_close(struct conn *c);
void conn_arm_timer(struct conn *c, uint64_t ms);

/* For intercept.c. */
/* Ends an established tunnel with its close record. */
void conn_end(struct conn *c, enum close_reason r);
/* The ordinary spliced relay after all: early (the client's first bytes, already read)
 * goes upstream first, answer (what is left of the 200) to the client; both owned. */
void conn_relay(struct conn *c, char *early, size_t early_len, char *answer, size_t answer_len);
/* The idle and lifetime timer of an established tunnel. */
void conn_arm_relay_timer(struct conn *c);

#endif
