/* Cancellation and read-only requests through the public API (hub.h), as `hub serve`
 * uses them: a call cancelled while the spoke runs it fails at once with
 * HUB_ERR_CANCELLED, the spoke goes on serving (its late answer dropped, no kill), a
 * queued call cancelled never reaches it, and a request for a capability the spoke
 * never declared is refused without being sent. Mode none: what this needs is the loop
 * and the protocol, not a jail. */
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
    int calls; /* done() runs exactly once per call */
    int code;
    char layer[32], message[256];
    uint64_t at;
};

static void done(void *ud, const struct call_result *r)
{
    struct outcome *o = ud;
    o->done = true;
    o->calls++;
    o->code = r->result ? 0 : r->code;
    o->at = now_mono_ns();
    snprintf(o->layer, sizeof(o->layer), "%s", r->layer ? r->layer : "");
    snprintf(o->message, sizeof(o->message), "%s", r->message ? r->message : "");
}

static void run_for(struct event_base *base, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static void run_until(struct event_base *base, const struct outcome *o, int max_ms)
{
    uint64_t until = now_mono_ns() + (uint64_t)max_ms * 1000000ULL;
    while (!o->done && now_mono_ns() < until)
        event_base_loop(base, EVLOOP_ONCE);
}

int main(void)
{
    struct hub_fixture f;
    if (!hub_fixture_init(&f, "hub-cancel"))
        return 1;
    char err[512];
    bool started = hub_fixture_start(&f, err, sizeof(err));
    CHECK(started, "the hub starts (%s)", started ? "" : err);
    if (!started) {
        hub_fixture_end(&f);
        return test_done();
    }
    struct hub *h = f.hub;
    struct event_base *base = f.base;
    struct call_opts o = {.timeout_ms = 20000};
    json_t *empty = json_object(), *ping = json_pack("{s:s}", "text", "ping");
    json_t *sleep_args = json_pack("{s:i}", "ms", 1500);

    /* Warm the spoke up, then cancel a call it is running. */
    struct outcome warm = {0}, running = {0}, queued = {0}, after = {0};
    hub_call(h, &o, "alpha", "echo", ping, done, &warm);
    run_until(base, &warm, 10000);
    CHECK(warm.done && warm.code == 0, "the spoke answers (%s)", warm.message);
    hub_call(h, &o, "alpha", "sleep", sleep_args, done, &running);
    hub_call(h, &o, "alpha", "echo", ping, done, &queued);
    run_for(base, 200);
    uint64_t t0 = now_mono_ns();
    hub_call_cancel(h, &queued);
    CHECK(queued.done && queued.code == HUB_ERR_CANCELLED && strcmp(queued.layer, "cancelled") == 0,
          "a queued call cancelled fails at once with HUB_ERR_CANCELLED at layer cancelled (%d %s)",
          queued.code, queued.layer);
    hub_call_cancel(h, &running);
    CHECK(running.done && running.code == HUB_ERR_CANCELLED && running.at - t0 < 100000000ULL,
          "a running call cancelled fails at once, not when the spoke ends it (%d: %s)",
          running.code, running.message);
    hub_call(h, &o, "alpha", "echo", ping, done, &after);
    run_until(base, &after, 10000);
    CHECK(after.done && after.code == 0,
          "the spoke goes on serving: its late answer to the cancelled call is dropped (%s)",
          after.message);
    CHECK(after.at - t0 > 1000000000ULL,
          "... the next call ran after the cancelled one ended in the spoke");
    CHECK(hub_fixture_count_lines(f.cfg.audit_path, "\"spoke-kill\"", NULL) == 0,
          "nothing was killed");
    hub_call_cancel(h, &running);
    run_for(base, 50);
    CHECK(running.calls == 1 && queued.calls == 1,
          "cancelling what has ended does nothing (done() ran once)");

    /* Read-only requests. */
    struct outcome list = {0}, res = {0}, bad = {0};
    hub_request(h, &o, "alpha", "tools/list", empty, done, &list);
    run_until(base, &list, 10000);
    CHECK(list.done && list.code == 0,
          "tools/list through hub_request, checked against the pin (%s)", list.message);
    hub_request(h, &o, "alpha", "resources/list", empty, done, &res);
    run_until(base, &res, 10000);
    CHECK(res.done && res.code == HUB_ERR_UNSUPPORTED && strstr(res.message, "no \"resources\""),
          "resources/list to a spoke without resources is refused unsent (%s)", res.message);
    hub_request(h, &o, "alpha", "tools/call", empty, done, &bad);
    CHECK(bad.done && bad.code == HUB_ERR_UNKNOWN_TOOL,
          "hub_request takes only read-only methods (%s)", bad.message);
    CHECK(hub_request_method_known("prompts/get") &&
              !hub_request_method_known("sampling/createMessage"),
          "the methods hub_request takes");
    CHECK(hub_spoke_server_info(h, NULL, "alpha", NULL) != NULL &&
              json_is_object(
                  json_object_get(hub_spoke_server_info(h, NULL, "alpha", NULL), "capabilities")),
          "the spoke's initialize answer is kept");

    /* A deadline: the spoke is told and ended. */
    struct outcome late = {0};
    struct call_opts quick = {.timeout_ms = 200};
    hub_call(h, &quick, "alpha", "sleep", sleep_args, done, &late);
    run_until(base, &late, 10000);
    CHECK(late.done && strcmp(late.layer, "deadline") == 0, "a call past its deadline fails (%s)",
          late.message);
    CHECK(hub_fixture_count_lines(f.cfg.audit_path, "\"deadline\"", NULL) >= 1,
          "... and its spoke is ended, on record");

    json_decref(empty);
    json_decref(ping);
    json_decref(sleep_args);
    hub_fixture_end(&f);
    return test_done();
}
