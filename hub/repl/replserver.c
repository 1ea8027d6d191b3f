/* hub repl-server: the listener, the connections and their requests. Sessions live
 * in replsession.c; see replserver.h for the model and replframe.h for the protocol.
 *
 * Answers are written straight to the socket when nothing is queued before them, so
 * that an answer is on its way before the loop spends milliseconds starting a pool
 * session. */
#include "audit.h"
#include "runtime/runtime.h"
#include "log.h"
#include "netaddr.h"
#include "replserver_impl.h"
#include "tokens.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests handled per wake-up of one connection: a pipelining client yields. */
#define FRAMES_PER_WAKEUP 32
/* Requests wait while this much output is queued for a client that does not read. */
#define OUT_PAUSE_BYTES (256 * 1024)
/* After accept() fails (EMFILE), listening pauses instead of spinning. */
#define ACCEPT_PAUSE_MS 200
/* Malformed requests in a row after which a connection is closed: each one is answered
 * and audited, and a client that only sends garbage must not turn that into a flood of
 * audit lines at line rate. */
#define MAX_BAD_IN_A_ROW 16
/* How long a connection closed by the server is read and drained for the peer's EOF. */
#define LINGER_S 2

static void client_process(struct client *c);
static bool client_maybe_done(struct client *c);
static void refuse(struct client *c, const char *reason, const char *sid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- answers ---- */

static void client_send(struct client *c, unsigned char *frame, size_t len)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t off = 0;
    if (evbuffer_get_length(out) == 0) {
        ssize_t n = send(bufferevent_getfd(c->bev), frame, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            off = (size_t)n;
    }
    if (off < len)
        bufferevent_write(c->bev, frame + off, len - off);
    free(frame);
}

static void reply(struct client *c, bool ok, const char *output, const char *error, const char *sid)
{
    size_t len;
    unsigned char *frame = repl_response_encode(ok, output, error, sid, &len);
    client_send(c, frame, len);
}

void repl_client_answer(struct client *c, bool ok, const char *output, const char *error,
                        const char *sid)
{
    c->pending = NULL;
    reply(c, ok, output, error, sid);
    event_active(c->ev_resume, EV_TIMEOUT, 0);
}

static void refuse(struct client *c, const char *reason, const char *sid, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *rec = haudit_new("repl-request", "failure");
    repl_rec_peer(rec, c->ip, c->port);
    audit_set_str(rec, "isolate.app", c->srv->app);
    audit_set_str(rec, "event.reason", reason);
    audit_set_str(rec, "message", msg);
    haudit_note(c->srv->h, rec);
    reply(c, false, "", msg, sid);
}

/* ---- clients: authentication and quotas ---- */

/* Connections counted for a client: with tokens, those that proved the same token
 * (principal) or, for one not yet known, the unauthenticated ones from its address;
 * without, those from the same address. */
static size_t connections_of(struct repl_server *srv, const char *principal, const char *ip)
{
    size_t n = 0;
    struct client *c;
    TAILQ_FOREACH(c, &srv->clients, link)
    {
        if (principal[0] ? strcmp(c->principal, principal) == 0
                         : !c->principal[0] && strcmp(c->ip, ip) == 0)
            n++;
    }
    return n;
}

static void close_after(struct client *c)
{
    c->closing = true;
    client_maybe_done(c);
}

/* With --tokens: the request's token proves who the client is, and a connection stays
 * with the token of its first request. false (answered, closing) when it does not. */
static bool authenticate(struct client *c, const struct repl_request *req)
{
    struct repl_server *srv = c->srv;
    if (!srv->tokens)
        return true;
    size_t index = 0;
    const char *user =
        req->token ? tokens_check(srv->tokens, req->token, req->token_len, &index) : NULL;
    if (!user) {
        refuse(c, "unauthorized", "",
               "unauthorized: this server needs a valid \"token\" in every request");
        close_after(c);
        return false;
    }
    char principal[sizeof(c->principal)];
    snprintf(principal, sizeof(principal), "token:%zu", index);
    if (c->principal[0]) {
        if (strcmp(c->principal, principal) == 0)
            return true;
        refuse(c, "unauthorized", "", "unauthorized: one token per connection");
        close_after(c);
        return false;
    }
    if (connections_of(srv, principal, c->ip) >= srv->o.client_max_connections) {
        refuse(c, "client-connections", "",
               "too many connections for this token (at most %zu at once)",
               srv->o.client_max_connections);
        close_after(c);
        return false;
    }
    str_copy(c->principal, principal, sizeof(c->principal));
    return true;
}

/* ---- requests ---- */

static void handle_request(struct client *c, const struct repl_request *req)
{
    struct repl_server *srv = c->srv;
    struct session *s;
    if (!authenticate(c, req))
        return;
    if (req->has_session) {
        s = repl_session_find(srv, req->session_id);
        /* Another client's session is not there for this one, id or not. */
        if (s && strcmp(s->owner, c->principal) != 0)
            s = NULL;
        if (!s) {
            refuse(c, "unknown-session", "",
                   "unknown session: no session has this id (it may have expired or ended)");
            return;
        }
        if (s->exec) {
            refuse(c, "session-busy", s->secret,
                   "the session is busy with another execution (one at a time)");
            return;
        }
        if (!hub_spoke_running(srv->h, NULL, srv->app, s->tag)) {
            repl_session_end(s, "sandbox-ended");
            refuse(c, "session-ended", s->secret,
                   "the session has ended: its sandbox is no longer running");
            return;
        }
    } else {
        if (repl_sessions_of(srv, c->principal) >= srv->o.client_max_sessions) {
            refuse(c, "client-sessions", "",
                   "too many sessions for this client: %zu of its own are open; end one "
                   "(\"close\": true) first",
                   srv->o.client_max_sessions);
            return;
        }
        s = repl_session_claim(srv, c);
        if (!s) {
            refuse(c, "sessions-full", "",
                   "too many sessions: all %zu are in use; end one (\"close\": true) or try "
                   "again later",
                   srv->o.max_sessions);
            return;
        }
        /* Refilled once this request is answered (on_exec_done), so that starting a
         * sandbox does not hold up the answer; the timer is a fallback. */
        srv->pool_wanted = true;
        repl_pool_schedule(srv, POOL_REFILL_FALLBACK_MS);
    }
    repl_session_exec(s, c, req);
}

/* ---- connections ---- */

static void client_free(struct client *c)
{
    struct repl_server *srv = c->srv;
    if (c->pending)
        c->pending->client = NULL; /* the run goes on; its answer is dropped */
    TAILQ_REMOVE(&srv->clients, c, link);
    srv->n_clients--;
    event_free(c->ev_resume);
    event_free(c->ev_frame);
    bufferevent_free(c->bev);
    free(c);
}

/* Frees c when it is finished; true if it did. */
/* Frees c when it is finished (true), or starts a lingering close: after an error
 * that ends the connection (an oversized frame) the peer may still be sending, and
 * closing a socket with unread input sends a reset that can destroy the error answer
 * before the peer reads it. So our side is shut down first and the rest of the input
 * is read and dropped until the peer closes, or LINGER_S at most. */
static bool client_maybe_done(struct client *c)
{
    if (!(c->closing || c->eof) || c->pending ||
        evbuffer_get_length(bufferevent_get_output(c->bev)) != 0)
        return false;
    if (c->eof) {
        client_free(c);
        return true;
    }
    if (!c->lingering) {
        c->lingering = true;
        shutdown(bufferevent_getfd(c->bev), SHUT_WR);
        struct evbuffer *in = bufferevent_get_input(c->bev);
        evbuffer_drain(in, evbuffer_get_length(in));
        struct timeval linger = {.tv_sec = LINGER_S};
        bufferevent_set_timeouts(c->bev, &linger, NULL);
        bufferevent_enable(c->bev, EV_READ);
    }
    return false;
}

/* The frame timer runs while a request is incomplete: from the accept until the first
 * request is whole, and from the first byte of each later one. Between requests the
 * idle timeout applies instead. */
static void on_frame_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    if (c->closing || c->lingering)
        return;
    if (c->pending) {
        /* Its own run is in progress: what it sent meanwhile waits, in time. */
        repl_arm_ms(c->ev_frame, c->srv->o.frame_timeout_ms);
        return;
    }
    refuse(c, "slow-client", "", "no complete request within %.1f s: closing the connection",
           (double)c->srv->o.frame_timeout_ms / 1000.0);
    close_after(c);
}

