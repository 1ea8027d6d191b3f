/* The MCP client side of the hub: the initialize handshake, the tools/list check
 * against the manifest, tools/call, and what a spoke may ask of the hub.
 *
 * A spoke is known by the socket it speaks on: nothing in a frame (serverInfo, ids,
 * extra fields) changes which app the hub believes it is talking to. A spoke may ask
 * something only while it serves a call, and its request belongs to that call's chain
 * (its consent questions go to that call's client, its time counts against that
 * call's deadline). With several calls in flight the request names its call: the id
 * of the hub's request in _meta.relatedRequestId, or the call's progress token in
 * _meta.progressToken; a request that names none of them is refused (MCP's stdio
 * transport carries no association of its own). Progress names its call by its token.
 * Unsolicited responses (an id never sent, or answered twice) and malformed frames end
 * the spoke. */
#include "hooks.h"
#include "internal.h"
#include "log.h"
#include "config/config.h"
#include "jsonschema/jsonschema.h"
#include "proc.h"
#include "termtext.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST_PAGES 16
/* Frames a spoke may send during one call (notifications, requests, pings: each is
 * work for the hub). */
#define NOTIFY_BUDGET_PER_CALL 1024
/* Frames of any kind while it serves no call (starting, or between calls): a burst
 * (a server's start-up log messages, a few dozen), then a steady rate. */
#define IDLE_FRAMES_BURST 128
#define IDLE_FRAMES_PER_S 32
/* Lines on stdout that are not JSON-RPC (a banner, a stray console.log): skipped as
 * the SDKs do and kept in the spoke's log, up to a byte budget. */
#define NOISE_BURST_BYTES 65536
#define NOISE_BYTES_PER_S 16384
#define NOISE_LINE_SHOWN 512
/* Messages in one JSON-RPC batch (protocol 2025-03-26 only). */
#define MAX_BATCH 64

void spoke_ready(struct spoke *sp);

bool mcp_check_tools(const struct manifest *m, const json_t *tools, char *err, size_t errlen)
{
    return pin_check_tools(m->pinned, tools, err, errlen);
}

static bool is_str(const json_t *o, const char *key)
{
    return json_is_string(json_object_get(o, key));
}

/* One content block of a result or a prompt message, by its type (MCP 2025-11-25:
 * text, image, audio, resource_link, resource). */
static bool check_content(enum mcp_version v, const json_t *item, const char *where, char *err,
                          size_t errlen)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!json_is_object(item) || !type) {
        snprintf(err, errlen, "%s must be an object with a \"type\"", where);
        return false;
    }
    /* A type its revision does not have (audio before 2025-03-26, resource_link before
     * 2025-06-18); a spoke whose revision is not known yet is held to the newest. */
    if (!mcpver_content_type(v ? v : MCP_V_LATEST, type) &&
        mcpver_content_type(MCP_V_LATEST, type)) {
        snprintf(err, errlen, "%s has content type \"%s\", which MCP %s does not have", where, type,
                 mcpver_name(v));
        return false;
    }
    const char *need = NULL;
    if (strcmp(type, "text") == 0) {
        if (!is_str(item, "text"))
            need = "a string \"text\"";
    } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
        if (!is_str(item, "data") || !is_str(item, "mimeType"))
            need = "string \"data\" (base64) and \"mimeType\"";
    } else if (strcmp(type, "resource_link") == 0) {
        if (!is_str(item, "uri") || !is_str(item, "name"))
            need = "string \"uri\" and \"name\"";
    } else if (strcmp(type, "resource") == 0) {
        const json_t *r = json_object_get(item, "resource");
        if (!json_is_object(r) || !is_str(r, "uri") || !(is_str(r, "text") || is_str(r, "blob")))
            need = "a \"resource\" with a string \"uri\" and \"text\" or \"blob\"";
    } else {
        snprintf(err, errlen, "%s has an unknown content type \"%.40s\"", where, type);
        return false;
    }
    if (need) {
        snprintf(err, errlen, "%s (%s) needs %s", where, type, need);
        return false;
    }
    const json_t *ann = json_object_get(item, "annotations");
    if (ann && !json_is_object(ann)) {
        snprintf(err, errlen, "%s: \"annotations\" must be an object", where);
        return false;
    }
    return true;
}

bool mcp_check_result(const struct spoke *sp, const struct manifest_tool *t, json_t *result,
                      char *err, size_t errlen)
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
        char where[32];
        snprintf(where, sizeof(where), "content[%zu]", i);
        if (!check_content(sp->version, item, where, err, errlen))
            return false;
    }
    mcp_adapt_result(sp, result);
    json_t *is_error = json_object_get(result, "isError");
    if (is_error && !json_is_boolean(is_error)) {
        snprintf(err, errlen, "\"isError\" must be a boolean");
        return false;
    }
    if (json_is_true(is_error))
        return true; /* an error result carries no structured content to check */
    json_t *sc = json_object_get(result, "structuredContent");
    if (!mcpver_structured(sp->version) && sp->version != MCP_V_UNKNOWN)
        return true; /* no outputSchema in its revision: content only */
    /* Any JSON value from 2026-07-28 on; an object before. */
    if (sc && !json_is_object(sc) && !mcpver_modern(sp->version)) {
        snprintf(err, errlen, "\"structuredContent\" must be an object");
        return false;
    }
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

/* ---- read-only requests (hub_request) ---- */

/* Each method, the capability a server must declare for it, and a stand-in tool
 * (named for the method, no schemas) so that a request travels as a call. */
