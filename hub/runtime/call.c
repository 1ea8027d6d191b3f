/* Calls: one tools/call from the user, the planner or (mediated) another spoke, with
 * its deadline, its place in the call chain, validation on the way in and out, and
 * its audit records: "tool-call-start" before the spoke may see it (a call whose
 * record cannot be written is refused, never run unlogged) and "tool-call" when it
 * ends. */
#include "internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_deadline(evutil_socket_t fd, short what, void *arg);

static void arm_timer(struct call *c)
{
    uint64_t now = now_mono_ns();
    uint64_t left = c->deadline > now ? c->deadline - now : 0;
    struct timeval tv = {.tv_sec = (time_t)(left / 1000000000ULL),
                         .tv_usec = (suseconds_t)((left % 1000000000ULL) / 1000)};
    evtimer_add(c->timer, &tv);
}

struct call *call_new(struct hub *h, const struct call_opts *o, const struct manifest *m,
                      const struct manifest_tool *t, const json_t *args, struct call *parent,
                      struct spoke *caller, uint64_t deadline, hub_call_done done, void *ud)
{
    const char *user = o->user ? o->user : h->cfg->user;
    struct spoke *target = spoke_get(h, user, m->name, o->instance, true);
    if (!target)
        return NULL;
    if (o->instance && o->data_tmpfs_mb)
        target->data_tmpfs_mb = o->data_tmpfs_mb; /* for its next start */
    struct call *c = xcalloc(1, sizeof(*c));
    c->hub = h;
    audit_new_id(c->id);
    if (parent)
        trace_child(&c->trace, &parent->trace);
    else
        trace_begin(&c->trace, o->traceparent);
    c->parent = parent;
    c->caller = caller;
    c->target = target;
    c->m = m;
    c->tool = t;
    c->args = json_deep_copy(args);
    c->depth = parent ? parent->depth + 1 : 1;
    c->state = CALL_ASK_EXEC;
    c->ask_exec = o->ask_exec;
    c->in_plan = o->in_plan;
    c->origin = parent ? parent->origin : o->origin;
    c->session = parent ? parent->session : o->session;
    c->t_start = now_mono_ns();
    c->deadline = deadline;
    c->timer = evtimer_new(h->base, on_deadline, c);
    c->done = done;
    c->ud = ud;
    c->on_event = o->on_event;
    c->event_ud = o->event_ud;
    LIST_INSERT_HEAD(&h->calls, c, link);
    LIST_INIT(&c->children);
    char *dump = json_dumps(c->args, JSON_COMPACT);
    c->req_bytes = dump ? strlen(dump) : 0;
    free(dump);
    h->calls_live++;
    return c;
}

static void audit_call(struct call *c, const char *outcome, const json_t *result, int code,
                       const char *layer, const char *msg)
{
    struct hub *h = c->hub;
    json_t *rec = haudit_new("tool-call", outcome);
    haudit_call(rec, c);
    audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - c->t_start));
    audit_set_int(rec, "source.bytes", (int64_t)c->req_bytes);
    if (result) {
        char *dump = json_dumps(result, JSON_COMPACT);
        audit_set_int(rec, "destination.bytes", dump ? (int64_t)strlen(dump) : 0);
        free(dump);
        audit_set(rec, "isolate.is_error",
                  json_boolean(json_is_true(json_object_get(result, "isError"))));
        haudit_result(h, rec, result);
    } else {
        audit_set_int(rec, "error.code", code);
        audit_set_str(rec, "error.message", msg);
        audit_set_str(rec, "isolate.layer", layer);
    }
    if (c->events_unaudited) /* past the call's audit budget (mcp.c) */
        audit_set_int(rec, "isolate.events_unaudited", c->events_unaudited);
    if (h->debug)
        audit_set(rec, "isolate.arguments", json_incref(c->args));
    haudit_note(h, rec); /* the call is over: its end can only be lost, not undone */
    haudit_span(c, result && !json_is_true(json_object_get(result, "isError")),
                result ? NULL : msg);
}

