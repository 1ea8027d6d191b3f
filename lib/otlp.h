/* OpenTelemetry traces over OTLP/HTTP (JSON): each tool call the hub ends is a span
 * (its trace.id and span.id as in the audit, lib/traceparent.h), and so are a spoke's
 * start and each question, under their call (haudit_child_span), exported to
 * $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or $OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"
 * (the OpenTelemetry SDKs' variables), by a thread of its own in batches (up to
 * OTLP_BATCH spans, at least once a second). A call never waits for it: a span that
 * finds the queue (OTLP_QUEUE_MAX) full is dropped and counted, and so are the spans
 * of a batch the collector did not take; the count is said when the hub ends, which
 * waits for the last batch at most OTLP_FLUSH_S seconds. */
#ifndef HUB_OTLP_H
#define HUB_OTLP_H

#include <stdbool.h>
#include <stdint.h>

#define OTLP_QUEUE_MAX 2048
#define OTLP_BATCH 256
#define OTLP_FLUSH_S 2

struct otlp;

struct otlp_span {
    const char *trace_id, *span_id, *parent_id; /* parent_id "" or NULL: a root span */
    const char *name;
    uint64_t start_unix_ns, end_unix_ns;
    bool error;
    const char *message; /* the error, or NULL */
    const char *user, *app, *tool, *call_id, *caller;
};

/* NULL when no endpoint is configured (nothing is exported). */
struct otlp *otlp_from_env(void);
/* Queues the span (copied); never blocks. */
void otlp_span(struct otlp *o, const struct otlp_span *s);
uint64_t otlp_dropped(struct otlp *o);
/* Exports what is queued (for up to OTLP_FLUSH_S seconds) and stops. */
void otlp_free(struct otlp *o);

#endif
