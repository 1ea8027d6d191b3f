/* The MCP client side of the hub: the initialize handshake, the tools/list check
 * against the manifest, tools/call, and what a spoke may ask of the hub.
 *
 * A spoke is known by the socket it speaks on: nothing in a frame (serverInfo, ids,
 * extra fields) changes which app the hub believes it is talking to. A spoke may ask
 * something only while it serves a call (its requests belong to that call's chain);
 * frames outside a call, unsolicited responses and malformed frames end it. */
#include "hooks.h"
#include "internal.h"
#include "log.h"
#include "schema.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST_PAGES 16
/* Notifications a spoke may send during one call, and frames of any kind while idle. */
#define NOTIFY_BUDGET_PER_CALL 1024
#define IDLE_FRAME_BUDGET 16

static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

void spoke_ready(struct spoke *sp);

json_t *mcp_initialize_params(void)
{
    return json_pack("{s:s,s:{s:{},s:{}},s:{s:s,s:s}}", "protocolVersion", MCP_PROTOCOL_VERSION,
                     "capabilities", "sampling", "elicitation", "clientInfo", "name",
                     "isolategpt-hub", "version", "0.1");
}

bool mcp_check_initialize(const json_t *result, char *err, size_t errlen)
{
    if (!json_is_object(result)) {
        snprintf(err, errlen, "initialize result is not an object");
        return false;
    }
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    bool known = false;
    for (size_t i = 0; v && supported_versions[i]; i++)
        if (strcmp(v, supported_versions[i]) == 0)
            known = true;
    if (!known) {
        snprintf(err, errlen, "unsupported MCP protocol version \"%.40s\"", v ? v : "(none)");
        return false;
    }
    json_t *caps = json_object_get(result, "capabilities");
    if (!json_is_object(caps) || !json_is_object(json_object_get(caps, "tools"))) {
        snprintf(err, errlen, "initialize result lacks capabilities.tools");
        return false;
    }
    return true;
}

static bool same_json(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return !a && !b;
    return json_equal((json_t *)a, (json_t *)b);
}

bool mcp_check_tools(const struct manifest *m, const json_t *tools, char *err, size_t errlen)
{
    if (json_array_size(tools) != m->n_tools) {
        snprintf(err, errlen, "tools/list has %zu tools, the manifest %zu", json_array_size(tools),
                 m->n_tools);
        return false;
    }
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const struct manifest_tool *mt = name ? manifest_tool(m, name) : NULL;
        if (!mt) {
            snprintf(err, errlen, "tools/list names \"%.64s\", which the manifest does not have",
                     name ? name : "(no name)");
            return false;
        }
        const char *desc = json_string_value(json_object_get(t, "description"));
        if (!desc || strcmp(desc, mt->description) != 0) {
            snprintf(err, errlen, "tool %s: description differs from the manifest", mt->name);
            return false;
        }
        if (!same_json(json_object_get(t, "inputSchema"), mt->input_schema_json)) {
            snprintf(err, errlen, "tool %s: inputSchema differs from the manifest", mt->name);
            return false;
        }
        if (!same_json(json_object_get(t, "outputSchema"), mt->output_schema_json)) {
            snprintf(err, errlen, "tool %s: outputSchema differs from the manifest", mt->name);
            return false;
        }
    }
    return true;
}

bool mcp_check_result(const struct manifest_tool *t, const json_t *result, char *err, size_t errlen)
{
    if (!json_is_object(result)) {
        snprintf(err, errlen, "tools/call result is not an object");
        return false;
    }
    json_t *content = json_object_get(result, "content");
    if (!json_is_array(content)) {
        snprintf(err, errlen, "tools/call result lacks a \"content\" array");
        return false;
    }
    size_t i;
    json_t *item;
    json_array_foreach(content, i, item)
    {
        if (!json_is_object(item) || !json_is_string(json_object_get(item, "type"))) {
            snprintf(err, errlen, "content[%zu] must be an object with a \"type\"", i);
            return false;
        }
    }
    json_t *is_error = json_object_get(result, "isError");
    if (is_error && !json_is_boolean(is_error)) {
        snprintf(err, errlen, "\"isError\" must be a boolean");
        return false;
    }
    if (json_is_true(is_error))
        return true; /* an error result carries no structured content to check */
    json_t *sc = json_object_get(result, "structuredContent");
    if (!t->output)
        return true;
    if (!sc) {
        snprintf(err, errlen, "%s declares an outputSchema but returned no structuredContent",
                 t->name);
        return false;
    }
    char why[400];
    if (!schema_validate(t->output, sc, why, sizeof(why))) {
        snprintf(err, errlen, "structuredContent%s", why + 1); /* "$.x: ..." -> ".x: ..." */
        return false;
    }
    return true;
}