/* Ends c: every path (answer, error, deadline, kill) comes through here once. */
static void call_finish(struct call *c, json_t *result, int code, const char *layer,
                        const char *msg)
{
    if (c->state == CALL_DONE)
        return;
    enum call_state was = c->state;
    c->state = CALL_DONE;
    evtimer_del(c->timer);
    struct spoke *sp = c->target;
    /* Requests the spoke made during this call are over with it. */
    struct sreq *r;
    while ((r = LIST_FIRST(&c->children)) != NULL)
        sreq_cancel(r);
    audit_call(c, result ? "success" : "failure", result, code, layer, msg);
    /* An answer measures the spoke's pace (its in-flight limit, inflight.h), unless the
     * call waited on the hub meanwhile (a mediated call, a question, more input). */
    if (was == CALL_SENT && result && !c->asked && !c->input_rounds)
        spoke_call_answered(sp, c);
    /* Its place in the window goes to the next waiting call (which may be sent now). */
    spoke_call_off(sp, c);
    haudit_trace_spoke(sp);
    if (c->done) {
        struct call_result res = {
            .result = result,
            .code = result ? HUB_OK : code,
            .message = msg,
            .layer = layer,
            .duration_ns = now_mono_ns() - c->t_start,
        };
        c->done(c->ud, &res);
    }
    event_free(c->timer);
    json_decref(c->args);
    json_decref(c->input_responses);
    json_decref(c->input_state);
    free(c->input_error);
    c->hub->calls_live--;
    LIST_REMOVE(c, link);
    free(c);
}

void call_fail(struct call *c, int code, const char *layer, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    call_finish(c, NULL, code, layer, msg);
}

void call_complete(struct call *c, json_t *result)
{
    char err[500];
    if (c->method) {
        if (!mcp_check_method_result(c->target, c->method, result, err, sizeof(err))) {
            struct spoke *sp = c->target;
            bool drifted = strcmp(c->method, "tools/list") == 0 && !c->m->unpinned;
            call_fail(c, HUB_ERR_INVALID_RESULT, "hub-validation", "%s: invalid %s result: %s",
                      c->m->name, c->method, err);
            /* Its tools are no longer what was pinned: as after a list_changed. */
            if (drifted)
                spoke_kill(sp, "pin", false,
                           "spoke %s changed its tools after they were pinned: %s", sp->m->name,
                           err);
            return;
        }
        call_finish(c, result, HUB_OK, NULL, NULL);
        return;
    }
    if (!mcp_check_result(c->target, c->tool, result, err, sizeof(err))) {
        call_fail(c, HUB_ERR_INVALID_RESULT, "hub-validation",
                  "%s.%s returned an invalid result: %s", c->m->name, c->tool->name, err);
        return;
    }
    /* Refused, or the user is asked (the call goes on from call_scan_resume). */
    if (call_scan_traffic(c, result, true) != 0)
        return;
    call_finish(c, result, HUB_OK, NULL, NULL);
}

void call_detach(struct call *c)
{
    c->done = NULL;
    c->ud = NULL;
    c->parent = NULL;
    c->caller = NULL;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct call *c = arg;
    uint64_t ms = (c->deadline - c->t_start + 500000ULL) / 1000000ULL;
    struct spoke *sp = c->target;
    uint64_t gen = sp->gen;
    char name[160];
    switch (c->state) {
    case CALL_SENT:
        /* The spoke is told, as MCP asks (the send can end the spoke, and c with it). */
        mcp_send_cancelled(sp, c->rpc_id, "deadline");
        if (sp->gen != gen)
            break;
        snprintf(name, sizeof(name), "%s.%s", c->m->name, c->tool->name);
        if (sp->window <= 1) {
            /* One call at a time: the call past its deadline may still be running (a
             * hung or hostile spoke), and the next call must not share the spoke with
             * it. The spoke is ended. */
            spoke_kill(sp, "deadline", false, "%s missed its deadline of %llu ms", name,
                       (unsigned long long)ms);
            break;
        }
        /* Several at a time: the call ends, the spoke goes on serving the others, with
         * its in-flight limit halved (it did not keep up). One that has answered nothing
         * since the call was sent may have stopped answering everything: a ping tells
         * (spoke_probe). */
        inflight_overload(&sp->limit);
        {
            bool silent = sp->t_last_answer < c->t_sent;
            call_fail(c, HUB_ERR_SPOKE, "deadline", "%s missed its deadline of %llu ms (cancelled)",
                      name, (unsigned long long)ms);
            if (silent && sp->gen == gen)
                spoke_probe(sp, name);
        }
        break;
    case CALL_QUEUED:
        call_fail(c, HUB_ERR_SPOKE, "deadline",
                  "%s.%s timed out after %llu ms waiting for the spoke (busy or starting)",
                  c->m->name, c->tool->name, (unsigned long long)ms);
        break;
    case CALL_ASK_EXEC:
    case CALL_OFF:
    case CALL_DONE:
        break; /* paused for a question, or already over */
    }
}

