/* The hub's questions, asked where the user is: the client. The permission hook sends
 * the question the hub would ask on its terminal as elicitation/create (form mode, what
 * will be sent quoted, the choices once/session/always/no/never, never "always" for an
 * irreversible tool); a spoke's own elicitation goes to the client labelled with the
 * app's name, its sampling request to the client's model. A client that declared no
 * such capability is not asked: --answers decides (default deny) and the refusal says
 * so. Answers with a scope are kept: "session" for the client's session, here;
 * "always"/"never" for the user in the grant store that every hub of the user shares
 * (hub.json's memory.redis: an answer given through one instance behind a load balancer
 * holds at the others), or, without one, here while this serve process runs.
 *
 * A question belongs to the client call whose chain asked it (call_opts.origin), so
 * that with many clients it reaches the one that caused it. */
#include "log.h"
#include "memory/memory.h"
#include "serve/serve_impl.h"
#include "termtext.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_QUOTE_MAX 4000

struct serve_user *serve_user_get(struct serve *sv, const char *name)
{
    struct serve_user *u;
    LIST_FOREACH(u, &sv->users, link)
    if (strcmp(u->name, name) == 0)
        return u;
    u = xcalloc(1, sizeof(*u));
    str_copy(u->name, name, sizeof(u->name));
    LIST_INSERT_HEAD(&sv->users, u, link);
    return u;
}

static void grant_key_of(const struct perm_request *q, char *key, size_t len)
{
    snprintf(key, len, "%s/%s/%s/%s/%s", perm_category_name(q->category), perm_stage_name(q->stage),
             q->app ? q->app : "", q->tool ? q->tool : "", q->caller ? q->caller : "");
}

static const struct serve_grant *grant_find(const struct serve_grants *g, const char *key)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->v[i].key, key) == 0)
            return &g->v[i];
    return NULL;
}

static void grant_put(struct serve_grants *g, const char *key, bool allow)
{
    struct serve_grant *e = (struct serve_grant *)grant_find(g, key);
    if (!e) {
        if (g->n >= SERVE_MAX_GRANTS)
            return; /* full: the next time is asked again, which is safe */
        e = &g->v[g->n++];
        str_copy(e->key, key, sizeof(e->key));
    }
    e->allow = allow;
}

/* ---- the shared grant store (always / never) ---- */

static enum grant_category grant_category_of(enum perm_category c)
{
    return c == PERM_EXEC ? GRANT_EXEC : c == PERM_DATA ? GRANT_DATA : GRANT_COLLAB;
}

/* GRANT_ALLOW, GRANT_REFUSE, or GRANT_ASK (none, or the store cannot tell: then the
 * user is asked, which is always safe). */
static enum grant_decision stored_decision(struct serve *sv, const char *user,
                                           const struct perm_request *q)
{
    if (!sv->grant_store || !q->app || !q->tool)
        return GRANT_ASK;
    char err[300];
    int d = memory_grant_check(sv->grant_store, user, grant_category_of(q->category), q->app,
                               q->tool, q->category == PERM_EXEC ? NULL : q->caller,
                               q->irreversible, NULL, err, sizeof(err));
    if (d < 0) {
        log_warnx("serve: the grant store cannot be read (%s); asking instead", err);
        return GRANT_ASK;
    }
    return (enum grant_decision)d;
}

/* An always or never answer, in the store; false when it could not be kept there. */
static bool store_answer(struct serve *sv, const char *user, const struct perm_request *q,
                         bool allow)
{
    if (!sv->grant_store)
        return false;
    struct grant g;
    char err[300];
    if (!grant_init(&g, grant_category_of(q->category), q->app, q->tool,
                    q->category == PERM_EXEC ? NULL : q->caller, allow ? GRANT_ALWAYS : GRANT_DENY,
                    err, sizeof(err)) ||
        memory_grant_set(sv->grant_store, user, &g, q->irreversible, err, sizeof(err)) < 0) {
        log_warnx("serve: the answer cannot be kept in the grant store (%s); kept in this "
                  "process only",
                  err);
        return false;
    }
    return true;
}

/* ---- permission questions ---- */

struct perm_ctx {
    struct serve *sv;
    struct serve_call *sc;
    perm_done_fn done;
    void *done_ud;
    struct perm_request q; /* for the store: its strings point into the names below */
    char app[65], tool[65], caller[65];
    bool irreversible;
    char key[200];
    char user[65];
};