/* ---- requests the hub sends ---- */

/* Records the request as pending (and its id in *id_out, before anything is sent: a
 * send can end the spoke and with it whatever the caller holds), then sends it. */
static int64_t send_request(struct spoke *sp, const char *method, json_t *params,
                            enum pending_kind kind, int64_t *id_out)
{
    int slot = -1;
    for (int i = 0; i < SPOKE_MAX_PENDING; i++)
        if (sp->pending[i].kind == PEND_NONE) {
            slot = i;
            break;
        }
    if (slot < 0) {
        json_decref(params);
        spoke_kill(sp, "protocol", false, "spoke %s: too many requests outstanding", sp->m->name);
        return -1;
    }
    int64_t id = sp->next_id++;
    sp->pending[slot].id = id;
    sp->pending[slot].kind = kind;
    if (id_out)
        *id_out = id;
    if (spoke_send(sp, jrpc_request(id, method, params)) < 0)
        return -1;
    return id;
}

void mcp_begin(struct spoke *sp)
{
    send_request(sp, "initialize", mcp_initialize_params(), PEND_INITIALIZE, NULL);
}

void mcp_send_call(struct spoke *sp, struct call *c)
{
    c->state = CALL_SENT;
    c->t_sent = now_mono_ns();
    c->notifications = 0;
    json_t *params = json_pack("{s:s,s:O}", "name", c->tool->name, "arguments", c->args);
    send_request(sp, "tools/call", params, PEND_CALL, &c->rpc_id);
}

void mcp_reply(struct spoke *sp, json_t *id, json_t *result)
{
    spoke_send(sp, jrpc_result(id, result));
}

void mcp_reply_error(struct spoke *sp, json_t *id, int code, const char *msg)
{
    spoke_send(sp, jrpc_error(id, code, msg, NULL));
}

/* ---- responses ---- */

static void on_initialize(struct spoke *sp, struct jrpc_msg *msg)
{
    char err[256];
    if (msg->kind == JRPC_ERROR) {
        spoke_kill(sp, "start-failed", true, "spoke %s refused initialize: %.200s", sp->m->name,
                   msg->error_message);
        return;
    }
    if (!mcp_check_initialize(msg->result, err, sizeof(err))) {
        spoke_kill(sp, "start-failed", true, "spoke %s: %s", sp->m->name, err);
        return;
    }
    sp->t_init = now_mono_ns();
    sp->state = SP_LISTING;
    if (spoke_send(sp, jrpc_notification("notifications/initialized", NULL)) < 0)
        return;
    send_request(sp, "tools/list", json_object(), PEND_TOOLS_LIST, NULL);
}

static void on_tools_list(struct spoke *sp, struct jrpc_msg *msg)
{
    char err[300];
    json_t *tools = msg->kind == JRPC_RESULT ? json_object_get(msg->result, "tools") : NULL;
    if (!json_is_array(tools)) {
        spoke_kill(sp, "start-failed", true, "spoke %s: tools/list gave no tools array",
                   sp->m->name);
        return;
    }
    if (!sp->tools_seen)
        sp->tools_seen = json_array();
    if (json_array_size(sp->tools_seen) + json_array_size(tools) > MANIFEST_MAX_TOOLS) {
        spoke_kill(sp, "start-failed", true, "spoke %s: tools/list lists too many tools",
                   sp->m->name);
        return;
    }
    json_array_extend(sp->tools_seen, tools);
    json_t *cursor = json_object_get(msg->result, "nextCursor");
    if (json_is_string(cursor) && ++sp->list_pages < MAX_LIST_PAGES) {
        send_request(sp, "tools/list", json_pack("{s:O}", "cursor", cursor), PEND_TOOLS_LIST, NULL);
        return;
    }
    if (!mcp_check_tools(sp->m, sp->tools_seen, err, sizeof(err))) {
        spoke_kill(sp, "start-failed", true, "spoke %s does not match its manifest: %s",
                   sp->m->name, err);
        return;
    }
    json_decref(sp->tools_seen);
    sp->tools_seen = NULL;
    spoke_ready(sp);
}

static void on_call_response(struct spoke *sp, struct jrpc_msg *msg, int64_t id)
{
    struct call *c = sp->current;
    if (!c || c->rpc_id != id) {
        spoke_kill(sp, "protocol", false, "spoke %s answered a call that is not current",
                   sp->m->name);
        return;
    }
    if (msg->kind == JRPC_ERROR) {
        call_fail(c, HUB_ERR_SPOKE, "spoke", "%s.%s answered with error %ld: %.300s", sp->m->name,
                  c->tool->name, msg->error_code, msg->error_message);
        return;
    }
    call_complete(c, msg->result);
}

