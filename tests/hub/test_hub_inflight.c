/* Many calls in flight to one spoke (issue 29), through the public API (hub.h) as `hub
 * serve` drives it: up to max_inflight calls sent at once and answered in any order,
 * the window shared fairly between sessions, max_inflight 1 one at a time in order,
 * the in-flight limit sized to the spoke's work (issue 40: it grows past its initial
 * 16 for 32 sessions of a slow tool, stops at max_inflight, shrinks for a spoke that
 * works one call at a time, and a flooding session neither grows it nor starves the
 * others),
 * a missed deadline that ends the call but not a spoke that still answers, cancel and
 * progress per call, and a spoke's requests tied to the call they name (consent
 * questions to that call's origin). From the attacker's side: a spoke that answers an
 * id it was never sent, answers twice, answers a cancelled call, floods progress for
 * another call's token, asks without naming its call while several are in flight, or
 * stops answering altogether. The spoke is tests/hub/concspoke.c (raw JSON-RPC, many
 * calls at once); the C SDK's spokes (testspoke) relay through isolate/call from
 * several sessions at once. Mode none: what this needs is the loop and the protocol. */
#include "runtime/hub.h"
#include "tests/hub/hub_fixture.h"
#include "tests/unit/test.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct outcome {
    bool done;
    int calls, code;
    char layer[32], message[300];
    json_t *sc; /* structuredContent of the answer */
    int events; /* progress and log events passed on for this call */
    char event_call[40];
    bool event_foreign; /* an event that named another call */
};

static void done(void *ud, const struct call_result *r)
{
    struct outcome *o = ud;
    o->done = true;
    o->calls++;
    o->code = r->result ? 0 : r->code;
    snprintf(o->layer, sizeof(o->layer), "%s", r->layer ? r->layer : "");
    snprintf(o->message, sizeof(o->message), "%s", r->message ? r->message : "");
    json_decref(o->sc);
    o->sc = r->result ? json_incref(json_object_get(r->result, "structuredContent")) : NULL;
}

static void on_event(void *ud, const struct call_event *ev)
{
    struct outcome *o = ud;
    if (o->events++ == 0)
        snprintf(o->event_call, sizeof(o->event_call), "%s", ev->call_id);
    else if (strcmp(o->event_call, ev->call_id) != 0)
        o->event_foreign = true;
}

static long long sc_int(const struct outcome *o, const char *key)
{
    return json_integer_value(json_object_get(o->sc, key));
}

static void reset(struct outcome *o, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(o[i].sc);
        memset(&o[i], 0, sizeof(o[i]));
    }
}

static struct hub *hub;
static struct event_base *base;

/* Runs the loop until every one of n outcomes is done, or max_ms. */
static bool run_until_all(struct outcome *o, size_t n, int max_ms)
{
    uint64_t until = now_mono_ns() + (uint64_t)max_ms * 1000000ULL;
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += !o[i].done;
        if (left == 0)
            return true;
        if (now_mono_ns() >= until)
            return false;
        event_base_loop(base, EVLOOP_ONCE);
    }
}

