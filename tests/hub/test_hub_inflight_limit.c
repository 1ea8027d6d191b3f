/* The in-flight limit's algorithm alone (hub/runtime/inflight.c), on simulated spokes:
 * one that serves calls concurrently (the limit grows to the calls its sessions have,
 * also when its latency is noisy or its tools differ), one that works through them one
 * by one (the limit shrinks, so the queue stays in the hub where sessions take turns),
 * rounds where the window held nothing back (no change), a missed deadline (halved),
 * and the bounds: max_inflight caps it, max_inflight 1 is 1, adaptive off is fixed.
 * And hub.json's "inflight" settings, read and refused. test_hub_inflight.c shows the
 * same through the hub with a real spoke. */
#include "config/config.h"
#include "runtime/inflight.h"
#include "tests/unit/test.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define MS 1000000ULL

static const struct inflight_settings defaults = {.adaptive = true,
                                                  .initial = INFLIGHT_DEFAULT_INITIAL,
                                                  .min = INFLIGHT_DEFAULT_MIN,
                                                  .tolerance_pct = INFLIGHT_DEFAULT_TOLERANCE_PCT,
                                                  .slack_ms = INFLIGHT_DEFAULT_SLACK_MS};

enum model { CONCURRENT, SERIAL, FAST_SERIAL, NOISY, TWO_TOOLS };

static uint32_t rng = 12345;
static uint32_t next_rand(void)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) & 0xffff;
}

/* One round trip of the window's worth of answers: demand calls wanted at once, so the
 * spoke holds min(limit, demand); the window is bound when demand exceeds it. A fresh
 * spoke's first round is sent one call after another (the first with nothing else in
 * flight, as the hub's dispatch does). */
static void round_of(struct inflight_limit *l, enum model m, unsigned demand)
{
    unsigned w = inflight_window(l);
    unsigned held = demand < w ? demand : w;
    if (demand > w)
        inflight_note_bound(l);
    unsigned n = w < 4 ? 4 : w;
    bool fresh = l->tick == 0;
    for (unsigned i = 0; i < n; i++) {
        const char *tool = "sleep";
        uint64_t rtt = 100 * MS;
        unsigned at_send = fresh && i < held ? i + 1 : held;
        switch (m) {
        case CONCURRENT:
            break;
        case SERIAL: /* one at a time: each waits for those before it */
            rtt = (uint64_t)at_send * 10 * MS;
            break;
        case FAST_SERIAL: /* the same, 0.1 ms a call */
            rtt = (uint64_t)at_send * MS / 10;
            break;
        case NOISY: /* 50 to 150 ms whatever the concurrency */
            rtt = 50 * MS + (uint64_t)next_rand() * 100 * MS / 0xffff;
            break;
        case TWO_TOOLS: /* a 1 ms tool beside a 100 ms one */
            if (i % 2) {
                tool = "echo";
                rtt = 1 * MS;
            }
            break;
        }
        inflight_sample(l, tool, rtt, at_send);
    }
}

/* hub.json holding json loads (0) or not (-1, err says why). */
static int load_hub_json(struct hub_config *c, const char *json, char *err, size_t errlen)
{
    char path[] = "/tmp/itest-inflight-hubjson.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -2;
    ssize_t n = write(fd, json, strlen(json));
    close(fd);
    config_defaults(c, "/opt/hub");
    int rc = n == (ssize_t)strlen(json) ? config_load(c, path, err, errlen) : -2;
    unlink(path);
    return rc;
}

