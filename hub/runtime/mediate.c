/* isolate/call: spoke A asks the hub to call app B. The only way one spoke reaches
 * another. In order:
 *   1. the request names an app and tool in the manifests (A's claims about itself are
 *      ignored: the caller is the spoke on whose socket the request came);
 *   2. B is not already on A's call chain (no A -> B -> A deadlock) and the chain is
 *      not deeper than max_call_depth;
 *   3. the arguments fit B's inputSchema;
 *   4. the permission hook agrees (collab, stage "call", body = the arguments) -
 *      B is not started, let alone called, before this;
 *   5. B runs the call within what is left of A's deadline;
 *   6. B's result fits MCP and B's outputSchema (call.c);
 *   7. the permission hook agrees again (collab, stage "relay", body = the result);
 *   8. A gets the result.
 * Every refusal is answered to A as a JSON-RPC error and written to the audit log. The
 * decisions of 4 and 7 are on record before they take effect: one whose record cannot
 * be written is refused (HUB_ERR_AUDIT, layer "audit"), so B does not run, or its
 * result does not reach A, unlogged. */
#include "internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Time a nested call leaves its caller to handle the answer before the caller's own
 * deadline: without it both would expire together and the caller would be blamed. */
#define NESTED_GRACE_NS (50ULL * 1000000ULL)

static void audit_mediation(struct sreq *r, const char *outcome, const char *reason,
                            const char *layer)
{
    json_t *rec = haudit_new("isolate-call", outcome);
    haudit_spoke(rec, r->sp);
    audit_set_str(rec, "isolate.caller.app", r->sp->m->name);
    audit_set_str(rec, "isolate.caller.spoke_id", r->sp->id);
    if (r->target_m)
        audit_set_str(rec, "isolate.app", r->target_m->name);
    if (r->target_t)
        audit_set_str(rec, "isolate.tool", r->target_t->name);
    audit_set_str(rec, "isolate.call.id", r->call_id);
    if (r->parent)
        audit_set_str(rec, "isolate.call.parent", r->parent->id);
    audit_set_str(rec, "event.reason", reason);
    audit_set_str(rec, "isolate.layer", layer);
    audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - r->t_start));
    if (r->hub->debug)
        audit_set(rec, "isolate.arguments", json_incref(json_object_get(r->params, "arguments")));
    /* How it ended: a refusal, or a relay whose decision is already on record. */
    haudit_note(r->hub, rec);
}

