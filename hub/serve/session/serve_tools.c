/* Tools as the client sees them: the manifests' tools (the contract the hub checked
 * each spoke against), named APP__TOOL in the gateway shape or by their own names for
 * one app, and tools/call through the hub's mediation. A refusal or failure of the hub
 * reaches the client as a tool result with isError, saying which layer stopped the
 * call and why, so that the model reading it can tell a "no" from a crash. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tool as its server listed it and the hub pinned it (title, annotations, icons,
 * schemas, _meta), under the client's name for it. */
json_t *serve_tool_object(const struct manifest *m, const struct manifest_tool *t, bool gateway)
{
    json_t *o = json_deep_copy(t->object);
    if (gateway) {
        json_object_set_new(o, "name", json_sprintf("%s" GATEWAY_SEP "%s", m->name, t->name));
        const char *title = json_string_value(json_object_get(o, "title"));
        json_object_set_new(o, "title", json_sprintf("%s: %s", m->name, title ? title : t->name));
    }
    /* MCP's hint from what the manifest knows: an irreversible tool is destructive. */
    if (t->irreversible) {
        json_t *ann = json_object_get(o, "annotations");
        if (!json_is_object(ann))
            json_object_set_new(o, "annotations", ann = json_object());
        json_object_set_new(ann, "destructiveHint", json_true());
    }
    return o;
}

json_t *serve_tools_list(struct serve_session *ss)
{
    if (serve_toolsearch_on(ss))
        return serve_toolsearch_list();
    json_t *tools = json_array();
    const struct manifest_set *ms = ss->sv->ms;
    for (size_t i = 0; i < ms->n; i++) {
        const struct manifest *m = ms->v[i];
        if ((ss->app[0] && strcmp(m->name, ss->app) != 0) || !serve_session_app_ok(ss, m->name))
            continue;
        for (size_t j = 0; j < m->n_tools; j++)
            json_array_append_new(tools, serve_tool_object(m, &m->tools[j], !ss->app[0]));
    }
    return tools;
}

/* The app and tool a client's tool name stands for; NULL when none. App names hold no
 * "__" and do not end in "_" (manifest.h), so APP__TOOL splits at its first "__" only:
 * one name, one app (app google's tool drive__x is not app google__drive's x). */
static const struct manifest_tool *resolve(struct serve_session *ss, const char *name,
                                           const struct manifest **mout)
{
    struct serve *sv = ss->sv;
    if (ss->app[0]) {
        *mout = manifest_find(sv->ms, ss->app); /* NULL: it was removed */
        return *mout ? manifest_tool(*mout, name) : NULL;
    }
    const char *p = strstr(name, GATEWAY_SEP);
    size_t alen = p ? (size_t)(p - name) : 0;
    if (alen == 0 || alen > MANIFEST_NAME_MAX)
        return NULL;
    char app[MANIFEST_NAME_MAX + 1];
    memcpy(app, name, alen);
    app[alen] = '\0';
    *mout = manifest_find(sv->ms, app);
    return *mout ? manifest_tool(*mout, p + strlen(GATEWAY_SEP)) : NULL;
}

void serve_call_unref(struct serve_call *sc)
{
    if (--sc->refs > 0)
        return;
    json_decref(sc->req_id);
    json_decref(sc->progress_token);
    json_decref(sc->empty_if_unsupported);
    json_decref(sc->args);
    free(sc);
}

void serve_call_attach(struct serve_call *sc, struct serve_session *ss)
{
    if (sc->ss)
        return;
    sc->ss = ss;
    LIST_INSERT_HEAD(&ss->calls, sc, link);
    ss->n_calls++;
}

void serve_call_detach(struct serve_call *sc)
{
    if (!sc->ss)
        return;
    LIST_REMOVE(sc, link);
    sc->ss->n_calls--;
    sc->ss = NULL;
}

struct serve_call *serve_call_start(struct serve_session *ss, const json_t *id, const char *app,
                                    const char *tool)
{
    if (ss->n_calls >= SERVE_MAX_CALLS) {
        serve_session_error(ss, id, -32005, "too many requests in flight in this session (max %d)",
                            SERVE_MAX_CALLS);
        return NULL;
    }
    struct serve_call *sc = xcalloc(1, sizeof(*sc));
    sc->ss = ss;
    sc->sv = ss->sv;
    sc->refs = 1;
    sc->req_id = json_deep_copy(id);
    str_copy(sc->app, app, sizeof(sc->app));
    str_copy(sc->tool, tool, sizeof(sc->tool));
    audit_new_id(sc->audit_id);
    str_copy(sc->session_id, ss->id, sizeof(sc->session_id));
    str_copy(sc->user, ss->user, sizeof(sc->user));
    sc->modern = ss->in_modern;
    json_t *elicit = json_object_get(ss->modern_caps, "elicitation");
    sc->can_elicit = sc->modern && json_is_object(elicit) &&
                     (json_object_size(elicit) == 0 || json_object_get(elicit, "form"));
    sc->can_elicit_url = sc->can_elicit && json_is_object(json_object_get(elicit, "url"));
    sc->can_sample = sc->modern && json_is_object(json_object_get(ss->modern_caps, "sampling"));
    sc->t0 = now_mono_ns();
    LIST_INSERT_HEAD(&ss->calls, sc, link);
    ss->n_calls++;
    return sc;
}

