/* The repl-server's sessions: creation with a secret id, lookup, the calls that run
 * code in them, idle expiry, the pool of pre-started sessions, and the removal of what
 * an ended session leaves (its /data and spoke log).
 *
 * Re-entrancy: hub_call() may report before it returns, and its reports arrive while
 * the hub is in the middle of a spoke's frame. So nothing here ends a spoke from
 * inside a report: an ending session is only marked, and a deferred event closes it
 * (hub_spoke_close) from the top of the loop. */
#include "audit.h"
#include "runtime/runtime.h"
#include "log.h"
#include "replserver_impl.h"
#include "rmtree.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRASH_RETRY_MS 1000
#define TRASH_TRIES 30
#define POOL_BACKOFF_MIN_MS 500
#define POOL_BACKOFF_MAX_MS 30000

void repl_arm_ms(struct event *ev, uint64_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}

/* ---- audit ---- */

void repl_rec_session(json_t *rec, const struct session *s)
{
    audit_set_str(rec, "isolate.app", s->srv->app);
    audit_set_str(rec, "isolate.user", s->srv->cfg->user);
    audit_set_str(rec, "isolate.instance", s->tag);
    audit_set_str(rec, "isolate.mode", isolation_name(s->srv->cfg->isolation));
}

void repl_rec_peer(json_t *rec, const char *ip, uint16_t port)
{
    if (ip && ip[0]) {
        audit_set_str(rec, "source.ip", ip);
        audit_set_int(rec, "source.port", port);
    }
}

/* ---- cleanup of ended sessions ---- */

/* true once path is gone. By descriptors only (lib/rmtree.c): a session can build a
 * directory chain longer than PATH_MAX in its /data, which path-based nftw() cannot
 * remove (it gave up with ENAMETOOLONG, and the disk filled session after session). */
static bool remove_tree(const char *path)
{
    return rmtree(path) == 0;
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
        repl_arm_ms(srv->ev_trash, TRASH_RETRY_MS);
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
        repl_arm_ms(srv->ev_trash, 50);
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
    hex_encode(raw, bytes, out);
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

struct session *repl_session_find(struct repl_server *srv, const char *secret)
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

void repl_session_end(struct session *s, const char *reason)
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
    repl_rec_session(rec, s);
    audit_set_str(rec, "event.reason", s->end_reason ? s->end_reason : "ended");
    audit_set(rec, "isolate.session.claimed", json_boolean(s->claimed));
    audit_set_int(rec, "isolate.session.runs", s->runs);
    audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - s->t_start));
    haudit_note(srv->h, rec);
    /* The session's /data and spoke log: named as the hub names them (spoke_env.c's
     * datadir_path, spoke.c's log path). */
    const struct hub_config *cfg = srv->cfg;
    trash_add(srv, datadir_path(cfg->data_root, cfg->user, srv->app, s->tag));
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
        repl_pool_schedule(srv, 0);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct session *s = arg;
    if (s->exec)
        repl_arm_ms(s->ev_idle, s->srv->o.idle_timeout_s * 1000);
    else
        repl_session_end(s, "idle");
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
    repl_rec_session(rec, s);
    audit_set_str(rec, "event.reason", r->layer ? r->layer : "hub");
    audit_set_str(rec, "message", r->message ? r->message : "");
    haudit_note(srv->h, rec);
    if (!hub_quit_requested(srv->h))
        log_warnx("repl-server: could not pre-start a session: %s", r->message ? r->message : "");
    repl_session_end(s, "start-failed");
    /* A start that fails would fail again at once: wait, longer each time. */
    srv->pool_backoff_ms = srv->pool_backoff_ms ? srv->pool_backoff_ms * 2 : POOL_BACKOFF_MIN_MS;
    if (srv->pool_backoff_ms > POOL_BACKOFF_MAX_MS)
        srv->pool_backoff_ms = POOL_BACKOFF_MAX_MS;
    srv->pool_retry_ns = now_mono_ns() + srv->pool_backoff_ms * 1000000ULL;
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
    } else if (r->code == HUB_ERR_AUDIT) {
        /* Refused before it ran: its record could not be written. A session whose
         * sandbox never started has nothing to keep. */
        snprintf(msg, sizeof(msg), "the execution was refused: %s", r->message ? r->message : "");
        error = msg;
        reason = "audit-unavailable";
        if (!hub_spoke_running(srv->h, NULL, srv->app, s->tag))
            repl_session_end(s, "audit-unavailable");
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
        repl_session_end(s, "killed");
    } else {
        snprintf(msg, sizeof(msg), "the session has ended: %s (stopped by %s)",
                 r->message ? r->message : "its sandbox is gone", r->layer ? r->layer : "hub");
        error = msg;
        reason = "session-ended";
        repl_session_end(s, s->ending && s->end_reason ? s->end_reason : "sandbox-ended");
    }

    json_t *rec = haudit_new("repl-execute", ok ? "success" : "failure");
    repl_rec_session(rec, s);
    if (ctx->client)
        repl_rec_peer(rec, ctx->client->ip, ctx->client->port);
    audit_set_str(rec, "event.reason", reason);
    audit_set_int(rec, "source.bytes", (int64_t)ctx->code_len);
    audit_set_int(rec, "destination.bytes", (int64_t)(strlen(output) + strlen(error)));
    audit_set_int(rec, "event.duration", (int64_t)(now - ctx->t0));
    if (ctx->code)
        audit_set(rec, "isolate.code", json_incref(ctx->code));
    if (!ok && r->layer)
        audit_set_str(rec, "isolate.layer", r->layer);
    haudit_note(srv->h, rec);

    if (ctx->close_after)
        repl_session_end(s, "closed");
    if (!s->ending)
        repl_arm_ms(s->ev_idle, srv->o.idle_timeout_s * 1000);
    if (ctx->client)
        repl_client_answer(ctx->client, ok, output, error, s->secret);
    json_decref(ctx->code);
    free(ctx);
    if (srv->pool_wanted)
        repl_pool_schedule(srv, 0);
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
        .data_tmpfs_mb = srv->o.data_mb,
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
        repl_pool_schedule(srv, (srv->pool_retry_ns - now_mono_ns()) / 1000000ULL + 1);
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
            repl_pool_schedule(srv, 0);
    }
}