static struct request_method {
    const char *method, *capability;
    struct manifest_tool tool;
} request_methods[] = {
    {"tools/list", "tools", {.name = (char *)"tools/list", .description = (char *)""}},
    {"resources/list", "resources", {.name = (char *)"resources/list", .description = (char *)""}},
    {"resources/templates/list",
     "resources",
     {.name = (char *)"resources/templates/list", .description = (char *)""}},
    {"resources/read", "resources", {.name = (char *)"resources/read", .description = (char *)""}},
    {"prompts/list", "prompts", {.name = (char *)"prompts/list", .description = (char *)""}},
    {"prompts/get", "prompts", {.name = (char *)"prompts/get", .description = (char *)""}},
    {"completion/complete",
     "completions",
     {.name = (char *)"completion/complete", .description = (char *)""}},
};

static const struct request_method *request_method(const char *method)
{
    for (size_t i = 0; i < ARRAY_LEN(request_methods); i++)
        if (strcmp(request_methods[i].method, method) == 0)
            return &request_methods[i];
    return NULL;
}

const struct manifest_tool *mcp_method_tool(const char *method)
{
    const struct request_method *rm = request_method(method);
    return rm ? &rm->tool : NULL;
}

/* An array of objects under key, each with the string members named in need. */
static bool check_list(const json_t *result, const char *key, const char *const need[], char *err,
                       size_t errlen)
{
    const json_t *arr = json_object_get(result, key);
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "no \"%s\" array", key);
        return false;
    }
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        for (size_t k = 0; need[k]; k++)
            if (!json_is_object(o) || !is_str(o, need[k])) {
                snprintf(err, errlen, "%s[%zu] needs a string \"%s\"", key, i, need[k]);
                return false;
            }
    }
    const json_t *cursor = json_object_get(result, "nextCursor");
    if (cursor && !json_is_string(cursor)) {
        snprintf(err, errlen, "\"nextCursor\" must be a string");
        return false;
    }
    return true;
}

bool mcp_check_method_result(const struct spoke *sp, const char *method, const json_t *result,
                             char *err, size_t errlen)
{
    if (!json_is_object(result)) {
        snprintf(err, errlen, "the result is not an object");
        return false;
    }
    if (strcmp(method, "tools/list") == 0) {
        static const char *const need[] = {"name", NULL};
        if (!check_list(result, "tools", need, err, errlen))
            return false;
        /* A page of a longer list cannot be held against the whole pin; the list was
         * checked whole when the spoke started and after each list_changed. */
        if (sp->m->unpinned || json_object_get(result, "nextCursor"))
            return true;
        return mcp_check_tools(sp->m, json_object_get(result, "tools"), err, errlen);
    }
    if (strcmp(method, "resources/list") == 0) {
        static const char *const need[] = {"uri", "name", NULL};
        return check_list(result, "resources", need, err, errlen);
    }
    if (strcmp(method, "resources/templates/list") == 0) {
        static const char *const need[] = {"uriTemplate", "name", NULL};
        return check_list(result, "resourceTemplates", need, err, errlen);
    }
    if (strcmp(method, "resources/read") == 0) {
        static const char *const need[] = {"uri", NULL};
        if (!check_list(result, "contents", need, err, errlen))
            return false;
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(result, "contents"), i, o)
        {
            if (!is_str(o, "text") && !is_str(o, "blob")) {
                snprintf(err, errlen, "contents[%zu] needs a string \"text\" or \"blob\"", i);
                return false;
            }
        }
        return true;
    }
    if (strcmp(method, "prompts/list") == 0) {
        static const char *const need[] = {"name", NULL};
        return check_list(result, "prompts", need, err, errlen);
    }
    if (strcmp(method, "prompts/get") == 0) {
        static const char *const need[] = {"role", NULL};
        if (!check_list(result, "messages", need, err, errlen))
            return false;
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(result, "messages"), i, o)
        {
            const char *role = json_string_value(json_object_get(o, "role"));
            char where[40];
            snprintf(where, sizeof(where), "messages[%zu].content", i);
            if (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0) {
                snprintf(err, errlen, "messages[%zu].role must be \"user\" or \"assistant\"", i);
                return false;
            }
            if (!check_content(sp->version, json_object_get(o, "content"), where, err, errlen))
                return false;
        }
        return true;
    }
    if (strcmp(method, "completion/complete") == 0) {
        const json_t *c = json_object_get(result, "completion");
        const json_t *values = json_object_get(c, "values");
        size_t i;
        json_t *v;
        if (!json_is_object(c) || !json_is_array(values) || json_array_size(values) > 100) {
            snprintf(err, errlen, "needs \"completion\" with \"values\", at most 100");
            return false;
        }
        json_array_foreach(values, i, v)
        {
            if (!json_is_string(v)) {
                snprintf(err, errlen, "completion.values[%zu] must be a string", i);
                return false;
            }
        }
        return true;
    }
    snprintf(err, errlen, "the hub does not take \"%.60s\"", method);
    return false;
}

/* ---- requests the hub sends ---- */

/* Records the request as pending (and its id in *id_out, before anything is sent: a
 * send can end the spoke and with it whatever the caller holds), then sends it. A call
 * (kind PEND_NONE) is found among the calls in flight by its id instead. */