static void question_text(const struct perm_request *q, char *out, size_t len)
{
    char *body = q->body ? json_dumps(q->body, JSON_INDENT(1) | JSON_ENCODE_ANY) : NULL;
    char quoted[BODY_QUOTE_MAX + 32];
    if (body && strlen(body) > BODY_QUOTE_MAX)
        snprintf(quoted, sizeof(quoted), "%.*s ...[cut]", BODY_QUOTE_MAX, body);
    else
        snprintf(quoted, sizeof(quoted), "%s", body ? body : "{}");
    free(body);
    switch (q->category) {
    case PERM_EXEC:
        snprintf(out, len, "[hub] Run the app %s (tool %s) for you%s? It will be sent:\n%s", q->app,
                 q->tool, q->irreversible ? " - this action cannot be undone" : "", quoted);
        break;
    case PERM_DATA:
        if (q->caller) /* serve's data question: what the client may carry between apps */
            snprintf(out, len,
                     "[hub] This conversation has received the output of %s. Call the app %s "
                     "(tool %s) with what may come from it? It will be sent:\n%s",
                     q->caller, q->app, q->tool, quoted);
        else
            snprintf(out, len,
                     "[hub] Share your data with the app %s (tool %s)? It will be sent:\n%s",
                     q->app, q->tool, quoted);
        break;
    case PERM_COLLAB:
        if (q->stage == PERM_STAGE_CALL)
            snprintf(out, len,
                     "[hub] The app %s wants to call %s.%s%s. Allow? It will be sent:\n%s",
                     q->caller ? q->caller : "?", q->app, q->tool,
                     q->irreversible ? " (this action cannot be undone)" : "", quoted);
        else
            snprintf(out, len,
                     "[hub] The result of %s.%s is going back to the app %s. Allow? It will be "
                     "sent:\n%s",
                     q->app, q->tool, q->caller ? q->caller : "?", quoted);
        break;
    case PERM_SECRET: /* the value itself is never in the question */
        snprintf(out, len,
                 "[hub] The %s of %s.%s carries %s. Let it through this once? (Its value is not "
                 "shown; no answer is kept: the next one is asked again.)",
                 q->stage == PERM_STAGE_RELAY ? "result" : "arguments", q->app, q->tool,
                 q->detail ? q->detail : "a secret");
        break;
    }
}

static json_t *question_params(const struct serve_session *ss, const struct perm_request *q)
{
    char text[BODY_QUOTE_MAX + 600];
    question_text(q, text, sizeof(text));
    json_t *choices = json_array();
    bool secret = q->category == PERM_SECRET; /* asked each time: once or no */
    json_array_append_new(choices, json_string("once"));
    if (!secret)
        json_array_append_new(choices, json_string("session"));
    if (!q->irreversible)
        json_array_append_new(choices, json_string("always"));
    json_array_append_new(choices, json_string("no"));
    if (!secret)
        json_array_append_new(choices, json_string("never"));
    json_t *schema = json_pack(
        "{s:s,s:{s:{s:s,s:s,s:s,s:o}},s:[s]}", "type", "object", "properties", "decision", "type",
        "string", "title", "Your answer", "description",
        secret            ? "once: let it through this time; no: refuse it"
        : q->irreversible ? "once: allow this time; session: until this session ends; no: refuse "
                            "this time; never: refuse from now on"
                          : "once: allow this time; session: until this session ends; always: "
                            "from now on; no: refuse this time; never: refuse from now on",
        "enum", choices, "required", "decision");
    json_t *p = json_pack("{s:s,s:o}", "message", text, "requestedSchema", schema);
    if (strcmp(ss->protocol, "2025-11-25") == 0)
        json_object_set_new(p, "mode", json_string("form"));
    return p;
}

static bool answer_parse(const char *s, enum perm_answer *out)
{
    static const char *const names[] = {"once", "session", "always", "no", "never"};
    for (int i = 0; i < 5; i++)
        if (s && strcmp(s, names[i]) == 0) {
            *out = (enum perm_answer)i;
            return true;
        }
    return false;
}

static void perm_finish(struct perm_ctx *pc, enum perm_decision d, const char *reason)
{
    if (d == PERM_DENY) {
        pc->sv->m.asks_denied++;
        str_copy(pc->sc->denial, reason, sizeof(pc->sc->denial));
    }
    pc->done(pc->done_ud, d, reason);
    serve_call_unref(pc->sc);
    free(pc);
}

static void perm_apply(struct perm_ctx *pc, enum perm_answer a, const char *via);