void call_pause(struct call *c)
{
    uint64_t now = now_mono_ns();
    for (struct call *x = c; x; x = x->parent) {
        if (x->pauses++ == 0) {
            x->pause_start = now;
            evtimer_del(x->timer);
        }
    }
}

void call_resume(struct call *c)
{
    uint64_t now = now_mono_ns();
    for (struct call *x = c; x; x = x->parent) {
        if (x->pauses == 0 || --x->pauses > 0)
            continue;
        x->deadline += now - x->pause_start;
        if (x->state != CALL_DONE)
            arm_timer(x);
    }
}

bool call_chain_has(const struct call *c, const struct manifest *m, const char *user)
{
    for (const struct call *x = c; x; x = x->parent)
        if (x->m == m && strcmp(x->target->user, user) == 0)
            return true;
    return false;
}

/* Refuses c because a record it needs could not be written (errno err). */
static void fail_unlogged(struct call *c, int err)
{
    char msg[600];
    haudit_refusal(c->hub, err, msg, sizeof(msg), "run %s.%s", c->m->name, c->tool->name);
    call_fail(c, HUB_ERR_AUDIT, "audit", "%s", msg);
}

/* The one way a call reaches its spoke: its start is on record first. Every call
 * comes here, asked (exec), mediated (after the collab decision) or neither (`hub
 * call`, none mode, the repl-server's runs). */
static void submit_scanned(struct call *c);

static void submit_logged(struct call *c)
{
    /* Refused, or the user is asked (the call goes on from call_scan_resume). */
    if (call_scan_traffic(c, c->args, false) != 0)
        return;
    submit_scanned(c);
}

void call_scan_resume(struct call *c, json_t *result)
{
    if (result)
        call_finish(c, result, HUB_OK, NULL, NULL);
    else
        submit_scanned(c);
}

/* The call's arguments passed the secret scan: its start on record, then the spoke. */
static void submit_scanned(struct call *c)
{
    json_t *rec = haudit_new("tool-call-start", "unknown");
    audit_set(rec, "event.type", json_pack("[s]", "start"));
    haudit_call(rec, c);
    if (c->target->state == SP_STOPPED) {
        /* Started for this call: the instance's id comes with its spoke-start record,
         * and the id still held is a former instance's. */
        json_t *spoke = json_object_get(json_object_get(rec, "isolate"), "spoke");
        json_object_del(spoke, "id");
    }
    audit_set_int(rec, "source.bytes", (int64_t)c->req_bytes);
    if (c->hub->debug)
        audit_set(rec, "isolate.arguments", json_incref(c->args));
    if (haudit_arguments(c->hub, rec, c->args) < 0) {
        int e = errno;
        char msg[600];
        snprintf(msg, sizeof(msg),
                 "the transcript %s cannot be written (%s); refusing to run %s.%s with its "
                 "arguments unrecorded (audit.content is \"full\")",
                 audit_path(c->hub->transcript), strerror(e), c->m->name, c->tool->name);
        json_decref(rec);
        call_fail(c, HUB_ERR_AUDIT, "audit", "%s", msg);
        return;
    }
    if (haudit_write(c->hub, rec) < 0) {
        fail_unlogged(c, errno);
        return;
    }
    spoke_submit(c->target, c);
}