static void on_pool(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pool_fill(arg);
}

void repl_pool_schedule(struct repl_server *srv, uint64_t delay_ms)
{
    if (srv->o.pool == 0 || srv->shutting_down)
        return;
    if (delay_ms == 0) {
        event_active(srv->ev_pool, EV_TIMEOUT, 0);
        return;
    }
    if (!evtimer_pending(srv->ev_pool, NULL))
        repl_arm_ms(srv->ev_pool, delay_ms);
}

size_t repl_sessions_of(struct repl_server *srv, const char *principal)
{
    size_t n = 0;
    struct session *s;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        if (s->claimed && !s->ending && strcmp(s->owner, principal) == 0)
            n++;
    }
    return n;
}

/* A new session for a client: a ready pool session, else one still starting (the
 * client's run waits behind its warm-up), else a fresh one while there is room. */
struct session *repl_session_claim(struct repl_server *srv, struct client *c)
{
    struct session *s, *best = NULL;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        if (s->claimed || s->ending)
            continue;
        if (!hub_spoke_running(srv->h, NULL, srv->app, s->tag)) {
            repl_session_end(s, "sandbox-ended"); /* died while waiting in the pool */
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
    str_copy(best->owner, c->principal, sizeof(best->owner));
    best->peer_port = c->port;
    json_t *rec = haudit_new("repl-session-start", "success");
    repl_rec_session(rec, best);
    repl_rec_peer(rec, c->ip, c->port);
    audit_set(rec, "isolate.session.prestarted", json_boolean(best->prestarted));
    audit_set_int(rec, "isolate.session.count", (int64_t)srv->n_sessions);
    haudit_note(srv->h, rec);
    return best;
}

/* ---- runs ---- */

void repl_session_exec(struct session *s, struct client *c, const struct repl_request *req)
{
    struct repl_server *srv = s->srv;
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

void repl_sessions_init(struct repl_server *srv)
{
    srv->ev_sweep = event_new(srv->base, -1, 0, on_sweep, srv);
    srv->ev_pool = evtimer_new(srv->base, on_pool, srv);
    srv->ev_trash = evtimer_new(srv->base, on_trash, srv);
}

void repl_sessions_end_all(struct repl_server *srv, const char *reason)
{
    struct session *s;
    TAILQ_FOREACH(s, &srv->sessions, link)
    {
        repl_session_end(s, reason);
    }
    on_sweep(-1, 0, srv);
}

void repl_sessions_free(struct repl_server *srv)
{
    trash_sweep(srv, true);
    free(srv->trash);
    event_free(srv->ev_sweep);
    event_free(srv->ev_pool);
    event_free(srv->ev_trash);
}