static void on_perm_answer(void *ud, json_t *result, int code, const char *message)
{
    struct perm_ctx *pc = ud;
    (void)code;
    char reason[300];
    if (!result) {
        snprintf(reason, sizeof(reason), "the client did not answer the question: %.200s",
                 message ? message : "no answer");
        perm_finish(pc, PERM_DENY, reason);
        return;
    }
    const char *action = json_string_value(json_object_get(result, "action"));
    const char *choice =
        json_string_value(json_object_get(json_object_get(result, "content"), "decision"));
    enum perm_answer a;
    if (!action || strcmp(action, "accept") != 0) {
        snprintf(reason, sizeof(reason), "the user %s the question",
                 action && strcmp(action, "cancel") == 0 ? "cancelled" : "declined");
        json_decref(result);
        perm_finish(pc, PERM_DENY, reason);
        return;
    }
    if (!answer_parse(choice, &a)) {
        json_decref(result);
        perm_finish(pc, PERM_DENY, "the client's answer was not one of the choices");
        return;
    }
    json_decref(result);
    perm_apply(pc, a, "through the client");
}

/* The user's answer a, given via (how: "through the client", or hub approvals' whole
 * reason): kept for its scope, and the question settled. */
static void perm_apply(struct perm_ctx *pc, enum perm_answer a, const char *via)
{
    char reason[300];
    if (a == PERM_ANSWER_ALWAYS && pc->irreversible)
        a = PERM_ANSWER_ONCE; /* never offered; a client that sends it anyway gets once */
    struct serve_session *ss = pc->sc->ss;
    if (pc->q.category == PERM_SECRET) {
        /* Never kept: a wider answer sent anyway counts for this time only. */
        if (a == PERM_ANSWER_SESSION)
            a = PERM_ANSWER_ONCE;
        else if (a == PERM_ANSWER_NEVER)
            a = PERM_ANSWER_NO;
    }
    if (a == PERM_ANSWER_SESSION && ss)
        grant_put(&ss->grants, pc->key, true);
    if ((a == PERM_ANSWER_ALWAYS || a == PERM_ANSWER_NEVER) &&
        !store_answer(pc->sv, pc->user, &pc->q, a == PERM_ANSWER_ALWAYS))
        grant_put(&serve_user_get(pc->sv, pc->user)->always, pc->key, a == PERM_ANSWER_ALWAYS);
    if (strncmp(via, "the user answered", 17) == 0)
        snprintf(reason, sizeof(reason), "%s", via);
    else
        snprintf(reason, sizeof(reason), "the user answered %s %s", perm_answer_name(a), via);
    perm_finish(pc, perm_answer_decision(a), reason);
}

/* A question settled in the queue: answered out of band, or left to --answers. */
static void on_queued(void *ud, bool answered, enum perm_answer a, const char *why)
{
    struct perm_ctx *pc = ud;
    if (answered) {
        perm_apply(pc, a, why);
        return;
    }
    char reason[300], decided[120];
    enum perm_answer d = answers_decide(pc->sv->answers, &pc->q, decided, sizeof(decided));
    snprintf(reason, sizeof(reason), "%s; --answers decided %s (%s)", why, perm_answer_name(d),
             decided);
    perm_finish(pc, perm_answer_decision(d), reason);
}