static void client_process(struct client *c)
{
    struct repl_server *srv = c->srv;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    for (int i = 0; i < FRAMES_PER_WAKEUP; i++) {
        if (c->pending || c->closing || srv->shutting_down)
            return;
        if (evbuffer_get_length(out) > OUT_PAUSE_BYTES)
            return; /* resumed by the write callback */
        size_t have = evbuffer_get_length(in);
        const unsigned char *head =
            evbuffer_pullup(in, have < REPL_FRAME_HEADER ? -1 : REPL_FRAME_HEADER);
        uint32_t n = 0;
        enum repl_frame_status st = repl_frame_next(head, have, srv->o.max_frame, &n);
        if (st == REPL_FRAME_NEED_MORE) {
            if (have > 0 && !evtimer_pending(c->ev_frame, NULL))
                repl_arm_ms(c->ev_frame, srv->o.frame_timeout_ms); /* a request begins */
            if (c->eof) {
                c->closing = true; /* a partial frame can never complete */
                client_maybe_done(c);
            }
            return;
        }
        if (st == REPL_FRAME_TOO_LONG) {
            /* The stream cannot be resynchronised without reading the whole frame:
             * answer and close. */
            refuse(c, "oversized-frame", "", "frame of %u bytes exceeds the maximum of %zu bytes",
                   n, srv->o.max_frame);
            c->closing = true;
            client_maybe_done(c);
            return;
        }
        const unsigned char *frame = evbuffer_pullup(in, (ev_ssize_t)(REPL_FRAME_HEADER + n));
        struct repl_request req;
        char err[256];
        int rc =
            repl_request_parse((const char *)frame + REPL_FRAME_HEADER, n, &req, err, sizeof(err));
        evbuffer_drain(in, REPL_FRAME_HEADER + n);
        evtimer_del(c->ev_frame); /* a whole request: the next one starts the timer */
        if (rc < 0) {
            if (++c->bad_in_a_row >= MAX_BAD_IN_A_ROW) {
                refuse(c, req.error, "",
                       "%s; %d malformed requests in a row: closing the connection", err,
                       MAX_BAD_IN_A_ROW);
                c->closing = true;
                client_maybe_done(c);
                return;
            }
            refuse(c, req.error, "", "%s", err);
            continue;
        }
        c->bad_in_a_row = 0;
        handle_request(c, &req);
        repl_request_free(&req);
    }
    event_active(c->ev_resume, EV_TIMEOUT, 0);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct client *c = arg;
    if (!client_maybe_done(c))
        client_process(c);
}

