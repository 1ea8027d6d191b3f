/* Many spokes at once through the public API (hub.h), as the repl-server and the load
 * test drive it: 100 instances of one app, each asked to sleep 300 ms, all at the same
 * time on one loop. They must all answer, together in far less than 100 x 300 ms, and
 * a hung instance among them must cost only its own call. Then every instance is
 * closed and nothing is left. Mode none (what this needs is the loop, not a jail). */
#include "runtime/answers.h"
#include "runtime/hub.h"
#include "tests/hub/hub_fixture.h"
#include "tests/unit/test.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 100

static int answered, failed;
static char last_error[256];

static void done(void *ud, const struct call_result *r)
{
    (void)ud;
    if (r->result)
        answered++;
    else {
        failed++;
        snprintf(last_error, sizeof(last_error), "%s", r->message ? r->message : "");
    }
}

int main(void)
{
    struct hub_fixture f;
    if (!hub_fixture_init(&f, "hub-many"))
        return 1;
    f.cfg.max_spokes = N + 8;
    /* Under memcheck (make valgrind) the hub runs some 20x slower: it still has to
     * start and serve all of them at once, with room for that. */
    bool valgrind = getenv("ISOLATE_VALGRIND") != NULL;
    if (valgrind)
        f.cfg.start_timeout_ms = 60000;
    double bound_s = valgrind ? 29.0 : 10.0; /* one after another: 30 s */
    char err[512];
    bool started = hub_fixture_start(&f, err, sizeof(err));
    CHECK(started, "the hub starts (%s)", started ? "" : err);
    if (!started) {
        hub_fixture_end(&f);
        return test_done();
    }
    struct hub *h = f.hub;
    struct event_base *base = f.base;

    json_t *sleep_args = json_pack("{s:i}", "ms", 300);
    json_t *empty = json_object();
    char names[N][16];
    uint64_t t0 = now_mono_ns();
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "s%d", i);
        struct call_opts o = {.instance = names[i], .timeout_ms = valgrind ? 60000 : 20000};
        hub_call(h, &o, "alpha", "sleep", sleep_args, done, NULL);
    }
    /* One hung spoke among them: it must not hold up the others. */
    struct call_opts hung = {.timeout_ms = 15000};
    hub_call(h, &hung, "hostile", "silent", empty, done, NULL);
    while (answered + failed < N && !hub_quit_requested(h))
        event_base_loop(base, EVLOOP_ONCE);
    double secs = (double)(now_mono_ns() - t0) / 1e9;
    CHECK(answered == N, "all %d instances answered (%d failed%s%s)", N, failed, failed ? ": " : "",
          last_error);
    CHECK(secs < bound_s, "concurrently: %.2f s for %d calls of 300 ms each, beside a hung one", secs,
          N);
    size_t procs, slots;
    hub_resource_counts(h, &procs, &slots);
    CHECK(procs == N + 1, "%zu spoke processes run at once", procs);
    for (int i = 0; i < N; i++)
        hub_spoke_close(h, NULL, "alpha", names[i]);
    hub_spoke_close(h, NULL, "hostile", NULL);
    uint64_t until = now_mono_ns() + 5000000000ULL;
    while (now_mono_ns() < until) {
        hub_resource_counts(h, &procs, &slots);
        if (procs == 0)
            break;
        event_base_loop(base, EVLOOP_ONCE);
    }
    CHECK(procs == 0, "closing the instances reaps every process (%zu left)", procs);
    CHECK(failed == 1 && strstr(last_error, "closed"),
          "the hung call ended when its spoke was closed (%s)", last_error);
    json_decref(sleep_args);
    json_decref(empty);
    hub_fixture_end(&f);
    return test_done();
}
