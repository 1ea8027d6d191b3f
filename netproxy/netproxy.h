/* The proxy's shared state: the process-wide struct proxy, spokes and their
 * listeners. Connections (conn.h) and the control channel (control.h) work on these. */
#ifndef NETPROXY_NETPROXY_H
#define NETPROXY_NETPROXY_H

#include "netproxy/control/control.h"
#include "netproxy/core/core.h"

#include <pthread.h>
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
struct cred_set;
struct tlsca;
struct tlsctx;
struct synth_map;
struct dns_udp;
struct control;

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
    /* The jail's resolver: the names it handed out, its UDP socket (NULL without one)
     * and its query budget (a token bucket, under px->lock). */
    struct synth_map *synth;
    struct dns_udp *dns;
    double dns_tokens;
    uint64_t dns_refill_ns;
    bool dns_limited; /* in a burst over the rate: its first drop was audited */
    uint64_t dns_dropped;
    /* The secrets netproxy puts into this spoke's requests (creds.h; NULL: none). A
     * rotation swaps the pointer under px->creds_lock; tunnels hold references. */
    struct cred_set *creds;
    /* Its budget for refusal records and new connections (refusalbudget.h). */
    struct proxy *px;
    struct refusal_budget budget;
    /* The traceparent of the hub's call the spoke runs, when it runs one alone (control
     * op "trace"; "" for none), under px->lock: its tunnels' records join that trace. */
    char trace[56];
    bool trace_spans; /* ... and the hub exports spans: each tunnel's goes to it */
    struct spoke *next;
};

/* One worker's watch on a listening socket: every worker that serves a listener
 * accepts from it on its own event loop. */
struct listen_watch {
    struct listener *l;
    struct worker *w;
    struct event *ev;     /* readable: a connection to accept */
    struct event *resume; /* re-enables accepting after EMFILE */
};

struct listener {
    struct proxy *px;
    struct spoke *spoke;
    int fd;
    struct listen_watch *watch;
    unsigned nwatch;
    struct sockaddr_storage addr;
    bool guarded;     /* addr is among the guard's endpoints */
    bool transparent; /* IP_TRANSPARENT: tproxy brings connections for anywhere */
    /* A forward listener: every connection goes to this raw TCP grant ("host:port"). */
    char *forward;
    struct listener *next;
};

/* An event loop and what only it touches: its connections, its resolver (evdns is
 * bound to one loop), its pipe pool and its spare descriptor. Worker 0 is the main
 * thread's loop, which also serves the control channel, signals and metrics; with
 * --workers N, workers 1..N-1 run the same code each on a thread of its own. */
struct worker {
    struct proxy *px;
    unsigned index;
    struct event_base *base;
    struct resolver *resolver;
    struct pipe_pool *pipes;
    struct conn *conns; /* every live connection, for drain and exit */
    int spare_fd;       /* held back so that accept() at EMFILE still gets a client to answer */
    struct event *wake; /* activated by the main thread: drain or abort */
    pthread_t thread;
    bool started, exited; /* exited: its loop has ended (read under px->lock) */
};

struct proxy {
    struct event_base *base; /* the main thread's loop (worker 0's) */
    const struct np_config *cfg;
    struct audit *audit;
    struct logopener *opener; /* reopens the audit file on SIGHUP; NULL for stdout */
    struct addrguard *guard;
    struct metrics *metrics;
    struct spoke *spokes; /* changed by the main thread only */
    struct worker *workers;
    unsigned nworkers;
    /* Guards the counts below and in every spoke, which workers change concurrently,
     * and each worker's exited flag. */
    pthread_mutex_t lock;
    unsigned tunnels, pending;
    bool draining, aborting; /* set by the main thread; workers read them when woken */
    struct event *drain_timer;
    struct event *worker_exited; /* activated by a worker whose loop ended */
    struct event *budget_timer;  /* summarises each spoke's refusals past its budget */
    struct control *control;     /* hub mode: the channel to the hub */
    /* Opening TLS to put a secret in (intercept.h): the hub's CA ("tls" from the hub),
     * the contexts and their trust store (--upstream-ca), and the lock over every
     * spoke's creds pointer. */
    pthread_mutex_t creds_lock;
    struct tlsca *ca;
    struct tlsctx *tls;
};

/* Spokes (spoke.c). Names are 1..64 bytes of [A-Za-z0-9_.-]. */
bool spoke_name_valid(const char *name);
struct spoke *spoke_new(struct proxy *px, const char *name, const char *user,
                        struct policy *policy);
struct spoke *spoke_find(struct proxy *px, const char *name);
/* Closes the spoke's listeners and unlinks it; open tunnels keep it alive. */
void spoke_remove(struct proxy *px, struct spoke *s);
/* Closes its listeners and resolver socket (main thread): nothing new is accepted. */
void spoke_close_endpoints(struct spoke *s);
void spoke_ref(struct spoke *s);
void spoke_unref(struct spoke *s);

/* Listeners (listener.c): accept on fd (already bound; listen() is called when the
 * socket is not listening yet). The proxy owns fd from then on, even on failure.
 * worker -1: every worker accepts from it (a socket the hub passed); otherwise only
 * that one (standalone --workers: one SO_REUSEPORT socket per worker). forward: a
 * listener on the jail's own loopback whose connections all go to that tcp grant. */
struct listener *listener_add(struct proxy *px, struct spoke *s, int fd, int worker,
                              const char *forward, char *err, size_t errlen);
void listener_free(struct listener *l);
/* Takes the spare descriptor back once a connection has freed one (no-op if held). */
void worker_spare_reclaim(struct worker *w);
/* Binds and listens on "ADDR:PORT" for a standalone spoke; -1 with a message.
 * reuseport: SO_REUSEPORT, so that each worker can have a socket of its own. */
int listener_bind(const char *hostport, bool reuseport, char *err, size_t errlen);

/* Drain (main.c): stop accepting, let tunnels finish, exit when none is left. */
void proxy_start_drain(struct proxy *px, const char *why);
/* Called on the worker's thread whenever one of its connections ends, so a drain can
 * finish. */
void worker_conn_gone(struct worker *w);

/* Workers (worker.c). worker_init sets up worker i's loop and its own resources;
 * workers_start starts threads 1..N-1, which wait at a gate until workers_open (after
 * the sandbox is on: the threads share its filter). */
void worker_init(struct proxy *px, struct worker *w, unsigned i, struct event_base *base);
int workers_start(struct proxy *px, char *err, size_t errlen);
void workers_open(struct proxy *px);
/* Main thread: asks every other worker to look at px->draining / px->aborting. */
void workers_wake(struct proxy *px);
/* Main thread, after its loop: abort what is left, join the threads, free them. */
void workers_stop(struct proxy *px);
/* Whether every worker but the main thread's has ended its loop (drain complete). */
bool workers_others_exited(struct proxy *px);
/* Ends the worker's connections at once (drain timeout, second signal, exit). */
void worker_abort_all(struct worker *w);

#endif