static unsigned run(struct inflight_limit *l, enum model m, unsigned demand, int rounds,
                    unsigned *lowest, unsigned *highest)
{
    unsigned lo = inflight_window(l), hi = lo;
    for (int r = 0; r < rounds; r++) {
        round_of(l, m, demand);
        unsigned w = inflight_window(l);
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    if (lowest)
        *lowest = lo;
    if (highest)
        *highest = hi;
    return inflight_window(l);
}

int main(void)
{
    struct inflight_limit l;
    unsigned lo, hi, w;

    inflight_init(&l, &defaults, 64);
    CHECK(inflight_window(&l) == 16, "a fresh spoke's limit is inflight.initial, 16 (%u)",
          inflight_window(&l));
    /* 32 sessions of a 100 ms tool: the window grows while the latency holds. */
    int rounds = 0;
    while (inflight_window(&l) < 32 && rounds < 20) {
        round_of(&l, CONCURRENT, 32);
        rounds++;
    }
    CHECK(inflight_window(&l) >= 32 && rounds <= 4,
          "a concurrent spoke with 32 calls wanted: the limit reaches 32 in %d round trips (%u)",
          rounds, inflight_window(&l));
    w = run(&l, CONCURRENT, 32, 50, &lo, &hi);
    CHECK(lo >= 32 && hi <= 40,
          "... and stays there (%u to %u): once nothing waits for the window it does not grow", lo,
          hi);
    w = run(&l, CONCURRENT, 200, 50, NULL, NULL);
    CHECK(w == 64, "... with more calls wanted it grows to max_inflight and no further (%u)", w);

    inflight_init(&l, &defaults, 20);
    w = run(&l, CONCURRENT, 200, 30, NULL, &hi);
    CHECK(w == 20 && hi == 20, "max_inflight 20 caps it at 20 (%u, highest %u)", w, hi);

    /* A spoke that serves one call at a time: its latency grows with the window. */
    inflight_init(&l, &defaults, 64);
    w = run(&l, SERIAL, 32, 60, &lo, NULL);
    unsigned settled_lo, settled_hi;
    run(&l, SERIAL, 32, 40, &settled_lo, &settled_hi);
    CHECK(w <= 8 && lo >= 4 && settled_hi <= 8 && settled_lo >= 4,
          "a serial spoke: the limit shrinks from 16 to %u and stays between inflight.min 4 and "
          "8 (%u to %u)",
          w, settled_lo, settled_hi);

    /* The slack: a serial spoke of a 0.1 ms tool may hold 10 ms of queued calls. */
    inflight_init(&l, &defaults, 64);
    w = run(&l, FAST_SERIAL, 100, 30, NULL, NULL);
    struct inflight_settings no_slack = defaults;
    no_slack.slack_ms = 0;
    inflight_init(&l, &no_slack, 64);
    unsigned w0 = run(&l, FAST_SERIAL, 100, 60, NULL, NULL);
    CHECK(w == 64 && w0 <= 8,
          "a serial spoke of a 0.1 ms tool: within the 10 ms slack the limit grows to 64 (%u); "
          "with latency_slack_ms 0 it shrinks as for a slow one (%u)",
          w, w0);

    /* Latency that varies with the input, not with the load, is not congestion. */
    inflight_init(&l, &defaults, 64);
    w = run(&l, NOISY, 32, 60, &lo, NULL);
    CHECK(w >= 32 && lo >= 16,
          "a tool whose latency varies 50 to 150 ms by itself: the limit still grows to the 32 "
          "wanted (%u, lowest %u)",
          w, lo);
    inflight_init(&l, &defaults, 64);
    w = run(&l, TWO_TOOLS, 32, 30, &lo, NULL);
    CHECK(w >= 32 && lo >= 16,
          "a 1 ms tool beside a 100 ms one: each is measured against its own latency, the limit "
          "grows (%u, lowest %u)",
          w, lo);

    /* Rounds where nothing waited for the window change nothing, even slow ones. */
    inflight_init(&l, &defaults, 64);
    run(&l, SERIAL, 8, 40, &lo, &hi);
    CHECK(lo == 16 && hi == 16,
          "8 calls wanted under a limit of 16: no round is bound, the limit holds (%u to %u)", lo,
          hi);

    /* A missed deadline halves it, not below the minimum. */
    inflight_init(&l, &defaults, 64);
    inflight_overload(&l);
    CHECK(inflight_window(&l) == 8, "a missed deadline halves the limit (16 -> %u)",
          inflight_window(&l));
    inflight_overload(&l);
    inflight_overload(&l);
    CHECK(inflight_window(&l) == 4, "... never below inflight.min (%u)", inflight_window(&l));

    /* The bounds. */
    inflight_init(&l, &defaults, 1);
    run(&l, CONCURRENT, 32, 20, &lo, &hi);
    inflight_overload(&l);
    CHECK(lo == 1 && hi == 1 && inflight_window(&l) == 1,
          "max_inflight 1: the limit is 1, always (%u to %u)", lo, hi);
    struct inflight_settings fixed = defaults;
    fixed.adaptive = false;
    inflight_init(&l, &fixed, 64);
    run(&l, SERIAL, 100, 30, &lo, &hi);
    inflight_overload(&l);
    CHECK(lo == 64 && hi == 64 && inflight_window(&l) == 64,
          "inflight.adaptive false: the window is max_inflight, fixed (%u to %u)", lo, hi);
    struct inflight_settings low = defaults;
    low.min = 1;
    low.slack_ms = 0;
    inflight_init(&l, &low, 64);
    run(&l, SERIAL, 100, 60, &lo, NULL);
    CHECK(lo == 2,
          "inflight.min 1 with max_inflight 64: never below 2, so a spoke that "
          "takes several never gets the rules of max_inflight 1 (%u)",
          lo);
    inflight_init(&l, &defaults, 3);
    CHECK(inflight_window(&l) == 3,
          "an initial limit above max_inflight starts at max_inflight (%u)", inflight_window(&l));

    /* hub.json */
    struct hub_config c;
    char err[512] = "";
    CHECK(load_hub_json(&c, "{}", err, sizeof(err)) == 0 && c.max_inflight == 64 &&
              c.inflight.adaptive && c.inflight.initial == 16 && c.inflight.min == 4 &&
              c.inflight.tolerance_pct == 150 && c.inflight.slack_ms == 10,
          "hub.json's defaults: max_inflight 64, inflight adaptive from 16, min 4, tolerance "
          "150 %%, slack 10 ms (%s)",
          err);
    config_free(&c);
    CHECK(load_hub_json(&c,
                        "{\"max_inflight\": 32, \"inflight\": {\"adaptive\": false, "
                        "\"initial\": 8, \"min\": 2, \"latency_tolerance_pct\": 200, "
                        "\"latency_slack_ms\": 0}}",
                        err, sizeof(err)) == 0 &&
              c.max_inflight == 32 && !c.inflight.adaptive && c.inflight.initial == 8 &&
              c.inflight.min == 2 && c.inflight.tolerance_pct == 200 && c.inflight.slack_ms == 0,
          "hub.json's inflight settings are read (%s)", err);
    config_free(&c);
    const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"inflight\": {\"min\": 20}}", "inflight.min"},
        {"{\"inflight\": {\"latency_tolerance_pct\": 100}}", "inflight.latency_tolerance_pct"},
        {"{\"inflight\": {\"initial\": 0}}", "inflight.initial"},
        {"{\"inflight\": {\"grow\": 2}}", "grow"},
        {"{\"inflight\": {\"latency_slack_ms\": -1}}", "inflight.latency_slack_ms"},
        {"{\"inflight\": {\"adaptive\": \"yes\"}}", "inflight.adaptive"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CHECK(load_hub_json(&c, bad[i].json, err, sizeof(err)) == -1 && strstr(err, bad[i].says),
              "hub.json %s is refused, naming %s (%s)", bad[i].json, bad[i].says, err);
        config_free(&c);
    }
    return test_done();
}
