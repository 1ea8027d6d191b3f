/* W3C Trace Context: the traceparent a client sends ("00-TRACEID-PARENTID-FLAGS", in
 * MCP a request's params._meta.traceparent) continued by the hub, so that its audit
 * records carry the client's trace (ECS trace.id, span.id). Parsed strictly: version
 * 00 exactly 55 characters, lowercase hex, ids not all zeros; anything else is ignored
 * and a new trace begins, as the specification says. */
#ifndef ISOLATE_TRACEPARENT_H
#define ISOLATE_TRACEPARENT_H

#include <stdbool.h>

#define TRACE_ID_HEX 32
#define SPAN_ID_HEX 16

struct trace_ctx {
    char trace_id[TRACE_ID_HEX + 1];
    char span_id[SPAN_ID_HEX + 1];   /* this span's */
    char parent_id[SPAN_ID_HEX + 1]; /* the span it continues, or "" */
    bool sampled;
};

/* A span continuing s (a traceparent), or starting a new trace when s is NULL or not
 * one. true when s was taken. */
bool trace_begin(struct trace_ctx *t, const char *s);
/* A child span of parent. */
void trace_child(struct trace_ctx *t, const struct trace_ctx *parent);
/* t as a traceparent to hand on (56 bytes with the NUL). */
void trace_format(const struct trace_ctx *t, char out[56]);

#endif
