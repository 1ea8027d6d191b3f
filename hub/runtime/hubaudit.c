/* The hub's audit records: ECS field names (lib/audit.h) plus isolate.* for the
 * spoke, user, app, tool and isolation mode.
 *
 * Two kinds of record, two writers. A record of a decision that lets something happen
 * (a tool call reaching its spoke, a permission granted, a result relayed to another
 * app, an answer handed to a spoke) is written before it happens with haudit_write(),
 * whose caller refuses the action when the record cannot be written (error layer
 * "audit", HUB_ERR_AUDIT): a decision that cannot be logged is not taken. A record of
 * something that already happened (a call's end, a spoke's exit) cannot undo it:
 * haudit_note() writes it best-effort. Either way the loss is counted and the outage is
 * said once on stderr (audit_say_outages, hub.c), and nothing is sticky: the first
 * record that fits again ends the outage. */
#include "internal.h"
#include "log.h"
#include "auditchain.h"
#include "auditkey.h"
#include "otlp.h"
#include "net/net.h"
#include "sha256.h"
#include "spoke_env.h"
#include "util.h"

#include <libgen.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

json_t *haudit_new(const char *action, const char *outcome)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    return rec;
}

void haudit_spoke(json_t *rec, const struct spoke *sp)
{
    audit_set_str(rec, "isolate.spoke.id", sp->id);
    audit_set_str(rec, "isolate.user", sp->user);
    audit_set_str(rec, "isolate.app", sp->m->name);
    if (sp->instance)
        audit_set_str(rec, "isolate.instance", sp->instance);
    audit_set_str(rec, "isolate.mode", isolation_name(sp->hub->cfg->isolation));
    if (sp->version)
        audit_set_str(rec, "isolate.mcp.protocol_version", mcpver_name(sp->version));
}

void haudit_call(json_t *rec, const struct call *c)
{
    haudit_spoke(rec, c->target);
    audit_set_str(rec, "isolate.tool", c->tool->name);
    audit_set_str(rec, "isolate.call.id", c->id);
    audit_set_int(rec, "isolate.call.depth", c->depth);
    if (c->parent)
        audit_set_str(rec, "isolate.call.parent", c->parent->id);
    audit_set_str(rec, "isolate.caller.app", c->caller ? c->caller->m->name : "user");
    /* ECS's tracing fields: the call's span in the client's trace (or its own). */
    audit_set_str(rec, "trace.id", c->trace.trace_id);
    audit_set_str(rec, "span.id", c->trace.span_id);
    if (c->trace.parent_id[0])
        audit_set_str(rec, "isolate.span.parent", c->trace.parent_id);
}

/* rec["a"]["b"]["c"] (c may be NULL) as a string, or NULL. */
static const char *rec_str(const json_t *rec, const char *a, const char *b, const char *c)
{
    const json_t *v = json_object_get(json_object_get(rec, a), b);
    if (c)
        v = json_object_get(v, c);
    return json_string_value(v);
}

static bool is_refusal(const char *action, const json_t *rec)
{
    const char *outcome = rec_str(rec, "event", "outcome", NULL);
    if (!outcome || strcmp(outcome, "failure") != 0)
        return false;
    if (strcmp(action, "permission") == 0)
        return true;
    /* A mediated call refused by the user's answer or by the hub's checks (an unknown
     * tool, a cycle, arguments that do not fit), not one that merely failed. */
    const char *layer = rec_str(rec, "isolate", "layer", NULL);
    return strcmp(action, "isolate-call") == 0 && layer &&
           (strcmp(layer, "permission") == 0 || strcmp(layer, "hub-validation") == 0);
}

/* isolate.first_seen on the records a SIEM alerts on when they are new for the user
 * and app: a tool call (the tool the app uses: its own when the user calls it, another
 * app's when it calls one) and a refusal. */