static json_t *refusal_result(const struct serve_call *sc, const struct call_result *r)
{
    const char *layer = r->layer ? r->layer : "hub";
    char text[1200];
    /* The denial's reason once: the runtime's message may quote it already. */
    if (strcmp(layer, "permission") == 0 && sc->denial[0] &&
        !(r->message && strstr(r->message, sc->denial)))
        snprintf(text, sizeof(text), "The hub refused %s.%s [%s]: %s (%s).", sc->app, sc->tool,
                 layer, r->message ? r->message : "refused", sc->denial);
    else
        snprintf(text, sizeof(text), "The hub stopped %s.%s [%s]: %s", sc->app, sc->tool, layer,
                 r->message ? r->message : "failed");
    return json_pack("{s:[{s:s,s:s}],s:b,s:{s:{s:i,s:s}}}", "content", "type", "text", "text", text,
                     "isError", 1, "_meta", "isolategpt/error", "code", r->code, "layer", layer);
}

/* A spoke's progress or log message during the call, on record already and its text
 * neutralised by the hub: progress goes to a client that asked for it (its own token),
 * log messages at or above the session's level. */
static void on_call_event(void *ud, const struct call_event *ev)
{
    struct serve_call *sc = ud;
    struct serve_session *ss = sc->ss;
    if (!ss)
        return;
    if (ev->kind == CALL_EVENT_PROGRESS) {
        if (!sc->progress_token)
            return;
        json_t *p =
            json_pack("{s:O,s:f}", "progressToken", sc->progress_token, "progress", ev->progress);
        if (ev->total >= 0)
            json_object_set_new(p, "total", json_real(ev->total));
        if (ev->text && ev->text[0])
            json_object_set_new(p, "message", json_string(ev->text));
        serve_session_send(ss, jrpc_notification("notifications/progress", p), sc->req_id);
    } else {
        int level = ev->level ? serve_log_level(ev->level) : -1;
        if (level < serve_session_level_for(ss, sc->req_id))
            return;
        json_t *p = json_pack("{s:s,s:s}", "level", ev->level, "data", ev->text ? ev->text : "");
        char logger[80];
        snprintf(logger, sizeof(logger), "%s%s%s", sc->app, ev->logger ? "/" : "",
                 ev->logger ? ev->logger : "");
        json_object_set_new(p, "logger", json_string(logger));
        serve_session_send(ss, jrpc_notification("notifications/message", p), sc->req_id);
    }
}

/* ---- the data question ---- */

/* The session has received output of app: remembered, for the data question. */
static void serve_session_saw(struct serve_session *ss, const char *app)
{
    for (size_t i = 0; i < ss->n_seen && i < SERVE_MAX_SEEN; i++)
        if (strcmp(ss->seen[i], app) == 0)
            return;
    if (ss->n_seen < SERVE_MAX_SEEN)
        str_copy(ss->seen[ss->n_seen], app, sizeof(ss->seen[0]));
    ss->n_seen++; /* past the table: "other apps" stay counted, and asked about as such */
}

struct flow {
    struct serve_call *sc;
    char app[MANIFEST_NAME_MAX + 1], tool[MANIFEST_NAME_MAX + 1];
    json_t *args;
    size_t next; /* the next source of ss->seen to ask about */
    char source[MANIFEST_NAME_MAX + 1];
};

static void flow_next(struct flow *f);
static void on_call_done(void *ud, const struct call_result *r);

static void flow_call(struct flow *f)
{
    struct serve_call *sc = f->sc;
    struct serve_session *ss = sc->ss;
    const struct manifest *m = manifest_find(sc->sv->ms, f->app);
    if (!ss || sc->cancelled || !m || !manifest_tool(m, f->tool)) {
        struct call_result r = {.code = HUB_ERR_CANCELLED,
                                .layer = "hub",
                                .message = "the session, the call or the app ended meanwhile"};
        on_call_done(sc, &r);
    } else {
        struct call_opts o = {.user = ss->user,
                              .ask_exec = ss->ask_exec,
                              .origin = sc,
                              .on_event = on_call_event,
                              .event_ud = sc,
                              .traceparent = sc->traceparent[0] ? sc->traceparent : NULL};
        hub_call(sc->sv->hub, &o, f->app, f->tool, f->args, on_call_done, sc);
    }
    json_decref(f->args);
    free(f);
}

