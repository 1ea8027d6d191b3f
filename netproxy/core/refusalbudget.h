/* Each spoke's budget for refusal records and for new connections (issue 34, finding 8).
 * One hostile spoke that opens refused connections as fast as it can would otherwise
 * write a record per attempt, fill the disk and drown every other spoke's records. Two
 * token buckets per spoke: one per refusal record written (connection decisions and
 * the resolver's refusals), one per connection accepted. Past either, the refusal is
 * counted instead of written, or the connection is reset unread, and one summary record
 * per burst says how many, between which times, the first and the last destination
 * (event.action "refusal-summary"), as the resolver's own query budget does. A burst
 * ends once both buckets are half full again; a long one is summarised every
 * REFUSAL_SUMMARY_INTERVAL_S as well, so that a sustained flood is never silent for
 * long. A rate of 0 turns a budget off. */
#ifndef NETPROXY_REFUSALBUDGET_H
#define NETPROXY_REFUSALBUDGET_H

#include "tokenbucket.h"

#include <stdbool.h>
#include <stdint.h>

struct proxy;
struct spoke;
struct event;

#define REFUSAL_SUMMARY_INTERVAL_S 10
#define REFUSAL_DST_MAX 272 /* a host name, a port and brackets */

struct refusal_budget {
    struct token_bucket records, conns;
    bool records_on, conns_on;
    /* The burst being counted (under px->lock). */
    bool limited;
    uint64_t unrecorded, reset;
    uint64_t start_real_ns, end_real_ns, summary_mono_ns;
    char first[REFUSAL_DST_MAX], last[REFUSAL_DST_MAX];
    const char *first_reason, *last_reason; /* reason codes (static strings) */
};

/* rates per second and bursts; a rate of 0 leaves that budget off. */
void refusal_budget_init(struct refusal_budget *b, unsigned record_rate, unsigned record_burst,
                         unsigned conn_rate, unsigned conn_burst);
/* Whether spoke s may write the record of this refusal (dst "host:port", reason a
 * reason code); false: it was counted for the burst's summary instead. Any thread. */
bool refusal_budget_record(struct proxy *px, struct spoke *s, const char *dst, const char *reason);
/* Whether spoke s may take one more connection; false: counted, the caller resets it. */
bool refusal_budget_connection(struct proxy *px, struct spoke *s, const char *dst);
/* Writes the summary of s's burst once it has ended or lasted an interval (force: now,
 * whatever there is to say: the spoke is going away). Any thread. */
void refusal_budget_flush(struct proxy *px, struct spoke *s, bool force);
/* Main thread: a timer that flushes every spoke's burst each second (NULL on failure). */
struct event *refusal_budget_timer_new(struct proxy *px);

#endif
