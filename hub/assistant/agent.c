/* The agent object and one request's frame: history in, history out, the audit of
 * the request, and the dispatch to the planned modes or the baseline. */
#include "agent_impl.h"
#include "audit.h"
#include "log.h"
#include "planner.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void agent_limits_defaults(struct agent_limits *l)
{
    memset(l, 0, sizeof(*l));
    l->max_plan_steps = 8;
    l->max_tool_rounds = 8;
    l->max_replans = 2;
    l->history_entries = 20;
    l->result_max_bytes = 16 * 1024;
    llm_sampling_limits_defaults(&l->sampling);
}

const char *agent_status_name(enum agent_status s)
{
    switch (s) {
    case AGENT_OK:
        return "ok";
    case AGENT_PLAN_REFUSED:
        return "plan-refused";
    case AGENT_LLM_FAILED:
        return "llm-failed";
    case AGENT_FAILED:
        return "failed";
    case AGENT_STEPS_FAILED:
        return "steps-failed";
    }
    return "?";
}

struct agent *agent_new(struct hub *h, struct event_base *base, const struct hub_config *cfg,
                        const struct manifest_set *ms, struct llm *llm, struct memory *mem,
                        struct perm_asker *asker, const struct agent_options *o, char *err,
                        size_t errlen)
{
    const char *user = o->user ? o->user : cfg->user;
    if (!memory_user_valid(user)) {
        snprintf(err, errlen, "user id \"%.80s\" must be 1 to 64 of A-Z a-z 0-9 _ -", user);
        return NULL;
    }
    struct agent *a = xcalloc(1, sizeof(*a));
    a->hub = h;
    a->base = base;
    a->cfg = cfg;
    a->ms = ms;
    a->llm = llm;
    a->mem = mem;
    a->asker = asker;
    a->o = *o;
    a->o.user = NULL;
    str_copy(a->user, user, sizeof(a->user));
    struct agent_limits d;
    agent_limits_defaults(&d);
    if (!a->o.limits.max_plan_steps)
        a->o.limits = d; /* an unset struct: all defaults */
    if (a->o.limits.max_plan_steps > PLAN_MAX_STEPS)
        a->o.limits.max_plan_steps = PLAN_MAX_STEPS;
    a->audit = hub_audit(h);
    if (o->extract && cfg->isolation != ISO_NONE) {
        if (manifest_find(ms, AGENT_EXTRACT_APP)) {
            snprintf(err, errlen, "the extraction step is named %s.%s, and an app of that name "
                     "is installed", AGENT_EXTRACT_APP, AGENT_EXTRACT_TOOL);
            free(a);
            return NULL;
        }
        if (!(a->extract_m = agent_extract_manifest(err, errlen))) {
            free(a);
            return NULL;
        }
        struct manifest_set with = {.v = xcalloc(ms->n + 1, sizeof(*with.v)), .n = ms->n + 1};
        memcpy(with.v, ms->v, ms->n * sizeof(*with.v));
        with.v[ms->n] = a->extract_m;
        tool_map_build(&a->tools, &with);
        free(with.v);
    } else {
        tool_map_build(&a->tools, ms);
    }
    hub_set_permission_hook(h, perms_hook_new(mem, asker, a->audit, o->debug));
    hub_set_sampling_hook(h, agent_sampling_hook(a));
    return a;
}

void agent_free(struct agent *a)
{
    if (!a)
        return;
    tool_map_free(&a->tools);
    if (a->extract_m)
        manifest_free(a->extract_m);
    free(a);
}

const char *agent_user(const struct agent *a)
{
    return a->user;
}

bool agent_cancelled(const struct agent *a)
{
    return (a->o.cancel && *a->o.cancel) || hub_quit_requested(a->hub);
}

void agent_event(struct agent *a, const char *kind, json_t *detail)
{
    if (a->o.on_event)
        a->o.on_event(a->o.event_arg, kind, detail);
    json_decref(detail);
}