static void perm_ask(struct perm_hook *h, const struct perm_request *q, perm_done_fn done,
                     void *done_ud)
{
    struct serve *sv = h->ud;
    struct serve_call *sc = q->origin;
    if (!sc) { /* not from a client: cannot happen in serve, and then no */
        done(done_ud, PERM_DENY, "no client to ask");
        return;
    }
    struct perm_ctx *pc = xcalloc(1, sizeof(*pc));
    pc->sv = sv;
    pc->sc = sc;
    sc->refs++;
    pc->done = done;
    pc->done_ud = done_ud;
    pc->irreversible = q->irreversible;
    str_copy(pc->user, q->user ? q->user : sc->user, sizeof(pc->user));
    /* What the store needs of the question, kept past this call (the answer comes
     * later); the body is not kept. */
    pc->q = (struct perm_request){.category = q->category, .irreversible = q->irreversible};
    if (q->app && str_copy(pc->app, q->app, sizeof(pc->app)))
        pc->q.app = pc->app;
    if (q->tool && str_copy(pc->tool, q->tool, sizeof(pc->tool)))
        pc->q.tool = pc->tool;
    if (q->caller && str_copy(pc->caller, q->caller, sizeof(pc->caller)))
        pc->q.caller = pc->caller;
    grant_key_of(q, pc->key, sizeof(pc->key));
    struct serve_session *ss = sc->ss;
    bool secret = q->category == PERM_SECRET; /* no answer is kept for these */
    const struct serve_grant *g = ss && !secret ? grant_find(&ss->grants, pc->key) : NULL;
    if (g) {
        perm_finish(pc, g->allow ? PERM_ALLOW : PERM_DENY, "the user's answer for this session");
        return;
    }
    enum grant_decision stored = secret ? GRANT_ASK : stored_decision(sv, pc->user, q);
    if (stored != GRANT_ASK) {
        perm_finish(pc, stored == GRANT_ALLOW ? PERM_ALLOW : PERM_DENY,
                    stored == GRANT_ALLOW ? "the user answered always (the shared grant store)"
                                          : "the user answered never (the shared grant store)");
        return;
    }
    g = secret ? NULL : grant_find(&serve_user_get(sv, pc->user)->always, pc->key);
    if (g) {
        perm_finish(pc, g->allow ? PERM_ALLOW : PERM_DENY,
                    g->allow ? "the user answered always" : "the user answered never");
        return;
    }
    bool only_queue = sv->cfg->approvals_only;
    /* 2026-07-28: asked as the request's answer (input_required), when it can be. */
    if (!only_queue && ss && sc->modern && sc->can_elicit) {
        json_t *qp = question_params(ss, q);
        json_object_set_new(qp, "mode", json_string("form"));
        if (serve_mrtr_ask(sc, "elicitation/create", qp, on_perm_answer, pc))
            return;
    }
    if (!only_queue && ss && ss->can_elicit && !sc->modern &&
        serve_session_request(ss, sc->req_id, "elicitation/create", question_params(ss, q),
                              on_perm_answer, pc) == 0)
        return;
    /* Nobody to ask here: the question waits for hub approvals, when the operator set
     * a wait (or sends every question there). */
    if (ss && (only_queue || sv->cfg->approval_wait_s > 0)) {
        char text[BODY_QUOTE_MAX + 600], id[16];
        question_text(q, text, sizeof(text));
        if (serve_queue_add(sv, sc, pc->user, &pc->q, text, on_queued, pc, id, sizeof(id)) == 0)
            return;
    }
    char why[200], reason[400];
    enum perm_answer a = answers_decide(sv->answers, q, why, sizeof(why));
    snprintf(reason, sizeof(reason), "%s; --answers decided %s (%s)",
             !ss ? "the client's session has ended"
             : sc->modern
                 ? "the client cannot be asked (a 2026-07-28 request: the hub sends it no requests)"
             : ss->can_elicit ? "the client has too many questions open"
                              : "the client cannot be asked (it declared no elicitation)",
             perm_answer_name(a), why);
    perm_finish(pc, perm_answer_decision(a), reason);
}

void serve_ask_data_flow(struct serve_call *sc, const char *app, const char *tool,
                         bool irreversible, const char *sources, const json_t *args,
                         perm_done_fn done, void *ud)
{
    struct perm_hook hook = {.ud = sc->sv};
    struct perm_request q = {.category = PERM_DATA,
                             .stage = PERM_STAGE_CALL,
                             .user = sc->user,
                             .app = app,
                             .tool = tool,
                             .caller = sources,
                             .body = args,
                             .irreversible = irreversible,
                             .origin = sc};
    perm_ask(&hook, &q, done, ud);
}

static void perm_free(struct perm_hook *h)
{
    free(h);
}

/* ---- a spoke's own elicitation and sampling ---- */

struct fwd_ctx {
    struct serve_call *sc;
    hook_done_fn done;
    void *done_ud;
};

static void on_forwarded(void *ud, json_t *result, int code, const char *message)
{
    struct fwd_ctx *fc = ud;
    if (result)
        fc->done(fc->done_ud, result, 0, NULL);
    else
        fc->done(fc->done_ud, NULL, code ? code : -32000, message ? message : "no answer");
    serve_call_unref(fc->sc);
    free(fc);
}

/* Sends method to the client of req's call (capable: a legacy session declared it); a
 * modern request's client gets it as its request's answer input_required, when it
 * declared it there (serve_mrtr.c). False when that client cannot take it. */