static void mark_first_seen(struct hub *h, json_t *rec)
{
    if (!h->first_seen)
        return;
    const char *action = rec_str(rec, "event", "action", NULL);
    const char *user = rec_str(rec, "isolate", "user", NULL);
    const char *app = rec_str(rec, "isolate", "app", NULL);
    const char *tool = rec_str(rec, "isolate", "tool", NULL);
    const char *caller = rec_str(rec, "isolate", "caller", "app");
    if (!action || !user)
        return;
    const char *who = caller && strcmp(caller, "user") != 0 ? caller : app;
    char what[600];
    if (strcmp(action, "tool-call-start") == 0) {
        if (!app || !tool)
            return;
        snprintf(what, sizeof(what), "tool:%s.%s", app, tool);
    } else if (is_refusal(action, rec)) {
        const char *cat = rec_str(rec, "isolate", "permission", "category");
        snprintf(what, sizeof(what), "refused:%s%s%s:%s.%s", action, cat ? ":" : "", cat ? cat : "",
                 app ? app : "?", tool ? tool : "?");
    } else {
        return;
    }
    if (!who)
        return;
    int seen = h->first_seen(h->first_seen_ud, user, who, what);
    if (seen >= 0)
        audit_set(rec, "isolate.first_seen", json_boolean(seen == 1));
}

int haudit_write(struct hub *h, json_t *rec)
{
    mark_first_seen(h, rec);
    return audit_write(h->audit, rec);
}

void haudit_note(struct hub *h, json_t *rec)
{
    mark_first_seen(h, rec);
    (void)audit_write(h->audit, rec);
}

void haudit_refusal(const struct hub *h, int err, char *msg, size_t len, const char *fmt, ...)
{
    char action[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(action, sizeof(action), fmt, ap);
    va_end(ap);
    snprintf(msg, len, "the audit log %s cannot be written (%s); refusing to %s unlogged",
             audit_path(h->audit), strerror(err), action);
}

/* SHA-256 of v's canonical JSON (compact, keys sorted) as 64 hex digits: the same value
 * gives the same hash in every record, whatever order its keys came in. */
static json_t *content_hash(const json_t *v)
{
    char *dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!dump)
        return NULL;
    char hex[2 * SHA256_LEN + 1];
    bool ok = sha256_hex(dump, strlen(dump), hex);
    free(dump);
    return ok ? json_string(hex) : NULL;
}

/* The transcript's record: the audit record's action and isolate.* fields (call id,
 * app, tool, user...) and the content under isolate.NAME. */
static json_t *transcript_record(const json_t *rec, const char *name, const json_t *value)
{
    json_t *event = json_object_get(rec, "event");
    json_t *t = haudit_new(json_string_value(json_object_get(event, "action")),
                           json_string_value(json_object_get(event, "outcome")));
    json_t *iso = json_deep_copy(json_object_get(rec, "isolate"));
    json_object_set_new(t, "isolate", iso ? iso : json_object());
    char path[64];
    snprintf(path, sizeof(path), "isolate.%s", name);
    audit_set(t, path, json_deep_copy(value));
    return t;
}

int haudit_arguments(struct hub *h, json_t *rec, const json_t *args)
{
    if (h->cfg->audit_content == AUDIT_CONTENT_NONE || !args)
        return 0;
    json_t *hashes = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v)
    {
        json_t *hash = content_hash(v);
        if (hash)
            json_object_set_new(hashes, k, hash);
    }
    audit_set(rec, "isolate.arguments_sha256", hashes);
    if (!h->transcript)
        return 0;
    return audit_write(h->transcript, transcript_record(rec, "arguments", args));
}

void haudit_result(struct hub *h, json_t *rec, const json_t *result)
{
    if (h->cfg->audit_content == AUDIT_CONTENT_NONE || !result)
        return;
    audit_set(rec, "isolate.result_sha256", content_hash(result));
    if (h->transcript)
        (void)audit_write(h->transcript, transcript_record(rec, "result", result));
}