static void on_flow_answer(void *ud, enum perm_decision d, const char *reason)
{
    struct flow *f = ud;
    if (d == PERM_ALLOW) {
        flow_next(f);
        return;
    }
    char msg[400];
    snprintf(msg, sizeof(msg),
             "calling %s.%s with what this session received from %s was denied: %.200s", f->app,
             f->tool, f->source, reason ? reason : "");
    struct call_result r = {.code = HUB_ERR_DENIED, .layer = "permission", .message = msg};
    struct serve_call *sc = f->sc;
    str_copy(sc->denial, reason ? reason : "", sizeof(sc->denial));
    json_decref(f->args);
    free(f);
    on_call_done(sc, &r);
}

/* Asks about each other app whose output the session received, one after another (each
 * answer remembered for its scope, "other apps" for those past the table), then calls. */
static void flow_next(struct flow *f)
{
    struct serve_session *ss = f->sc->ss;
    size_t n = !ss ? 0 : ss->n_seen <= SERVE_MAX_SEEN ? ss->n_seen : SERVE_MAX_SEEN + 1;
    while (f->next < n) {
        size_t i = f->next++;
        str_copy(f->source, i < SERVE_MAX_SEEN ? ss->seen[i] : "other apps", sizeof(f->source));
        if (strcmp(f->source, f->app) == 0)
            continue;
        const struct manifest *m = manifest_find(f->sc->sv->ms, f->app);
        const struct manifest_tool *t = m ? manifest_tool(m, f->tool) : NULL;
        serve_ask_data_flow(f->sc, f->app, f->tool, t && t->irreversible, f->source, f->args,
                            on_flow_answer, f);
        return;
    }
    flow_call(f);
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
        serve_call_detach(sc);
        if (r->result) {
            serve_session_saw(ss, sc->app);
            serve_session_send(
                ss, jrpc_result(sc->req_id, serve_result_for_client(ss, sc->app, r->result)),
                sc->req_id);
        } else
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
    /* Tool search's find_tools and list_apps are answered here; call_tool's call
     * continues below as the direct call it wraps. */
    json_t *inner = NULL;
    if (serve_toolsearch_on(ss) && serve_toolsearch_call(ss, id, params, &inner))
        return;
    if (inner) {
        serve_tools_call(ss, id, inner);
        json_decref(inner);
        return;
    }
    if (ss->in_modern && serve_mrtr_retry(ss, id, params))
        return;
    const struct manifest *m = NULL;
    const struct manifest_tool *t = resolve(ss, name, &m);
    if (t && !serve_session_app_ok(ss, m->name))
        t = NULL; /* beyond the token's scopes: as if it were not there */
    if (!t) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "unknown tool \"%.130s\"", name);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "arguments must be an object");
        return;
    }
    struct serve_call *sc = serve_call_start(ss, id, m->name, t->name);
    if (!sc)
        return;
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (json_is_string(token) || json_is_integer(token))
        sc->progress_token = json_deep_copy(token);
    /* W3C trace context (lib/traceparent.h checks it): the request is a span of the
     * client's trace (or of a new one), the call a child of it. */
    const char *tp =
        json_string_value(json_object_get(json_object_get(params, "_meta"), "traceparent"));
    trace_begin(&sc->trace, tp);
    trace_format(&sc->trace, sc->traceparent);
    sc->args = args ? json_deep_copy(args) : json_object();
    ss->calls_total++;
    struct call_opts o = {.user = ss->user,
                          .ask_exec = ss->ask_exec,
                          .origin = sc,
                          .session = ss, /* its share of the spoke's window */
                          .on_event = on_call_event,
                          .event_ud = sc,
                          .traceparent = sc->traceparent[0] ? sc->traceparent : NULL};
    json_t *empty = args ? NULL : json_object();
    /* The gateway: a session that received another app's output may carry it here. */
    bool other = false;
    for (size_t i = 0; i < ss->n_seen && !other; i++)
        other = i >= SERVE_MAX_SEEN || strcmp(ss->seen[i], m->name) != 0;
    if (other && !ss->app[0] && !sv->data_flows_unasked) {
        struct flow *f = xcalloc(1, sizeof(*f));
        f->sc = sc;
        str_copy(f->app, m->name, sizeof(f->app));
        str_copy(f->tool, t->name, sizeof(f->tool));
        f->args = json_incref(args ? args : empty);
        json_decref(empty);
        flow_next(f);
        return;
    }
    hub_call(sv->hub, &o, m->name, t->name, args ? args : empty, on_call_done, sc);
    json_decref(empty);
}

