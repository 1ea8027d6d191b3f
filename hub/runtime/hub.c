/* The hub object: configuration, manifests, the event loop's signal handling, the
 * shared network pieces of namespace mode, and the entry points for calls. */
#include "net/net.h"
#include "held.h"
#include "hostlock.h"
#include "internal.h"
#include "log.h"
#include "proc.h"
#include "spoke_env.h"
#include "util.h"
#include "otlp.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* How long hub_spoke_stop() waits for a killed spoke to be reaped. */
#define STOP_WAIT_NS (10ULL * 1000000000ULL)
/* How long spokes get to exit by themselves when the hub ends. */
#define SHUTDOWN_GRACE_MS 500

static void deny_all(struct perm_hook *h, const struct perm_request *q, perm_done_fn done,
                     void *done_ud)
{
    (void)h;
    (void)q;
    done(done_ud, PERM_DENY, "no permission hook installed");
}

static void free_plain(struct perm_hook *h)
{
    free(h);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct hub *h = arg;
    log_info("signal %d: shutting down", (int)sig);
    h->quit = true;
    event_base_loopbreak(h->base);
}

/* A hundred spokes hold a few descriptors each: use all the hub is allowed. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* audit.transcript, or beside the audit log: hub.jsonl -> hub.transcript.jsonl. */
static char *transcript_path(const struct hub_config *cfg, char *err, size_t errlen)
{
    if (cfg->audit_transcript)
        return xstrdup(cfg->audit_transcript);
    const char *a = cfg->audit_path;
    if (strcmp(a, "-") == 0) {
        snprintf(err, errlen,
                 "audit.content \"full\" keeps a transcript in a file: name it with "
                 "audit.transcript when the audit goes to stdout");
        return NULL;
    }
    size_t n = strlen(a);
    if (n > 6 && strcmp(a + n - 6, ".jsonl") == 0)
        n -= 6;
    return xasprintf("%.*s.transcript.jsonl", (int)n, a);
}

static int open_audit(struct hub *h, char *err, size_t errlen)
{
    const char *path = h->cfg->audit_path;
    if (strcmp(path, "-") != 0) {
        char *copy = xstrdup(path);
        mkdir_parents(dirname(copy), 0750);
        free(copy);
    }
    h->audit = audit_open(path, "hub", err, errlen);
    if (!h->audit)
        return -1;
    if (haudit_chain_start(h, err, errlen) < 0) {
        audit_close(h->audit);
        h->audit = NULL;
        return -1;
    }
    if (h->cfg->audit_content == AUDIT_CONTENT_FULL) {
        char *tpath = transcript_path(h->cfg, err, errlen);
        if (tpath) {
            char *copy = xstrdup(tpath);
            mkdir_parents(dirname(copy), 0750);
            free(copy);
            h->transcript = audit_open_mode(tpath, "hub-transcript", 0600, err, errlen);
            free(tpath);
        }
        if (!h->transcript) {
            audit_close(h->audit);
            audit_close(h->transcript);
            h->audit = NULL;
            return -1;
        }
        audit_say_outages(h->transcript, "tool calls are refused (audit.content is \"full\": "
                                         "no call runs without its arguments on record)");
    }
    /* Every writer of this log (runtime, agent, permissions, LLM) shares one account of
     * an outage: said when it starts and when it ends, not once per lost record. */
    audit_say_outages(h->audit, "whatever must be logged before it happens (tool calls, "
                                "permission decisions, data relayed between apps) is refused, "
                                "and records of what already happened are lost, until it can");
    return 0;
}