int agent_audit(struct agent *a, const char *action, const char *outcome, json_t *fields)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    audit_set_str(rec, "isolate.user", a->user);
    audit_set_str(rec, "isolate.mode", isolation_name(a->cfg->isolation));
    if (a->traced) { /* the request's span, unless fields name one of its own */
        audit_set_str(rec, "trace.id", a->trace.trace_id);
        audit_set_str(rec, "span.id", a->trace.span_id);
    }
    const char *k;
    json_t *v;
    json_object_foreach(fields, k, v)
    {
        audit_set(rec, k, json_incref(v));
    }
    json_decref(fields);
    /* A loss is counted and said once per outage by the log itself (hub.c). */
    return audit_write(a->audit, rec);
}

void agent_span(struct agent *a, const char *name, uint64_t t0, bool ok, json_t *fields)
{
    if (!a->traced)
        return;
    struct trace_ctx t;
    trace_child(&t, &a->trace);
    json_object_set_new(fields, "span.id", json_string(t.span_id));
    json_object_set_new(fields, "isolate.span.parent", json_string(a->trace.span_id));
    haudit_export_span(a->hub, &t, name, t0, ok, NULL, a->user, NULL, NULL);
}

void agent_llm_prepare(struct agent *a, struct llm_request *rq)
{
    llm_request_set_user(rq, a->user);
    if (a->o.cancel)
        llm_request_set_cancel(rq, a->o.cancel);
    if (a->o.on_wait)
        llm_request_set_wait_notice(rq, a->o.on_wait, a->o.wait_arg);
}

int agent_llm_call(struct agent_req *r, struct llm_request *rq, struct llm_response *rs,
                   const char *what)
{
    struct llm_error e;
    if (llm_complete(r->a->llm, rq, rs, &e) == 0)
        return 0;
    r->out->status = AGENT_LLM_FAILED;
    if (e.kind == LLM_ERR_TRUNCATED)
        r->out->truncated = true;
    snprintf(r->out->error, sizeof(r->out->error), "%s (%s): %s", what, llm_error_kind_name(e.kind),
             e.msg);
    str_copy(r->out->error_detail, e.detail, sizeof(r->out->error_detail));
    return -1;
}

int agent_request_stored(struct agent_req *r)
{
    char err[300];
    if (memory_history_sync(r->a->mem, err, sizeof(err)) == 0)
        return 0;
    r->out->status = AGENT_FAILED;
    snprintf(r->out->error, sizeof(r->out->error),
             "memory: the request could not be stored in the history, so nothing was run: %s",
             err);
    json_decref(memory_take_failed_writes(r->a->mem)); /* said in the error */
    return -1;
}

void agent_answer_cut(struct agent_req *r, const char *what)
{
    r->out->truncated = true;
    json_array_append_new(r->out->warnings,
                          json_sprintf("the model hit its token limit (finish_reason \"length\"): "
                                       "%s is cut off; raise llm.max_tokens (or the server's "
                                       "limit) for a whole one",
                                       what));
}

void agent_record_call(struct agent_req *r, const char *step, const char *app, const char *tool,
                       const json_t *args, bool in_plan, const json_t *result, int code,
                       const char *message, const char *layer)
{
    json_t *c = json_pack("{s:o,s:s++,s:O,s:b}", "step", step ? json_string(step) : json_null(),
                          "tool", app, ".", tool, "arguments", args, "in_plan", in_plan);
    const char *outcome;
    if (result) {
        outcome = json_is_true(json_object_get(result, "isError")) ? "tool-error" : "ok";
        json_object_set(c, "result", (json_t *)result);
    } else {
        outcome = code == HUB_ERR_DENIED ? "denied" : "failed";
        json_object_set_new(c, "error", json_string(message ? message : ""));
        json_object_set_new(c, "layer", json_string(layer ? layer : "hub"));
    }
    json_object_set_new(c, "outcome", json_string(outcome));
    json_array_append_new(r->out->calls, c);
}

