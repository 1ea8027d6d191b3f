/* The MCP server side of one client session, whatever the transport: initialize and
 * version negotiation, ping, tools/list and tools/call (serve_tools.c), the client's
 * answers to the hub's questions, and cancellation. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Newest first: the version offered when the client asks for one we do not speak. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

int serve_log_level(const char *name)
{
    static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};
    for (int i = 0; i < 8; i++)
        if (strcmp(name, levels[i]) == 0)
            return i;
    return -1;
}

struct serve_session *serve_session_new(struct serve *sv, const struct serve_transport *tr, void *t,
                                        const char *user, const char *remote, const char *transport)
{
    struct serve_session *ss = xcalloc(1, sizeof(*ss));
    ss->sv = sv;
    ss->tr = tr;
    ss->t = t;
    audit_new_id(ss->id);
    str_copy(ss->user, user, sizeof(ss->user));
    str_copy(ss->remote, remote ? remote : "", sizeof(ss->remote));
    str_copy(ss->transport, transport, sizeof(ss->transport));
    str_copy(ss->app, sv->app_name ? sv->app_name : "", sizeof(ss->app));
    ss->ask_exec = sv->ask_exec;
    ss->state = SS_NEW;
    ss->next_id = 1;
    ss->log_level = 1; /* info, until the client sets another */
    ss->t_start = now_mono_ns();
    LIST_INIT(&ss->calls);
    LIST_INIT(&ss->asks);
    LIST_INIT(&ss->subs);
    LIST_INSERT_HEAD(&sv->sessions, ss, link);
    sv->m.sessions_total++;
    sv->m.sessions_open++;
    return ss;
}

bool serve_session_app_ok(const struct serve_session *ss, const char *app)
{
    if (!ss->apps)
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(ss->apps, i, v) if (strcmp(json_string_value(v), app) == 0) return true;
    return false;
}

struct serve_session *serve_session_find(struct serve *sv, const char *id)
{
    struct serve_session *ss;
    LIST_FOREACH(ss, &sv->sessions, link)
    if (strcmp(ss->id, id) == 0 && ss->state != SS_CLOSED)
        return ss;
    return NULL;
}

void serve_session_send(struct serve_session *ss, json_t *msg, const json_t *related)
{
    if (ss->state == SS_CLOSED || !ss->tr) {
        json_decref(msg);
        return;
    }
    if (ss->modern_ids)
        serve_modern_outgoing(ss, msg);
    ss->tr->send(ss->t, msg, related);
}

void serve_session_error(struct serve_session *ss, const json_t *id, int code, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    json_t *null_id = id ? NULL : json_null();
    serve_session_send(ss, jrpc_error((json_t *)(id ? id : null_id), code, text, NULL), id);
    json_decref(null_id);
}

void serve_session_on_bad_frame(struct serve_session *ss, int code, const char *why)
{
    serve_session_error(ss, NULL, code, "%s", why);
}

static void on_initialize(struct serve_session *ss, const json_t *id, const json_t *params)
{
    if (ss->state != SS_NEW) {
        serve_session_error(ss, id, JRPC_INVALID_REQUEST, "the session is already initialized");
        return;
    }
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (!asked) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "initialize needs a protocolVersion");
        return;
    }
    const char *chosen = versions[0];
    for (size_t i = 0; versions[i]; i++)
        if (strcmp(asked, versions[i]) == 0)
            chosen = versions[i];
    str_copy(ss->protocol, chosen, sizeof(ss->protocol));
    json_t *caps = json_object_get(params, "capabilities");
    json_t *elicit = json_object_get(caps, "elicitation");
    /* Form mode is what the hub asks in: an empty object (2025-06-18) means form; in
     * 2025-11-25 a client that lists modes must list "form". */
    ss->can_elicit = json_is_object(elicit) &&
                     (json_object_size(elicit) == 0 || json_object_get(elicit, "form"));
    ss->can_sample = json_is_object(json_object_get(caps, "sampling"));
    /* URL mode sends the user to a page of the spoke's choosing: only to a client that
     * said it shows such a request as what it is. */
    ss->can_elicit_url = json_is_object(elicit) && json_object_get(elicit, "url");
    json_t *info = json_object_get(params, "clientInfo");
    const char *name = json_string_value(json_object_get(info, "name"));
    const char *version = json_string_value(json_object_get(info, "version"));
    str_copy(ss->client_name, name ? name : "", sizeof(ss->client_name));
    str_copy(ss->client_version, version ? version : "", sizeof(ss->client_version));
    ss->state = SS_READY;
    serve_audit_session(ss, "serve-session-start", NULL);
    serve_prestart(ss->sv, ss->user, ss->app, PRESTART_SESSION);
    char instructions[400];
    json_t *result =
        json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", chosen, "capabilities",
                  serve_capabilities(ss, false), "serverInfo", serve_server_info(ss),
                  "instructions", serve_instructions(ss, instructions, sizeof(instructions)));
    serve_session_send(ss, jrpc_result((json_t *)id, result), id);
}

