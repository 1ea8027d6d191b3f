/* Spokes of MCP 2026-07-28 (stateless servers), which send nothing they were not asked
 * for. A tool list that can change: the hub holds a subscriptions/listen open for the
 * spoke's life and holds a changed list against the pin, as an earlier revision's
 * list_changed. A spoke that asks for input before it answers a call (multi
 * round-trip requests: an InputRequiredResult with inputRequests): the hub answers roots
 * from the manifest and sampling and elicitation through the same hooks, checks and
 * audit records as an earlier revision's requests, and sends the call again with every
 * answer once all are in. From the attacker's side: a request for what the hub did not
 * declare, an answer that does not fit the spoke's own schema, a hook that fails, and a
 * spoke that answers the request a second time while the hub waits for the user. The
 * spoke is tests/hub/rawspoke.c's "stateless" server; mode none. */
#include "runtime/hooks.h"
#include "runtime/hub.h"
#include "tests/hub/hub_fixture.h"
#include "tests/unit/test.h"
#include "util.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct outcome {
    bool done;
    int code;
    char message[400];
    json_t *sc;
};

static struct hub_fixture f;

static void done(void *ud, const struct call_result *r)
{
    struct outcome *o = ud;
    o->done = true;
    o->code = r->result ? 0 : r->code;
    snprintf(o->message, sizeof(o->message), "%s", r->message ? r->message : "");
    o->sc = r->result ? json_incref(json_object_get(r->result, "structuredContent")) : NULL;
}

static struct outcome call(const char *app)
{
    struct outcome o = {0};
    struct call_opts opts = {.timeout_ms = 20000};
    json_t *args = json_object();
    hub_call(f.hub, &opts, app, "poke", args, done, &o);
    json_decref(args);
    uint64_t until = now_mono_ns() + 30000000000ULL;
    while (!o.done && now_mono_ns() < until)
        event_base_loop(f.base, EVLOOP_ONCE);
    return o;
}

/* ---- hooks: the user answers later (a timer), the LLM at once ---- */

static json_t *elicit_answer; /* what the "user" answers next */
static int elicit_asked, sampling_asked;
static char asked_app[64], asked_message[64];
static bool sampling_fails;

struct later {
    struct event *ev;
    hook_done_fn fn;
    void *ud;
};

static void answer_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct later *l = arg;
    l->fn(l->ud, json_incref(elicit_answer), 0, NULL);
    event_free(l->ev);
    free(l);
}

static void elicit_create(struct elicit_hook *h, const struct hook_request *r, hook_done_fn fn,
                          void *ud)
{
    (void)h;
    elicit_asked++;
    snprintf(asked_app, sizeof(asked_app), "%s", r->app);
    snprintf(asked_message, sizeof(asked_message), "%s",
             json_string_value(json_object_get(r->params, "message")) ?: "");
    struct later *l = xcalloc(1, sizeof(*l));
    l->fn = fn;
    l->ud = ud;
    l->ev = evtimer_new(f.base, answer_later, l);
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    evtimer_add(l->ev, &tv);
}

static void sampling_create(struct sampling_hook *h, const struct hook_request *r, hook_done_fn fn,
                            void *ud)
{
    (void)h;
    (void)r;
    sampling_asked++;
    if (sampling_fails) {
        fn(ud, NULL, -32603, "no LLM is configured for sampling (hub serve --llm)");
        return;
    }
    fn(ud,
       json_pack("{s:s,s:{s:s,s:s},s:s}", "role", "assistant", "content", "type", "text", "text",
                 "Hi.", "model", "stand-in"),
       0, NULL);
}

static void elicit_free(struct elicit_hook *h)
{
    free(h);
}

static void sampling_free(struct sampling_hook *h)
{
    free(h);
}