struct hub *hub_new(struct hub_config *cfg, struct manifest_set *ms, struct event_base *base,
                    bool debug, char *err, size_t errlen)
{
    /* The LLM key must never reach a spoke: a manifest that names it is a config error. */
    for (size_t i = 0; i < ms->n; i++)
        if (manifest_env_names(ms->v[i], cfg->llm_key_env)) {
            snprintf(err, errlen, "%s: env: %s is the LLM key variable (llm.api_key_env)",
                     ms->v[i]->file, cfg->llm_key_env);
            return NULL;
        }
    if (cfg->isolation == ISO_NAMESPACE && veth_pool_size(&cfg->veth_pool) == 0) {
        snprintf(err, errlen, "the veth pool has no usable /30");
        return NULL;
    }
    if (cfg->isolation == ISO_NAMESPACE && proc_check_host_ids(cfg, err, errlen) < 0)
        return NULL;
    struct hub *h = xcalloc(1, sizeof(*h));
    h->cfg = cfg;
    h->ms = ms;
    h->base = base;
    h->debug = debug;
    LIST_INIT(&h->procs);
    LIST_INIT(&h->calls);
    TAILQ_INIT(&h->start_queue);
    if (open_audit(h, err, errlen) < 0) {
        free(h);
        return NULL;
    }
    h->spoke_log_dir = xasprintf("%s/spokes", cfg->run_dir);
    if (mkdir_parents(h->spoke_log_dir, 0700) < 0) {
        snprintf(err, errlen, "run directory %s: %s", h->spoke_log_dir, strerror(errno));
        audit_close(h->audit);
        audit_close(h->transcript);
        free(h->spoke_log_dir);
        free(h);
        return NULL;
    }
    h->veth_slots = slots_new(veth_pool_size(&cfg->veth_pool));
    h->lock_dir = -1;
    h->secrets = secret_store_new(cfg);
    spoke_secrets_known(h->secrets, ms, &h->known_secrets);
    h->perm = xcalloc(1, sizeof(*h->perm));
    h->perm->ask = deny_all;
    h->perm->free = free_plain;
    h->sampling = sampling_hook_none();
    h->elicit = elicit_hook_decline();
    /* A spoke that dies while the hub writes to it must not kill the hub. */
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    h->ev_sigint = evsignal_new(base, SIGINT, on_signal, h);
    h->ev_sigterm = evsignal_new(base, SIGTERM, on_signal, h);
    event_add(h->ev_sigint, NULL);
    event_add(h->ev_sigterm, NULL);
    haudit_tick_start(h);
    h->otlp = otlp_from_env();
    return h;
}

int hub_reopen_logs(struct hub *h)
{
    /* One write(2) per record and a single-threaded loop: the swap of descriptors
     * falls between two records, so no line is torn or split across the files. */
    int rc = audit_reopen(h->audit);
    if (rc < 0)
        log_warn("SIGHUP: cannot reopen the audit log %s; still writing to the old file",
                 audit_path(h->audit));
    if (h->transcript && audit_reopen(h->transcript) < 0) {
        log_warn("SIGHUP: cannot reopen the transcript %s; still writing to the old file",
                 audit_path(h->transcript));
        rc = -1;
    }
    if (h->proxy && proxy_alive(h->proxy) && proxy_pid(h->proxy) > 0)
        kill(proxy_pid(h->proxy), SIGHUP); /* netproxy reopens its own (netproxy/main.c) */
    return rc;
}

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    hub_reopen_logs(arg);
}

void hub_reopen_on_sighup(struct hub *h)
{
    if (h->ev_sighup)
        return;
    h->ev_sighup = evsignal_new(h->base, SIGHUP, on_sighup, h);
    event_add(h->ev_sighup, NULL);
}

void hub_set_permission_hook(struct hub *h, struct perm_hook *hook)
{
    h->perm->free(h->perm);
    h->perm = hook;
}

void hub_set_sampling_hook(struct hub *h, struct sampling_hook *hook)
{
    h->sampling->free(h->sampling);
    h->sampling = hook;
}

void hub_set_elicit_hook(struct hub *h, struct elicit_hook *hook)
{
    h->elicit->free(h->elicit);
    h->elicit = hook;
}

void hub_set_first_seen(struct hub *h, hub_first_seen_fn fn, void *ud)
{
    h->first_seen = fn;
    h->first_seen_ud = ud;
}

static void on_proxy_error(void *ud, const char *key, const char *message)
{
    struct hub *h = ud;
    for (size_t i = 0; i < h->n_spokes; i++) {
        struct spoke *sp = h->spokes[i];
        if (sp->state == SP_STOPPED || !sp->proxy_key[0])
            continue;
        if (!key || strcmp(sp->proxy_key, key) == 0)
            spoke_kill(sp, "netproxy", false, "spoke %s: %s", sp->m->name, message);
    }
}

