/* The proxy's shared state: the process-wide struct proxy, spokes and their
 * listeners. Connections (conn.h) and the control channel (control.h) work on these. */
#ifndef NETPROXY_NETPROXY_H
#define NETPROXY_NETPROXY_H

#include "config.h"
#include "policy.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct event;
struct audit;
struct addrguard;
struct resolver;
struct metrics;
struct pipe_pool;
struct conn;
struct logopener;

#define SPOKE_NAME_MAX 64

/* A spoke: a name, a policy and its limits. Tunnels hold a reference, so a spoke the
 * hub removes lives on until its last tunnel closes. */
struct spoke {
    char name[SPOKE_NAME_MAX + 1];
    char *user; /* may be NULL */
    struct policy *policy;
    unsigned max_tunnels, max_pending;
    bool report_only;
    unsigned tunnels, pending; /* live counts */
    unsigned refs;
    struct listener *listeners;
    struct spoke *next;
};

struct listener {
    struct proxy *px;
    struct spoke *spoke;
    int fd;
    struct event *ev;     /* readable: a connection to accept */
    struct event *resume; /* re-enables accepting after EMFILE */
    struct sockaddr_storage addr;
    struct listener *next;
};

struct proxy {
    struct event_base *base;
    const struct np_config *cfg;
    struct audit *audit;
    struct logopener *opener; /* reopens the audit file on SIGHUP; NULL for stdout */
    struct addrguard *guard;
    struct resolver *resolver;
    struct metrics *metrics;
    struct pipe_pool *pipes;
    struct spoke *spokes;
    struct conn *conns; /* every live connection, for drain and exit */
    unsigned tunnels, pending;
    int spare_fd; /* held back so that accept() at EMFILE still gets a client to answer */
    bool draining;
    struct event *drain_timer;
};

/* Spokes (spoke.c). Names are 1..64 bytes of [A-Za-z0-9_.-]. */
bool spoke_name_valid(const char *name);
struct spoke *spoke_new(struct proxy *px, const char *name, const char *user,
                        struct policy *policy);
struct spoke *spoke_find(struct proxy *px, const char *name);
/* Closes the spoke's listeners and unlinks it; open tunnels keep it alive. */
void spoke_remove(struct proxy *px, struct spoke *s);
void spoke_ref(struct spoke *s);
void spoke_unref(struct spoke *s);

/* Listeners (listener.c): accept on fd (already bound; listen() is called when the
 * socket is not listening yet). The proxy owns fd from then on, even on failure. */
struct listener *listener_add(struct proxy *px, struct spoke *s, int fd, char *err, size_t errlen);
void listener_free(struct listener *l);
/* Takes the spare descriptor back once a connection has freed one (no-op if held). */
void proxy_spare_reclaim(struct proxy *px);
/* Binds and listens on "ADDR:PORT" for a standalone spoke; -1 with a message. */
int listener_bind(const char *hostport, char *err, size_t errlen);

/* Drain (main.c): stop accepting, let tunnels finish, exit when none is left. */
void proxy_start_drain(struct proxy *px, const char *why);
/* Called whenever a connection ends, so a drain can finish. */
void proxy_conn_gone(struct proxy *px);

#endif
