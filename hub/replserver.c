/* hub repl-server: connections, sessions, the pool of pre-started sessions, and the
 * cleanup of ended ones. See replserver.h for the model and replframe.h for the
 * protocol.
 *
 * Re-entrancy: hub_call() may report before it returns, and its reports arrive while
 * the hub is in the middle of a spoke's frame. So nothing here ends a spoke from
 * inside a report: an ending session is only marked, and a deferred event closes it
 * (hub_spoke_close) from the top of the loop. Replies are written straight to the
 * socket when nothing is queued before them, so that an answer is on its way before
 * the loop spends milliseconds starting a pool session. */
#include "replserver.h"
#include "internal.h"
#include "log.h"
#include "netaddr.h"
#include "replframe.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests handled per wake-up of one connection: a pipelining client yields. */
#define FRAMES_PER_WAKEUP 32
/* Requests wait while this much output is queued for a client that does not read. */
#define OUT_PAUSE_BYTES (256 * 1024)
#define TRASH_RETRY_MS 1000
#define TRASH_TRIES 30
#define POOL_BACKOFF_MIN_MS 500
#define POOL_BACKOFF_MAX_MS 30000
#define POOL_REFILL_FALLBACK_MS 100
/* After accept() fails (EMFILE), listening pauses instead of spinning. */
#define ACCEPT_PAUSE_MS 200
/* Malformed requests in a row after which a connection is closed: each one is answered
 * and audited, and a client that only sends garbage must not turn that into a flood of
 * audit lines at line rate. */
#define MAX_BAD_IN_A_ROW 16
/* How long a connection closed by the server is read and drained for the peer's EOF. */
#define LINGER_S 2

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
};

struct client {
    struct repl_server *srv;
    TAILQ_ENTRY(client) link;
    struct bufferevent *bev;
    struct event *ev_resume;
    struct exec_ctx *pending;
    char ip[48];
    uint16_t port;
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

static void pool_schedule(struct repl_server *srv, uint64_t delay_ms);
static void client_process(struct client *c);

static void arm_ms(struct event *ev, uint64_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}

/* ---- audit ---- */

static void rec_session(json_t *rec, const struct session *s)
{
    audit_set_str(rec, "isolate.app", s->srv->app);
    audit_set_str(rec, "isolate.user", s->srv->cfg->user);
    audit_set_str(rec, "isolate.instance", s->tag);
    audit_set_str(rec, "isolate.mode", isolation_name(s->srv->cfg->isolation));
}

static void rec_peer(json_t *rec, const char *ip, uint16_t port)
{
    if (ip && ip[0]) {
        audit_set_str(rec, "source.ip", ip);
        audit_set_int(rec, "source.port", port);
    }
}

static void refuse(struct client *c, const char *reason, const char *sid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- cleanup of ended sessions ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    /* FTW_DP: a directory after its contents; anything else is unlinked as it is. */
    if (flag == FTW_DP ? rmdir(path) < 0 : unlink(path) < 0)
        return errno == ENOENT ? 0 : -1;
    return 0;
}

/* true once path is gone. FTW_PHYS: symlinks are removed, never followed; FTW_MOUNT:
 * never into another file system. */
static bool remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) == 0 || errno == ENOENT;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0 && lstat(path, &st) < 0;
}

static void trash_sweep(struct repl_server *srv, bool last)
{
    size_t keep = 0;
    for (size_t i = 0; i < srv->n_trash; i++) {
        /* The killed sandbox may still be writing for a few milliseconds: retry. */
        if (remove_tree(srv->trash[i].path) || (++srv->trash[i].tries >= TRASH_TRIES || last)) {
            if (lstat(srv->trash[i].path, &(struct stat){0}) == 0)
                log_warnx("could not remove %s", srv->trash[i].path);
            free(srv->trash[i].path);
            continue;
        }
        srv->trash[keep++] = srv->trash[i];
    }
    srv->n_trash = keep;
    if (keep && !last && !evtimer_pending(srv->ev_trash, NULL))
        arm_ms(srv->ev_trash, TRASH_RETRY_MS);
}

