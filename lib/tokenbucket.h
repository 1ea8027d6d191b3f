/* A token bucket: up to burst tokens, refilled at rate per second. Bounds what a
 * peer may send over time (a spoke's frames between calls, its noise bytes) while
 * letting a short burst through, as a fixed count per period would not. */
#ifndef ISOLATE_TOKENBUCKET_H
#define ISOLATE_TOKENBUCKET_H

#include <stdbool.h>
#include <stdint.h>

struct token_bucket {
    double tokens, burst, rate; /* rate: tokens per second */
    uint64_t last_ns;           /* monotonic time of the last refill */
};

/* Full at now_ns. */
void tb_init(struct token_bucket *b, double burst, double rate, uint64_t now_ns);
/* Refills for the time since the last call, then takes n tokens if there are that
 * many: true, or false (nothing taken) when the bucket holds fewer. */
bool tb_take(struct token_bucket *b, double n, uint64_t now_ns);

#endif