static int64_t send_request(struct spoke *sp, const char *method, json_t *params,
                            enum pending_kind kind, int64_t *id_out)
{
    int slot = -1;
    for (int i = 0; kind != PEND_NONE && i < SPOKE_MAX_PENDING; i++)
        if (sp->pending[i].kind == PEND_NONE) {
            slot = i;
            break;
        }
    if (kind != PEND_NONE && slot < 0) {
        json_decref(params);
        spoke_kill(sp, "protocol", false, "spoke %s: too many requests outstanding", sp->m->name);
        return -1;
    }
    if (mcpver_modern(sp->version) && !params)
        params = json_object();
    mcp_decorate(sp, params);
    int64_t id = sp->next_id++;
    if (slot >= 0) {
        sp->pending[slot].id = id;
        sp->pending[slot].kind = kind;
    }
    if (id_out)
        *id_out = id;
    if (spoke_send(sp, jrpc_request(id, method, params)) < 0)
        return -1;
    return id;
}

void mcp_begin(struct spoke *sp)
{
    uint64_t now = now_mono_ns();
    tb_init(&sp->idle_tb, IDLE_FRAMES_BURST, IDLE_FRAMES_PER_S, now);
    tb_init(&sp->noise_tb, NOISE_BURST_BYTES, NOISE_BYTES_PER_S, now);
    sp->noise_seen = false;
    sp->version = MCP_V_UNKNOWN;
    sp->discovering = false;
    if (mcpver_modern(sp->m->protocol)) {
        /* Pinned as stateless: no initialize, every request says the revision. */
        sp->version = sp->m->protocol;
        sp->discovering = true;
        send_request(sp, "server/discover", mcp_discover_params(), PEND_INITIALIZE, NULL);
        return;
    }
    send_request(sp, "initialize", mcp_initialize_params(sp->m), PEND_INITIALIZE, NULL);
}

void mcp_send_call(struct spoke *sp, struct call *c)
{
    if (c->method) {
        const struct request_method *rm = request_method(c->method);
        const json_t *caps = json_object_get(sp->init_result, "capabilities");
        if (!json_is_object(json_object_get(caps, rm->capability))) {
            c->state = CALL_OFF;
            call_fail(c, HUB_ERR_UNSUPPORTED, "spoke",
                      "%s does not offer %s (no \"%s\" capability)", sp->m->name, c->method,
                      rm->capability);
            return;
        }
    }
    c->state = CALL_SENT;
    c->t_sent = now_mono_ns();
    c->notifications = 0;
    if (c->method) {
        send_request(sp, c->method, json_incref(c->args), PEND_NONE, &c->rpc_id);
        return;
    }
    /* The call's id is its progress token: progress notifications name their call. */
    json_t *params = json_pack("{s:s,s:O,s:{s:s}}", "name", c->tool->name, "arguments", c->args,
                               "_meta", "progressToken", c->id);
    send_request(sp, "tools/call", params, PEND_NONE, &c->rpc_id);
}

void mcp_send_ping(struct spoke *sp)
{
    send_request(sp, "ping", NULL, PEND_PING, NULL);
}