static void on_trash(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    trash_sweep(arg, false);
}

static void trash_add(struct repl_server *srv, char *path)
{
    srv->trash = xrealloc(srv->trash, (srv->n_trash + 1) * sizeof(*srv->trash));
    srv->trash[srv->n_trash].path = path;
    srv->trash[srv->n_trash].tries = 0;
    srv->n_trash++;
    if (!evtimer_pending(srv->ev_trash, NULL))
        arm_ms(srv->ev_trash, 50);
}

/* ---- sessions ---- */

static void hex_random(char *out, size_t bytes)
{
    unsigned char raw[64];
    size_t got = 0;
    while (got < bytes) {
        ssize_t n = getrandom(raw + got, bytes - got, 0);
        if (n < 0 && errno != EINTR)
            fatal("getrandom");
        if (n > 0)
            got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < bytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * bytes] = '\0';
}

static void on_idle(evutil_socket_t fd, short what, void *arg);

static struct session *session_new(struct repl_server *srv)
{
    struct session *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    hex_random(s->secret, REPL_SESSION_ID_LEN / 2);
    audit_new_id(s->tag);
    s->t_start = s->t_last = now_mono_ns();
    s->ev_idle = evtimer_new(srv->base, on_idle, s);
    TAILQ_INSERT_TAIL(&srv->sessions, s, link);
    srv->n_sessions++;
    return s;
}

/* Constant-time comparison: the time to refuse an id says nothing about its bytes. */
static bool same_secret(const char *a, const char *b)
{
    unsigned char diff = 0;
    for (size_t i = 0; i < REPL_SESSION_ID_LEN; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

static struct session *session_find(struct repl_server *srv, const char *secret)
{
    if (strlen(secret) != REPL_SESSION_ID_LEN)
        return NULL;
    struct session *s, *found = NULL;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        if (same_secret(s->secret, secret) && s->claimed && !s->ending)
            found = s;
    }
    return found;
}

static void session_end(struct session *s, const char *reason)
{
    if (s->ending)
        return;
    s->ending = true;
    s->end_reason = reason;
    evtimer_del(s->ev_idle);
    event_active(s->srv->ev_sweep, EV_TIMEOUT, 0);
}

static void session_close(struct session *s)
{
    struct repl_server *srv = s->srv;
    /* Fails whatever the hub still holds for it: the reports arrive now. */
    hub_spoke_close(srv->h, NULL, srv->app, s->tag);
    json_t *rec = haudit_new("repl-session-end", "success");
    rec_session(rec, s);
    audit_set_str(rec, "event.reason", s->end_reason ? s->end_reason : "ended");
    audit_set(rec, "isolate.session.claimed", json_boolean(s->claimed));
    audit_set_int(rec, "isolate.session.runs", s->runs);
    audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - s->t_start));
    haudit_write(srv->h, rec);
    /* The session's /data and spoke log: named as the hub names them (spoke_env.c's
     * datadir_prepare, spoke.c's log path). */
    const struct hub_config *cfg = srv->cfg;
    trash_add(srv, xasprintf("%s/%s/%s/%s", cfg->data_root, cfg->user, srv->app, s->tag));
    if (!srv->o.debug)
        trash_add(srv,
                  xasprintf("%s/spokes/%s/%s.%s.log", cfg->run_dir, cfg->user, srv->app, s->tag));
    if (s->inflight) {
        /* Cannot happen (the hub reports every call of a closed spoke at once); a
         * leaked session is better than a report that finds it freed. */
        log_warnx("session %s closed with %u calls outstanding", s->tag, s->inflight);
        TAILQ_REMOVE(&srv->sessions, s, link);
        srv->n_sessions--;
        return;
    }
    TAILQ_REMOVE(&srv->sessions, s, link);
    srv->n_sessions--;
    event_free(s->ev_idle);
    free(s);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct repl_server *srv = arg;
    bool closed = false;
    struct session *s, *next;
    for (s = TAILQ_FIRST(&srv->sessions); s; s = next) {
        next = TAILQ_NEXT(s, link);
        if (s->ending) {
            session_close(s);
            closed = true;
            /* Closing reports calls, which may end others: start over. */
            next = TAILQ_FIRST(&srv->sessions);
        }
    }
    if (closed)
        pool_schedule(srv, 0);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct session *s = arg;
    if (s->exec)
        arm_ms(s->ev_idle, s->srv->o.idle_timeout_s * 1000);
    else
        session_end(s, "idle");
}

