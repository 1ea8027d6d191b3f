#include "refusalbudget.h"

#include "lib/audit.h"
#include "log.h"
#include "netproxy/audit/audit.h"
#include "netproxy/netproxy.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#define NS_PER_S 1000000000ull

void refusal_budget_init(struct refusal_budget *b, unsigned record_rate, unsigned record_burst,
                         unsigned conn_rate, unsigned conn_burst)
{
    memset(b, 0, sizeof(*b));
    uint64_t now = now_mono_ns();
    b->records_on = record_rate > 0;
    b->conns_on = conn_rate > 0;
    tb_init(&b->records, record_burst ? record_burst : 1, record_rate, now);
    tb_init(&b->conns, conn_burst ? conn_burst : 1, conn_rate, now);
}

/* Under px->lock: one more refusal past the budget, for the summary. */
static void count(struct refusal_budget *b, const char *dst, const char *reason, bool reset)
{
    uint64_t now = now_real_ns();
    if (!b->limited) {
        b->limited = true;
        b->start_real_ns = now;
        b->summary_mono_ns = now_mono_ns();
        str_copy(b->first, dst, sizeof(b->first));
        b->first_reason = reason;
    }
    if (reset)
        b->reset++;
    else
        b->unrecorded++;
    b->end_real_ns = now;
    str_copy(b->last, dst, sizeof(b->last));
    b->last_reason = reason;
}

bool refusal_budget_record(struct proxy *px, struct spoke *s, const char *dst, const char *reason)
{
    struct refusal_budget *b = &s->budget;
    if (!b->records_on)
        return true;
    pthread_mutex_lock(&px->lock);
    bool ok = tb_take(&b->records, 1, now_mono_ns());
    if (!ok)
        count(b, dst, reason, false);
    pthread_mutex_unlock(&px->lock);
    return ok;
}

bool refusal_budget_connection(struct proxy *px, struct spoke *s, const char *dst)
{
    struct refusal_budget *b = &s->budget;
    if (!b->conns_on)
        return true;
    pthread_mutex_lock(&px->lock);
    bool ok = tb_take(&b->conns, 1, now_mono_ns());
    if (!ok)
        count(b, dst, "connection-rate-limited", true);
    pthread_mutex_unlock(&px->lock);
    return ok;
}

static void put_time(json_t *rec, const char *key, uint64_t real_ns)
{
    char ts[40];
    format_iso8601(real_ns, ts, sizeof(ts));
    audit_set_str(rec, key, ts);
}

static void write_summary(struct proxy *px, const struct spoke *s, const struct refusal_budget *b)
{
    char msg[900];
    snprintf(msg, sizeof(msg),
             "spoke %s went past its budget of refusal records or new connections: %llu "
             "refusals were not recorded one by one and %llu connections were reset unread, "
             "from %s (%s) to %s (%s)",
             s->name, (unsigned long long)b->unrecorded, (unsigned long long)b->reset, b->first,
             b->first_reason, b->last, b->last_reason);
    json_t *rec = json_object();
    char id[33];
    audit_new_id(id);
    audit_set_str(rec, "event.kind", "event");
    audit_set(rec, "event.category", json_pack("[s]", "network"));
    audit_set(rec, "event.type", json_pack("[s,s]", "connection", "denied"));
    audit_set_str(rec, "event.action", "refusal-summary");
    audit_set_str(rec, "event.id", id);
    audit_set_str(rec, "event.module", "netproxy");
    audit_set_str(rec, "event.outcome", "failure");
    audit_set_str(rec, "event.reason", "refusal-budget");
    put_time(rec, "event.start", b->start_real_ns);
    put_time(rec, "event.end", b->end_real_ns);
    audit_set_str(rec, "isolate.spoke", s->name);
    if (s->user)
        audit_set_str(rec, "isolate.user", s->user);
    audit_set_str(rec, "rule.ruleset", s->name);
    audit_set_int(rec, "isolate.refusals.unrecorded", (int64_t)b->unrecorded);
    audit_set_int(rec, "isolate.refusals.reset", (int64_t)b->reset);
    audit_set(rec, "isolate.refusals.first.destination",
              audit_string(b->first, strlen(b->first), REFUSAL_DST_MAX));
    audit_set_str(rec, "isolate.refusals.first.reason", b->first_reason);
    audit_set(rec, "isolate.refusals.last.destination",
              audit_string(b->last, strlen(b->last), REFUSAL_DST_MAX));
    audit_set_str(rec, "isolate.refusals.last.reason", b->last_reason);
    audit_set(rec, "message", audit_string(msg, strlen(msg), 1024));
    if (audit_write(px->audit, rec) < 0) {
        int saved = errno;
        metrics_audit_failure(px->metrics);
        log_warnx("audit: cannot write the refusal-summary record to %s: %s", audit_path(px->audit),
                  strerror(saved));
    }
}

void refusal_budget_flush(struct proxy *px, struct spoke *s, bool force)
{
    struct refusal_budget *b = &s->budget, copy;
    uint64_t now = now_mono_ns();
    bool write = false;
    pthread_mutex_lock(&px->lock);
    if (b->limited && (b->unrecorded || b->reset)) {
        /* Taking nothing refills the buckets up to now. */
        tb_take(&b->records, 0, now);
        tb_take(&b->conns, 0, now);
        bool over = (b->records_on && b->records.tokens < b->records.burst / 2) ||
                    (b->conns_on && b->conns.tokens < b->conns.burst / 2);
        bool long_burst = now - b->summary_mono_ns >= REFUSAL_SUMMARY_INTERVAL_S * NS_PER_S;
        if (force || !over || long_burst) {
            write = true;
            copy = *b;
            /* The next refusal past the budget starts the next summary's count. */
            b->limited = false;
            b->unrecorded = b->reset = 0;
        }
    }
    pthread_mutex_unlock(&px->lock);
    if (write)
        write_summary(px, s, &copy);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy *px = arg;
    for (struct spoke *s = px->spokes; s; s = s->next)
        refusal_budget_flush(px, s, false);
}

struct event *refusal_budget_timer_new(struct proxy *px)
{
    struct event *ev = event_new(px->base, -1, EV_PERSIST, on_tick, px);
    struct timeval tv = {1, 0};
    if (ev && event_add(ev, &tv) < 0) {
        event_free(ev);
        ev = NULL;
    }
    return ev;
}