size_t agent_steps_failed(const struct agent_result *r)
{
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(r->calls, i, c)
    {
        const char *o = json_string_value(json_object_get(c, "outcome"));
        n += o && (strcmp(o, "failed") == 0 || strcmp(o, "tool-error") == 0);
    }
    return n;
}

/* --- synchronous questions of the agent's own ------------------------------------ */

struct ask_wait {
    bool done;
    enum perm_decision d;
    char why[200];
};

static void ask_done(void *ud, enum perm_decision d, const char *reason)
{
    struct ask_wait *w = ud;
    w->done = true;
    w->d = d;
    str_copy(w->why, reason ? reason : "", sizeof(w->why));
}

enum perm_decision agent_ask(struct agent *a, const struct perm_request *q, char *why,
                             size_t whylen, const char **layer)
{
    struct perm_hook *hook = perms_hook_new(a->mem, a->asker, a->audit, a->o.debug);
    struct ask_wait *w = xcalloc(1, sizeof(*w));
    hook->ask(hook, q, ask_done, w);
    while (!w->done && !hub_quit_requested(a->hub))
        event_base_loop(a->base, EVLOOP_ONCE);
    enum perm_decision d = w->done ? w->d : PERM_DENY;
    str_copy(why, w->done ? w->why : "interrupted", whylen);
    if (w->done)
        free(w);
    /* else the hook may still answer: leave w to it (a bounded leak at shutdown). */
    hook->free(hook);
    json_t *f =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "isolate.permission.category",
                  perm_category_name(q->category), "isolate.app", q->app, "isolate.tool", q->tool,
                  "isolate.caller.app", q->caller ? q->caller : "", "event.reason", why,
                  "event.type", json_pack("[s]", d == PERM_ALLOW ? "allowed" : "denied"));
    *layer = "permission";
    if (agent_audit(a, "permission", d == PERM_ALLOW ? "success" : "failure", f) < 0 &&
        d == PERM_ALLOW) {
        /* Data is shared only once the decision is on record. */
        snprintf(why, whylen,
                 "the audit log %s cannot be written (%s); refusing to share data with %s.%s "
                 "unlogged",
                 audit_path(a->audit), strerror(errno), q->app, q->tool);
        *layer = "audit";
        return PERM_DENY;
    }
    return d;
}

/* --- one request ------------------------------------------------------------------ */

/* -1 and err when the memory cannot be read (Redis unreachable past its window). */
static int load_history(struct agent_req *r, char *err, size_t errlen)
{
    struct agent *a = r->a;
    struct memory_msg *msgs = NULL;
    size_t n = 0;
    /* Twice as many entries as wanted: about half are answers, which are skipped. */
    if (memory_history_last(a->mem, a->user, 2 * a->o.limits.history_entries, &msgs, &n, err,
                            errlen) < 0)
        return -1;
    r->history = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        if (strcmp(msgs[i].role, "user") == 0)
            r->history[r->n_history++] = xstrdup(msgs[i].text);
    if (r->n_history > a->o.limits.history_entries) {
        size_t drop = r->n_history - a->o.limits.history_entries;
        for (size_t i = 0; i < drop; i++)
            free(r->history[i]);
        memmove(r->history, r->history + drop, (r->n_history - drop) * sizeof(char *));
        r->n_history -= drop;
    }
    r->msgs = msgs;
    r->n_msgs = n;
    return 0;
}

