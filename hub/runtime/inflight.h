/* The in-flight limit of one spoke: how many calls the hub sends it at once, sized to
 * the spoke's work (issue 40). Between hub.json's inflight.min and the spoke's
 * max_inflight it grows while the spoke's answers come as fast as they do with few
 * calls in flight, and shrinks when they slow down: a server that serves calls
 * concurrently (a 100 ms wait, an upstream API) is given all the calls its sessions
 * have, and one that works through them one by one keeps its queue in the hub, where
 * the sessions take turns, rather than in its input.
 *
 * The measure is each answered call's round trip (tools/call sent to answer read)
 * against its tool's own latency at low concurrency: a moving average of the round
 * trips of that tool's calls sent while at most inflight.min were in flight (or, until
 * such a call comes, while the fewest were: a fresh spoke's first calls go out one by
 * one). Each round trip less latency_slack_ms (10 ms: a few ms of queued
 * sub-millisecond calls is no slowdown, and a wider window lets the spoke and the hub
 * read several frames at a wake-up) is divided by that latency. A round is as many
 * answers as the limit (at least 4); at its end, the median of the round's ratios
 * decides, in rounds where the limit held calls back (a call waited for a place in
 * the window, not for its session's share):
 *   - median at most latency_tolerance_pct: the limit grows by a quarter (at least 1),
 *     up to max_inflight;
 *   - above: the limit shrinks by the ratio's excess (tolerance / median), at most to
 *     half, not below inflight.min.
 * A call that misses its deadline while sent halves the limit. A round where nothing
 * waited for the window leaves the limit as it is: the window played no part in its
 * latency. Calls that asked the hub something (isolate/call, sampling, elicitation)
 * are not measured: their round trip holds the other app's or the user's time.
 *
 * max_inflight 1 is always 1; inflight.adaptive false: always max_inflight (the
 * fixed window of before). Nothing here reads a clock or allocates: the caller passes
 * the round trips, so the algorithm is tested on its own (tests/hub/test_hub_inflight_limit.c). */
#ifndef HUB_RUNTIME_INFLIGHT_H
#define HUB_RUNTIME_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h" /* struct inflight_settings, hub.json's "inflight" */

/* Tools whose latency is tracked per spoke; beyond them the least recently used goes. */
#define INFLIGHT_TOOLS 32
/* The most answers in a round: the largest max_inflight (manifest.h MAX_INFLIGHT_LIMIT). */
#define INFLIGHT_ROUND_MAX 256

struct inflight_tool {
    uint64_t key;        /* hash of the tool's name; 0: free */
    uint64_t base_ns;    /* its latency at low concurrency */
    uint64_t used;       /* the limit's tick at its last sample */
    unsigned base_level; /* the calls in flight base_ns was measured at */
    unsigned seeded;     /* samples taken into base_ns, up to 8 */
};

struct inflight_limit {
    struct inflight_settings s;
    unsigned limit, min, max;
    bool bound;                         /* this round, a call waited for a place in the window */
    unsigned n;                         /* answers this round */
    uint32_t ratio[INFLIGHT_ROUND_MAX]; /* round trip / base, in thousandths */
    struct inflight_tool tools[INFLIGHT_TOOLS];
    uint64_t tick;
    unsigned grown, shrunk; /* times it changed, for the spoke's records */
};

/* A fresh spoke's limit: max is its max_inflight (manifest, else hub.json). */
void inflight_init(struct inflight_limit *l, const struct inflight_settings *s, unsigned max);
/* Calls the spoke may hold at once now. */
unsigned inflight_window(const struct inflight_limit *l);
/* The window was full while a call waited for a place in it. */
void inflight_note_bound(struct inflight_limit *l);
/* An answered call of tool (its name, or the request's method): its round trip, and
 * the calls in flight when it was sent (itself included). */
void inflight_sample(struct inflight_limit *l, const char *tool, uint64_t rtt_ns,
                     unsigned inflight_at_send);
/* A call missed its deadline while the spoke held it. */
void inflight_overload(struct inflight_limit *l);

#endif
