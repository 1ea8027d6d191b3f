/* The repl-server's internals, shared by replserver.c (the listener, connections and
 * requests) and replsession.c (sessions, their calls, the pool and the cleanup).
 * Nothing outside those two files includes this. */
#ifndef HUB_REPLSERVER_IMPL_H
#define HUB_REPLSERVER_IMPL_H

#include "replframe.h"
#include "replserver.h"

#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <jansson.h>
#include <sys/queue.h>

/* A session taken from the pool is replaced after its first answer, or this long after
 * it was taken, whichever comes first. */
#define POOL_REFILL_FALLBACK_MS 100

struct client;
struct session;

/* One call of the code app: a client's execution, or the warm-up of a pool session. */
struct exec_ctx {
    struct session *sess;
    struct client *client; /* NULL: a warm-up, or the client went away */
    bool warm;
    bool close_after;
    uint64_t t0;
    size_t code_len;
    json_t *code; /* for the audit record, at --debug only */
};

struct session {
    struct repl_server *srv;
    TAILQ_ENTRY(session) link;
    char secret[REPL_SESSION_ID_LEN + 1]; /* the client's session_id */
    char tag[33];                         /* the hub's instance name; logged */
    bool claimed;                         /* false: in the pool */
    bool ready;                           /* its spoke has answered a call */
    bool ending;
    bool prestarted;
    const char *end_reason;
    unsigned inflight;     /* calls the hub holds for it */
    struct exec_ctx *exec; /* the client's execution in progress */
    uint64_t t_start, t_last;
    unsigned runs;
    struct event *ev_idle;
    char peer_ip[48];
    uint16_t peer_port;
    char owner[48]; /* the client (client.principal) that opened it */
};

struct client {
    struct repl_server *srv;
    TAILQ_ENTRY(client) link;
    struct bufferevent *bev;
    struct event *ev_resume;
    struct exec_ctx *pending;
    char ip[48];
    uint16_t port;
    /* Who the quotas count it for: "token:N" once a request proved token line N, else
     * (no --tokens) its peer address; "" before that. */
    char principal[48];
    struct event *ev_frame; /* a request must arrive whole in time (frame_timeout_ms) */
    bool eof;       /* the peer will send nothing more */
    bool closing;   /* no more requests: close once the output is flushed */
    bool lingering; /* our side shut down; reading (and dropping) until the peer's EOF */
    unsigned bad_in_a_row;
};

struct repl_server {
    struct hub *h;
    const struct hub_config *cfg;
    struct event_base *base;
    struct repl_opts o;
    char *app;
    struct evconnlistener *lis;
    struct tokens *tokens; /* --tokens, or NULL */
    uint16_t port;
    TAILQ_HEAD(, session) sessions;
    size_t n_sessions;
    TAILQ_HEAD(, client) clients;
    size_t n_clients;
    struct event *ev_sweep;  /* closes ending sessions */
    struct event *ev_pool;   /* tops the pool up */
    struct event *ev_trash;  /* removes what ended sessions left */
    struct event *ev_accept; /* resumes listening after an accept error */
    uint64_t pool_backoff_ms;
    uint64_t pool_retry_ns;
    bool pool_wanted; /* a session was taken from the pool: refill after its answer */
    bool shutting_down;
    struct {
        char *path;
        unsigned tries;
    } * trash;
    size_t n_trash;
};

/* ---- replsession.c ---- */

void repl_arm_ms(struct event *ev, uint64_t ms);
void repl_rec_session(json_t *rec, const struct session *s);
void repl_rec_peer(json_t *rec, const char *ip, uint16_t port);
/* The events sessions use; and after hub_free(), the last cleanup and their release. */
void repl_sessions_init(struct repl_server *srv);
void repl_sessions_free(struct repl_server *srv);
/* A claimed, live session with this id, or NULL. */
struct session *repl_session_find(struct repl_server *srv, const char *secret);
/* Sessions owned by the client principal (not ending). */
size_t repl_sessions_of(struct repl_server *srv, const char *principal);
/* A new session for c (from the pool when there is one), or NULL when all are in use. */
struct session *repl_session_claim(struct repl_server *srv, struct client *c);
/* Marks s as ending; a deferred event closes it (never from inside a hub report). */
void repl_session_end(struct session *s, const char *reason);
/* Ends every session now (shutdown). */
void repl_sessions_end_all(struct repl_server *srv, const char *reason);
/* Starts c's run of req in s; the answer arrives through repl_client_answer(). */
void repl_session_exec(struct session *s, struct client *c, const struct repl_request *req);
void repl_pool_schedule(struct repl_server *srv, uint64_t delay_ms);

/* ---- replserver.c ---- */

/* The answer to c's pending request. */
void repl_client_answer(struct client *c, bool ok, const char *output, const char *error,
                        const char *sid);

#endif
