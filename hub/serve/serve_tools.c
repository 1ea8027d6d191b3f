/* Tools as the client sees them: the manifests' tools (the contract the hub checked
 * each spoke against), named APP__TOOL in the gateway shape or by their own names for
 * one app, and tools/call through the hub's mediation. A refusal or failure of the hub
 * reaches the client as a tool result with isError, saying which layer stopped the
 * call and why, so that the model reading it can tell a "no" from a crash. */
#include "log.h"
#include "serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GATEWAY_SEP "__"

static json_t *tool_object(const struct manifest *m, const struct manifest_tool *t, bool gateway)
{
    json_t *o = json_object();
    if (gateway) {
        json_object_set_new(o, "name", json_sprintf("%s" GATEWAY_SEP "%s", m->name, t->name));
        json_object_set_new(o, "title", json_sprintf("%s: %s", m->name, t->name));
    } else {
        json_object_set_new(o, "name", json_string(t->name));
    }
    json_object_set_new(o, "description", json_string(t->description));
    json_object_set(o, "inputSchema", t->input_schema_json);
    if (t->output_schema_json)
        json_object_set(o, "outputSchema", t->output_schema_json);
    /* MCP's hints, from what the manifest knows: an irreversible tool is destructive. */
    if (t->irreversible)
        json_object_set_new(o, "annotations", json_pack("{s:b}", "destructiveHint", 1));
    return o;
}

json_t *serve_tools_list(struct serve *sv)
{
    json_t *tools = json_array();
    for (size_t i = 0; i < sv->ms->n; i++) {
        const struct manifest *m = sv->ms->v[i];
        if (sv->app && m != sv->app)
            continue;
        for (size_t j = 0; j < m->n_tools; j++)
            json_array_append_new(tools, tool_object(m, &m->tools[j], !sv->app));
    }
    return tools;
}

/* The app and tool a client's tool name stands for; NULL when none. App names may hold
 * "__" themselves, so every split is tried against the installed apps. */
static const struct manifest_tool *resolve(struct serve *sv, const char *name,
                                           const struct manifest **mout)
{
    if (sv->app) {
        *mout = sv->app;
        return manifest_tool(sv->app, name);
    }
    for (const char *p = strstr(name, GATEWAY_SEP); p; p = strstr(p + 1, GATEWAY_SEP)) {
        size_t alen = (size_t)(p - name);
        if (alen == 0 || alen > MANIFEST_NAME_MAX)
            continue;
        char app[MANIFEST_NAME_MAX + 1];
        memcpy(app, name, alen);
        app[alen] = '\0';
        const struct manifest *m = manifest_find(sv->ms, app);
        const struct manifest_tool *t = m ? manifest_tool(m, p + strlen(GATEWAY_SEP)) : NULL;
        if (t) {
            *mout = m;
            return t;
        }
    }
    return NULL;
}

void serve_call_unref(struct serve_call *sc)
{
    if (--sc->refs > 0)
        return;
    json_decref(sc->req_id);
    json_decref(sc->progress_token);
    free(sc);
}

static void detach(struct serve_call *sc)
{
    if (!sc->ss)
        return;
    LIST_REMOVE(sc, link);
    sc->ss->n_calls--;
    sc->ss = NULL;
}

static json_t *refusal_result(const struct serve_call *sc, const struct call_result *r)
{
    const char *layer = r->layer ? r->layer : "hub";
    char text[1200];
    if (strcmp(layer, "permission") == 0 && sc->denial[0])
        snprintf(text, sizeof(text), "The hub refused %s.%s [%s]: %s (%s).", sc->app, sc->tool,
                 layer, r->message ? r->message : "refused", sc->denial);
    else
        snprintf(text, sizeof(text), "The hub stopped %s.%s [%s]: %s", sc->app, sc->tool, layer,
                 r->message ? r->message : "failed");
    return json_pack("{s:[{s:s,s:s}],s:b,s:{s:{s:i,s:s}}}", "content", "type", "text", "text", text,
                     "isError", 1, "_meta", "isolategpt/error", "code", r->code, "layer", layer);
}

