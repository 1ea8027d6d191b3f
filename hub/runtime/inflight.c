/* The in-flight limit's algorithm: inflight.h says what it does and why. */
#include "inflight.h"

#include <stdlib.h>
#include <string.h>

/* A tool's latency at low concurrency is the mean of its first samples at the lowest
 * level of calls in flight seen (inflight.min or fewer count as one level), then a
 * moving average of weight 1/8 of the samples at that level, so one slow call does not
 * move it. A sample at a lower level than the base's starts it afresh: the first calls
 * of a fresh spoke are sent one by one, the first with nothing else in flight. */
#define SEED_SAMPLES 8
/* Fewer answers than this make no round (a limit of 2 would decide on 2). */
#define ROUND_MIN 4

static unsigned clamp_u(unsigned v, unsigned lo, unsigned hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void inflight_init(struct inflight_limit *l, const struct inflight_settings *s, unsigned max)
{
    memset(l, 0, sizeof(*l));
    l->s = *s;
    if (max < 1)
        max = 1;
    if (max > INFLIGHT_ROUND_MAX)
        max = INFLIGHT_ROUND_MAX;
    l->max = max;
    /* Two at least when the spoke takes several: a max_inflight 1 spoke's rules (a
     * missed deadline ends it) are for spokes that said so, not for a shrunk window. */
    l->min = max == 1 ? 1 : clamp_u(s->min, 2, max);
    l->limit = s->adaptive ? clamp_u(s->initial, l->min, max) : max;
}

unsigned inflight_window(const struct inflight_limit *l)
{
    return l->limit;
}

void inflight_note_bound(struct inflight_limit *l)
{
    l->bound = true;
}

/* FNV-1a of the tool's name: a fixed-size key that needs no copy of the name. */
static uint64_t name_key(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

static struct inflight_tool *tool_slot(struct inflight_limit *l, const char *name)
{
    uint64_t key = name_key(name);
    struct inflight_tool *oldest = &l->tools[0];
    for (size_t i = 0; i < INFLIGHT_TOOLS; i++) {
        struct inflight_tool *t = &l->tools[i];
        if (t->key == key)
            return t;
        if (t->key == 0 || (oldest->key != 0 && t->used < oldest->used))
            oldest = t;
    }
    memset(oldest, 0, sizeof(*oldest));
    oldest->key = key;
    return oldest;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void new_round(struct inflight_limit *l)
{
    l->n = 0;
    l->bound = false;
}

static void set_limit(struct inflight_limit *l, unsigned v)
{
    v = clamp_u(v, l->min, l->max);
    if (v > l->limit)
        l->grown++;
    else if (v < l->limit)
        l->shrunk++;
    l->limit = v;
}

static void end_round(struct inflight_limit *l)
{
    bool bound = l->bound;
    qsort(l->ratio, l->n, sizeof(l->ratio[0]), cmp_u32);
    uint32_t median = l->ratio[l->n / 2];
    new_round(l);
    if (!bound)
        return;
    uint32_t tolerance = l->s.tolerance_pct * 10; /* thousandths */
    if (median <= tolerance) {
        unsigned step = l->limit / 4;
        set_limit(l, l->limit + (step ? step : 1));
        return;
    }
    /* Shrink by how far the latency is past the tolerance, at most to half. */
    uint64_t v = (uint64_t)l->limit * tolerance / median;
    if (v < l->limit / 2)
        v = l->limit / 2;
    if (v >= l->limit)
        v = l->limit - 1;
    set_limit(l, (unsigned)v);
}

void inflight_sample(struct inflight_limit *l, const char *tool, uint64_t rtt_ns,
                     unsigned inflight_at_send)
{
    if (!l->s.adaptive || l->max <= 1)
        return;
    if (rtt_ns == 0)
        rtt_ns = 1;
    struct inflight_tool *t = tool_slot(l, tool);
    t->used = ++l->tick;
    unsigned level = inflight_at_send < l->min ? l->min : inflight_at_send;
    if (t->seeded == 0 || level < t->base_level) {
        t->base_level = level;
        t->seeded = 0;
        t->base_ns = 0;
    }
    if (level == t->base_level) {
        if (t->seeded < SEED_SAMPLES)
            t->seeded++;
        t->base_ns = t->base_ns + ((int64_t)rtt_ns - (int64_t)t->base_ns) / (int64_t)t->seeded;
    }
    if (t->base_ns == 0)
        t->base_ns = 1;
    /* The slack first: a few ms of queued sub-millisecond calls is no slowdown (and a
     * wider window lets the spoke and the hub read several frames a wake-up). */
    uint64_t slack = (uint64_t)l->s.slack_ms * 1000000ULL;
    uint64_t over = rtt_ns > slack ? rtt_ns - slack : 0;
    uint64_t r = over > t->base_ns ? over * 1000 / t->base_ns : 1000;
    l->ratio[l->n++] = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
    unsigned round = l->limit < ROUND_MIN ? ROUND_MIN : l->limit;
    if (l->n >= round || l->n >= INFLIGHT_ROUND_MAX)
        end_round(l);
}

void inflight_overload(struct inflight_limit *l)
{
    if (!l->s.adaptive || l->max <= 1)
        return;
    set_limit(l, l->limit / 2);
    new_round(l);
}