void call_cancel(struct call *c, const char *reason)
{
    switch (c->state) {
    case CALL_ASK_EXEC:
        /* The permission hook holds c: it ends when the answer comes, unrun. */
        c->cancelled = true;
        if (c->done) {
            struct call_result res = {.code = HUB_ERR_CANCELLED,
                                      .message = "cancelled",
                                      .layer = "cancelled",
                                      .duration_ns = now_mono_ns() - c->t_start};
            hub_call_done done = c->done;
            void *ud = c->ud;
            call_detach(c);
            done(ud, &res);
        }
        return;
    case CALL_SENT:
        /* Told, and its late answer dropped; the spoke goes on serving. */
        mcp_send_cancelled(c->target, c->rpc_id, reason);
        break;
    case CALL_QUEUED:
    case CALL_OFF:
        break;
    case CALL_DONE:
        return;
    }
    call_fail(c, HUB_ERR_CANCELLED, "cancelled", "%s.%s was cancelled (%s)", c->m->name,
              c->tool->name, reason);
}

static void on_exec_answer(void *ud, enum perm_decision d, const char *reason)
{
    struct call *c = ud;
    json_t *rec = haudit_new("permission", d == PERM_ALLOW ? "success" : "failure");
    audit_set(rec, "event.type", json_pack("[s]", d == PERM_ALLOW ? "allowed" : "denied"));
    audit_set_str(rec, "isolate.permission.category", "exec");
    audit_set_str(rec, "isolate.user", c->target->user);
    audit_set_str(rec, "isolate.app", c->m->name);
    audit_set_str(rec, "isolate.tool", c->tool->name);
    audit_set_str(rec, "isolate.call.id", c->id);
    audit_set_str(rec, "event.reason", reason ? reason : "");
    char name[200];
    snprintf(name, sizeof(name), "question exec %s.%s", c->m->name, c->tool->name);
    haudit_child_span(c, name, c->t_asked, d == PERM_ALLOW, reason, rec);
    int logged = haudit_write(c->hub, rec);
    int err = errno;
    call_resume(c);
    if (c->cancelled) {
        call_fail(c, HUB_ERR_CANCELLED, "cancelled", "cancelled while asking");
        return;
    }
    if (d != PERM_ALLOW) {
        /* With the reason: a refusal because the grant store (Redis) is down must not
         * read like the user's own "no". A refusal stands even unlogged. */
        call_fail(c, HUB_ERR_DENIED, "permission", "running %s.%s was denied%s%.300s", c->m->name,
                  c->tool->name, reason && *reason ? ": " : "", reason ? reason : "");
        return;
    }
    /* A grant (asked now or stored) that cannot be put on record is not acted on. */
    if (logged < 0) {
        fail_unlogged(c, err);
        return;
    }
    submit_logged(c);
}

void call_start(struct call *c)
{
    arm_timer(c);
    char err[400];
    if (c->tool->input && !schema_validate(c->tool->input, c->args, err, sizeof(err))) {
        call_fail(c, HUB_ERR_INVALID_ARGS, "hub-validation", "arguments for %s.%s: %s", c->m->name,
                  c->tool->name, err);
        return;
    }
    if (c->ask_exec) {
        struct perm_request q = {
            .category = PERM_EXEC,
            .stage = PERM_STAGE_CALL,
            .user = c->target->user,
            .app = c->m->name,
            .tool = c->tool->name,
            .caller = c->caller ? c->caller->m->name : NULL,
            .body = c->args,
            .irreversible = c->tool->irreversible,
            .in_plan = c->in_plan,
            .call_id = c->id,
            .origin = c->origin,
        };
        call_pause(c);
        c->t_asked = now_mono_ns();
        c->hub->perm->ask(c->hub->perm, &q, on_exec_answer, c);
        return;
    }
    submit_logged(c);
}