int hub_network_up(struct hub *h, char *err, size_t errlen)
{
    if (h->lock_dir < 0) {
        h->lock_dir = hostlock_dir_open(HOSTLOCK_DIR, err, errlen);
        if (h->lock_dir < 0)
            return -1;
    }
    if (!h->gw) {
        h->gw = gateway_new(h->cfg->gateway_netns, err, errlen);
        if (!h->gw)
            return -1;
        /* Without it spokes still have HTTPS_PROXY: said once, not fatal. */
        char why[512];
        if (h->cfg->transparent_egress &&
            gateway_enable_egress(h->gw, h->cfg->proxy_port, why, sizeof(why)) < 0)
            log_warnx("transparent egress is off (%s): spokes reach the network through "
                      "HTTPS_PROXY only",
                      why);
    }
    if (!h->proxy) {
        if (strcmp(h->cfg->netproxy_audit, "-") != 0) {
            char *copy = xstrdup(h->cfg->netproxy_audit);
            mkdir_parents(dirname(copy), 0750);
            free(copy);
        }
        char *log_path = xasprintf("%s/netproxy.log", h->cfg->run_dir);
        h->proxy = proxy_sup_new(h->base, h->audit, h->cfg, log_path, h->debug, on_proxy_error, h,
                                 err, errlen);
        free(log_path);
        if (!h->proxy)
            return -1;
        proxy_set_otlp(h->proxy, h->otlp);
    }
    return 0;
}

int hub_ca_up(struct hub *h, char *err, size_t errlen)
{
    if (hub_network_up(h, err, errlen) < 0)
        return -1;
    if (!h->ca_ready) {
        if (hubca_ensure(h->cfg, &h->ca, err, errlen) < 0)
            return -1;
        h->ca_ready = true;
        proxy_set_ca(h->proxy, h->ca.cert_pem, h->ca.key_pem);
        char why[512];
        if (!h->secrets_watch &&
            !(h->secrets_watch = secrets_watch_start(h->base, h->secrets, h->proxy, why,
                                                     sizeof(why))))
            log_warnx("%s: a rotated secret reaches running spokes only when they restart", why);
    }
    return 0;
}

void hub_free(struct hub *h)
{
    if (!h)
        return;
    h->quit = true;
    for (size_t i = 0; i < h->n_spokes; i++)
        spoke_free(h->spokes[i]);
    free(h->spokes);
    proc_reap_all(h, SHUTDOWN_GRACE_MS);
    proxy_sup_free(h->proxy);
    secrets_watch_free(h->secrets_watch);
    hubca_clear(&h->ca);
    spoke_secrets_free(&h->known_secrets);
    secret_store_free(h->secrets);
    gateway_free(h->gw);
    slots_free(h->veth_slots);
    if (h->lock_dir >= 0)
        close(h->lock_dir);
    h->perm->free(h->perm);
    h->sampling->free(h->sampling);
    h->elicit->free(h->elicit);
    if (h->ev_sigchld)
        event_free(h->ev_sigchld);
    if (h->ev_start_queue)
        event_free(h->ev_start_queue); /* empty: spoke_free() took every spoke off it */
    event_free(h->ev_sigint);
    event_free(h->ev_sigterm);
    if (h->ev_sighup)
        event_free(h->ev_sighup);
    if (h->ev_audit_tick)
        event_free(h->ev_audit_tick);
    otlp_free(h->otlp); /* its last batch, for a moment at most */
    audit_close(h->audit);
    audit_close(h->transcript);
    manifest_set_free(&h->retired);
    free(h->spoke_log_dir);
    free(h->held_loader);
    free(h);
}

uint64_t hub_call_timeout_ns(const struct hub *h, const struct manifest *m,
                             const struct call_opts *o)
{
    uint64_t ms = h->cfg->call_timeout_ms;
    if (m->limits.call_s)
        ms = m->limits.call_s * 1000;
    if (o && o->timeout_ms)
        ms = o->timeout_ms;
    return ms * 1000000ULL;
}

static void fail_now(hub_call_done done, void *ud, int code, const char *layer, const char *msg)
{
    struct call_result r = {.code = code, .message = msg, .layer = layer};
    done(ud, &r);
}

void hub_call(struct hub *h, const struct call_opts *o, const char *app, const char *tool,
              const json_t *args, hub_call_done done, void *ud)
{
    char msg[300];
    const char *user = o->user ? o->user : h->cfg->user;
    if (!user_id_valid(user) || (o->instance && !user_id_valid(o->instance))) {
        fail_now(done, ud, HUB_ERR_INVALID_ARGS, "hub-validation", "invalid user or instance id");
        return;
    }
    const struct manifest *m = manifest_find(h->ms, app);
    const struct manifest_tool *t = m ? manifest_tool(m, tool) : NULL;
    if (!t) {
        snprintf(msg, sizeof(msg), "no tool %.64s.%.64s is installed", app, tool);
        fail_now(done, ud, HUB_ERR_UNKNOWN_TOOL, "hub-validation", msg);
        return;
    }
    if (!json_is_object(args)) {
        fail_now(done, ud, HUB_ERR_INVALID_ARGS, "hub-validation", "arguments must be an object");
        return;
    }
    if (h->quit) {
        fail_now(done, ud, HUB_ERR_SHUTDOWN, "hub", "the hub is shutting down");
        return;
    }
    uint64_t now = now_mono_ns();
    uint64_t deadline = now + hub_call_timeout_ns(h, m, o);
    struct call *c = call_new(h, o, m, t, args, NULL, NULL, deadline, done, ud);
    if (!c) {
        snprintf(msg, sizeof(msg), "no room for another spoke (max_spokes %zu)",
                 h->cfg->max_spokes);
        fail_now(done, ud, HUB_ERR_BUSY, "hub", msg);
        return;
    }
    /* The deadline's own start, so that "missed its deadline of N ms" is the timeout
     * the caller asked for even when setting the call up took a while. */
    c->t_start = now;
    call_start(c);
}

