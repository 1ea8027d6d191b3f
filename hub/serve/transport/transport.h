/* hub/serve/transport/'s interface: the transports a client reaches the hub by: stdio (serve_stdio.c), Streamable HTTP
 * (serve_http.c, its connections serve_http_conn.c) and the listening sockets (serve_listen.c).
 * Below, first what was serve_http.h. */
/* hub serve --http's own pieces, shared by its files: the MCP endpoint and its sessions
 * (serve_http.c), the checks every request passes before anything else (Host, Origin,
 * the bearer token; serve_http_gate.c) and the connections under them (caps, deadlines,
 * the gate applied to a request's header block before its body is read;
 * serve_http_conn.c). */
#ifndef HUB_SERVE_HTTP_H
#define HUB_SERVE_HTTP_H

#include "serve/serve_impl.h"
#include "serve/auth/auth.h"

#include <event2/http.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

/* A request's body before its headers passed the gate: enough for any MCP message a
 * client sends without its token (initialize, a client registration), and no more, so
 * that anonymous connections cannot make the hub hold their bodies. */
#define HTTP_MAX_BODY_ANON (16 * 1024)
#define HTTP_MAX_BODY (4 * 1024 * 1024)
#define HTTP_MAX_HEADERS (16 * 1024)
/* One slot per line of a tokens file (tokens.c's limit), and the last for sessions
 * without a tokens file. */
#define HTTP_TOKEN_SLOTS 10001

struct http_sess;
struct http_conn;

struct token_use {
    size_t sessions, inflight;
};

struct http_server {
    struct serve *sv;
    const struct serve_http_opts *o;
    struct evhttp *http;
    struct evconnlistener *listener;
    struct tokens *tokens;
    struct stat tokens_st;      /* the file as last read: a change is reloaded ... */
    struct stat tokens_pending; /* ... once it has stayed so for a check */
    struct token_use *use; /* HTTP_TOKEN_SLOTS */
    SSL_CTX *ssl;
    bool loopback;
    uint16_t port;
    LIST_HEAD(, http_sess) sessions;
    LIST_HEAD(, http_sess) ephemeral; /* 2026-07-28 requests' own sessions (serve_http.c) */
    struct oauth *oauth;              /* --oauth: tokens are the issuer's JWTs */
    size_t n_sessions, n_streams;
    struct event *ev_sweep, *ev_sighup, *ev_tokens;
    /* serve_http_conn.c's */
    TAILQ_HEAD(, http_conn) conns; /* oldest first */
    size_t n_conns, max_conns, max_conns_per_source;
    int spare_fd;            /* given up to accept (and close) one client on EMFILE */
    struct event *ev_resume; /* the listener back after a pause */
    uint64_t accept_errors;  /* since the last time they were said */
    uint64_t accept_error_said_ns;
    uint64_t audit_window_ns; /* connection-level refusals: a few records per second */
    unsigned audit_in_window;
    uint64_t audit_suppressed;
};

/* ---- serve_http_gate.c ---- */

enum gate_result { GATE_OK, GATE_HOST, GATE_ORIGIN, GATE_NO_TOKEN, GATE_BAD_TOKEN, GATE_SCOPE };

struct gate_verdict {
    enum gate_result result;
    size_t token;     /* its line, or the last slot without a tokens file */
    const char *user; /* the token's user (the tokens' own string), when GATE_OK */
    /* --oauth (serve_oauth.c): the user's name here, the apps the token's scopes reach
     * (NULL: every app; release with gate_verdict_done) and why a token was refused */
    char oauth_user[65];
    json_t *apps;
    char why[300];
};
void gate_verdict_done(struct gate_verdict *v);

/* The checks of a request's headers, in order: Host (a loopback listener answers only
 * to loopback names: DNS rebinding), Origin (browsers' cross-site requests), the bearer
 * token. Each value NULL when the header is absent. */
void http_gate(const struct http_server *srv, const char *host, const char *origin,
               const char *authorization, struct gate_verdict *v);
/* Host and Origin alone (for requests that need no token). */
enum gate_result http_gate_origin(const struct http_server *srv, const char *host,
                                  const char *origin);