static bool forward(const struct hook_request *req, const char *method, json_t *params,
                    hook_done_fn done, void *done_ud, bool capable)
{
    struct serve_call *sc = req->origin;
    if (!sc || !sc->ss || (!capable && !sc->modern)) {
        json_decref(params);
        return false;
    }
    struct fwd_ctx *fc = xcalloc(1, sizeof(*fc));
    fc->sc = sc;
    sc->refs++;
    fc->done = done;
    fc->done_ud = done_ud;
    if (sc->modern) {
        if (serve_mrtr_ask(sc, method, params, on_forwarded, fc))
            return true;
        sc->refs--;
        free(fc);
        return false;
    }
    if (serve_session_request(sc->ss, sc->req_id, method, params, on_forwarded, fc) < 0) {
        sc->refs--;
        free(fc);
        return false;
    }
    return true;
}

/* The hub's own question asks for a "decision" among once/session/always/no/never; a
 * spoke's question must not look like it, in words or in its schema. */
static bool hub_like(const char *message, const json_t *schema)
{
    if (message && strcasestr(message, "[hub]"))
        return true;
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), key, prop)
    {
        size_t i;
        json_t *v;
        unsigned scopes = 0;
        json_array_foreach(json_object_get(prop, "enum"), i, v)
        {
            const char *e = json_string_value(v);
            if (e && (strcmp(e, "once") == 0 || strcmp(e, "session") == 0 ||
                      strcmp(e, "always") == 0 || strcmp(e, "never") == 0))
                scopes++;
        }
        if (scopes >= 2 || strcmp(key, "decision") == 0)
            return true;
    }
    return false;
}

/* A string of a spoke's, made visible for the user: hidden characters shown as escapes,
 * at most one blank line in a row, cut at max bytes. */
static json_t *visible(const char *text, size_t max)
{
    char *v = tt_visible_str(text ? text : "", text ? strlen(text) : 0, max);
    json_t *s = json_string(v);
    free(v);
    return s ? s : json_string("?");
}

/* The texts of a requested schema the client shows (titles, descriptions, enum names),
 * made visible as the message is. */
static void visible_schema(json_t *schema)
{
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), key, prop)
    {
        static const char *const texts[] = {"title", "description"};
        for (size_t i = 0; i < 2; i++) {
            const char *t = json_string_value(json_object_get(prop, texts[i]));
            if (t)
                json_object_set_new(prop, texts[i], visible(t, 500));
        }
        size_t i;
        json_t *v;
        json_t *names = json_object_get(prop, "enumNames");
        json_array_foreach(names, i, v)
        {
            if (json_is_string(v))
                json_array_set_new(names, i, visible(json_string_value(v), 200));
        }
    }
}

static void elicit_create(struct elicit_hook *h, const struct hook_request *req, hook_done_fn done,
                          void *done_ud)
{
    struct serve *sv = h->ud;
    struct serve_call *sc = req->origin;
    struct serve_session *ss = sc ? sc->ss : NULL;
    const char *mode = json_string_value(json_object_get(req->params, "mode"));
    bool url = mode && strcmp(mode, "url") == 0;
    const char *msg = json_string_value(json_object_get(req->params, "message"));
    /* A spoke may not speak as the hub (refused whoever the client is: it is on record
     * through the runtime's elicitation record). */
    if (hub_like(msg, json_object_get(req->params, "requestedSchema"))) {
        done(done_ud, NULL, JRPC_INVALID_PARAMS,
             "refused: a spoke's question may not use the hub's words or answer schema");
        return;
    }
    if (mode && !url && strcmp(mode, "form") != 0) {
        done(done_ud, NULL, JRPC_INVALID_PARAMS, "refused: elicitation mode must be form or url");
        return;
    }
    if (url) {
        const char *u = json_string_value(json_object_get(req->params, "url"));
        if (!u || strncmp(u, "https://", 8) != 0 || strlen(u) > 2048) {
            done(done_ud, NULL, JRPC_INVALID_PARAMS,
                 "refused: a URL-mode question needs an https:// url of at most 2048 bytes");
            return;
        }
        /* Only a client that declared URL mode (a modern request's client in that
         * request): it shows the address as one to open, not as a form of the hub's.
         * --answers has no URL answer: declined. */
        if (sc && sc->modern
                ? !sc->can_elicit_url
                : !ss || !ss->can_elicit_url || strcmp(ss->protocol, "2025-11-25") != 0) {
            done(done_ud, NULL, JRPC_INVALID_PARAMS,
                 "refused: the client did not declare URL-mode elicitation");
            return;
        }
    }
    json_t *params = json_deep_copy(req->params);
    /* The app's name first, and its text made visible: the user must know which app
     * asks, and the app cannot hide words or push its label off the screen. */
    json_t *text = visible(msg, 4000);
    json_object_set_new(params, "message",
                        json_sprintf("[%s] %s", req->app, json_string_value(text)));
    json_decref(text);
    visible_schema(json_object_get(params, "requestedSchema"));
    if (ss && !sc->modern && strcmp(ss->protocol, "2025-11-25") != 0)
        json_object_del(params, "mode");
    if (!forward(req, "elicitation/create", params, done, done_ud,
                 ss && (url ? ss->can_elicit_url : ss->can_elicit)))
        sv->fallback_elicit->create(sv->fallback_elicit, req, done, done_ud);
}