json_t *serve_server_info(const struct serve_session *ss)
{
    const char *one = ss->app[0] ? ss->app : NULL; /* --app: the one app's shape */
    return json_pack("{s:s,s:s,s:s}", "name", one ? one : SERVE_NAME, "title",
                     one ? one : "IsolateGPT hub", "version", SERVE_VERSION);
}

const char *serve_instructions(const struct serve_session *ss, char *buf, size_t len)
{
    if (ss->app[0])
        snprintf(buf, len,
                 "The app %s, run in its own sandbox by the IsolateGPT hub, which mediates every "
                 "call and asks before one app acts for or sees another.",
                 ss->app);
    else
        snprintf(buf, len,
                 "Every app installed in the IsolateGPT hub, each in its own sandbox; tools and "
                 "prompts are named APP__NAME, resources isolategpt:APP:URI. The hub mediates "
                 "every call and asks before one app acts for or sees another.");
    return buf;
}

json_t *serve_capabilities(const struct serve_session *ss, bool modern)
{
    (void)ss;
    (void)modern;
    /* Resources and prompts too: the one app's, or every app's under the gateway's names
     * (serve_gateway.c); an app without them adds empty lists. The lists change when the
     * spokes directory does (serve_watch.c): said on a legacy session, and to a modern
     * client's subscriptions/listen (serve_subscribe.c). */
    json_t *c = json_pack("{s:{},s:{},s:{},s:{},s:{}}", "tools", "logging", "completions",
                          "resources", "prompts");
    json_object_set_new(json_object_get(c, "tools"), "listChanged", json_true());
    json_object_set_new(json_object_get(c, "resources"), "listChanged", json_true());
    json_object_set_new(json_object_get(c, "prompts"), "listChanged", json_true());
    return c;
}

static void on_request(struct serve_session *ss, struct jrpc_msg *msg)
{
    const char *m = msg->method;
    if (serve_modern_meta(msg->params)) {
        serve_modern_request(ss, msg); /* 2026-07-28: no session needed */
        return;
    }
    if (strcmp(m, "initialize") == 0) {
        on_initialize(ss, msg->id, msg->params);
        return;
    }
    if (strcmp(m, "ping") == 0) {
        serve_session_send(ss, jrpc_result(msg->id, json_object()), msg->id);
        return;
    }
    if (ss->state != SS_READY) {
        serve_session_error(ss, msg->id, JRPC_INVALID_REQUEST,
                            "the session is not initialized: send initialize first, or name "
                            "protocol 2026-07-28 in the request's _meta (server/discover)");
        return;
    }
    serve_session_dispatch(ss, msg);
}

void serve_session_dispatch(struct serve_session *ss, struct jrpc_msg *msg)
{
    const char *m = msg->method;
    if (strcmp(m, "tools/list") == 0) {
        serve_session_send(
            ss, jrpc_result(msg->id, json_pack("{s:o}", "tools", serve_tools_list(ss))), msg->id);
    } else if (strcmp(m, "tools/call") == 0) {
        if (!json_is_object(msg->params)) {
            serve_session_error(ss, msg->id, JRPC_INVALID_PARAMS, "params must be an object");
            return;
        }
        serve_tools_call(ss, msg->id, msg->params);
    } else if (strcmp(m, "logging/setLevel") == 0) {
        const char *level = json_string_value(json_object_get(msg->params, "level"));
        int l = level ? serve_log_level(level) : -1;
        if (l < 0) {
            serve_session_error(ss, msg->id, JRPC_INVALID_PARAMS,
                                "level must be one of the syslog levels (RFC 5424)");
            return;
        }
        ss->log_level = l;
        serve_session_send(ss, jrpc_result(msg->id, json_object()), msg->id);
    } else if (strcmp(m, "resources/subscribe") == 0 || strcmp(m, "resources/unsubscribe") == 0) {
        /* Accepted; updates from spokes are not passed on yet, so there is nothing to
         * track (the capability does not claim subscribe). */
        if (!json_is_string(json_object_get(msg->params, "uri"))) {
            serve_session_error(ss, msg->id, JRPC_INVALID_PARAMS, "uri required");
            return;
        }
        serve_session_send(ss, jrpc_result(msg->id, json_object()), msg->id);
    } else if (hub_request_method_known(m) && strcmp(m, "tools/list") != 0) {
        serve_forward(ss, msg->id, m, msg->params);
    } else {
        serve_session_error(ss, msg->id, JRPC_METHOD_NOT_FOUND, "method \"%.100s\" is not offered",
                            m);
    }
}