bool http_origin_ok(const struct http_server *srv, const char *origin);
/* For the audit record and the client. */
const char *http_gate_reason(enum gate_result r);
int http_gate_status(enum gate_result r);
/* Loads the tokens file (0), or says why (-1, the old tokens kept). */
int http_tokens_load(struct http_server *srv, char *err, size_t errlen);
/* Follows the tokens file: reloaded on SIGHUP and when the file changes; the sessions of
 * a token no longer in it end. */
void http_tokens_follow(struct http_server *srv);
void http_tokens_unfollow(struct http_server *srv);

/* ---- serve_http.c, for the reload ---- */
/* Token lines moved: map[old] is the new line of the same token and user, or SIZE_MAX
 * when it is gone (its sessions end). */
void http_sessions_remap(struct http_server *srv, const size_t *map, size_t n_old);

/* ---- serve_http_conn.c ---- */

/* Connections from accept on: counted in total and per source (the oldest idle or
 * unauthenticated one makes room for a new one), each request's header block gated
 * before its body is read (the body limit is HTTP_MAX_BODY_ANON until it passes), a
 * deadline for each request to arrive whole, and on running out of descriptors the
 * listener paused rather than spinning. Call before the listener accepts. */
void http_conns_init(struct http_server *srv);
int http_conns_listen(struct http_server *srv, evutil_socket_t fd, char *err, size_t errlen);
void http_conns_free(struct http_server *srv);
/* The connection a request came on is busy with it (no deadline, not to be evicted)
 * until its reply is complete. false when the connection's header block did not pass the
 * gate (an anonymous request): its reply ends the connection. *refusal_audited: that
 * refusal is on record already. */
bool http_conn_request(struct http_server *srv, struct evhttp_request *req, bool *refusal_audited);
/* closed(ud) when the connection of req ends (an open stream's client went away);
 * NULL to stop. */
void http_conn_watch(struct http_server *srv, struct evhttp_request *req, void (*closed)(void *),
                     void *ud);
/* Unsent bytes of a request's connection (what a client does not read). */
size_t http_conn_pending_out(struct evhttp_request *req);
/* The connections of a token no longer valid lose what it gave them. */
void http_conns_revoke(struct http_server *srv, const size_t *map, size_t n_old);
/* A connection-level refusal (too many connections, a deadline, an oversized anonymous
 * body), audited at most a few times a second (the rest counted in the next record). */
void http_conn_audit(struct http_server *srv, const char *remote, const char *reason, int status);


/* ---- serve_stdio.c ---- */
struct serve_stream;
/* The stream pair is over (why; by_client: the client's doing, as closing it or a frame
 * too long, not the hub's): called once, possibly from inside the session's own handling, so the
 * owner closes the stream later (serve_stream_close) rather than from here. */
typedef void (*serve_stream_end_fn)(void *ud, struct serve_stream *st, const char *why,
                                    bool by_client);
/* A session on in_fd/out_fd (made non-blocking; the caller keeps them and closes them
 * after serve_stream_close). NULL with err when they cannot be polled. */
struct serve_stream *serve_stream_open(struct serve *sv, int in_fd, int out_fd, const char *user,
                                       const char *remote, const char *transport,
                                       serve_stream_end_fn end, void *ud, char *err, size_t errlen);
struct serve_session *serve_stream_session(struct serve_stream *st);
/* Ends the session and frees the stream; drain: wait until the last answers are
 * written (the hub's own stdout), else write what goes at once. */
void serve_stream_close(struct serve_stream *st, const char *why, bool drain);

/* The methods after initialize (or of a modern request), for either. */
void serve_session_dispatch(struct serve_session *ss, struct jrpc_msg *msg);

/* Whether the session may reach app (its token's scopes, --oauth). */
bool serve_session_app_ok(const struct serve_session *ss, const char *app);

/* ---- serve_listen.c ---- */
/* A listening TCP socket (non-blocking, close-on-exec) on "ADDR:PORT" or "[V6]:PORT";
 * *loopback says whether ADDR is a loopback address. Beyond loopback only when
 * beyond_loopback_ok, checked before anything is bound. -1 and err on failure. */
int serve_listen_socket(const char *hostport, bool beyond_loopback_ok, bool *loopback, char *err,
                        size_t errlen);

#endif