static void elicit_free(struct elicit_hook *h)
{
    free(h);
}

/* A spoke's sampling request as the client gets it: the spoke asks for its own context
 * only (includeContext "none": never the client's other servers' conversation), speaks
 * under its own name (its system prompt, if any, labelled as the app's and made
 * visible), offers the model no tools, and asks for at most llm.sampling_max_tokens, as
 * the hub's own LLM path does. NULL and why when the request is malformed. */
static json_t *sampling_params(const struct serve *sv, const struct hook_request *req, char *why,
                               size_t whylen)
{
    const json_t *sys = json_object_get(req->params, "systemPrompt");
    const json_t *mt = json_object_get(req->params, "maxTokens");
    if ((sys && !json_is_string(sys)) || (mt && !json_is_integer(mt)) ||
        !json_is_array(json_object_get(req->params, "messages"))) {
        snprintf(why, whylen,
                 "refused: a sampling request needs messages, and systemPrompt a "
                 "string and maxTokens an integer");
        return NULL;
    }
    json_t *p = json_deep_copy(req->params);
    json_object_set_new(p, "includeContext", json_string("none"));
    json_object_del(p, "tools");
    json_object_del(p, "toolChoice");
    long max = sv->sampling_max_tokens;
    if (mt && json_integer_value(mt) >= 1 && json_integer_value(mt) < max)
        max = (long)json_integer_value(mt);
    json_object_set_new(p, "maxTokens", json_integer(max));
    json_t *own = sys ? visible(json_string_value(sys), 8000) : NULL;
    json_object_set_new(
        p, "systemPrompt",
        json_sprintf("This request comes from the app %s through the IsolateGPT hub; the app's "
                     "own words follow, not the hub's or the user's.%s%s",
                     req->app, own ? "\n\n" : "", own ? json_string_value(own) : ""));
    json_decref(own);
    /* The messages' text made visible too: no hidden instructions for the client's model. */
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(p, "messages"), i, m)
    {
        json_t *c = json_object_get(m, "content");
        const char *t = json_string_value(json_object_get(c, "text"));
        if (t)
            json_object_set_new(c, "text", visible(t, 100000));
    }
    return p;
}

static void sample_create(struct sampling_hook *h, const struct hook_request *req,
                          hook_done_fn done, void *done_ud)
{
    struct serve *sv = h->ud;
    struct serve_call *sc = req->origin;
    char why[200];
    json_t *params = sampling_params(sv, req, why, sizeof(why));
    if (!params) {
        done(done_ud, NULL, JRPC_INVALID_PARAMS, why);
        return;
    }
    if (!forward(req, "sampling/createMessage", params, done, done_ud,
                 sc && sc->ss && sc->ss->can_sample))
        sv->fallback_sample->create_message(sv->fallback_sample, req, done, done_ud);
}

static void sample_free(struct sampling_hook *h)
{
    free(h);
}

void serve_install_hooks(struct serve *sv)
{
    struct perm_hook *ph = xcalloc(1, sizeof(*ph));
    ph->ask = perm_ask;
    ph->free = perm_free;
    ph->ud = sv;
    hub_set_permission_hook(sv->hub, ph);
    struct elicit_hook *eh = xcalloc(1, sizeof(*eh));
    eh->create = elicit_create;
    eh->free = elicit_free;
    eh->ud = sv;
    hub_set_elicit_hook(sv->hub, eh);
    struct sampling_hook *sh = xcalloc(1, sizeof(*sh));
    sh->create_message = sample_create;
    sh->free = sample_free;
    sh->ud = sv;
    hub_set_sampling_hook(sv->hub, sh);
}