/* ---- calls ---- */

static void warm_done(struct session *s, const struct call_result *r)
{
    struct repl_server *srv = s->srv;
    if (r->result) {
        s->ready = true;
        srv->pool_backoff_ms = 0;
        return;
    }
    if (s->ending)
        return;
    json_t *rec = haudit_new("repl-pool-start", "failure");
    rec_session(rec, s);
    audit_set_str(rec, "event.reason", r->layer ? r->layer : "hub");
    audit_set_str(rec, "message", r->message ? r->message : "");
    haudit_write(srv->h, rec);
    if (!hub_quit_requested(srv->h))
        log_warnx("repl-server: could not pre-start a session: %s", r->message ? r->message : "");
    session_end(s, "start-failed");
    /* A start that fails would fail again at once: wait, longer each time. */
    srv->pool_backoff_ms = srv->pool_backoff_ms ? srv->pool_backoff_ms * 2 : POOL_BACKOFF_MIN_MS;
    if (srv->pool_backoff_ms > POOL_BACKOFF_MAX_MS)
        srv->pool_backoff_ms = POOL_BACKOFF_MAX_MS;
    srv->pool_retry_ns = now_mono_ns() + srv->pool_backoff_ms * 1000000ULL;
}

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

static void refuse(struct client *c, const char *reason, const char *sid, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *rec = haudit_new("repl-request", "failure");
    rec_peer(rec, c->ip, c->port);
    audit_set_str(rec, "isolate.app", c->srv->app);
    audit_set_str(rec, "event.reason", reason);
    audit_set_str(rec, "message", msg);
    haudit_write(c->srv->h, rec);
    reply(c, false, "", msg, sid);
}

/* The CallToolResult's fields, from an untrusted spoke: the hub checked the shape (and
 * the outputSchema unless isError), so every field is checked again here. */
static void result_fields(const json_t *result, bool *ok, const char **output, const char **error,
                          bool *timed_out)
{
    const json_t *sc = json_object_get(result, "structuredContent");
    const char *status = json_string_value(json_object_get(sc, "status"));
    *output = json_string_value(json_object_get(sc, "output"));
    *error = json_string_value(json_object_get(sc, "error"));
    *timed_out = json_is_true(json_object_get(sc, "timed_out"));
    bool is_error = json_is_true(json_object_get(result, "isError"));
    if (!status || !*output || !*error) {
        *ok = false;
        *output = "";
        *error = "the session answered without a structured result";
        return;
    }
    *ok = strcmp(status, "ok") == 0 && !is_error;
}