bool hub_request_method_known(const char *method)
{
    return mcp_method_tool(method) != NULL;
}

void hub_request(struct hub *h, const struct call_opts *o, const char *app, const char *method,
                 const json_t *params, hub_call_done done, void *ud)
{
    char msg[300];
    const char *user = o->user ? o->user : h->cfg->user;
    const struct manifest_tool *t = mcp_method_tool(method);
    const struct manifest *m = manifest_find(h->ms, app);
    if (!user_id_valid(user) || (o->instance && !user_id_valid(o->instance))) {
        fail_now(done, ud, HUB_ERR_INVALID_ARGS, "hub-validation", "invalid user or instance id");
        return;
    }
    if (!t || !m) {
        snprintf(msg, sizeof(msg), !m ? "no app %.64s is installed" : "the hub does not send %.64s",
                 !m ? app : method);
        fail_now(done, ud, HUB_ERR_UNKNOWN_TOOL, "hub-validation", msg);
        return;
    }
    if (!json_is_object(params)) {
        fail_now(done, ud, HUB_ERR_INVALID_ARGS, "hub-validation", "params must be an object");
        return;
    }
    if (h->quit) {
        fail_now(done, ud, HUB_ERR_SHUTDOWN, "hub", "the hub is shutting down");
        return;
    }
    uint64_t now = now_mono_ns();
    struct call *c =
        call_new(h, o, m, t, params, NULL, NULL, now + hub_call_timeout_ns(h, m, o), done, ud);
    if (!c) {
        snprintf(msg, sizeof(msg), "no room for another spoke (max_spokes %zu)",
                 h->cfg->max_spokes);
        fail_now(done, ud, HUB_ERR_BUSY, "hub", msg);
        return;
    }
    c->method = t->name;
    c->t_start = now;
    call_start(c);
}

void hub_call_cancel(struct hub *h, void *ud)
{
    /* call_cancel() may end other calls (the spoke's next one runs): start over after
     * each. */
    for (bool again = true; again;) {
        again = false;
        struct call *c;
        LIST_FOREACH(c, &h->calls, link)
        {
            if (c->done && c->ud == ud && c->state != CALL_DONE) {
                call_cancel(c, "cancelled by the caller");
                again = true;
                break;
            }
        }
    }
}

char *hub_spoke_log_path(const struct hub_config *cfg, const char *user, const char *app,
                         const char *instance)
{
    return instance ? xasprintf("%s/spokes/%s/%s.%s.log", cfg->run_dir, user, app, instance)
                    : xasprintf("%s/spokes/%s/%s.log", cfg->run_dir, user, app);
}

const json_t *hub_spoke_server_info(struct hub *h, const char *user, const char *app,
                                    const char *instance)
{
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, instance, false);
    return sp && sp->state != SP_STOPPED ? sp->init_result : NULL;
}

/* The state of a synchronous call lives on the heap: if the loop is left early (a
 * signal), the call may still finish later and must find it. */
struct sync_state {
    bool done, abandoned;
    json_t *result;
    int code;
    char message[600];
    const char *layer;
};

static void sync_done(void *ud, const struct call_result *r)
{
    struct sync_state *st = ud;
    if (st->abandoned) {
        free(st);
        return;
    }
    st->done = true;
    st->result = r->result ? json_incref(r->result) : NULL;
    st->code = r->code;
    st->layer = r->layer;
    if (r->message)
        str_copy(st->message, r->message, sizeof(st->message));
}