static void run_for(int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

/* A call for session (an opaque tag, as hub serve's session), its origin the outcome. */
static void call(const void *session, const char *app, const char *tool, json_t *args_stolen,
                 uint64_t timeout_ms, struct outcome *o)
{
    struct call_opts opts = {.session = session,
                             .origin = o,
                             .timeout_ms = timeout_ms ? timeout_ms : 20000,
                             .on_event = on_event,
                             .event_ud = o};
    hub_call(hub, &opts, app, tool, args_stolen, done, o);
    json_decref(args_stolen);
}

/* The most calls of outcomes o[0..n) whose spans (arrival to answer, at the spoke)
 * overlapped at once. */
static int overlap(struct outcome *o, size_t n)
{
    int most = 0;
    for (size_t i = 0; i < n; i++) {
        int k = 0;
        for (size_t j = 0; j < n; j++)
            k += o[j].sc && sc_int(&o[j], "started_ms") <= sc_int(&o[i], "started_ms") &&
                 sc_int(&o[j], "ended_ms") > sc_int(&o[i], "started_ms");
        if (k > most)
            most = k;
    }
    return most;
}

/* n sessions, each making calls calls of tool one after another (the next as soon as
 * its last is answered), as hub serve's clients do; session i's k-th call's outcome is
 * o[i * calls + k]. False when they did not all end within max_ms. */
static bool sessions_in_turn(const char *app, const char *tool, const json_t *args, int n,
                             int calls, struct outcome *o, int max_ms)
{
    static char tags[64];
    int *next = xcalloc((size_t)n, sizeof(*next));
    for (int i = 0; i < n; i++)
        call(&tags[i], app, tool, json_deep_copy(args), 0, &o[i * calls + next[i]++]);
    uint64_t until = now_mono_ns() + (uint64_t)max_ms * 1000000ULL;
    bool all = false;
    while (!all && now_mono_ns() < until) {
        event_base_loop(base, EVLOOP_ONCE);
        all = true;
        for (int i = 0; i < n; i++) {
            if (!o[i * calls + next[i] - 1].done) {
                all = false;
                continue;
            }
            if (next[i] < calls) {
                call(&tags[i], app, tool, json_deep_copy(args), 0, &o[i * calls + next[i]++]);
                all = false;
            }
        }
    }
    free(next);
    return all;
}

/* Of n outcomes: how many were answered, and the most calls the spoke said it held. */
static int answered(const struct outcome *o, int n, long long *most_held)
{
    int ok = 0;
    *most_held = 0;
    for (int i = 0; i < n; i++) {
        ok += o[i].done && o[i].code == 0;
        if (o[i].sc && sc_int(&o[i], "max_inflight") > *most_held)
            *most_held = sc_int(&o[i], "max_inflight");
    }
    return ok;
}

static void free_outcomes(struct outcome *o, size_t n)
{
    reset(o, n);
    free(o);
}

/* ---- hooks that note which call's origin each question came with ---- */

#define MAX_QUESTIONS 32
static void *question_origin[MAX_QUESTIONS];
static int n_questions;

static void perm_allow(struct perm_hook *h, const struct perm_request *q, perm_done_fn fn, void *ud)
{
    (void)h;
    if (n_questions < MAX_QUESTIONS)
        question_origin[n_questions++] = q->origin;
    fn(ud, PERM_ALLOW, "test allows");
}

static void perm_free(struct perm_hook *h)
{
    free(h);
}

static void elicit_decline(struct elicit_hook *h, const struct hook_request *r, hook_done_fn fn,
                           void *ud)
{
    (void)h;
    if (n_questions < MAX_QUESTIONS)
        question_origin[n_questions++] = r->origin;
    bool named = json_object_get(json_object_get(r->params, "_meta"), "relatedRequestId");
    fn(ud, json_pack("{s:s,s:{s:b}}", "action", "decline", "_meta", "named", named), 0, NULL);
}

static void elicit_free(struct elicit_hook *h)
{
    free(h);
}

static char *write_manifest(const char *bin, const char *dir, const char *name, int max_inflight)
{
    char *cmd = xasprintf("%s/tests/hub/concspoke --manifest %s %d >%s/spokes/%s.json", bin, name,
                          max_inflight, dir, name);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? NULL : xstrdup(name);
}

int main(void)
{
    const char *bin = getenv("BIN") ? getenv("BIN") : "build";
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char dir[] = "/tmp/itest-hub-inflight.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char *spokes = xasprintf("%s/spokes", dir);
    char *cmd = xasprintf("mkdir -p %s && cp %s/tests/hub/manifests/alpha.json "
                          "%s/tests/hub/manifests/beta.json %s/",
                          spokes, root, root, spokes);
    CHECK(system(cmd) == 0, "test manifests copied");
    free(cmd);
    char *bad = NULL;
    /* conc: a window of 4; wide: the hub's default (16); serial: one at a time; peer
     * and hung: targets of their own; grow, line and fair: the hub's default (an
     * adaptive limit from 16 up to 64), each fresh for its own test; capped: up to 24. */
    const struct {
        const char *name;
        int window;
    } apps[] = {{"conc", 4}, {"wide", 0}, {"serial", 1}, {"peer", 0},   {"hung", 0},
                {"grow", 0}, {"line", 0}, {"fair", 0},   {"capped", 24}};
    for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]) && !bad; i++)
        bad = write_manifest(bin, dir, apps[i].name, apps[i].window);
    CHECK(!bad, "concspoke writes its manifests (%s)", bad ? bad : "all");
    struct hub_config cfg;
    hub_fixture_config(&cfg, bin, dir, spokes);
    free(spokes);
    cfg.isolation = ISO_NONE;
    CHECK(cfg.max_inflight == 64 && cfg.inflight.adaptive && cfg.inflight.initial == 16 &&
              cfg.inflight.min == 4,
          "by default a spoke's in-flight limit is adaptive, from 16, between 4 and "
          "max_inflight 64 (%u)",
          cfg.max_inflight);
    char err[512];
    struct manifest_set ms;
    if (manifest_set_load(cfg.spokes_dir, &ms, err, sizeof(err)) < 0) {
        CHECK(false, "manifests load: %s", err);
        return test_done();
    }
    CHECK(manifest_find(&ms, "conc")->max_inflight == 4 &&
              manifest_find(&ms, "wide")->max_inflight == 0,
          "a manifest's max_inflight is read (and left to hub.json when absent)");
    base = event_base_new();
    hub = hub_new(&cfg, &ms, base, false, err, sizeof(err));
    CHECK(hub != NULL, "the hub starts (%s)", hub ? "" : err);
    if (!hub)
        return test_done();
    struct perm_hook *ph = xcalloc(1, sizeof(*ph));
    ph->ask = perm_allow;
    ph->free = perm_free;
    hub_set_permission_hook(hub, ph);
    struct elicit_hook *eh = xcalloc(1, sizeof(*eh));
    eh->create = elicit_decline;
    eh->free = elicit_free;
    hub_set_elicit_hook(hub, eh);
    const char *audit = cfg.audit_path;
    static char sess[16]; /* session tags: the addresses of its bytes */
    struct outcome o[16] = {0};

    /* ---- calls at once, answered in any order ---- */
    for (int i = 0; i < 10; i++)
        call(&sess[i], "wide", "sleep", json_pack("{s:i}", "ms", 2000), 0, &o[i]);
    CHECK(run_until_all(o, 10, 30000), "ten sessions' calls to one spoke all end");
    int ok = 0;
    long long most = 0;
    for (int i = 0; i < 10; i++) {
        ok += o[i].code == 0;
        if (o[i].sc && sc_int(&o[i], "max_inflight") > most)
            most = sc_int(&o[i], "max_inflight");
    }
    CHECK(ok == 10, "... all answered (%d of 10; %s)", ok, o[0].message);
    CHECK(most == 10, "... the spoke held all ten at once (at most %lld)", most);
    reset(o, 16);
    call(&sess[0], "wide", "sleep", json_pack("{s:i}", "ms", 1500), 0, &o[0]);
    call(&sess[0], "wide", "sleep", json_pack("{s:i}", "ms", 50), 0, &o[1]);
    run_until_all(&o[1], 1, 20000);
    CHECK(o[1].done && !o[0].done, "a short call sent after a long one is answered first");
    run_until_all(o, 2, 20000);
    CHECK(o[0].code == 0 && o[1].code == 0, "... and both are answered");
    reset(o, 16);

    /* ---- one session cannot fill the window ---- */
    for (int i = 0; i < 6; i++)
        call(&sess[0], "conc", "sleep", json_pack("{s:i}", "ms", 1200), 0, &o[i]);
    call(&sess[1], "conc", "sleep", json_pack("{s:i}", "ms", 100), 0, &o[6]);
    CHECK(run_until_all(o, 7, 30000), "six calls of one session and one of another end");
    long long first_end = 0;
    for (int i = 0; i < 6; i++)
        if (o[i].sc && (!first_end || sc_int(&o[i], "ended_ms") < first_end))
            first_end = sc_int(&o[i], "ended_ms");
    CHECK(overlap(o, 6) == 2, "... the first session held at most half the window of 4 (%d)",
          overlap(o, 6));
    CHECK(o[6].sc && sc_int(&o[6], "started_ms") < first_end,
          "... the second session's call went in at once, not after one of the first's ended");
    reset(o, 16);

    /* ---- round robin between sessions ---- */
    /* Two sessions fill the window of 4 (two each: half of it); three more come with
     * two calls each and wait. As places free up, each of the three gets one before
     * any gets a second. */
    for (int s = 0; s < 5; s++)
        for (int k = 0; k < 2; k++)
            call(&sess[s], "conc", "sleep", json_pack("{s:i}", "ms", 500), 0, &o[s * 2 + k]);
    CHECK(run_until_all(o, 10, 30000), "five sessions with two calls each end");
    long long firsts_max = 0, seconds_min = 0;
    for (int s = 2; s < 5; s++) {
        struct outcome *a = &o[s * 2], *b = &o[s * 2 + 1];
        long long fa = a->sc ? sc_int(a, "started_ms") : 0,
                  fb = b->sc ? sc_int(b, "started_ms") : 0;
        long long first = fa < fb ? fa : fb, second = fa < fb ? fb : fa;
        if (first > firsts_max)
            firsts_max = first;
        if (!seconds_min || second < seconds_min)
            seconds_min = second;
    }
    CHECK(overlap(o, 4) == 4 && firsts_max && firsts_max <= seconds_min,
          "... the three waiting sessions each got a place before any got a second (%lld, %lld)",
          firsts_max, seconds_min);
    reset(o, 16);

    /* ---- max_inflight 1: one at a time, in order ---- */
    for (int i = 0; i < 3; i++)
        call(&sess[0], "serial", "sleep", json_pack("{s:i}", "ms", 200), 0, &o[i]);
    CHECK(run_until_all(o, 3, 20000), "three calls to a max_inflight 1 spoke end");
    CHECK(overlap(o, 3) == 1 && o[1].sc && o[2].sc &&
              sc_int(&o[0], "ended_ms") <= sc_int(&o[1], "started_ms") &&
              sc_int(&o[1], "ended_ms") <= sc_int(&o[2], "started_ms"),
          "... one after another, in the order they were made");
    reset(o, 16);

    /* ---- the in-flight limit sized to the spoke's work (issue 40) ---- */
    {
        /* 32 sessions of a 100 ms tool, one call after another each: the limit starts
         * at 16 and grows while the answers keep their pace. */
        enum { SESSIONS = 32, CALLS = 15 };
        struct outcome *many = xcalloc(SESSIONS * CALLS, sizeof(*many));
        json_t *args = json_pack("{s:i}", "ms", 100);
        bool ended = sessions_in_turn("grow", "sleep", args, SESSIONS, CALLS, many, 60000);
        long long held;
        int n_ok = answered(many, SESSIONS * CALLS, &held);
        CHECK(ended && n_ok == SESSIONS * CALLS,
              "32 sessions, 15 calls each of a 100 ms tool: all answered, none failed (%d of %d)",
              n_ok, SESSIONS * CALLS);
        CHECK(held >= 28,
              "... the spoke held %lld calls at once: the limit grew past its initial 16 to "
              "serve the 32 sessions",
              held);
        free_outcomes(many, SESSIONS * CALLS);
        /* The same with max_inflight 24: it grows to that and no further. */
        many = xcalloc(SESSIONS * CALLS, sizeof(*many));
        ended = sessions_in_turn("capped", "sleep", args, SESSIONS, CALLS, many, 60000);
        n_ok = answered(many, SESSIONS * CALLS, &held);
        CHECK(ended && n_ok == SESSIONS * CALLS && held <= 24 && held > 16,
              "with max_inflight 24 the spoke held at most 24 at once (%lld; %d answered)", held,
              n_ok);
        free_outcomes(many, SESSIONS * CALLS);
        json_decref(args);
    }
    {
        /* A spoke that works through its calls one at a time (20 ms each): more in
         * flight only lengthens its queue, so the limit shrinks and the calls wait in
         * the hub, where the sessions take turns. */
        enum { SESSIONS = 24, CALLS = 8, LAST = 48 };
        struct outcome *many = xcalloc(SESSIONS * CALLS, sizeof(*many));
        json_t *args = json_pack("{s:i}", "ms", 20);
        bool ended = sessions_in_turn("line", "queue", args, SESSIONS, CALLS, many, 60000);
        long long held;
        int n_ok = answered(many, SESSIONS * CALLS, &held);
        /* The calls the spoke held when each of the last LAST arrived. */
        long long *start = xcalloc(SESSIONS * CALLS, sizeof(*start));
        for (int i = 0; i < SESSIONS * CALLS; i++)
            start[i] = many[i].sc ? sc_int(&many[i], "started_ms") : 0;
        long long cut = 0; /* the LAST-th latest start */
        for (int i = 0; i < SESSIONS * CALLS; i++) {
            int later = 0;
            for (int j = 0; j < SESSIONS * CALLS; j++)
                later += start[j] > start[i];
            if (later == LAST - 1)
                cut = start[i];
        }
        long long late_most = 0;
        for (int i = 0; i < SESSIONS * CALLS; i++)
            if (many[i].sc && start[i] >= cut && sc_int(&many[i], "inflight_at_start") > late_most)
                late_most = sc_int(&many[i], "inflight_at_start");
        CHECK(ended && n_ok == SESSIONS * CALLS,
              "24 sessions of a spoke that serves one call at a time: all %d answered", n_ok);
        CHECK(held >= 16 && late_most <= 10,
              "... it held %lld at first, at most %lld when the last %d calls came: the limit "
              "shrank from 16",
              held, late_most, LAST);
        free(start);
        free_outcomes(many, SESSIONS * CALLS);
        json_decref(args);
    }
    {
        /* One session floods (48 calls at once), eight others make one call each: the
         * flood holds at most half of the window, never grows it, and the others' calls
         * go in at once. */
        struct outcome *flood = xcalloc(48, sizeof(*flood));
        for (int i = 0; i < 48; i++)
            call(&sess[0], "fair", "sleep", json_pack("{s:i}", "ms", 300), 0, &flood[i]);
        run_for(50);
        for (int i = 0; i < 8; i++)
            call(&sess[1 + i], "fair", "sleep", json_pack("{s:i}", "ms", 100), 0, &o[i]);
        bool ended = run_until_all(flood, 48, 60000) && run_until_all(o, 8, 20000);
        long long flood_end = 0, held;
        for (int i = 0; i < 48; i++)
            if (flood[i].sc && (!flood_end || sc_int(&flood[i], "ended_ms") < flood_end))
                flood_end = sc_int(&flood[i], "ended_ms");
        int late = 0;
        for (int i = 0; i < 8; i++)
            late += !o[i].sc || sc_int(&o[i], "started_ms") >= flood_end;
        long long held_late;
        int n_ok = answered(flood, 48, &held) + answered(o, 8, &held_late);
        if (held_late > held)
            held = held_late;
        CHECK(ended && n_ok == 56,
              "a session's flood of 48 calls and 8 others' calls: all answered "
              "(%d of 56)",
              n_ok);
        CHECK(overlap(flood, 48) <= 8 && held <= 16,
              "... the flooding session held at most half of the window of 16 (%d), and did "
              "not grow it (the spoke held at most %lld)",
              overlap(flood, 48), held);
        CHECK(late == 0,
              "... the 8 other sessions' calls went in at once, not after one of the flood's "
              "(%d late)",
              late);
        free_outcomes(flood, 48);
        reset(o, 16);
    }
    {
        /* max_inflight 1 stays 1 under many sessions: the adaptive limit never opens a
         * window the manifest closed. */
        enum { SESSIONS = 8, CALLS = 3 };
        struct outcome *many = xcalloc(SESSIONS * CALLS, sizeof(*many));
        json_t *args = json_pack("{s:i}", "ms", 30);
        bool ended = sessions_in_turn("serial", "sleep", args, SESSIONS, CALLS, many, 60000);
        long long held;
        int n_ok = answered(many, SESSIONS * CALLS, &held);
        CHECK(ended && n_ok == SESSIONS * CALLS && held == 1 &&
                  overlap(many, SESSIONS * CALLS) == 1,
              "max_inflight 1 with 8 sessions calling at once: one call at a time, always "
              "(%lld held at most; %d answered)",
              held, n_ok);
        free_outcomes(many, SESSIONS * CALLS);
        json_decref(args);
    }

    /* ---- progress and log messages reach their own call ---- */
    call(&sess[0], "conc", "progress", json_pack("{s:i}", "n", 3), 0, &o[0]);
    call(&sess[1], "conc", "progress", json_pack("{s:i}", "n", 5), 0, &o[1]);
    call(&sess[2], "conc", "sleep", json_pack("{s:i}", "ms", 1500), 0, &o[2]);
    call(&sess[3], "conc", "log", json_pack("{s:s,s:s}", "text", "named", "name", "id"), 0, &o[3]);
    call(&sess[4], "conc", "log", json_pack("{s:s,s:s}", "text", "unnamed", "name", "none"), 0,
         &o[4]);
    CHECK(run_until_all(o, 5, 20000), "progress and log calls end");
    CHECK(o[0].events == 3 && o[1].events == 5 && !o[0].event_foreign && !o[1].event_foreign,
          "each call's progress reached that call only (%d, %d)", o[0].events, o[1].events);
    CHECK(o[3].events == 1 && o[4].events == 0,
          "a log message that names its call reaches it; one that names none while several "
          "are in flight reaches nobody (%d, %d)",
          o[3].events, o[4].events);
    reset(o, 16);

    /* ---- a spoke's requests belong to the call they name ---- */
    json_t *elicit = json_pack("{s:s,s:{s:s,s:{}}}", "message", "ok?", "requestedSchema", "type",
                               "object", "properties");
    n_questions = 0;
    call(&sess[0], "conc", "sleep", json_pack("{s:i}", "ms", 1500), 0, &o[0]);
    call(&sess[1], "conc", "ask",
         json_pack("{s:s,s:O,s:s}", "method", "elicitation/create", "params", elicit, "name", "id"),
         0, &o[1]);
    call(&sess[2], "conc", "ask",
         json_pack("{s:s,s:O,s:s}", "method", "elicitation/create", "params", elicit, "name",
                   "token"),
         0, &o[2]);
    call(&sess[3], "conc", "ask",
         json_pack("{s:s,s:O,s:s}", "method", "elicitation/create", "params", elicit, "name",
                   "none"),
         0, &o[3]);
    call(&sess[3], "conc", "ask",
         json_pack("{s:s,s:O,s:s}", "method", "elicitation/create", "params", elicit, "name",
                   "wrong"),
         0, &o[4]);
    CHECK(run_until_all(o, 5, 20000), "requests from a spoke with several calls in flight end");
    json_t *r1 = json_object_get(o[1].sc, "result"), *r2 = json_object_get(o[2].sc, "result");
    CHECK(json_is_true(json_object_get(o[1].sc, "ok")) &&
              json_is_true(json_object_get(o[2].sc, "ok")) &&
              strcmp(json_string_value(json_object_get(r1, "action")), "decline") == 0,
          "a request naming its call by relatedRequestId or progressToken is served");
    CHECK(n_questions == 2 && ((question_origin[0] == &o[1] && question_origin[1] == &o[2]) ||
                               (question_origin[0] == &o[2] && question_origin[1] == &o[1])),
          "... and each question went out for the call it named (%d questions)", n_questions);
    CHECK(!json_is_true(json_object_get(json_object_get(r1, "_meta"), "named")) &&
              !json_is_true(json_object_get(json_object_get(r2, "_meta"), "named")),
          "... without the hub-to-spoke id in what the hook sees");
    const char *m3 =
        json_string_value(json_object_get(json_object_get(o[3].sc, "error"), "message"));
    const char *m4 =
        json_string_value(json_object_get(json_object_get(o[4].sc, "error"), "message"));
    CHECK(json_is_false(json_object_get(o[3].sc, "ok")) && m3 && strstr(m3, "names none"),
          "a request that names no call while several are in flight is refused (%s)", m3 ? m3 : "");
    CHECK(json_is_false(json_object_get(o[4].sc, "ok")) && m4 && strstr(m4, "names no call"),
          "... so is one naming a call the spoke does not serve (%s)", m4 ? m4 : "");
    CHECK(hub_fixture_count_lines(audit, "\"spoke-request\"", "\"failure\"") == 2,
          "... both refusals are on record (spoke-request, failure)");
    reset(o, 16);
    n_questions = 0;
    call(&sess[0], "conc", "ask",
         json_pack("{s:s,s:O,s:s}", "method", "elicitation/create", "params", elicit, "name",
                   "none"),
         0, &o[0]);
    CHECK(run_until_all(o, 1, 20000) && json_is_true(json_object_get(o[0].sc, "ok")) &&
              n_questions == 1 && question_origin[0] == &o[0],
          "a request that names nothing belongs to the only call in flight");
    json_decref(elicit);
    reset(o, 16);

    /* ---- mediation from several sessions at once ---- */
    n_questions = 0;
    json_t *relay = json_pack("{s:s,s:{s:s,s:{s:i}},s:s}", "method", "isolate/call", "params",
                              "tool", "peer.sleep", "arguments", "ms", 300, "name", "id");
    for (int i = 0; i < 3; i++)
        call(&sess[i], "conc", "ask", json_incref(relay), 0, &o[i]);
    json_decref(relay);
    CHECK(run_until_all(o, 3, 20000), "three isolate/calls from three sessions end");
    ok = 0;
    for (int i = 0; i < 3; i++)
        ok += json_is_true(json_object_get(o[i].sc, "ok"));
    int right = 0;
    for (int q = 0; q < n_questions; q++)
        for (int i = 0; i < 3; i++)
            right += question_origin[q] == &o[i];
    CHECK(ok == 3, "... all relayed (%d of 3)", ok);
    CHECK(n_questions == 6 && right == 6,
          "... each asked twice (call, relay), each question with its own call's origin (%d)",
          n_questions);
    reset(o, 16);
    /* The C SDK (one call at a time) gets a second call while its first waits on the
     * hub, and names its call in what it asks. */
    json_t *sdk_relay = json_pack("{s:s,s:{s:i}}", "tool", "beta.sleep", "arguments", "ms", 200);
    for (int i = 0; i < 3; i++)
        call(&sess[i], "alpha", "relay", json_incref(sdk_relay), 0, &o[i]);
    json_decref(sdk_relay);
    CHECK(run_until_all(o, 3, 30000), "three relays through the C SDK's spoke end");
    ok = 0;
    for (int i = 0; i < 3; i++)
        ok += o[i].code == 0 && json_is_true(json_object_get(o[i].sc, "ok"));
    CHECK(ok == 3, "... all three relayed, nested in the one spoke (%d of 3: %s)", ok,
          o[0].message);
    reset(o, 16);

    /* ---- cancel one call of several ---- */
    call(&sess[0], "conc", "hold", json_object(), 0, &o[0]);
    call(&sess[1], "conc", "sleep", json_pack("{s:i}", "ms", 500), 0, &o[1]);
    run_for(100);
    hub_call_cancel(hub, &o[0]);
    CHECK(o[0].done && o[0].code == HUB_ERR_CANCELLED, "a call cancelled among several ends");
    run_until_all(o, 2, 20000);
    CHECK(o[1].code == 0, "... the other is answered (%s)", o[1].message);
    int kills = hub_fixture_count_lines(audit, "\"spoke-kill\"", NULL);
    CHECK(kills == 0, "... the late answer to the cancelled call is dropped, nothing killed");
    reset(o, 16);

    /* ---- a missed deadline ends the call, not a spoke that still answers ---- */
    call(&sess[0], "conc", "hold", json_object(), 400, &o[0]);
    call(&sess[1], "conc", "sleep", json_pack("{s:i}", "ms", 100), 0, &o[1]);
    CHECK(run_until_all(o, 2, 20000) && strcmp(o[0].layer, "deadline") == 0 &&
              strstr(o[0].message, "(cancelled)"),
          "a call past its deadline fails at layer deadline (%s)", o[0].message);
    CHECK(o[1].code == 0 && hub_fixture_count_lines(audit, "\"spoke-kill\"", NULL) == kills,
          "... the spoke, which answered another call meanwhile, goes on serving");
    reset(o, 16);
    /* Alone and silent until its deadline: a ping tells a live spoke from a hung one.
     * conc answers it; hung has stopped reading. */
    /* hung's spoke is started first: a deadline of 300 ms must not be spent on the
     * start (on a busy machine it could be, and the call would fail unsent). */
    call(&sess[1], "hung", "sleep", json_pack("{s:i}", "ms", 1), 0, &o[1]);
    CHECK(run_until_all(&o[1], 1, 20000) && o[1].code == 0, "the hung app's spoke starts");
    reset(o, 16);
    int starts = hub_fixture_count_lines(audit, "\"spoke-start\"", "\"success\"");
    call(&sess[0], "conc", "hold", json_object(), 300, &o[0]);
    call(&sess[1], "hung", "hang", json_object(), 300, &o[1]);
    CHECK(run_until_all(o, 2, 20000) && strcmp(o[0].layer, "deadline") == 0 &&
              strcmp(o[1].layer, "deadline") == 0,
          "two calls alone on their spokes miss their deadlines");
    uint64_t until = now_mono_ns() + 30000000000ULL;
    while (hub_fixture_count_lines(audit, "\"unresponsive\"", "\"spoke-kill\"") == 0 &&
           now_mono_ns() < until)
        run_for(200);
    CHECK(hub_fixture_count_lines(audit, "\"unresponsive\"", "\"spoke-kill\"") == 1 &&
              hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"hung\"") == 1,
          "... the spoke that answers nothing, not even a ping, is killed as unresponsive");
    CHECK(hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"conc\"") == 0,
          "... the one that answers the ping is not");
    reset(o, 16);
    call(&sess[0], "conc", "sleep", json_pack("{s:i}", "ms", 1), 0, &o[0]);
    CHECK(run_until_all(o, 1, 20000) && o[0].code == 0 &&
              hub_fixture_count_lines(audit, "\"spoke-start\"", "\"success\"") == starts,
          "... and serves the next call without a restart (%d more started)",
          hub_fixture_count_lines(audit, "\"spoke-start\"", "\"success\"") - starts);
    reset(o, 16);
    /* max_inflight 1: the call may still run, and the next must not share the spoke. */
    kills = hub_fixture_count_lines(audit, "\"spoke-kill\"", NULL);
    call(&sess[0], "serial", "hold", json_object(), 300, &o[0]);
    CHECK(run_until_all(o, 1, 20000) && strcmp(o[0].layer, "deadline") == 0 &&
              hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"serial\"") == 1,
          "a missed deadline on a max_inflight 1 spoke kills it at once, as before");
    reset(o, 16);

    /* ---- attacks ---- */
    /* An answer to an id it was never sent: killed; the calls it held fail. */
    call(&sess[0], "conc", "sleep", json_pack("{s:i}", "ms", 3000), 0, &o[0]);
    call(&sess[1], "conc", "forge", json_object(), 0, &o[1]);
    CHECK(run_until_all(o, 2, 20000) && o[0].code == HUB_ERR_SPOKE && o[1].code == HUB_ERR_SPOKE,
          "a spoke that answers an id it was never sent is ended (%s)", o[1].message);
    CHECK(hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"protocol\"") == 1 &&
              strstr(o[1].message, "never sent"),
          "... on record, reason protocol");
    reset(o, 16);
    call(&sess[0], "conc", "twice", json_object(), 0, &o[0]);
    CHECK(run_until_all(o, 1, 20000) && o[0].code == 0, "an answer that comes twice: the first "
                                                        "is the call's");
    uint64_t until2 = now_mono_ns() + 20000000000ULL;
    while (hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"protocol\"") < 2 &&
           now_mono_ns() < until2)
        run_for(100);
    CHECK(hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"protocol\"") == 2,
          "... and the second ends the spoke (reason protocol)");
    reset(o, 16);
    /* Progress with a token that is not one of its calls (another spoke's call) reaches
     * nobody; a flood with another of its own calls' token is cut at the budget. */
    call(&sess[0], "peer", "sleep", json_pack("{s:i}", "ms", 1500), 0, &o[0]);
    run_for(200);
    char token[40] = "";
    FILE *f = fopen(audit, "r");
    char line[16384];
    while (f && fgets(line, sizeof(line), f)) {
        json_t *rec = json_loads(line, 0, NULL);
        json_t *iso = json_object_get(rec, "isolate");
        if (strstr(line, "\"tool-call-start\"") && json_string_value(json_object_get(iso, "app")) &&
            strcmp(json_string_value(json_object_get(iso, "app")), "peer") == 0)
            snprintf(token, sizeof(token), "%s",
                     json_string_value(json_object_get(json_object_get(iso, "call"), "id")));
        json_decref(rec);
    }
    if (f)
        fclose(f);
    CHECK(token[0], "the other spoke's call id is in the audit (%s)", token);
    call(&sess[1], "conc", "steal", json_pack("{s:s,s:i}", "token", token, "n", 50), 0, &o[1]);
    CHECK(run_until_all(o, 2, 20000) && o[0].events == 0 && o[1].code == 0,
          "progress for another spoke's call reaches nobody (%d events)", o[0].events);
    reset(o, 16);
    kills = hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"flood\"");
    call(&sess[0], "conc", "sleep", json_pack("{s:i}", "ms", 3000), 0, &o[0]);
    run_for(100);
    call(&sess[1], "conc", "steal", json_pack("{s:i}", "n", 5000), 0, &o[1]);
    CHECK(run_until_all(o, 2, 20000) && o[0].events > 0 && o[0].events <= 1024,
          "a flood of progress for another of its calls is cut at that call's budget (%d)",
          o[0].events);
    CHECK(hub_fixture_count_lines(audit, "\"spoke-kill\"", "\"flood\"") == kills + 1,
          "... and the spoke is killed for it, on record");
    reset(o, 16);

    hub_free(hub);
    event_base_free(base);
    manifest_set_free(&ms);
    config_free(&cfg);
    cmd = xasprintf("rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(cmd);
    return test_done();
}