static void on_exec_done(void *ud, const struct call_result *r)
{
    struct exec_ctx *ctx = ud;
    struct session *s = ctx->sess;
    struct repl_server *srv = s->srv;
    s->inflight--;
    if (ctx->warm) {
        warm_done(s, r);
        free(ctx);
        return;
    }
    uint64_t now = now_mono_ns();
    s->exec = NULL;
    s->runs++;
    s->t_last = now;
    bool ok = false, timed_out = false;
    const char *output = "", *error = "", *reason;
    char msg[768];
    if (r->result) {
        s->ready = true;
        result_fields(r->result, &ok, &output, &error, &timed_out);
        reason = ok ? "ok" : timed_out ? "timeout" : "exception";
    } else if (hub_spoke_running(srv->h, NULL, srv->app, s->tag)) {
        /* Refused by the hub (a result that breaks the schema, bad arguments) while
         * the session's sandbox lives on. */
        snprintf(msg, sizeof(msg), "the execution failed: %s (%s)", r->message ? r->message : "",
                 r->layer ? r->layer : "hub");
        error = msg;
        reason = "refused";
    } else if (r->layer && strcmp(r->layer, "deadline") == 0) {
        snprintf(msg, sizeof(msg),
                 "the run ignored the interrupt at its time limit of %.3g s: its sandbox was "
                 "killed and the session has ended",
                 (double)srv->o.time_limit_ms / 1000.0);
        error = msg;
        reason = "killed";
        session_end(s, "killed");
    } else {
        snprintf(msg, sizeof(msg), "the session has ended: %s (stopped by %s)",
                 r->message ? r->message : "its sandbox is gone", r->layer ? r->layer : "hub");
        error = msg;
        reason = "session-ended";
        session_end(s, s->ending && s->end_reason ? s->end_reason : "sandbox-ended");
    }

    json_t *rec = haudit_new("repl-execute", ok ? "success" : "failure");
    rec_session(rec, s);
    if (ctx->client)
        rec_peer(rec, ctx->client->ip, ctx->client->port);
    audit_set_str(rec, "event.reason", reason);
    audit_set_int(rec, "source.bytes", (int64_t)ctx->code_len);
    audit_set_int(rec, "destination.bytes", (int64_t)(strlen(output) + strlen(error)));
    audit_set_int(rec, "event.duration", (int64_t)(now - ctx->t0));
    if (ctx->code)
        audit_set(rec, "isolate.code", json_incref(ctx->code));
    if (!ok && r->layer)
        audit_set_str(rec, "isolate.layer", r->layer);
    haudit_write(srv->h, rec);

    if (ctx->close_after)
        session_end(s, "closed");
    if (!s->ending)
        arm_ms(s->ev_idle, srv->o.idle_timeout_s * 1000);
    struct client *c = ctx->client;
    if (c) {
        c->pending = NULL;
        reply(c, ok, output, error, s->secret);
        event_active(c->ev_resume, EV_TIMEOUT, 0);
    }
    json_decref(ctx->code);
    free(ctx);
    if (srv->pool_wanted)
        pool_schedule(srv, 0);
}

static void call_code(struct session *s, struct exec_ctx *ctx, const char *code, size_t len)
{
    struct repl_server *srv = s->srv;
    s->inflight++;
    json_t *args =
        json_pack("{s:s%,s:I}", "code", code, len, "timeout_ms", (json_int_t)srv->o.time_limit_ms);
    /* The hub's deadline: the runner's own limit, the grace for its interrupt, and the
     * start of the sandbox when this call is the one that starts it. */
    struct call_opts co = {
        .instance = s->tag,
        .timeout_ms =
            srv->o.time_limit_ms + REPL_KILL_GRACE_MS + (s->ready ? 0 : srv->cfg->start_timeout_ms),
    };
    hub_call(srv->h, &co, srv->app, "run", args, on_exec_done, ctx);
    json_decref(args);
}

static void session_warm(struct session *s)
{
    struct exec_ctx *ctx = xcalloc(1, sizeof(*ctx));
    ctx->sess = s;
    ctx->warm = true;
    ctx->t0 = now_mono_ns();
    call_code(s, ctx, "", 0);
}

/* ---- the pool ---- */

static void pool_fill(struct repl_server *srv)
{
    srv->pool_wanted = false;
    if (srv->shutting_down || hub_quit_requested(srv->h))
        return;
    if (now_mono_ns() < srv->pool_retry_ns) {
        pool_schedule(srv, (srv->pool_retry_ns - now_mono_ns()) / 1000000ULL + 1);
        return;
    }
    size_t spare = 0;
    struct session *s;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        if (!s->claimed && !s->ending)
            spare++;
    }
    /* One start per turn of the loop: a start holds the loop for a few milliseconds,
     * and the sessions in use come first. */
    if (spare < srv->o.pool && srv->n_sessions < srv->o.max_sessions) {
        session_warm(session_new(srv));
        if (spare + 1 < srv->o.pool)
            pool_schedule(srv, 0);
    }
}

static void on_pool(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pool_fill(arg);
}

static void pool_schedule(struct repl_server *srv, uint64_t delay_ms)
{
    if (srv->o.pool == 0 || srv->shutting_down)
        return;
    if (delay_ms == 0) {
        event_active(srv->ev_pool, EV_TIMEOUT, 0);
        return;
    }
    if (!evtimer_pending(srv->ev_pool, NULL))
        arm_ms(srv->ev_pool, delay_ms);
}