static int run_sync(struct hub *h, const struct call_opts *o, const char *app, const char *name,
                    bool request, const json_t *args, json_t **result, char *err, size_t errlen,
                    const char **layer)
{
    struct sync_state *st = xcalloc(1, sizeof(*st));
    if (request)
        hub_request(h, o, app, name, args, sync_done, st);
    else
        hub_call(h, o, app, name, args, sync_done, st);
    while (!st->done && !h->quit)
        event_base_loop(h->base, EVLOOP_ONCE);
    if (!st->done) {
        st->abandoned = true;
        snprintf(err, errlen, "interrupted");
        if (layer)
            *layer = "hub";
        return HUB_ERR_SHUTDOWN;
    }
    int code = st->code;
    *result = st->result;
    if (!st->result)
        snprintf(err, errlen, "%s", st->message);
    if (layer)
        *layer = st->layer;
    free(st);
    return code;
}

int hub_call_sync(struct hub *h, const struct call_opts *o, const char *app, const char *tool,
                  const json_t *args, json_t **result, char *err, size_t errlen, const char **layer)
{
    return run_sync(h, o, app, tool, false, args, result, err, errlen, layer);
}

int hub_request_sync(struct hub *h, const struct call_opts *o, const char *app, const char *method,
                     const json_t *params, json_t **result, char *err, size_t errlen,
                     const char **layer)
{
    return run_sync(h, o, app, method, true, params, result, err, errlen, layer);
}

static bool proc_alive(const struct hub *h, const char *spoke_id)
{
    const struct proc *p;
    LIST_FOREACH(p, &h->procs, link)
    {
        if (strcmp(p->spoke_id, spoke_id) == 0)
            return true;
    }
    return false;
}

void hub_spoke_stop(struct hub *h, const char *user, const char *app, const char *instance)
{
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, instance, false);
    if (!sp || sp->state == SP_STOPPED)
        return;
    char id[33];
    str_copy(id, sp->id, sizeof(id));
    spoke_kill(sp, "stop", false, "spoke %s stopped", app);
    uint64_t until = now_mono_ns() + STOP_WAIT_NS;
    while ((proc_alive(h, id) || (h->proxy && proxy_alive(h->proxy) && proxy_pending(h->proxy))) &&
           now_mono_ns() < until && !h->quit)
        event_base_loop(h->base, EVLOOP_ONCE);
}

void hub_spoke_prestart(struct hub *h, const char *user, const char *app)
{
    if (h->quit || !user_id_valid(user ? user : h->cfg->user))
        return;
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, NULL, true);
    if (sp)
        spoke_prestart(sp);
    else
        log_warnx("cannot start %s ahead of its calls: no such app, or no room for another "
                  "spoke (max_spokes %zu)",
                  app, h->cfg->max_spokes);
}

void hub_spoke_hold(struct hub *h, const char *user, const char *app)
{
    const struct manifest *m = manifest_find(h->ms, app);
    if (h->quit || !m || !held_allowed(h, m) || !user_id_valid(user ? user : h->cfg->user))
        return;
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, NULL, true);
    if (sp)
        spoke_hold_ahead(sp);
}

enum prestart hub_app_prestart(const struct hub *h, const struct manifest *m)
{
    return m->prestart != PRESTART_UNSET ? m->prestart : h->cfg->prestart;
}

void hub_spoke_close(struct hub *h, const char *user, const char *app, const char *instance)
{
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, instance, false);
    if (sp)
        spoke_close(h, sp, "closed");
}

void spoke_close(struct hub *h, struct spoke *sp, const char *why)
{
    spoke_kill(sp, "stop", true, "spoke %s %s", sp->m->name, why);
    for (size_t i = 0; i < h->n_spokes; i++)
        if (h->spokes[i] == sp) {
            h->spokes[i] = h->spokes[--h->n_spokes];
            break;
        }
    spoke_free(sp);
}

bool hub_spoke_running(struct hub *h, const char *user, const char *app, const char *instance)
{
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, instance, false);
    return sp && sp->state != SP_STOPPED;
}

void hub_spoke_timing(struct hub *h, const char *user, const char *app, const char *instance,
                      uint64_t *init_ns, uint64_t *ready_ns)
{
    struct spoke *sp = spoke_get(h, user ? user : h->cfg->user, app, instance, false);
    *init_ns = sp ? sp->last_init_ns : 0;
    *ready_ns = sp ? sp->last_ready_ns : 0;
}

bool hub_quit_requested(const struct hub *h)
{
    return h->quit;
}

struct audit *hub_audit(struct hub *h)
{
    return h->audit;
}

void hub_resource_counts(const struct hub *h, size_t *procs, size_t *slots)
{
    *procs = h->n_procs;
    *slots = slots_used(h->veth_slots);
}
