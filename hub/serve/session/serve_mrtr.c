/* Multi round-trip requests (MCP 2026-07-28): the hub's question for a modern request
 * whose client declared elicitation, and a spoke's own elicitation or sampling request
 * (serve_ask.c, after its filter) when the client declared that, goes back as the
 * request's answer,
 *   {"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create",
 *    "params":{...}}},"requestState":"<id>"}
 * and the client asks the user, then sends the request again with "inputResponses"
 * {"q": <its ElicitResult or CreateMessageResult>} and the same requestState. The hub's call
 * meanwhile waits where it was (its permission question open), held here under that id:
 * requestState is a random 128-bit name of this wait, nothing the client could forge into a
 * decision, and a retry is taken only from the same user, for the same tool and arguments. The
 * retry becomes the call's request (its result, or the next question, answers it). A
 * wait no retry comes for ends after SERVE_MRTR_WAIT_S with the question answered no. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MRTR_KEY "q"

struct mrtr_wait {
    LIST_ENTRY(mrtr_wait) link;
    struct serve *sv;
    char state[33];
    struct serve_call *sc; /* a reference */
    json_t *args;          /* the request's arguments: a retry must carry the same */
    const char *method;    /* elicitation/create or sampling/createMessage */
    json_t *question;      /* its params, asked again when missing */
    serve_answer_fn done;
    void *ud;
    struct event *ev_expire;
};

static void wait_free(struct mrtr_wait *w)
{
    LIST_REMOVE(w, link);
    event_free(w->ev_expire);
    json_decref(w->args);
    json_decref(w->question);
    serve_call_unref(w->sc);
    free(w);
}

static void on_expire(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct mrtr_wait *w = ud;
    serve_answer_fn done = w->done;
    void *dud = w->ud;
    wait_free(w);
    done(dud, NULL, -32000, "the client did not send the request again with the answer");
}

static json_t *input_required(const struct mrtr_wait *w)
{
    return json_pack("{s:s,s:{s:{s:s,s:O}},s:s}", "resultType", "input_required", "inputRequests",
                     MRTR_KEY, "method", w->method, "params", w->question, "requestState",
                     w->state);
}

bool serve_mrtr_ask(struct serve_call *sc, const char *method, json_t *params, serve_answer_fn done,
                    void *ud)
{
    struct serve_session *ss = sc->ss;
    bool sampling = strcmp(method, "sampling/createMessage") == 0;
    if (!ss || !sc->modern || !(sampling ? sc->can_sample : sc->can_elicit)) {
        json_decref(params);
        return false;
    }
    struct serve *sv = sc->sv;
    struct mrtr_wait *w = xcalloc(1, sizeof(*w));
    w->sv = sv;
    audit_new_id(w->state);
    w->sc = sc;
    sc->refs++;
    w->args = json_incref(sc->args);
    w->method = sampling ? "sampling/createMessage" : "elicitation/create";
    w->question = params;
    w->done = done;
    w->ud = ud;
    w->ev_expire = evtimer_new(sv->base, on_expire, w);
    struct timeval tv = {.tv_sec = SERVE_MRTR_WAIT_S};
    evtimer_add(w->ev_expire, &tv);
    LIST_INSERT_HEAD(&sv->mrtr, w, link);
    /* The request is answered now; the call goes on without one until the retry. */
    json_t *id = json_incref(sc->req_id);
    serve_call_detach(sc);
    serve_session_send(ss, jrpc_result(id, input_required(w)), id);
    json_decref(id);
    return true;
}

bool serve_mrtr_retry(struct serve_session *ss, const json_t *id, const json_t *params)
{
    const char *state = json_string_value(json_object_get(params, "requestState"));
    if (!json_object_get(params, "requestState") && !json_object_get(params, "inputResponses"))
        return false;
    struct mrtr_wait *w;
    LIST_FOREACH(w, &ss->sv->mrtr, link)
    if (state && strcmp(w->state, state) == 0)
        break;
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    char want[2 * MANIFEST_NAME_MAX + 8] = "";
    if (w)
        snprintf(want, sizeof(want), "%s%s%s", ss->app[0] ? "" : w->sc->app,
                 ss->app[0] ? "" : GATEWAY_SEP, w->sc->tool);
    /* Another user's wait is as good as absent; so is one for another tool or other
     * arguments (requestState is only good for the request it was given for). */
    if (!w || strcmp(w->sc->user, ss->user) != 0 || !name || strcmp(name, want) != 0 ||
        !json_equal(args ? args : w->args, w->args)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS,
                            "requestState is not one this hub is waiting on for this request "
                            "(expired, answered, or for another)");
        return true;
    }
    json_t *answer = json_object_get(json_object_get(params, "inputResponses"), MRTR_KEY);
    struct serve_call *sc = w->sc;
    /* The retry is the call's request from now on. */
    json_decref(sc->req_id);
    sc->req_id = json_deep_copy(id);
    json_decref(sc->progress_token);
    sc->progress_token = NULL;
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (json_is_string(token) || json_is_integer(token))
        sc->progress_token = json_deep_copy(token);
    serve_call_attach(sc, ss);
    if (!json_is_object(answer)) {
        /* Not answered: asked again, under the same state. */
        json_t *again = json_incref(sc->req_id);
        serve_call_detach(sc);
        serve_session_send(ss, jrpc_result(again, input_required(w)), again);
        json_decref(again);
        return true;
    }
    serve_answer_fn done = w->done;
    void *dud = w->ud;
    json_incref(answer);
    sc->refs++; /* past the wait's own reference, until the answer is in */
    wait_free(w);
    done(dud, answer, 0, NULL);
    serve_call_unref(sc);
    return true;
}

void serve_mrtr_withdraw(struct serve *sv, const struct serve_call *sc, const char *why)
{
    struct mrtr_wait *w = LIST_FIRST(&sv->mrtr), *next;
    for (; w; w = next) {
        next = LIST_NEXT(w, link);
        if (sc && w->sc != sc)
            continue;
        serve_answer_fn done = w->done;
        void *dud = w->ud;
        wait_free(w);
        done(dud, NULL, -32000, why);
        next = LIST_FIRST(&sv->mrtr); /* the answer may have ended others */
    }
}