/* A new session for a client: a ready pool session, else one still starting (the
 * client's run waits behind its warm-up), else a fresh one while there is room. */
static struct session *session_claim(struct repl_server *srv, struct client *c)
{
    struct session *s, *best = NULL;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        if (s->claimed || s->ending)
            continue;
        if (!hub_spoke_running(srv->h, NULL, srv->app, s->tag)) {
            session_end(s, "sandbox-ended"); /* died while waiting in the pool */
            continue;
        }
        if (s->ready) {
            best = s;
            break;
        }
        if (!best)
            best = s;
    }
    if (!best) {
        if (srv->n_sessions >= srv->o.max_sessions)
            return NULL;
        best = session_new(srv);
    } else {
        best->prestarted = true;
    }
    best->claimed = true;
    best->t_last = now_mono_ns();
    str_copy(best->peer_ip, c->ip, sizeof(best->peer_ip));
    best->peer_port = c->port;
    json_t *rec = haudit_new("repl-session-start", "success");
    rec_session(rec, best);
    rec_peer(rec, c->ip, c->port);
    audit_set(rec, "isolate.session.prestarted", json_boolean(best->prestarted));
    audit_set_int(rec, "isolate.session.count", (int64_t)srv->n_sessions);
    haudit_write(srv->h, rec);
    return best;
}

/* ---- requests ---- */

static void handle_request(struct client *c, struct repl_request *req)
{
    struct repl_server *srv = c->srv;
    struct session *s;
    if (req->has_session) {
        s = session_find(srv, req->session_id);
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
            session_end(s, "sandbox-ended");
            refuse(c, "session-ended", s->secret,
                   "the session has ended: its sandbox is no longer running");
            return;
        }
    } else {
        s = session_claim(srv, c);
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
        pool_schedule(srv, POOL_REFILL_FALLBACK_MS);
    }
    struct exec_ctx *ctx = xcalloc(1, sizeof(*ctx));
    ctx->sess = s;
    ctx->client = c;
    ctx->t0 = now_mono_ns();
    ctx->code_len = req->code_len;
    ctx->close_after = req->close;
    if (srv->o.debug)
        ctx->code = audit_string(req->code, req->code_len, AUDIT_STR_CAP);
    s->exec = ctx;
    c->pending = ctx;
    evtimer_del(s->ev_idle);
    call_code(s, ctx, req->code, req->code_len);
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
        rec_peer(rec, ip, port);
        audit_set_str(rec, "event.reason", "too-many-connections");
        haudit_write(srv->h, rec);
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
    arm_ms(srv->ev_accept, ACCEPT_PAUSE_MS);
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
    srv->ev_sweep = event_new(base, -1, 0, on_sweep, srv);
    srv->ev_pool = evtimer_new(base, on_pool, srv);
    srv->ev_trash = evtimer_new(base, on_trash, srv);
    srv->ev_accept = evtimer_new(base, on_accept_again, srv);
    json_t *rec = haudit_new("repl-server-start", "success");
    audit_set_str(rec, "isolate.app", srv->app);
    audit_set_str(rec, "isolate.mode", isolation_name(cfg->isolation));
    audit_set_int(rec, "server.port", srv->port);
    audit_set_int(rec, "isolate.max_sessions", (int64_t)o->max_sessions);
    haudit_write(h, rec);
    pool_schedule(srv, 0);
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
    struct session *s;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        session_end(s, "shutdown");
    }
    on_sweep(-1, 0, srv);
    json_t *rec = haudit_new("repl-server-stop", "success");
    audit_set_str(rec, "isolate.app", srv->app);
    haudit_write(srv->h, rec);
}

void repl_server_free(struct repl_server *srv)
{
    if (!srv)
        return;
    trash_sweep(srv, true);
    free(srv->trash);
    event_free(srv->ev_sweep);
    event_free(srv->ev_pool);
    event_free(srv->ev_trash);
    event_free(srv->ev_accept);
    free(srv->app);
    free(srv);
}