void serve_tools_cancel(struct serve_session *ss, const json_t *request_id)
{
    if (serve_subscribe_cancel(ss, request_id))
        return;
    struct serve_call *sc;
    LIST_FOREACH(sc, &ss->calls, link)
    if (json_equal(sc->req_id, (json_t *)request_id))
        break;
    if (!sc)
        return; /* finished already, or never ours: nothing to do (MCP says ignore) */
    /* MCP: after a cancellation the server sends no answer. The hub passes the
     * cancellation on to the spoke (notifications/cancelled) and reports the call as
     * cancelled to on_call_done, which then frees it: nothing of sc after that. */
    sc->cancelled = true;
    ss->sv->m.calls_cancelled++;
    serve_audit_call(sc, ss, "cancelled", "client", "the client cancelled the call");
    serve_call_detach(sc);
    if (ss->tr && ss->tr->forget)
        ss->tr->forget(ss->t, sc->req_id);
    /* Its questions are taken back, where they wait: a question to the client, and one
     * waiting for hub approvals. Settling them may end the hub's call: sc is held. */
    sc->refs++;
    serve_session_withdraw(ss, sc->req_id, "withdrawn: the client cancelled its call");
    serve_queue_withdraw(ss->sv, sc, "withdrawn: the client cancelled its call");
    serve_mrtr_withdraw(ss->sv, sc, "withdrawn: the client cancelled its call");
    hub_call_cancel(ss->sv->hub, sc);
    serve_call_unref(sc);
}

/* ---- the app's other offerings: resources, prompts, completion ---- */

static void on_request_done(void *ud, const struct call_result *r)
{
    struct serve_call *sc = ud;
    struct serve_session *ss = sc->ss;
    if (ss) {
        serve_call_detach(sc);
        if (r->result) {
            json_t *result = json_deep_copy(r->result);
            if (sc->rewrite)
                sc->rewrite(result, sc->app);
            serve_strip_hub_meta(result);
            if (strcmp(sc->tool, "resources/read") == 0 || strcmp(sc->tool, "prompts/get") == 0)
                serve_session_saw(ss, sc->app);
            serve_session_send(ss, jrpc_result(sc->req_id, result), sc->req_id);
        } else if (r->code == HUB_ERR_UNSUPPORTED && sc->empty_if_unsupported)
            serve_session_send(ss, jrpc_result(sc->req_id, json_incref(sc->empty_if_unsupported)),
                               sc->req_id);
        else
            serve_session_error(
                ss, sc->req_id, r->code == HUB_ERR_UNSUPPORTED ? JRPC_METHOD_NOT_FOUND : r->code,
                "%s [%s]", r->message ? r->message : "failed", r->layer ? r->layer : "hub");
    }
    serve_call_unref(sc);
}

/* The empty answer of a list method, for an app that offers none of it. */
static json_t *empty_list(const char *method)
{
    if (strcmp(method, "resources/list") == 0)
        return json_pack("{s:[]}", "resources");
    if (strcmp(method, "resources/templates/list") == 0)
        return json_pack("{s:[]}", "resourceTemplates");
    if (strcmp(method, "prompts/list") == 0)
        return json_pack("{s:[]}", "prompts");
    if (strcmp(method, "completion/complete") == 0)
        return json_pack("{s:{s:[],s:i,s:b}}", "completion", "values", "total", 0, "hasMore", 0);
    return NULL;
}

void serve_forward(struct serve_session *ss, const json_t *id, const char *method,
                   const json_t *params)
{
    if (!ss->app[0]) {
        serve_gateway_forward(ss, id, method, params);
        return;
    }
    if (!manifest_find(ss->sv->ms, ss->app)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "%s: the app %s was removed", method,
                            ss->app);
        return;
    }
    serve_forward_app(ss, id, ss->app, method, params, NULL);
}

void serve_forward_app(struct serve_session *ss, const json_t *id, const char *app,
                       const char *method, const json_t *params, serve_rewrite_fn rewrite)
{
    struct serve *sv = ss->sv;
    if (!serve_session_app_ok(ss, app)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "%s: no app %s here", method, app);
        return;
    }
    struct serve_call *sc = serve_call_start(ss, id, app, method);
    if (!sc)
        return;
    sc->rewrite = rewrite;
    json_t *empty = empty_list(method);
    struct call_opts o = {.user = ss->user, .origin = sc, .session = ss};
    json_t *p = json_is_object(params) ? json_incref((json_t *)params) : json_object();
    if (empty) {
        /* A list the app does not offer is an empty list, not an error: the client asked
         * what there is. */
        sc->empty_if_unsupported = empty;
    }
    hub_request(sv->hub, &o, app, method, p, on_request_done, sc);
    json_decref(p);
}