static void on_call_done(void *ud, const struct call_result *r)
{
    struct serve_call *sc = ud;
    struct serve_session *ss = sc->ss;
    const char *outcome;
    if (r->result)
        outcome = json_is_true(json_object_get(r->result, "isError")) ? "tool-error" : "success";
    else
        outcome = r->code == HUB_ERR_DENIED || r->code == HUB_ERR_CYCLE ? "refused" : "failure";
    if (sc->cancelled)
        outcome = "cancelled";
    if (ss) {
        detach(sc);
        if (r->result)
            serve_session_send(ss, jrpc_result(sc->req_id, json_deep_copy(r->result)), sc->req_id);
        else
            serve_session_send(ss, jrpc_result(sc->req_id, refusal_result(sc, r)), sc->req_id);
    }
    if (!sc->cancelled) { /* a cancelled call was counted and audited when cancelled */
        serve_metrics_call(sc->sv, outcome, r->result ? NULL : r->layer, now_mono_ns() - sc->t0);
        serve_audit_call(sc, ss, outcome, r->result ? NULL : r->layer, r->message);
    }
    serve_call_unref(sc);
}

void serve_tools_call(struct serve_session *ss, const json_t *id, const json_t *params)
{
    struct serve *sv = ss->sv;
    const char *name = json_string_value(json_object_get(params, "name"));
    if (!name) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "tools/call needs a tool name");
        return;
    }
    const struct manifest *m = NULL;
    const struct manifest_tool *t = resolve(sv, name, &m);
    if (!t) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "unknown tool \"%.130s\"", name);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "arguments must be an object");
        return;
    }
    if (ss->n_calls >= SERVE_MAX_CALLS) {
        serve_session_error(ss, id, -32005, "too many calls in flight in this session (max %d)",
                            SERVE_MAX_CALLS);
        return;
    }
    struct serve_call *sc = xcalloc(1, sizeof(*sc));
    sc->ss = ss;
    sc->sv = sv;
    sc->refs = 1;
    sc->req_id = json_deep_copy(id);
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (json_is_string(token) || json_is_integer(token))
        sc->progress_token = json_deep_copy(token);
    str_copy(sc->app, m->name, sizeof(sc->app));
    str_copy(sc->tool, t->name, sizeof(sc->tool));
    audit_new_id(sc->audit_id);
    str_copy(sc->session_id, ss->id, sizeof(sc->session_id));
    str_copy(sc->user, ss->user, sizeof(sc->user));
    sc->t0 = now_mono_ns();
    LIST_INSERT_HEAD(&ss->calls, sc, link);
    ss->n_calls++;
    ss->calls_total++;
    struct call_opts o = {.user = ss->user, .ask_exec = sv->ask_exec, .origin = sc};
    json_t *empty = args ? NULL : json_object();
    hub_call(sv->hub, &o, m->name, t->name, args ? args : empty, on_call_done, sc);
    json_decref(empty);
}

void serve_tools_cancel(struct serve_session *ss, const json_t *request_id)
{
    struct serve_call *sc;
    LIST_FOREACH(sc, &ss->calls, link)
    if (json_equal(sc->req_id, (json_t *)request_id))
        break;
    if (!sc)
        return; /* finished already, or never ours: nothing to do (MCP says ignore) */
    /* MCP: after a cancellation the server sends no answer. The call itself runs on in
     * the hub until its end (the runtime has no way yet to stop one call in a spoke);
     * its result goes nowhere. */
    sc->cancelled = true;
    ss->sv->m.calls_cancelled++;
    serve_audit_call(sc, ss, "cancelled", "client", "the client cancelled the call");
    detach(sc);
    if (ss->tr && ss->tr->forget)
        ss->tr->forget(ss->t, sc->req_id);
}