static void on_response(struct spoke *sp, struct jrpc_msg *msg)
{
    if (!json_is_integer(msg->id)) {
        spoke_kill(sp, "protocol", false, "spoke %s answered with an id the hub never used",
                   sp->m->name);
        return;
    }
    int64_t id = json_integer_value(msg->id);
    for (int i = 0; i < SPOKE_MAX_PENDING; i++) {
        if (sp->pending[i].kind == PEND_NONE || sp->pending[i].id != id)
            continue;
        enum pending_kind kind = sp->pending[i].kind;
        sp->pending[i].kind = PEND_NONE;
        switch (kind) {
        case PEND_INITIALIZE:
            on_initialize(sp, msg);
            return;
        case PEND_TOOLS_LIST:
            on_tools_list(sp, msg);
            return;
        case PEND_CALL:
            on_call_response(sp, msg, id);
            return;
        case PEND_NONE:
            break;
        }
    }
    spoke_kill(sp, "protocol", false, "spoke %s answered a request it was never sent", sp->m->name);
}

/* ---- requests from the spoke ---- */

struct sreq *sreq_new(struct spoke *sp, enum sreq_kind kind, struct call *parent, json_t *id,
                      json_t *params)
{
    struct sreq *r = xcalloc(1, sizeof(*r));
    r->hub = sp->hub;
    r->kind = kind;
    r->sp = sp;
    r->gen = sp->gen;
    r->parent = parent;
    r->id = json_incref(id);
    r->params = params ? json_incref(params) : json_object();
    r->t_start = now_mono_ns();
    LIST_INSERT_HEAD(&parent->children, r, link);
    sp->sreqs++;
    return r;
}

static void hook_done(void *ud, json_t *result, int code, const char *message)
{
    struct sreq *r = ud;
    r->hook_pending = false;
    if (r->cancelled) {
        json_decref(result);
        sreq_cancel(r);
        return;
    }
    if (r->paused) {
        r->paused = false;
        call_resume(r->parent);
    }
    struct spoke *sp = r->sp;
    if (result && r->kind == SREQ_ELICIT) {
        /* An accepted answer must fit what the spoke asked for before it sees it. */
        const char *action = json_string_value(json_object_get(result, "action"));
        json_t *content = json_object_get(result, "content");
        json_t *rs = json_object_get(r->params, "requestedSchema");
        if (action && strcmp(action, "accept") == 0 && rs) {
            char why[300] = "";
            struct schema *s = schema_compile(rs, why, sizeof(why));
            bool ok = s && content && schema_validate(s, content, why, sizeof(why));
            schema_free(s);
            if (!ok) {
                json_decref(result);
                result = NULL;
                code = JRPC_INVALID_PARAMS;
                message = "the answer does not fit requestedSchema";
            }
        }
    }
    json_t *rec = haudit_new(r->kind == SREQ_ELICIT ? "elicitation" : "sampling",
                             result ? "success" : "failure");
    haudit_spoke(rec, sp);
    audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - r->t_start));
    if (!result)
        audit_set_str(rec, "event.reason", message);
    else if (r->kind == SREQ_ELICIT)
        audit_set(rec, "isolate.elicitation.action",
                  json_incref(json_object_get(result, "action")));
    /* The user's answer or the LLM's text goes to the spoke only once that is on
     * record. */
    char unlogged[512];
    if (haudit_write(sp->hub, rec) < 0 && result) {
        haudit_refusal(sp->hub, errno, unlogged, sizeof(unlogged), "hand %s to %s",
                       r->kind == SREQ_ELICIT ? "the user's answer" : "the LLM's answer",
                       sp->m->name);
        json_decref(result);
        result = NULL;
        code = HUB_ERR_AUDIT;
        message = unlogged;
    }
    r->hook_pending = true; /* held while sending: a send can end the spoke and r */
    if (result)
        mcp_reply(sp, r->id, result);
    else
        mcp_reply_error(sp, r->id, code, message ? message : "failed");
    r->hook_pending = false;
    r->stage = SREQ_DONE;
    sreq_cancel(r); /* done: unlink and free */
}