void mcp_send_cancelled(struct spoke *sp, int64_t id, const char *reason)
{
    if (id < 0)
        return; /* the call waits for its input requests: the spoke has nothing of it */
    sp->cancelled_ids[sp->n_cancelled++ % SPOKE_CANCELLED_IDS] = id;
    spoke_send(sp, jrpc_notification("notifications/cancelled",
                                     json_pack("{s:I,s:s}", "requestId", (json_int_t)id, "reason",
                                               reason ? reason : "cancelled")));
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

/* The answer to initialize, or to server/discover (sp->discovering): the spoke's
 * revision is known, its capabilities kept, and its tools listed. */
static void on_initialize(struct spoke *sp, struct jrpc_msg *msg)
{
    char err[300];
    if (msg->kind == JRPC_ERROR && !sp->discovering) {
        /* A server of the stateless revision only refuses initialize: it is asked
         * server/discover before it is given up (mcp_version.c). */
        snprintf(sp->init_error, sizeof(sp->init_error), "%.200s", msg->error_message);
        sp->discovering = true;
        sp->version = MCP_V_LATEST;
        send_request(sp, "server/discover", mcp_discover_params(), PEND_INITIALIZE, NULL);
        return;
    }
    if (msg->kind == JRPC_ERROR) {
        if (sp->init_error[0])
            spoke_kill(sp, "start-failed", true, "spoke %s refused initialize: %s", sp->m->name,
                       sp->init_error);
        else
            spoke_kill(sp, "start-failed", true, "spoke %s refused server/discover: %.200s",
                       sp->m->name, msg->error_message);
        return;
    }
    json_t *info = NULL;
    if (sp->discovering) {
        info = mcp_check_discover(sp, msg->result, err, sizeof(err));
        if (!info) {
            spoke_kill(sp, "start-failed", true, "spoke %s: %s%s%s", sp->m->name, err,
                       sp->init_error[0] ? "; it refused initialize: " : "", sp->init_error);
            return;
        }
    } else if (mcp_check_initialize(sp, msg->result, err, sizeof(err))) {
        info = json_incref(msg->result);
    } else {
        spoke_kill(sp, "start-failed", true, "spoke %s: %s", sp->m->name, err);
        return;
    }
    /* The revision is part of the pin: a server that now speaks another one (and so
     * carries, or is checked for, other things) is refused until it is pinned again. */
    if (!sp->m->unpinned && sp->m->protocol && sp->m->protocol != sp->version) {
        json_decref(info);
        spoke_kill(sp, "start-failed", true,
                   "spoke %s speaks MCP %s, pinned with %s (`hub spokes update %s` pins it again)",
                   sp->m->name, mcpver_name(sp->version), mcpver_name(sp->m->protocol),
                   sp->m->name);
        return;
    }
    sp->t_init = now_mono_ns();
    sp->state = SP_LISTING;
    json_decref(sp->init_result);
    sp->init_result = info;
    if (!sp->discovering &&
        spoke_send(sp, jrpc_notification("notifications/initialized", NULL)) < 0)
        return;
    send_request(sp, "tools/list", json_object(), PEND_TOOLS_LIST, NULL);
}

/* A 2026-07-28 server sends nothing it was not asked for: to hear that its tools
 * changed (and hold them against the pin again, mcp_relist), the hub opens a
 * subscription for the spoke's life, when the server says its list can change. Its
 * acknowledgement needs nothing; the server's end of it (an answer) is only noted.
 * False when the spoke ended on the send. */
static bool mcp_listen(struct spoke *sp)
{
    const json_t *tools =
        json_object_get(json_object_get(sp->init_result, "capabilities"), "tools");
    if (!mcpver_modern(sp->version) || sp->m->unpinned ||
        !json_is_true(json_object_get(tools, "listChanged")))
        return true;
    return send_request(sp, "subscriptions/listen",
                        json_pack("{s:{s:b}}", "notifications", "toolsListChanged", 1), PEND_LISTEN,
                        NULL) >= 0;
}

/* After notifications/tools/list_changed: the list is fetched and held against the
 * pin again (a server that swaps a tool's description later is refused like one that
 * starts with it). */
static void mcp_relist(struct spoke *sp)
{
    if (sp->relisting) {
        sp->relist_again = true;
        return;
    }
    sp->relisting = true;
    json_decref(sp->tools_seen);
    sp->tools_seen = NULL;
    sp->list_pages = 0;
    send_request(sp, "tools/list", json_object(), PEND_TOOLS_LIST, NULL);
}

static void on_tools_list(struct spoke *sp, struct jrpc_msg *msg)
{
    char err[300];
    if (msg->kind == JRPC_ERROR) {
        /* What the server said (a failed fetch at start, a missing key) is the cause. */
        spoke_kill(sp, "start-failed", true,
                   "spoke %s answered tools/list with an error: %.200s (code %ld)", sp->m->name,
                   msg->error_message, msg->error_code);
        return;
    }
    json_t *tools = msg->kind == JRPC_RESULT ? json_object_get(msg->result, "tools") : NULL;
    if (!json_is_array(tools)) {
        spoke_kill(sp, "start-failed", true, "spoke %s: tools/list gave no tools array",
                   sp->m->name);
        return;
    }
    if (!sp->tools_seen)
        sp->tools_seen = json_array();
    size_t listed = json_array_size(sp->tools_seen) + json_array_size(tools);
    if (listed > sp->hub->cfg->max_tools) {
        spoke_kill(sp, "start-failed", true,
                   "spoke %s: tools/list lists %zu tools%s, more than the limit of %zu "
                   "(hub.json \"max_tools\", up to %d, raises it)",
                   sp->m->name, listed,
                   json_is_string(json_object_get(msg->result, "nextCursor")) ? " or more" : "",
                   sp->hub->cfg->max_tools, MANIFEST_MAX_TOOLS);
        return;
    }
    json_array_extend(sp->tools_seen, tools);
    json_t *cursor = json_object_get(msg->result, "nextCursor");
    if (json_is_string(cursor) && ++sp->list_pages < MAX_LIST_PAGES) {
        send_request(sp, "tools/list", json_pack("{s:O}", "cursor", cursor), PEND_TOOLS_LIST, NULL);
        return;
    }
    if (!sp->m->unpinned && !mcp_check_tools(sp->m, sp->tools_seen, err, sizeof(err))) {
        if (sp->relisting)
            spoke_kill(sp, "pin", false,
                       "spoke %s changed its tools after they were pinned (list_changed): %s",
                       sp->m->name, err);
        else
            spoke_kill(sp, "start-failed", true, "spoke %s does not match its manifest: %s",
                       sp->m->name, err);
        return;
    }
    json_decref(sp->tools_seen);
    sp->tools_seen = NULL;
    sp->list_pages = 0;
    if (sp->relisting) {
        sp->relisting = false;
        if (sp->relist_again) {
            sp->relist_again = false;
            mcp_relist(sp);
        }
        return;
    }
    /* Before the first call goes: a change it makes then is heard. */
    if (mcp_listen(sp))
        spoke_ready(sp);
}

/* MCP's multi round-trip requests (2026-07-28): the spoke answered the call with
 * what it needs first (roots, a sampled message, the user's answer); the hub answers
 * each as it would the same request from a spoke of an earlier revision (sampling and
 * elicitation through its hooks, audited alike) and sends the call again with the
 * answers, at most MAX_INPUT_ROUNDS times. */
#define MAX_INPUT_ROUNDS 8
static void start_hook(struct spoke *sp, struct call *c, json_t *id, const char *input_key,
                       const json_t *params_in, enum sreq_kind kind);

static void send_with_inputs(struct call *c)
{
    struct spoke *sp = c->target;
    json_t *params = c->method ? json_deep_copy(c->args)
                               : json_pack("{s:s,s:O,s:{s:s}}", "name", c->tool->name, "arguments",
                                           c->args, "_meta", "progressToken", c->id);
    json_object_set_new(params, "inputResponses", c->input_responses);
    c->input_responses = NULL;
    if (c->input_state)
        json_object_set_new(params, "requestState", c->input_state);
    c->input_state = NULL;
    send_request(sp, c->method ? c->method : "tools/call", params, PEND_NONE, &c->rpc_id);
}

/* One input request of the round has its answer (or its failure in c->input_error):
 * once all have, the call goes again, or fails with the first failure. */
static void input_settled(struct call *c)
{
    if (c->inputs_starting || c->state == CALL_DONE)
        return;
    if (c->input_error) {
        char *why = c->input_error;
        c->input_error = NULL;
        call_fail(c, HUB_ERR_SPOKE, "spoke", "%s.%s asked for input the hub could not give: %s",
                  c->target->m->name, c->tool->name, why);
        free(why);
        return;
    }
    if (c->inputs_pending == 0)
        send_with_inputs(c);
}

static void retry_with_inputs(struct spoke *sp, struct call *c, const json_t *result)
{
    char err[300];
    /* The spoke has answered that request: a second answer to it is one too many
     * (on_response), and a cancel has nothing to name until the call goes again. */
    c->rpc_id = -1;
    if (++c->input_rounds > MAX_INPUT_ROUNDS) {
        call_fail(c, HUB_ERR_SPOKE, "spoke", "%s.%s asked for input more than %d times",
                  sp->m->name, c->tool->name, MAX_INPUT_ROUNDS);
        return;
    }
    const json_t *requests = json_object_get(result, "inputRequests");
    if (!mcp_check_inputs(sp, requests, err, sizeof(err))) {
        call_fail(c, HUB_ERR_SPOKE, "spoke", "%s.%s: %s", sp->m->name, c->tool->name, err);
        return;
    }
    json_decref(c->input_responses);
    c->input_responses = json_object();
    json_decref(c->input_state);
    const json_t *state = json_object_get(result, "requestState");
    c->input_state = json_is_string(state) ? json_incref((json_t *)state) : NULL;
    c->inputs_starting = true;
    const char *key;
    json_t *req;
    json_object_foreach((json_t *)requests, key, req)
    {
        const char *method = json_string_value(json_object_get(req, "method"));
        if (strcmp(method, "roots/list") == 0) {
            json_object_set_new(c->input_responses, key, mcp_roots(sp));
            continue;
        }
        c->inputs_pending++;
        start_hook(sp, c, NULL, key, json_object_get(req, "params"),
                   strcmp(method, "elicitation/create") == 0 ? SREQ_ELICIT : SREQ_SAMPLING);
    }
    c->inputs_starting = false;
    input_settled(c);
}

static void on_call_response(struct spoke *sp, struct jrpc_msg *msg, struct call *c)
{
    if (msg->kind == JRPC_ERROR) {
        call_fail(c, HUB_ERR_SPOKE, "spoke", "%s.%s answered with error %ld: %.300s", sp->m->name,
                  c->tool->name, msg->error_code, msg->error_message);
        return;
    }
    const char *rt = json_string_value(json_object_get(msg->result, "resultType"));
    if (mcpver_modern(sp->version) && rt && strcmp(rt, "input_required") == 0) {
        retry_with_inputs(sp, c, msg->result);
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
        sp->t_last_answer = now_mono_ns();
        switch (kind) {
        case PEND_INITIALIZE:
            on_initialize(sp, msg);
            return;
        case PEND_TOOLS_LIST:
            on_tools_list(sp, msg);
            return;
        case PEND_LISTEN:
            if (sp->proc) {
                char *line = xasprintf("[hub: the spoke ended its tools subscription: %.200s]",
                                       msg->kind == JRPC_ERROR ? msg->error_message : "answered");
                proc_log_line(sp->proc, line);
                free(line);
            }
            return;
        case PEND_PING:
        case PEND_NONE:
            return;
        }
    }
    struct call *c = spoke_inflight_by_rpc(sp, id);
    if (c) {
        sp->t_last_answer = now_mono_ns();
        on_call_response(sp, msg, c);
        return;
    }
    for (unsigned i = 0; i < SPOKE_CANCELLED_IDS && i < sp->n_cancelled; i++)
        if (sp->cancelled_ids[i] == id) {
            sp->t_last_answer = now_mono_ns();
            return; /* crossed the cancellation: dropped */
        }
    /* Never sent, or answered already (a second answer could stand in for the first,
     * or for a call of another session that reused nothing but the number). */
    spoke_kill(sp, "protocol", false,
               "spoke %s answered a request it was never sent or had answered already",
               sp->m->name);
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
    parent->sreqs++;
    parent->asked = true;
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
    if (r->input_key) {
        /* An input request: its answer waits with the round's others (input_settled). */
        struct call *c = r->parent;
        if (result)
            json_object_set_new(c->input_responses, r->input_key, result);
        else if (!c->input_error)
            c->input_error = xasprintf("%s (%s)", message ? message : "failed", r->input_key);
        c->inputs_pending--;
        r->stage = SREQ_DONE;
        sreq_cancel(r);
        input_settled(c);
        return;
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

/* Hands a spoke's sampling or elicitation request to the hub's hook: a request it sent
 * during call c (id: answered with the hook's answer), or an input request of c's
 * InputRequiredResult (input_key: the answer goes into c's inputResponses). */
static void start_hook(struct spoke *sp, struct call *c, json_t *id, const char *input_key,
                       const json_t *params_in, enum sreq_kind kind)
{
    struct hub *h = sp->hub;
    /* The hub-to-spoke id that named the call means nothing beyond this connection. */
    json_t *params = json_deep_copy(params_in);
    json_t *meta = json_object_get(params, "_meta");
    if (json_is_object(meta)) {
        json_object_del(meta, "relatedRequestId");
        if (json_object_size(meta) == 0)
            json_object_del(params, "_meta");
    }
    struct sreq *r = sreq_new(sp, kind, c, id, params);
    json_decref(params);
    r->input_key = input_key ? xstrdup(input_key) : NULL;
    r->stage = SREQ_HOOK;
    r->hook_pending = true;
    struct hook_request hr = {.user = sp->user,
                              .app = sp->m->name,
                              .spoke_id = sp->id,
                              .params = r->params,
                              .origin = r->parent ? r->parent->origin : NULL};
    if (kind == SREQ_ELICIT) {
        r->paused = true;
        call_pause(r->parent);
        h->elicit->create(h->elicit, &hr, hook_done, r);
    } else {
        h->sampling->create_message(h->sampling, &hr, hook_done, r);
    }
}

static void on_hook_request(struct spoke *sp, struct call *c, struct jrpc_msg *msg,
                            enum sreq_kind kind)
{
    if (!json_is_object(msg->params)) {
        mcp_reply_error(sp, msg->id, JRPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    start_hook(sp, c, msg->id, NULL, msg->params, kind);
}

/* The call a request or notification from the spoke belongs to: the one it names by
 * _meta.relatedRequestId (the id of the hub's request) or _meta.progressToken (the
 * call's token), else the only call in flight. NULL, with *why, when it names a call
 * that is not in flight, or names none while several are. */
static struct call *related_call(const struct spoke *sp, const json_t *params, const char **why)
{
    const json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
    const json_t *rid = json_object_get(meta, "relatedRequestId");
    if (rid) {
        struct call *c =
            json_is_integer(rid) ? spoke_inflight_by_rpc(sp, json_integer_value(rid)) : NULL;
        if (!c)
            *why = "its _meta.relatedRequestId names no call the spoke serves";
        return c;
    }
    const char *token = json_string_value(json_object_get(meta, "progressToken"));
    struct call *c = token ? spoke_inflight_by_token(sp, token) : NULL;
    if (c)
        return c;
    c = TAILQ_FIRST(&sp->inflight);
    if (sp->n_inflight == 1 && c->state == CALL_SENT)
        return c;
    *why = sp->n_inflight == 0
               ? "a spoke may ask the hub only while it serves a call"
               : "the spoke serves several calls and the request names none of them "
                 "(_meta.relatedRequestId: the id of the hub's tools/call)";
    return NULL;
}

/* A frame that names no call counts against the spoke's own budget: a burst and a
 * steady rate while it serves nothing, NOTIFY_BUDGET_PER_CALL between two calls' ends
 * while it serves some. False (and the spoke killed) past it. */
static bool spoke_budget(struct spoke *sp)
{
    if (sp->n_inflight == 0) {
        if (tb_take(&sp->idle_tb, 1, now_mono_ns()))
            return true;
        spoke_kill(sp, "flood", false, "spoke %s sent too many frames outside a call", sp->m->name);
        return false;
    }
    if (++sp->busy_frames <= NOTIFY_BUDGET_PER_CALL)
        return true;
    spoke_kill(sp, "flood", false, "spoke %s sent too many frames that name none of its calls",
               sp->m->name);
    return false;
}

/* One more frame from the spoke during call c: false (and the spoke killed) past the
 * call's budget. */
static bool call_budget(struct spoke *sp, struct call *c)
{
    if (++c->notifications <= NOTIFY_BUDGET_PER_CALL)
        return true;
    spoke_kill(sp, "flood", false, "spoke %s sent too many frames during one call (%s.%s)",
               sp->m->name, c->m->name, c->tool->name);
    return false;
}

/* A request the hub will not take: answered with why, and on record. */
static void refuse_request(struct spoke *sp, struct jrpc_msg *msg, const char *why)
{
    json_t *rec = haudit_new("spoke-request", "failure");
    haudit_spoke(rec, sp);
    char method[64];
    hub_text_neutral(json_object_get(msg->root, "method"), method, sizeof(method));
    audit_set_str(rec, "isolate.method", method);
    audit_set_str(rec, "event.reason", why);
    audit_set_int(rec, "isolate.calls_in_flight", sp->n_inflight);
    haudit_note(sp->hub, rec);
    mcp_reply_error(sp, msg->id, JRPC_INVALID_REQUEST, why);
}

static void on_request(struct spoke *sp, struct jrpc_msg *msg)
{
    const char *why = NULL;
    struct call *c = sp->state == SP_READY ? related_call(sp, msg->params, &why) : NULL;
    /* The roots the spoke may work in: asked whenever it likes (server-pdf asks once
     * initialized, before any call), and answered from its manifest alone. */
    if (strcmp(msg->method, "roots/list") == 0 && sp->m->roots) {
        if (c ? call_budget(sp, c) : spoke_budget(sp))
            mcp_reply(sp, msg->id, mcp_roots(sp));
        return;
    }
    if (strcmp(msg->method, "ping") == 0) {
        /* A ping costs the hub as much as any frame: it counts against a budget like
         * the rest (a spoke once had 1.7 million answered in one call). */
        if (c ? call_budget(sp, c) : spoke_budget(sp))
            mcp_reply(sp, msg->id, json_object());
        return;
    }
    if (!c) {
        if (spoke_budget(sp))
            refuse_request(sp, msg, why ? why : "the spoke is not ready");
        return;
    }
    if (!call_budget(sp, c))
        return;
    if (c->sreqs >= CALL_MAX_SREQS) {
        spoke_kill(sp, "flood", false, "spoke %s has too many requests in flight for one call",
                   sp->m->name);
        return;
    }
    if (strcmp(msg->method, "isolate/call") == 0) {
        mediate_isolate_call(sp->hub, sp, c, msg->id, msg->params);
    } else if (strcmp(msg->method, "sampling/createMessage") == 0) {
        on_hook_request(sp, c, msg, SREQ_SAMPLING);
    } else if (strcmp(msg->method, "elicitation/create") == 0) {
        on_hook_request(sp, c, msg, SREQ_ELICIT);
    } else {
        char text[200];
        snprintf(text, sizeof(text), "method \"%.100s\" is not offered by the hub", msg->method);
        mcp_reply_error(sp, msg->id, JRPC_METHOD_NOT_FOUND, text);
    }
}

/* Text from a spoke made safe to record and show: a string as it is, anything else as
 * compact JSON; control characters become spaces; cut at a character boundary. */
void hub_text_neutral(const json_t *v, char *out, size_t len)
{
    out[0] = '\0';
    if (!v || len == 0)
        return;
    char *dump = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    const char *src = json_is_string(v) ? json_string_value(v) : dump;
    size_t n = src ? strlen(src) : 0;
    if (n > len - 1) {
        n = len - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--; /* not inside a UTF-8 sequence */
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char *u = (const unsigned char *)src + i;
        out[i] = u[0] < 0x20 || u[0] == 0x7f ? ' ' : (char)u[0];
        /* C1 controls (U+0080-U+009F) and the bidirectional overrides and isolates
         * (U+202A-U+202E, U+2066-U+2069) would reorder or restyle a terminal line. */
        size_t seq = 0;
        if (u[0] == 0xC2 && i + 1 < n && u[1] >= 0x80 && u[1] <= 0x9F)
            seq = 2;
        else if (u[0] == 0xE2 && i + 2 < n &&
                 ((u[1] == 0x80 && u[2] >= 0xAA && u[2] <= 0xAE) ||
                  (u[1] == 0x81 && u[2] >= 0xA6 && u[2] <= 0xA9)))
            seq = 3;
        for (size_t k = 0; k < seq; k++)
            out[i + k] = ' ';
        if (seq)
            i += seq - 1;
    }
    out[n] = '\0';
    free(dump);
}

#define EVENT_TEXT_MAX 512
/* What one call's progress and log messages may add to the audit log (the record's own
 * fields counted as 400 bytes each): 1000 messages of a call added 966 KiB before. The
 * rest still reach the caller; the call's tool-call record counts them
 * (isolate.events_unaudited). */
#define CALL_EVENT_AUDIT_BUDGET (64 * 1024)
#define EVENT_RECORD_COST 400

static const char *const log_levels[] = {"debug",    "info",  "notice",    "warning", "error",
                                         "critical", "alert", "emergency", NULL};

/* notifications/progress and notifications/message during call c: on record, then to
 * whoever made the call. */
static void on_call_event(struct spoke *sp, struct call *c, struct jrpc_msg *msg, bool progress)
{
    const json_t *p = msg->params;
    char text[EVENT_TEXT_MAX], logger[65];
    struct call_event ev = {
        .app = sp->m->name, .tool = c->tool->name, .call_id = c->id, .total = -1};
    if (progress) {
        const json_t *pv = json_object_get(p, "progress"), *tv = json_object_get(p, "total");
        if (!json_is_number(pv))
            return;
        ev.kind = CALL_EVENT_PROGRESS;
        ev.progress = json_number_value(pv);
        ev.total = json_is_number(tv) ? json_number_value(tv) : -1;
        hub_text_neutral(json_object_get(p, "message"), text, sizeof(text));
    } else {
        const char *level = json_string_value(json_object_get(p, "level"));
        ev.kind = CALL_EVENT_LOG;
        ev.level = "info";
        for (size_t i = 0; level && log_levels[i]; i++)
            if (strcmp(level, log_levels[i]) == 0)
                ev.level = log_levels[i];
        hub_text_neutral(json_object_get(p, "logger"), logger, sizeof(logger));
        ev.logger = logger[0] ? logger : NULL;
        hub_text_neutral(json_object_get(p, "data"), text, sizeof(text));
    }
    ev.text = text;
    size_t cost = EVENT_RECORD_COST + strlen(text) + (ev.logger ? strlen(ev.logger) : 0);
    if (c->event_audit_bytes + cost > CALL_EVENT_AUDIT_BUDGET) {
        c->events_unaudited++;
        if (c->on_event)
            c->on_event(c->event_ud, &ev);
        return;
    }
    c->event_audit_bytes += cost;
    json_t *rec = haudit_new(progress ? "spoke-progress" : "spoke-log", "unknown");
    haudit_call(rec, c);
    if (progress) {
        audit_set(rec, "isolate.progress", json_real(ev.progress));
        if (ev.total >= 0)
            audit_set(rec, "isolate.progress_total", json_real(ev.total));
    } else {
        audit_set_str(rec, "log.level", ev.level);
        if (ev.logger)
            audit_set_str(rec, "log.logger", ev.logger);
    }
    audit_set_str(rec, "message", text);
    haudit_note(sp->hub, rec);
    if (c->on_event)
        c->on_event(c->event_ud, &ev);
}

/* A log message that concerns no caller (its start-up, say, or one that names no call
 * while several are in flight): it goes to the spoke's log. */
static void log_idle_message(struct spoke *sp, const json_t *params)
{
    if (!sp->proc)
        return;
    char level[16], text[EVENT_TEXT_MAX];
    hub_text_neutral(json_object_get(params, "level"), level, sizeof(level));
    hub_text_neutral(json_object_get(params, "data"), text, sizeof(text));
    char *line = xasprintf("[hub: notifications/message, %s] %s", level[0] ? level : "info", text);
    proc_log_line(sp->proc, line);
    free(line);
}

/* The call a notification is about: progress by its token, which must be one of this
 * spoke's calls in flight (a spoke cannot speak for a call it does not serve); a log
 * message by _meta, or the only call in flight. NULL: none (counted against the
 * spoke's own budget, and not passed on to any caller). */
static struct call *notification_call(const struct spoke *sp, struct jrpc_msg *msg)
{
    if (sp->state != SP_READY || !json_is_object(msg->params))
        return NULL;
    if (strcmp(msg->method, "notifications/progress") == 0) {
        const char *token = json_string_value(json_object_get(msg->params, "progressToken"));
        return token ? spoke_inflight_by_token(sp, token) : NULL;
    }
    if (strcmp(msg->method, "notifications/message") == 0) {
        const char *why;
        return related_call(sp, msg->params, &why);
    }
    return NULL;
}

static void on_notification(struct spoke *sp, struct jrpc_msg *msg)
{
    struct call *c = notification_call(sp, msg);
    if (c ? !call_budget(sp, c) : !spoke_budget(sp))
        return;
    /* A changed tool list is held against the pin again, whenever it comes (not
     * while starting: the hub lists the tools then anyway). */
    if (strcmp(msg->method, "notifications/tools/list_changed") == 0) {
        if (sp->state == SP_READY && !sp->m->unpinned)
            mcp_relist(sp);
        return;
    }
    if (!json_is_object(msg->params))
        return;
    if (!c) {
        if (strcmp(msg->method, "notifications/message") == 0)
            log_idle_message(sp, msg->params);
        return;
    }
    if (strcmp(msg->method, "notifications/progress") == 0)
        on_call_event(sp, c, msg, true);
    else if (strcmp(msg->method, "notifications/message") == 0)
        on_call_event(sp, c, msg, false);
}

static void on_message(struct spoke *sp, struct jrpc_msg *msg)
{
    switch (msg->kind) {
    case JRPC_RESULT:
    case JRPC_ERROR:
        on_response(sp, msg);
        break;
    case JRPC_REQUEST:
        on_request(sp, msg);
        break;
    case JRPC_NOTIFICATION:
        on_notification(sp, msg);
        break;
    }
}

/* A line on stdout that is not a frame: neutralised into the spoke's log and skipped,
 * within the noise budget (past it the spoke is killed). The first of an instance is
 * on record, so that a SIEM sees a server that talks past its protocol. */
static void on_noise(struct spoke *sp, const char *line, size_t len)
{
    char shown[NOISE_LINE_SHOWN];
    tt_inline_buf(shown, sizeof(shown), line, len);
    if (!tb_take(&sp->noise_tb, (double)len + 1, now_mono_ns())) {
        char brief[80];
        tt_inline_buf(brief, sizeof(brief), line, len);
        spoke_kill(sp, "flood", false,
                   "spoke %s wrote more output on stdout that is not JSON-RPC than the hub "
                   "skips (%d bytes, then %d a second; last %zu bytes: \"%s\")",
                   sp->m->name, NOISE_BURST_BYTES, NOISE_BYTES_PER_S, len, brief);
        return;
    }
    if (sp->proc) {
        char *note = xasprintf("[hub: a line on stdout that is not JSON-RPC, skipped] %s", shown);
        proc_log_line(sp->proc, note);
        free(note);
    }
    if (!sp->noise_seen) {
        sp->noise_seen = true;
        json_t *rec = haudit_new("spoke-noise", "unknown");
        haudit_spoke(rec, sp);
        audit_set_str(rec, "message", shown);
        audit_set_int(rec, "source.bytes", (int64_t)len);
        haudit_note(sp->hub, rec);
    }
}

/* A JSON-RPC batch, which only protocol 2025-03-26 has: each message in turn. From a
 * spoke on another version it is not a frame of its protocol: skipped as noise. */
static void on_batch(struct spoke *sp, json_t *batch, const char *line, size_t len)
{
    if (!mcpver_batches(sp->version)) {
        on_noise(sp, line, len);
        return;
    }
    if (json_array_size(batch) == 0 || json_array_size(batch) > MAX_BATCH) {
        spoke_kill(sp, "malformed-frame", false,
                   "spoke %s sent a batch of %zu messages (1 to %d are taken)", sp->m->name,
                   json_array_size(batch), MAX_BATCH);
        return;
    }
    uint64_t gen = sp->gen;
    size_t i;
    json_t *v;
    json_array_foreach(batch, i, v)
    {
        struct jrpc_msg msg;
        int code;
        char err[256];
        if (jrpc_parse_value(json_incref(v), &msg, &code, err, sizeof(err)) < 0) {
            spoke_kill(sp, "malformed-frame", false,
                       "spoke %s sent a malformed frame (batch item %zu): %s", sp->m->name, i, err);
            return;
        }
        on_message(sp, &msg);
        jrpc_msg_free(&msg);
        if (sp->gen != gen || sp->state == SP_STOPPED)
            return; /* killed by that message */
    }
}

void mcp_on_frame(struct spoke *sp, const char *line, size_t len)
{
    struct jrpc_msg msg;
    json_t *batch;
    int code;
    char err[256];
    switch (jrpc_parse_line(line, len, &msg, &batch, &code, err, sizeof(err))) {
    case JRPC_LINE_NOISE:
        on_noise(sp, line, len);
        return;
    case JRPC_LINE_BATCH:
        on_batch(sp, batch, line, len);
        json_decref(batch);
        return;
    case JRPC_LINE_INVALID:
        spoke_kill(sp, "malformed-frame", false, "spoke %s sent a malformed frame: %s", sp->m->name,
                   err);
        return;
    case JRPC_LINE_MESSAGE:
        break;
    }
    on_message(sp, &msg);
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
            r->parent->sreqs--;
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
    free(r->input_key);
    json_decref(r->params);
    json_decref(r->result);
    free(r);
}