static void on_client_read(struct bufferevent *bev, void *arg)
{
    struct client *c = arg;
    if (c->lingering) {
        struct evbuffer *in = bufferevent_get_input(bev);
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    client_process(c);
}

static void on_client_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct client *c = arg;
    if (!client_maybe_done(c))
        client_process(c);
}

static void on_client_event(struct bufferevent *bev, short what, void *arg)
{
    struct client *c = arg;
    if (c->lingering) {
        client_free(c); /* the peer's EOF, an error, or the linger time is over */
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        if (c->pending) {
            bufferevent_enable(bev, EV_READ); /* waiting for its own run: not idle */
            return;
        }
        client_free(c);
        return;
    }
    if (what & BEV_EVENT_EOF) {
        /* Requests already received are still answered. */
        c->eof = true;
        if (!client_maybe_done(c))
            client_process(c);
        return;
    }
    client_free(c); /* an error: the peer is gone */
}

/* Answers a connection that is not taken with why, audited, and closes it. */
static void refuse_connection(struct repl_server *srv, int fd, const char *ip, uint16_t port,
                              const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void refuse_connection(struct repl_server *srv, int fd, const char *ip, uint16_t port,
                              const char *reason, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *rec = haudit_new("repl-request", "failure");
    repl_rec_peer(rec, ip, port);
    audit_set_str(rec, "event.reason", reason);
    haudit_note(srv->h, rec);
    size_t len;
    unsigned char *frame = repl_response_encode(false, "", msg, "", &len);
    if (send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        log_debug("repl-server: refusing a connection: %s", strerror(errno));
    free(frame);
    close(fd);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    (void)lis;
    (void)salen;
    struct repl_server *srv = arg;
    char ip[48] = "";
    sockaddr_format_ip(sa, ip, sizeof(ip));
    uint16_t port = sockaddr_port(sa);
    if (srv->shutting_down) {
        close(fd);
        return;
    }
    if (srv->n_clients >= srv->o.max_clients) {
        refuse_connection(srv, fd, ip, port, "too-many-connections",
                          "too many connections (the maximum is %zu)", srv->o.max_clients);
        return;
    }
    /* Without tokens a client is its address; with them, unproven connections count
     * for their address until their first request names the token. */
    const char *principal = srv->tokens ? "" : ip;
    if (connections_of(srv, principal, ip) >= srv->o.client_max_connections) {
        refuse_connection(srv, fd, ip, port, "client-connections",
                          "too many connections from this client (at most %zu at once)",
                          srv->o.client_max_connections);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct client *c = xcalloc(1, sizeof(*c));
    c->srv = srv;
    str_copy(c->principal, principal, sizeof(c->principal));
    c->ev_frame = evtimer_new(srv->base, on_frame_timeout, c);
    repl_arm_ms(c->ev_frame, srv->o.frame_timeout_ms);
    str_copy(c->ip, ip, sizeof(c->ip));
    c->port = port;
    c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    c->ev_resume = event_new(srv->base, -1, 0, on_resume, c);
    bufferevent_setcb(c->bev, on_client_read, on_client_write, on_client_event, c);
    /* Never more than one frame's worth buffered: a fast sender waits in TCP. */
    bufferevent_setwatermark(c->bev, EV_READ, 0, REPL_FRAME_HEADER + srv->o.max_frame);
    bufferevent_setwatermark(c->bev, EV_WRITE, OUT_PAUSE_BYTES / 2, 0);
    struct timeval idle = {.tv_sec = (time_t)srv->o.idle_timeout_s};
    bufferevent_set_timeouts(c->bev, &idle, NULL);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    TAILQ_INSERT_TAIL(&srv->clients, c, link);
    srv->n_clients++;
}

static void on_accept_again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct repl_server *srv = arg;
    if (srv->lis && !srv->shutting_down)
        evconnlistener_enable(srv->lis);
}

static void on_accept_error(struct evconnlistener *lis, void *arg)
{
    struct repl_server *srv = arg;
    log_warnx("repl-server: accept: %s; pausing for %d ms", strerror(EVUTIL_SOCKET_ERROR()),
              ACCEPT_PAUSE_MS);
    evconnlistener_disable(lis);
    repl_arm_ms(srv->ev_accept, ACCEPT_PAUSE_MS);
}

/* ---- the server ---- */

struct repl_server *repl_server_new(struct hub *h, const struct hub_config *cfg,
                                    struct event_base *base, const struct repl_opts *o, char *err,
                                    size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (!sockaddr_parse_hostport(o->listen, &ss, &sslen)) {
        snprintf(err, errlen, "--listen %s: expected ADDR:PORT (IPv6 as [ADDR]:PORT)", o->listen);
        return NULL;
    }
    struct tokens *tokens = NULL;
    if (o->tokens_file) {
        tokens = tokens_load(o->tokens_file, err, errlen);
        if (!tokens)
            return NULL;
    } else if (addr_classify((struct sockaddr *)&ss) != ADDR_LOOPBACK) {
        snprintf(err, errlen,
                 "--listen %s is not a loopback address: anyone who can reach it could run "
                 "code; give --tokens FILE (lines 'sha256:HEX USER', made with `hub serve "
                 "token add`)",
                 o->listen);
        return NULL;
    }
    struct repl_server *srv = xcalloc(1, sizeof(*srv));
    srv->tokens = tokens;
    srv->h = h;
    srv->cfg = cfg;
    srv->base = base;
    srv->o = *o;
    srv->app = xstrdup(o->app);
    srv->o.app = srv->app;
    /* Without tokens on loopback every local client has one address: quotas by address
     * would be global limits there, so the defaults are (the seed's behaviour). */
    if (!srv->o.client_max_sessions)
        srv->o.client_max_sessions =
            tokens ? (o->max_sessions / 4 ? o->max_sessions / 4 : 1) : o->max_sessions;
    if (!srv->o.client_max_connections)
        srv->o.client_max_connections =
            tokens ? (o->max_clients / 4 ? o->max_clients / 4 : 1) : o->max_clients;
    if (!srv->o.frame_timeout_ms)
        srv->o.frame_timeout_ms = REPL_DEFAULT_FRAME_TIMEOUT_MS;
    srv->o.tokens_file = NULL;
    srv->o.listen = NULL;
    TAILQ_INIT(&srv->sessions);
    TAILQ_INIT(&srv->clients);
    srv->lis = evconnlistener_new_bind(
        base, on_accept, srv, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        SOMAXCONN, (struct sockaddr *)&ss, (int)sslen);
    if (!srv->lis) {
        snprintf(err, errlen, "--listen %s: %s", o->listen, strerror(errno));
        tokens_free(srv->tokens);
        free(srv->app);
        free(srv);
        return NULL;
    }
    evconnlistener_set_error_cb(srv->lis, on_accept_error);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    if (getsockname(evconnlistener_get_fd(srv->lis), (struct sockaddr *)&bound, &blen) == 0)
        srv->port = sockaddr_port((struct sockaddr *)&bound);
    repl_sessions_init(srv);
    srv->ev_accept = evtimer_new(base, on_accept_again, srv);
    json_t *rec = haudit_new("repl-server-start", "success");
    audit_set_str(rec, "isolate.app", srv->app);
    audit_set_str(rec, "isolate.mode", isolation_name(cfg->isolation));
    audit_set_int(rec, "server.port", srv->port);
    audit_set_int(rec, "isolate.max_sessions", (int64_t)o->max_sessions);
    audit_set_int(rec, "isolate.client_max_sessions", (int64_t)srv->o.client_max_sessions);
    audit_set_int(rec, "isolate.client_max_connections", (int64_t)srv->o.client_max_connections);
    audit_set(rec, "isolate.tokens", json_boolean(tokens != NULL));
    haudit_note(h, rec);
    repl_pool_schedule(srv, 0);
    return srv;
}

uint16_t repl_server_port(const struct repl_server *s)
{
    return s->port;
}

size_t repl_server_sessions(const struct repl_server *s)
{
    return s->n_sessions;
}

void repl_server_shutdown(struct repl_server *srv)
{
    if (srv->shutting_down)
        return;
    srv->shutting_down = true;
    if (srv->lis)
        evconnlistener_free(srv->lis);
    srv->lis = NULL;
    while (!TAILQ_EMPTY(&srv->clients))
        client_free(TAILQ_FIRST(&srv->clients));
    repl_sessions_end_all(srv, "shutdown");
    json_t *rec = haudit_new("repl-server-stop", "success");
    audit_set_str(rec, "isolate.app", srv->app);
    haudit_note(srv->h, rec);
}

void repl_server_free(struct repl_server *srv)
{
    if (!srv)
        return;
    repl_sessions_free(srv);
    event_free(srv->ev_accept);
    tokens_free(srv->tokens);
    free(srv->app);
    free(srv);
}