static void write_manifest(const char *dir, const char *name, const char *ask)
{
    char *path = xasprintf("%s/%s.json", dir, name);
    json_t *m = json_pack("{s:s,s:s,s:[s,s,s],s:s,s:[{s:s,s:s,s:{s:s}}]}", "name", name,
                          "description", "Asks for input first.", "command", "rawspoke",
                          "stateless", ask, "runtime", "c", "tools", "name", "poke", "description",
                          "Hostile terminal probe.", "inputSchema", "type", "object");
    CHECK(json_dump_file(m, path, JSON_INDENT(1)) == 0, "manifest %s written", name);
    json_decref(m);
    free(path);
}

static const char *sc_str(const struct outcome *o, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(o->sc, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return json_string_value(v) ?: "";
}

int main(void)
{
    if (!hub_fixture_init(&f, "hub-stateless"))
        return 1;
    char *spokes = xasprintf("%s/spokes", f.dir);
    CHECK(mkdir_p(spokes, 0755) == 0, "spokes directory made");
    write_manifest(spokes, "asker", "all");
    write_manifest(spokes, "greedy", "undeclared");
    write_manifest(spokes, "twice", "twice");
    write_manifest(spokes, "changer", "listen");
    free(f.cfg.spokes_dir);
    f.cfg.spokes_dir = spokes;
    char err[512];
    if (!hub_fixture_start(&f, err, sizeof(err))) {
        CHECK(false, "%s", err);
        hub_fixture_end(&f);
        return test_done();
    }
    struct elicit_hook *eh = xcalloc(1, sizeof(*eh));
    eh->create = elicit_create;
    eh->free = elicit_free;
    hub_set_elicit_hook(f.hub, eh);
    struct sampling_hook *sh = xcalloc(1, sizeof(*sh));
    sh->create_message = sampling_create;
    sh->free = sampling_free;
    hub_set_sampling_hook(f.hub, sh);
    const char *audit = f.cfg.audit_path;

    /* ---- roots, the user's answer and a sampled message in one round ---- */
    elicit_answer = json_pack("{s:s,s:{s:b}}", "action", "accept", "content", "confirm", 1);
    struct outcome o = call("asker");
    CHECK(o.code == 0,
          "a call whose spoke asks for roots, the user and the LLM at once is "
          "answered (%d: %s)",
          o.code, o.message);
    CHECK(elicit_asked == 1 && sampling_asked == 1,
          "... the user was asked once and the LLM once (%d, %d)", elicit_asked, sampling_asked);
    CHECK(strcmp(asked_app, "asker") == 0 && strcmp(asked_message, "Book the flight?") == 0,
          "... the question named the asking app and carried its words (%s: %s)", asked_app,
          asked_message);
    CHECK(strcmp(sc_str(&o, "inputResponses", "ok", "action"), "accept") == 0 &&
              json_is_true(json_object_get(
                  json_object_get(json_object_get(json_object_get(o.sc, "inputResponses"), "ok"),
                                  "content"),
                  "confirm")),
          "... the spoke got the user's answer under its key");
    json_t *poem = json_object_get(json_object_get(o.sc, "inputResponses"), "poem");
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(poem, "content"), "text")) ?: "",
                 "Hi.") == 0,
          "... and the LLM's message under its key");
    CHECK(json_array_size(json_object_get(
              json_object_get(json_object_get(o.sc, "inputResponses"), "where"), "roots")) >= 1,
          "... and its roots");
    CHECK(strcmp(sc_str(&o, "state", NULL, NULL), "round-1") == 0,
          "... with its requestState sent back (%s)", sc_str(&o, "state", NULL, NULL));
    json_t *caps = json_object_get(o.sc, "capabilities");
    CHECK(json_object_get(caps, "sampling") && json_object_get(caps, "elicitation") &&
              json_object_get(caps, "roots"),
          "... the hub declared sampling, elicitation and roots in the request's _meta");
    CHECK(hub_fixture_count_lines(audit, "\"action\":\"elicitation\",\"outcome\":\"success\"",
                                  NULL) == 1 &&
              hub_fixture_count_lines(audit, "\"action\":\"sampling\",\"outcome\":\"success\"",
                                      NULL) == 1,
          "... both answers are on record as for an earlier revision's requests");
    json_decref(o.sc);

    /* ---- an answer that does not fit what the spoke asked for ---- */
    json_decref(elicit_answer);
    elicit_answer = json_pack("{s:s,s:{s:s}}", "action", "accept", "content", "confirm", "yes");
    o = call("asker");
    CHECK(o.code != 0 && strstr(o.message, "does not fit requestedSchema") &&
              strstr(o.message, "(ok)"),
          "an answer outside the spoke's requestedSchema fails the call, naming the request "
          "(%s)",
          o.message);
    CHECK(hub_fixture_count_lines(audit, "\"action\":\"elicitation\",\"outcome\":\"failure\"",
                                  NULL) == 1,
          "... and is on record as a failure");
    json_decref(o.sc);

    /* ---- a hook that fails ---- */
    json_decref(elicit_answer);
    elicit_answer = json_pack("{s:s}", "action", "decline");
    sampling_fails = true;
    o = call("asker");
    CHECK(o.code != 0 && strstr(o.message, "no LLM is configured") && strstr(o.message, "(poem)"),
          "a sampling request the hub cannot serve fails the call with the hook's reason (%s)",
          o.message);
    json_decref(o.sc);
    sampling_fails = false;

    /* ---- what the hub did not declare ---- */
    int asked = elicit_asked + sampling_asked;
    o = call("greedy");
    CHECK(o.code != 0 && strstr(o.message, "asks for tasks/list, which the hub did not declare"),
          "an input request for a method the hub did not declare is refused (%s)", o.message);
    CHECK(elicit_asked + sampling_asked == asked, "... before any hook is asked");
    json_decref(o.sc);

    /* ---- a second answer to the request while the hub waits for the user ---- */
    o = call("twice");
    CHECK(o.code != 0 && strstr(o.message, "had answered already"),
          "a spoke that answers the asking request again while the user is asked gets no "
          "answer through (%s)",
          o.message);
    CHECK(hub_fixture_count_lines(
              audit, "\"action\":\"spoke-kill\",\"outcome\":\"success\",\"reason\":\"protocol\"",
              "\"app\":\"twice\"") == 1,
          "... it is stopped for the protocol breach, on record");
    json_decref(o.sc);

    /* ---- a tool list that changes after the pin ---- */
    o = call("changer");
    CHECK(o.code == 0, "a spoke whose tools can change answers its call (%s)", o.message);
    json_decref(o.sc);
    char *log = xasprintf("%s/run/spokes/default/changer.log", f.dir);
    uint64_t until = now_mono_ns() + 20000000000ULL;
    while (hub_fixture_count_lines(audit, "\"reason\":\"pin\"", "\"app\":\"changer\"") == 0 &&
           now_mono_ns() < until) {
        struct timeval tick = {.tv_sec = 0, .tv_usec = 50000};
        event_base_loopexit(f.base, &tick);
        event_base_dispatch(f.base);
    }
    CHECK(hub_fixture_count_lines(log, "stateless: got subscriptions/listen", NULL) == 1,
          "... the hub opened one subscription to its tool list");
    CHECK(hub_fixture_count_lines(audit, "\"reason\":\"pin\"", "\"app\":\"changer\"") == 1 &&
              hub_fixture_count_lines(audit,
                                      "changed its tools after they were pinned (list_changed)",
                                      "\"app\":\"changer\"") == 1,
          "... and when it swapped a tool's description after the call and said so, it was "
          "stopped for breaking its pin, on record");
    free(log);

    /* The user answers after the call has ended: the answer goes nowhere. */
    int before = hub_fixture_count_lines(audit, "\"action\":\"elicitation\"", NULL);
    struct timeval wait = {.tv_sec = 0, .tv_usec = 500000};
    event_base_loopexit(f.base, &wait);
    event_base_dispatch(f.base);
    CHECK(hub_fixture_count_lines(audit, "\"action\":\"elicitation\"", NULL) == before,
          "... and the user's late answer reaches no spoke and no record");

    json_decref(elicit_answer);
    hub_fixture_end(&f);
    return test_done();
}
