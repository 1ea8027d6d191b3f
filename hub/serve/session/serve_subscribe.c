/* subscriptions/listen (MCP 2026-07-28): a modern client's way to hear that the lists
 * changed, since the hub sends such a client nothing it did not ask for. The request
 *   {"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,
 *    "promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":[...]},
 *    "_meta":{...}}}
 * stays open: the hub first says which of these it honours,
 *   notifications/subscriptions/acknowledged {"notifications":{...}}
 * then sends notifications/{tools,prompts,resources}/list_changed when the spokes
 * directory changes (serve_watch.c), each with the request's id as
 * _meta["io.modelcontextprotocol/subscriptionId"] and as the message's related request,
 * so that over HTTP it goes on that request's own event stream. resourceSubscriptions
 * are not honoured (the hub passes no resource updates on) and so not acknowledged.
 * The client ends a subscription with notifications/cancelled (stdio) or by closing
 * the stream (HTTP); the hub ends it, when it shuts down, with the request's answer
 * {"resultType":"complete"}. */
#include "serve/serve_impl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define SUB_ID_META "io.modelcontextprotocol/subscriptionId"
/* Subscriptions one session may hold open. */
#define SERVE_MAX_SUBS 16

struct serve_sub {
    LIST_ENTRY(serve_sub) link;
    json_t *id;
    unsigned lists; /* SERVE_LIST_* */
};

static const struct {
    const char *filter, *method;
    unsigned bit;
} lists[] = {
    {"toolsListChanged", "notifications/tools/list_changed", SERVE_LIST_TOOLS},
    {"promptsListChanged", "notifications/prompts/list_changed", SERVE_LIST_PROMPTS},
    {"resourcesListChanged", "notifications/resources/list_changed", SERVE_LIST_RESOURCES},
};

static json_t *stamped(const json_t *id, json_t *params)
{
    json_object_set_new(params, "_meta", json_pack("{s:O}", SUB_ID_META, id));
    return params;
}

void serve_subscribe_listen(struct serve_session *ss, const json_t *id, const json_t *params)
{
    const json_t *want = json_object_get(params, "notifications");
    if (!json_is_object(want)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS,
                            "subscriptions/listen needs a notifications filter (an object)");
        return;
    }
    unsigned bits = 0;
    json_t *ack = json_object();
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const json_t *v = json_object_get(want, lists[i].filter);
        if (v && !json_is_boolean(v)) {
            json_decref(ack);
            serve_session_error(ss, id, JRPC_INVALID_PARAMS, "notifications.%s must be a boolean",
                                lists[i].filter);
            return;
        }
        if (json_is_true(v)) {
            bits |= lists[i].bit;
            json_object_set_new(ack, lists[i].filter, json_true());
        }
    }
    const json_t *uris = json_object_get(want, "resourceSubscriptions");
    if (uris && !json_is_array(uris)) {
        json_decref(ack);
        serve_session_error(ss, id, JRPC_INVALID_PARAMS,
                            "notifications.resourceSubscriptions must be an array of URIs");
        return;
    }
    struct serve_sub *s;
    size_t n = 0;
    LIST_FOREACH(s, &ss->subs, link)
    {
        n++;
        if (json_equal(s->id, (json_t *)id)) {
            json_decref(ack);
            serve_session_error(ss, id, JRPC_INVALID_REQUEST,
                                "a subscription with this request id is open already");
            return;
        }
    }
    if (n >= SERVE_MAX_SUBS) {
        json_decref(ack);
        serve_session_error(ss, id, JRPC_INVALID_REQUEST,
                            "at most %d subscriptions may be open at once", SERVE_MAX_SUBS);
        return;
    }
    s = xcalloc(1, sizeof(*s));
    s->id = json_deep_copy(id);
    s->lists = bits;
    LIST_INSERT_HEAD(&ss->subs, s, link);
    serve_session_send(ss,
                       jrpc_notification("notifications/subscriptions/acknowledged",
                                         stamped(id, json_pack("{s:o}", "notifications", ack))),
                       id);
}

static void sub_free(struct serve_session *ss, struct serve_sub *s)
{
    LIST_REMOVE(s, link);
    serve_modern_forget(ss, s->id);
    json_decref(s->id);
    free(s);
}

bool serve_subscribe_cancel(struct serve_session *ss, const json_t *id)
{
    struct serve_sub *s;
    LIST_FOREACH(s, &ss->subs, link)
    if (json_equal(s->id, (json_t *)id)) {
        /* The client ended it: no answer (as after any cancellation); its HTTP stream
         * ends. */
        if (ss->tr && ss->tr->forget)
            ss->tr->forget(ss->t, s->id);
        sub_free(ss, s);
        return true;
    }
    return false;
}

void serve_subscribe_changed(struct serve *sv, unsigned which)
{
    struct serve_session *ss;
    LIST_FOREACH(ss, &sv->sessions, link)
    {
        struct serve_sub *s;
        LIST_FOREACH(s, &ss->subs, link)
        for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
            if (which & s->lists & lists[i].bit)
                serve_session_send(
                    ss, jrpc_notification(lists[i].method, stamped(s->id, json_object())), s->id);
    }
}

void serve_subscribe_end(struct serve_session *ss)
{
    while (!LIST_EMPTY(&ss->subs)) {
        struct serve_sub *s = LIST_FIRST(&ss->subs);
        /* The answer that says the hub ended it, not the transport. */
        json_t *id = json_incref(s->id);
        serve_session_send(ss,
                           jrpc_result(id, json_pack("{s:s,s:{s:O}}", "resultType", "complete",
                                                     "_meta", SUB_ID_META, id)),
                           id);
        json_decref(id);
        sub_free(ss, s);
    }
}