int agent_run(struct agent *a, const char *request, struct agent_result *out)
{
    memset(out, 0, sizeof(*out));
    out->plans = json_array();
    out->calls = json_array();
    out->ignored_tool_calls = json_array();
    out->warnings = json_array();
    uint64_t t0 = now_mono_ns();
    struct agent_req r = {.a = a, .request = request, .out = out};
    /* The request is a trace of its own: its calls, extractions and decisions join it. */
    trace_begin(&a->trace, NULL);
    trace_format(&a->trace, a->traceparent);
    a->traced = true;
    json_t *f = json_pack("{s:I}", "source.bytes", (json_int_t)strlen(request));
    if (a->o.debug)
        json_object_set_new(f, "isolate.request", audit_string(request, strlen(request), 4096));
    agent_audit(a, "user-request", "unknown", f);

    char err[300];
    int rc;
    json_decref(memory_take_failed_writes(a->mem)); /* only this request's are reported */
    /* Stored first, so that a hub killed while it works still remembers the request.
     * When the memory cannot be read or written, nothing runs: the user is told, and
     * nothing happens that the history would not show. The store's acknowledgement
     * (an fsync with appendfsync always) is waited for while the planner works, and
     * before anything acts (agent_request_stored). */
    if (load_history(&r, err, sizeof(err)) < 0) {
        out->status = AGENT_FAILED;
        snprintf(out->error, sizeof(out->error),
                 "memory: the history cannot be read, so nothing was run: %s (start that Redis "
                 "again, or run the hub with --memory none)",
                 err);
        rc = -1;
    } else if (memory_history_append_nowait(a->mem, a->user, "user", request, err, sizeof(err)) <
               0) {
        out->status = AGENT_FAILED;
        snprintf(out->error, sizeof(out->error), "memory: %s", err);
        json_decref(memory_take_failed_writes(a->mem)); /* said in the error */
        rc = -1;
    } else if (a->cfg->isolation == ISO_NONE) {
        rc = agent_run_none(&r);
    } else {
        rc = agent_run_planned(&r);
    }
    /* The request's own entry, if nothing acted yet (a direct answer, a failure) */
    memory_history_sync(a->mem, err, sizeof(err));
    if (rc == 0 && out->answer)
        memory_history_append(a->mem, a->user, "assistant", out->answer, err, sizeof(err));
    /* The answer above, and grants the user gave during the request (perms.c). */
    json_t *failed = memory_take_failed_writes(a->mem);
    json_array_extend(out->warnings, failed);
    json_decref(failed);
    if (rc < 0 && out->status == AGENT_OK)
        out->status = AGENT_FAILED;
    if (rc == 0 && out->status == AGENT_OK && agent_steps_failed(out) > 0)
        out->status = AGENT_STEPS_FAILED;
    f = json_pack("{s:s,s:I,s:I,s:I,s:i}", "isolate.agent.status", agent_status_name(out->status),
                  "event.duration", (json_int_t)(now_mono_ns() - t0), "destination.bytes",
                  (json_int_t)(out->answer ? strlen(out->answer) : 0), "isolate.agent.calls",
                  (json_int_t)json_array_size(out->calls), "isolate.agent.replans",
                  (int)out->replans);
    if (out->error[0])
        json_object_set_new(f, "event.reason", json_string(out->error));
    if (json_array_size(out->warnings))
        json_object_set(f, "isolate.agent.warnings", out->warnings);
    agent_audit(a, "agent-answer", rc == 0 ? "success" : "failure", f);
    haudit_export_span(a->hub, &a->trace, "user-request", t0, rc == 0,
                       out->error[0] ? out->error : NULL, a->user, NULL, NULL);
    a->traced = false;
    for (size_t i = 0; i < r.n_history; i++)
        free(r.history[i]);
    free(r.history);
    memory_msgs_free(r.msgs, r.n_msgs);
    return rc == 0 ? 0 : -1;
}

void agent_result_free(struct agent_result *r)
{
    free(r->answer);
    json_decref(r->plans);
    json_decref(r->calls);
    json_decref(r->ignored_tool_calls);
    json_decref(r->warnings);
    memset(r, 0, sizeof(*r));
}

json_t *agent_result_json(const struct agent_result *r)
{
    return json_pack("{s:s,s:o,s:b,s:O,s:O,s:O,s:i,s:o,s:o}", "status",
                     agent_status_name(r->status), "answer",
                     r->answer ? json_string(r->answer) : json_null(), "truncated", r->truncated,
                     "plans", r->plans,
                     "calls", r->calls, "ignored_tool_calls", r->ignored_tool_calls, "replans",
                     (int)r->replans, "error", r->error[0] ? json_string(r->error) : json_null(),
                     "warnings", r->warnings ? json_incref(r->warnings) : json_array());
}