static void refuse(struct sreq *r, int code, const char *layer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void refuse(struct sreq *r, int code, const char *layer, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    audit_mediation(r, "failure", msg, layer);
    log_debug("isolate/call from %s refused: %s", r->sp->m->name, msg);
    json_t *data = json_pack("{s:s}", "layer", layer);
    /* Held while sending: a send can end the spoke, and its call, and this request. */
    r->hook_pending = true;
    spoke_send(r->sp, jrpc_error(r->id, code, msg, data));
    r->hook_pending = false;
    r->stage = SREQ_DONE;
    sreq_cancel(r);
}

/* 0, or -1 and errno when the decision's record could not be written. */
static int audit_decision(struct sreq *r, const struct perm_request *q, enum perm_decision d,
                          const char *reason)
{
    json_t *rec = haudit_new("permission", d == PERM_ALLOW ? "success" : "failure");
    audit_set(rec, "event.type", json_pack("[s]", d == PERM_ALLOW ? "allowed" : "denied"));
    audit_set_str(rec, "isolate.permission.category", perm_category_name(q->category));
    audit_set_str(rec, "isolate.permission.stage", perm_stage_name(q->stage));
    audit_set_str(rec, "isolate.user", q->user);
    audit_set_str(rec, "isolate.app", q->app);
    audit_set_str(rec, "isolate.tool", q->tool);
    audit_set_str(rec, "isolate.caller.app", q->caller);
    audit_set_str(rec, "isolate.call.id", q->call_id);
    audit_set(rec, "isolate.irreversible", json_boolean(q->irreversible));
    audit_set_str(rec, "event.reason", reason);
    if (r->parent && r->t_asked) {
        char name[200];
        snprintf(name, sizeof(name), "question collab %s %s.%s", perm_stage_name(q->stage), q->app,
                 q->tool);
        haudit_child_span(r->parent, name, r->t_asked, d == PERM_ALLOW, reason, rec);
    }
    if (r->hub->debug) {
        char *body = json_dumps(q->body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (body)
            audit_set(rec, "isolate.body", audit_string(body, strlen(body), 4096));
        free(body);
    }
    return haudit_write(r->hub, rec);
}

/* The collab question of r at stage (the call, or its result in body). */
static struct perm_request collab_question(const struct sreq *r, enum perm_stage stage,
                                           const json_t *body)
{
    return (struct perm_request){.category = PERM_COLLAB,
                                 .stage = stage,
                                 .user = r->sp->user,
                                 .app = r->target_m->name,
                                 .tool = r->target_t->name,
                                 .caller = r->sp->m->name,
                                 .body = body,
                                 .irreversible = r->target_t->irreversible,
                                 .in_plan = false,
                                 .call_id = r->call_id};
}

static void ask(struct sreq *r, enum perm_stage stage, const json_t *body, perm_done_fn done)
{
    struct perm_request q = collab_question(r, stage, body);
    q.origin = r->parent ? r->parent->origin : NULL;
    r->hook_pending = true;
    r->paused = true;
    call_pause(r->parent);
    r->t_asked = now_mono_ns();
    r->hub->perm->ask(r->hub->perm, &q, done, r);
}

/* Called when a question returns: records the decision, and false when the request is
 * over - cancelled meanwhile, or refused because the record of a yes could not be
 * written (a no stands even unlogged). */
static bool answered(struct sreq *r, enum perm_stage stage, const json_t *body,
                     enum perm_decision d, const char *reason)
{
    r->hook_pending = false;
    if (r->cancelled) {
        sreq_cancel(r);
        return false;
    }
    if (r->paused) {
        r->paused = false;
        call_resume(r->parent);
    }
    struct perm_request q = collab_question(r, stage, body);
    if (audit_decision(r, &q, d, reason ? reason : "") < 0 && d == PERM_ALLOW) {
        char msg[512];
        if (stage == PERM_STAGE_CALL)
            haudit_refusal(r->hub, errno, msg, sizeof(msg), "run %s.%s for %s", r->target_m->name,
                           r->target_t->name, r->sp->m->name);
        else
            haudit_refusal(r->hub, errno, msg, sizeof(msg), "relay the result of %s.%s to %s",
                           r->target_m->name, r->target_t->name, r->sp->m->name);
        refuse(r, HUB_ERR_AUDIT, "audit", "%s", msg);
        return false;
    }
    return true;
}

static void on_relay_answer(void *ud, enum perm_decision d, const char *reason)
{
    struct sreq *r = ud;
    if (!answered(r, PERM_STAGE_RELAY, r->result, d, reason))
        return;
    if (d != PERM_ALLOW) {
        refuse(r, HUB_ERR_DENIED, "permission",
               "relaying the result of %s.%s to %s was denied%s%.300s", r->target_m->name,
               r->target_t->name, r->sp->m->name, reason && *reason ? ": " : "",
               reason ? reason : "");
        return;
    }
    audit_mediation(r, "success", "relayed", "");
    json_t *result = r->result;
    r->result = NULL;
    r->hook_pending = true; /* held while sending, as in refuse() */
    mcp_reply(r->sp, r->id, result);
    r->hook_pending = false;
    r->stage = SREQ_DONE;
    sreq_cancel(r);
}

static void on_inner_done(void *ud, const struct call_result *res)
{
    struct sreq *r = ud;
    r->inner = NULL;
    if (!res->result) {
        refuse(r, res->code, res->layer ? res->layer : "spoke", "%s", res->message);
        return;
    }
    r->result = json_incref(res->result);
    r->stage = SREQ_ASK_RELAY;
    ask(r, PERM_STAGE_RELAY, r->result, on_relay_answer);
}

static void on_call_answer(void *ud, enum perm_decision d, const char *reason)
{
    struct sreq *r = ud;
    json_t *args = json_object_get(r->params, "arguments");
    if (!answered(r, PERM_STAGE_CALL, args, d, reason))
        return;
    if (d != PERM_ALLOW) {
        /* With the reason, as for exec (call.c): the caller learns why. */
        refuse(r, HUB_ERR_DENIED, "permission", "calling %s.%s from %s was denied%s%.300s",
               r->target_m->name, r->target_t->name, r->sp->m->name, reason && *reason ? ": " : "",
               reason ? reason : "");
        return;
    }
    struct hub *h = r->hub;
    uint64_t now = now_mono_ns();
    struct call_opts o = {.user = r->sp->user};
    uint64_t deadline = now + hub_call_timeout_ns(h, r->target_m, &o);
    if (r->parent->deadline < now + NESTED_GRACE_NS * 2) {
        refuse(r, HUB_ERR_SPOKE, "deadline", "too little time left for %s.%s", r->target_m->name,
               r->target_t->name);
        return;
    }
    if (deadline > r->parent->deadline - NESTED_GRACE_NS)
        deadline = r->parent->deadline - NESTED_GRACE_NS;
    r->stage = SREQ_CALLING;
    struct call *c = call_new(h, &o, r->target_m, r->target_t, args, r->parent, r->sp, deadline,
                              on_inner_done, r);
    if (!c) {
        refuse(r, HUB_ERR_BUSY, "hub", "no room for another spoke");
        return;
    }
    c->t_start = now; /* the deadline's start (see hub_call) */
    str_copy(c->id, r->call_id, sizeof(c->id));
    r->inner = c;
    call_start(c);
}

void mediate_isolate_call(struct hub *h, struct spoke *sp, struct call *parent, json_t *id,
                          json_t *params)
{
    struct sreq *r = sreq_new(sp, SREQ_ISOLATE_CALL, parent, id, params);
    audit_new_id(r->call_id);
    r->stage = SREQ_ASK_CALL;
    if (!json_is_object(params)) {
        refuse(r, JRPC_INVALID_PARAMS, "hub-validation", "params must be an object");
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v)
    {
        if (strcmp(key, "tool") != 0 && strcmp(key, "arguments") != 0 &&
            strcmp(key, "_meta") != 0) {
            refuse(r, JRPC_INVALID_PARAMS, "hub-validation",
                   "unknown parameter \"%.40s\" (isolate/call takes tool and arguments)", key);
            return;
        }
    }
    const char *full = json_string_value(json_object_get(params, "tool"));
    json_t *args = json_object_get(params, "arguments");
    if (!full) {
        refuse(r, JRPC_INVALID_PARAMS, "hub-validation", "\"tool\" must be a string APP.TOOL");
        return;
    }
    if (!args) {
        args = json_object();
        json_object_set_new(r->params, "arguments", args);
    }
    char app[MANIFEST_NAME_MAX + 1], tool[MANIFEST_NAME_MAX + 1], err[300];
    if (!manifest_split_name(full, app, sizeof(app), tool, sizeof(tool), err, sizeof(err))) {
        refuse(r, HUB_ERR_UNKNOWN_TOOL, "hub-validation", "%s", err);
        return;
    }
    r->target_m = manifest_find(h->ms, app);
    r->target_t = r->target_m ? manifest_tool(r->target_m, tool) : NULL;
    if (!r->target_t) {
        r->target_m = NULL;
        refuse(r, HUB_ERR_UNKNOWN_TOOL, "hub-validation", "no tool %.64s.%.64s is installed", app,
               tool);
        return;
    }
    if (call_chain_has(parent, r->target_m, sp->user)) {
        refuse(r, HUB_ERR_CYCLE, "hub-validation",
               "%s is already on this call chain: a cycle would deadlock", app);
        return;
    }
    if (parent->depth + 1 > h->cfg->max_call_depth) {
        refuse(r, HUB_ERR_CYCLE, "hub-validation", "call chain deeper than %u",
               h->cfg->max_call_depth);
        return;
    }
    if (!schema_validate(r->target_t->input, args, err, sizeof(err))) {
        refuse(r, HUB_ERR_INVALID_ARGS, "hub-validation", "arguments for %s.%s: %s", app, tool,
               err);
        return;
    }
    ask(r, PERM_STAGE_CALL, args, on_call_answer);
}