int haudit_chain(const struct hub_config *cfg, struct audit *a, char *err, size_t errlen)
{
    char *path = config_audit_key_path(cfg);
    char *dir = xstrdup(path);
    mkdir_parents(dirname(dir), 0700);
    free(dir);
    EVP_PKEY *key = auditkey_load_or_create(path, err, errlen);
    free(path);
    /* The hub still runs, its records still chained: `hub audit verify` then says that
     * no checkpoint seals them (exit 4), and so does this warning. */
    if (!key)
        log_warnx("%s: the audit's checkpoints are not signed", err);
    int rc = auditchain_attach(a, key, NULL, err, errlen);
    EVP_PKEY_free(key);
    return rc;
}

int haudit_chain_start(struct hub *h, char *err, size_t errlen)
{
    return haudit_chain(h->cfg, h->audit, err, errlen);
}

static void on_audit_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hub *h = arg;
    audit_tick(h->audit);
}

void haudit_tick_start(struct hub *h)
{
    /* A quiet hub still seals its last records within a period or so. */
    struct timeval tv = {.tv_sec = AUDITCHAIN_EVERY_S / 4};
    h->ev_audit_tick = event_new(h->base, -1, EV_PERSIST, on_audit_tick, h);
    if (h->ev_audit_tick)
        event_add(h->ev_audit_tick, &tv);
}

/* Exports s, whose who-fields are set, as the span t of work that began at t0
 * (monotonic) and ends now. */
static void send_span(struct hub *h, const struct trace_ctx *t, const char *name, uint64_t t0,
                      bool ok, const char *message, struct otlp_span *s)
{
    uint64_t mono = now_mono_ns(), real = now_real_ns();
    s->trace_id = t->trace_id;
    s->span_id = t->span_id;
    s->parent_id = t->parent_id;
    s->name = name;
    s->start_unix_ns = real - (mono - t0);
    s->end_unix_ns = real;
    s->error = !ok;
    s->message = message;
    otlp_span(h->otlp, s);
}

void haudit_export_span(struct hub *h, const struct trace_ctx *t, const char *name, uint64_t t0,
                        bool ok, const char *message, const char *user, const char *app,
                        const char *tool)
{
    if (!h->otlp)
        return;
    struct otlp_span s = {.user = user, .app = app, .tool = tool, .caller = "client"};
    send_span(h, t, name, t0, ok, message, &s);
}

/* Exports a span of c's work that began at t0 (monotonic) and ends now, as t says. */
static void export_span(const struct call *c, const struct trace_ctx *t, const char *name,
                        uint64_t t0, bool ok, const char *message)
{
    struct hub *h = c->hub;
    if (!h->otlp)
        return;
    struct otlp_span s = {.user = c->target->user,
                          .app = c->m->name,
                          .tool = c->tool->name,
                          .call_id = c->id,
                          .caller = c->caller ? c->caller->m->name : "user"};
    send_span(h, t, name, t0, ok, message, &s);
}

void haudit_span(const struct call *c, bool ok, const char *message)
{
    char name[200];
    snprintf(name, sizeof(name), "tool-call %s.%s", c->m->name, c->tool->name);
    export_span(c, &c->trace, name, c->t_start, ok, message);
}

void haudit_child_span(const struct call *c, const char *name, uint64_t t0, bool ok,
                       const char *message, json_t *rec)
{
    struct trace_ctx t;
    trace_child(&t, &c->trace);
    if (rec) {
        audit_set_str(rec, "trace.id", t.trace_id);
        audit_set_str(rec, "span.id", t.span_id);
    }
    export_span(c, &t, name, t0, ok, message);
}

void haudit_trace_spoke(struct spoke *sp)
{
    struct hub *h = sp->hub;
    if (!sp->proxy_key[0] || !h->proxy)
        return;
    char tp[56] = "";
    if (sp->n_inflight == 1)
        trace_format(&TAILQ_FIRST(&sp->inflight)->trace, tp);
    if (strcmp(tp, sp->proxy_trace) == 0)
        return;
    memcpy(sp->proxy_trace, tp, sizeof(tp));
    proxy_trace(h->proxy, sp->proxy_key, tp[0] ? tp : NULL);
}
