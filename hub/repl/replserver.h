/* `hub repl-server`: sandboxed Python sessions over a small TCP protocol (replframe.h),
 * on the hub's libevent loop.
 *
 * Each session is its own instance of the code app (config/spokes/code.json, the
 * pyexec spoke): its own jail with its own namespaces, /tmp and /data. A request
 * without a session id gets a new session (from a small pool of pre-started ones when
 * there is one); its id is 128 bits from getrandom, known only to the client. The
 * hub knows the session by a second, unrelated id (the spoke's instance name, which
 * the audit log, the spoke log and the data directory are named by), so nothing that
 * is logged lets anyone take over a session.
 *
 * One execution at a time per session; a connection handles one request at a time
 * (pipelined requests wait in its buffer). Sessions end when idle for idle_timeout_s,
 * when asked ("close": true), when their sandbox ends (a run that ignored its
 * interrupt is killed by the hub at its deadline, an rlimit, a crash), and at
 * shutdown. Their data directory and spoke log are removed then.
 *
 * Clients: with --tokens every request carries a bearer token ("token"), checked
 * against the file's hashes in constant time; a connection keeps the token of its
 * first request, and a session belongs to the token that opened it (another token
 * cannot use it even with its id). Each client - a token, or without tokens a peer
 * address - holds at most its quota of sessions and of connections, and a connection
 * that does not complete a request within the frame timeout is closed. */
#ifndef HUB_REPLSERVER_H
#define HUB_REPLSERVER_H

#include "runtime/runtime.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPL_DEFAULT_LISTEN "127.0.0.1:8000"
#define REPL_DEFAULT_MAX_SESSIONS 32
#define REPL_DEFAULT_IDLE_TIMEOUT_S 600
#define REPL_DEFAULT_TIME_LIMIT_MS 10000
#define REPL_DEFAULT_POOL 2
#define REPL_DEFAULT_MAX_CLIENTS 256
#define REPL_DEFAULT_DATA_MB 64
/* A connection whose request has not arrived whole this long after it began (or after
 * the connection was accepted) is closed: a slowloris cannot hold connections. */
#define REPL_DEFAULT_FRAME_TIMEOUT_MS 10000
/* Between the runner's interrupt at the time limit and the hub's kill of the sandbox. */
#define REPL_KILL_GRACE_MS 2000

struct repl_opts {
    const char *listen; /* ADDR:PORT; port 0 picks a free one (repl_server_port) */
    const char *app;    /* the code app's manifest name */
    size_t max_sessions;
    uint64_t idle_timeout_s;
    size_t max_frame;
    uint64_t time_limit_ms;
    size_t pool;        /* sessions kept started ahead of demand */
    size_t max_clients; /* connections at once */
    uint64_t data_mb;   /* each session's /data: a tmpfs of this size (namespace mode) */
    /* Authentication: a token file (lines "sha256:HEX USER"); NULL: none, for a server
     * on loopback only, where the seed's protocol is unchanged. */
    const char *tokens_file;
    /* Per client - per token with tokens_file, else per peer address: sessions and
     * connections at once (0: a quarter of the global limits with tokens_file, else
     * the global limits, as all loopback clients share one address). */
    size_t client_max_sessions;
    size_t client_max_connections;
    uint64_t frame_timeout_ms; /* see REPL_DEFAULT_FRAME_TIMEOUT_MS */
    bool debug;         /* code in the audit records */
};

struct repl_server;

/* Listens and serves on base; h must outlive the server. NULL and err on failure. */
struct repl_server *repl_server_new(struct hub *h, const struct hub_config *cfg,
                                    struct event_base *base, const struct repl_opts *o, char *err,
                                    size_t errlen);
uint16_t repl_server_port(const struct repl_server *s);
size_t repl_server_sessions(const struct repl_server *s);
/* Stops listening, closes every connection and ends every session (their sandboxes
 * are killed; hub_free() reaps them). */
void repl_server_shutdown(struct repl_server *s);
/* After hub_free(): removes what the ended sessions left and frees s. */
void repl_server_free(struct repl_server *s);

#endif
