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

/* ---- requests ---- */

static void handle_request(struct client *c, const struct repl_request *req)
{
    struct repl_server *srv = c->srv;
    struct session *s;
    if (req->has_session) {
        s = repl_session_find(srv, req->session_id);
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
        char msg[128];
        snprintf(msg, sizeof(msg), "too many connections (the maximum is %zu)", srv->o.max_clients);
        json_t *rec = haudit_new("repl-request", "failure");
        repl_rec_peer(rec, ip, port);
        audit_set_str(rec, "event.reason", "too-many-connections");
        haudit_note(srv->h, rec);
        size_t len;
        unsigned char *frame = repl_response_encode(false, "", msg, "", &len);
        if (send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
            log_debug("repl-server: refusing a connection: %s", strerror(errno));
        free(frame);
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct client *c = xcalloc(1, sizeof(*c));
    c->srv = srv;
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
    struct repl_server *srv = xcalloc(1, sizeof(*srv));
    srv->h = h;
    srv->cfg = cfg;
    srv->base = base;
    srv->o = *o;
    srv->app = xstrdup(o->app);
    srv->o.app = srv->app;
    srv->o.listen = NULL;
    TAILQ_INIT(&srv->sessions);
    TAILQ_INIT(&srv->clients);
    srv->lis = evconnlistener_new_bind(
        base, on_accept, srv, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        SOMAXCONN, (struct sockaddr *)&ss, (int)sslen);
    if (!srv->lis) {
        snprintf(err, errlen, "--listen %s: %s", o->listen, strerror(errno));
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
    free(srv->app);
    free(srv);
}