static void on_notification(struct serve_session *ss, struct jrpc_msg *msg)
{
    if (strcmp(msg->method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(msg->params, "requestId");
        if (rid)
            serve_tools_cancel(ss, rid);
    }
    /* notifications/initialized, roots/list_changed, progress of our questions:
     * nothing to do. */
}

static void on_response(struct serve_session *ss, struct jrpc_msg *msg)
{
    if (!json_is_integer(msg->id))
        return; /* never one of ours: the hub numbers its requests */
    json_int_t id = json_integer_value(msg->id);
    struct serve_ask *a;
    LIST_FOREACH(a, &ss->asks, link)
    if (a->id == id)
        break;
    if (!a)
        return; /* late or unknown: the question was settled already */
    LIST_REMOVE(a, link);
    ss->n_asks--;
    if (msg->kind == JRPC_RESULT)
        a->done(a->ud, json_incref(msg->result), 0, NULL);
    else
        a->done(a->ud, NULL, (int)msg->error_code,
                msg->error_message ? msg->error_message : "the client answered an error");
    json_decref(a->related);
    free(a);
}

void serve_session_on_message(struct serve_session *ss, struct jrpc_msg *msg)
{
    if (ss->state == SS_CLOSED)
        return;
    switch (msg->kind) {
    case JRPC_REQUEST:
        on_request(ss, msg);
        break;
    case JRPC_NOTIFICATION:
        on_notification(ss, msg);
        break;
    case JRPC_RESULT:
    case JRPC_ERROR:
        on_response(ss, msg);
        break;
    }
}

int serve_session_request(struct serve_session *ss, const json_t *related, const char *method,
                          json_t *params, serve_answer_fn done, void *ud)
{
    if (ss->state != SS_READY || ss->n_asks >= SERVE_MAX_ASKS) {
        json_decref(params);
        return -1;
    }
    struct serve_ask *a = xcalloc(1, sizeof(*a));
    a->ss = ss;
    a->id = ss->next_id++;
    a->related = related ? json_deep_copy(related) : NULL;
    a->done = done;
    a->ud = ud;
    LIST_INSERT_HEAD(&ss->asks, a, link);
    ss->n_asks++;
    ss->sv->m.asks_total++;
    serve_session_send(ss, jrpc_request(a->id, method, params), a->related);
    return 0;
}

void serve_session_withdraw(struct serve_session *ss, const json_t *related, const char *why)
{
    for (bool again = true; again;) {
        again = false;
        struct serve_ask *a;
        LIST_FOREACH(a, &ss->asks, link)
        if (a->related && json_equal(a->related, (json_t *)related))
            break;
        if (!a)
            break;
        LIST_REMOVE(a, link);
        ss->n_asks--;
        serve_session_send(ss,
                           jrpc_notification("notifications/cancelled",
                                             json_pack("{s:I,s:s}", "requestId", (json_int_t)a->id,
                                                       "reason", why)),
                           a->related);
        a->done(a->ud, NULL, -32800, why);
        json_decref(a->related);
        free(a);
        again = true;
    }
}

void serve_session_close(struct serve_session *ss, const char *reason)
{
    if (ss->state == SS_CLOSED)
        return;
    serve_subscribe_end(ss);
    bool was_ready = ss->state == SS_READY;
    ss->state = SS_CLOSED;
    ss->tr = NULL;
    serve_queue_withdraw_session(ss->sv, ss, "withdrawn: the client's session ended");
    while (!LIST_EMPTY(&ss->asks)) {
        struct serve_ask *a = LIST_FIRST(&ss->asks);
        LIST_REMOVE(a, link);
        ss->n_asks--;
        a->done(a->ud, NULL, -32000, "the client's session ended before it answered");
        json_decref(a->related);
        free(a);
    }
    while (!LIST_EMPTY(&ss->calls)) {
        struct serve_call *sc = LIST_FIRST(&ss->calls);
        LIST_REMOVE(sc, link);
        sc->ss = NULL; /* runs on in the hub, answers nobody */
    }
    ss->n_calls = 0;
    if (was_ready)
        serve_audit_session(ss, "serve-session-end", reason);
    LIST_REMOVE(ss, link);
    ss->sv->m.sessions_open--;
    json_decref(ss->modern_ids);
    json_decref(ss->apps);
    free(ss);
}