static void on_hook_request(struct spoke *sp, struct jrpc_msg *msg, enum sreq_kind kind)
{
    struct hub *h = sp->hub;
    if (!json_is_object(msg->params)) {
        mcp_reply_error(sp, msg->id, JRPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    struct sreq *r = sreq_new(sp, kind, sp->current, msg->id, msg->params);
    r->stage = SREQ_HOOK;
    r->hook_pending = true;
    struct hook_request hr = {
        .user = sp->user, .app = sp->m->name, .spoke_id = sp->id, .params = r->params,
        .origin = r->parent ? r->parent->origin : NULL};
    if (kind == SREQ_ELICIT) {
        r->paused = true;
        call_pause(r->parent);
        h->elicit->create(h->elicit, &hr, hook_done, r);
    } else {
        h->sampling->create_message(h->sampling, &hr, hook_done, r);
    }
}

static bool idle_budget(struct spoke *sp)
{
    if (++sp->idle_frames <= IDLE_FRAME_BUDGET)
        return true;
    spoke_kill(sp, "flood", false, "spoke %s sent too many frames outside a call", sp->m->name);
    return false;
}

static void on_request(struct spoke *sp, struct jrpc_msg *msg)
{
    if (strcmp(msg->method, "ping") == 0) {
        if (sp->current || idle_budget(sp))
            mcp_reply(sp, msg->id, json_object());
        return;
    }
    if (!sp->current || sp->state != SP_READY) {
        if (idle_budget(sp))
            mcp_reply_error(sp, msg->id, JRPC_INVALID_REQUEST,
                            "a spoke may ask the hub only while it serves a call");
        return;
    }
    if (++sp->current->notifications > NOTIFY_BUDGET_PER_CALL) {
        spoke_kill(sp, "flood", false, "spoke %s sent too many frames during one call",
                   sp->m->name);
        return;
    }
    if (sp->sreqs >= SPOKE_MAX_SREQS) {
        spoke_kill(sp, "flood", false, "spoke %s has too many requests in flight", sp->m->name);
        return;
    }
    if (strcmp(msg->method, "isolate/call") == 0) {
        mediate_isolate_call(sp->hub, sp, sp->current, msg->id, msg->params);
    } else if (strcmp(msg->method, "sampling/createMessage") == 0) {
        on_hook_request(sp, msg, SREQ_SAMPLING);
    } else if (strcmp(msg->method, "elicitation/create") == 0) {
        on_hook_request(sp, msg, SREQ_ELICIT);
    } else {
        char text[200];
        snprintf(text, sizeof(text), "method \"%.100s\" is not offered by the hub", msg->method);
        mcp_reply_error(sp, msg->id, JRPC_METHOD_NOT_FOUND, text);
    }
}

static void on_notification(struct spoke *sp, struct jrpc_msg *msg)
{
    if (!sp->current) {
        idle_budget(sp);
        return;
    }
    if (++sp->current->notifications > NOTIFY_BUDGET_PER_CALL) {
        spoke_kill(sp, "flood", false, "spoke %s sent too many notifications during one call",
                   sp->m->name);
        return;
    }
    if (strcmp(msg->method, "notifications/message") == 0 && log_debug_enabled()) {
        json_t *data = json_object_get(msg->params, "data");
        char *text = data ? json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        log_debug("spoke %s: %.300s", sp->m->name, text ? text : "");
        free(text);
    }
}

void mcp_on_frame(struct spoke *sp, const char *line, size_t len)
{
    struct jrpc_msg msg;
    int code;
    char err[256];
    if (jrpc_parse(line, len, &msg, &code, err, sizeof(err)) < 0) {
        spoke_kill(sp, "malformed-frame", false, "spoke %s sent a malformed frame: %s", sp->m->name,
                   err);
        return;
    }
    switch (msg.kind) {
    case JRPC_RESULT:
    case JRPC_ERROR:
        on_response(sp, &msg);
        break;
    case JRPC_REQUEST:
        on_request(sp, &msg);
        break;
    case JRPC_NOTIFICATION:
        on_notification(sp, &msg);
        break;
    }
    jrpc_msg_free(&msg);
}

/* ---- spoke requests' lifetime ---- */

void sreq_cancel(struct sreq *r)
{
    if (!r->cancelled || r->stage == SREQ_DONE) {
        /* First cancel (or completion): unlink from the call and the spoke. */
        if (r->parent) {
            if (r->paused) {
                r->paused = false;
                call_resume(r->parent);
            }
            LIST_REMOVE(r, link);
            r->parent = NULL;
            if (r->sp->gen == r->gen && r->sp->sreqs > 0)
                r->sp->sreqs--;
        }
        r->cancelled = true;
        if (r->inner) {
            call_detach(r->inner);
            r->inner = NULL;
        }
    }
    if (r->hook_pending)
        return; /* freed when the hook answers */
    json_decref(r->id);
    json_decref(r->params);
    json_decref(r->result);
    free(r);
}
