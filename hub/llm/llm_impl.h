/* Internals shared by the LLM client's files: the back-end ops table, the request's
 * representation, and the wire format (request body, response validation, SSE).
 * Not for callers outside hub/llm/llm*.c and hub/llm/replay.c. */
#ifndef HUB_LLM_IMPL_H
#define HUB_LLM_IMPL_H

#include "llm.h"

#include <stdarg.h>

struct llm_ops {
    const char *kind; /* "http", "replay": the audit record's isolate.llm.backend */
    int (*complete)(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                    struct llm_error *e);
    void (*destroy)(struct llm *llm);
};

struct llm {
    const struct llm_ops *ops;
    void *impl;
    char *describe;
    char *model;           /* config model (may be NULL for replay) */
    char *base_url;        /* NULL for replay */
    struct llm_config cfg; /* string members point at the copies above */
};

struct llm_request {
    char *context;
    char *user;
    /* Messages as the OpenAI wire wants them, except that tool results carry a
     * "name" (for replay matching) that the body builder leaves out. */
    json_t *messages;
    json_t *tools; /* array of {"type":"function","function":{...}} */
    char *model;
    bool has_temperature;
    double temperature;
    long max_tokens; /* -1: config default */
    bool json_object;
    llm_delta_fn on_delta;
    void *delta_arg;
    const volatile sig_atomic_t *cancel;
    llm_wait_fn on_wait;
    void *wait_arg;
};

/* A growing byte buffer, always NUL-terminated once anything was added. */
struct llm_buf {
    char *p;
    size_t len, cap;
};
void llm_buf_add(struct llm_buf *b, const char *data, size_t n);
void llm_buf_reset(struct llm_buf *b);
void llm_buf_free(struct llm_buf *b);

/* Sets e->kind and a formatted message; returns -1. */
int llm_fail(struct llm_error *e, enum llm_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int llm_vfail(struct llm_error *e, enum llm_error_kind kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* A context label: 1..LLM_MAX_CONTEXT of [A-Za-z0-9_.:/@-] ('*' too when wildcard). */
bool llm_context_valid(const char *s, bool wildcard);

/* A JSON string from arbitrary bytes: invalid UTF-8 and NUL become U+FFFD. */
json_t *llm_json_text(const char *s);

/* The request body (model and defaults resolved against cfg). */
json_t *llm_wire_body(const struct llm_config *cfg, const struct llm_request *rq, bool stream);

/* Validates one answer message ({"content":..., "tool_calls":[...]}) into rs; the
 * message may use either the OpenAI shape (tool_calls[].function.{name,arguments})
 * or the flat one replay files use (tool_calls[].{name,arguments}). what prefixes
 * error messages ("answer", "stream"). */
int llm_wire_message(const json_t *msg, struct llm_response *rs, const char *what,
                     struct llm_error *e);
/* Reads an optional usage object ({"prompt_tokens":..,...}) into rs->usage. */
void llm_wire_usage(const json_t *usage, struct llm_response *rs);
/* Parses a whole non-streamed chat completion body. */
int llm_wire_parse(const char *body, size_t len, struct llm_response *rs, struct llm_error *e);
/* The message of an error body ({"error":{"message":..}}, {"error":".."}, {"message":..},
 * {"detail":..}) or the start of a plain-text body; sanitised, capped, never NULL.
 * Every occurrence of secret (the API key; may be NULL) is replaced by "[redacted]"
 * before anything is cut, so not even a piece of it survives. */
char *llm_wire_error_message(const char *body, size_t len, const char *secret);
/* A copy of s (n bytes) with every occurrence of secret replaced by "[redacted]". */
char *llm_redact(const char *s, size_t n, const char *secret, size_t *out_len);
/* Normalises a tool call's arguments (a JSON string holding an object, an object,
 * "" or null) into compact JSON text of an object; NULL and *why when invalid. */
char *llm_wire_arguments(const json_t *args, const char **why);

/* Server-sent events: an incremental parser that assembles a streamed answer. */
struct llm_sse;
struct llm_sse *llm_sse_new(size_t max_bytes, llm_delta_fn fn, void *arg, const char *secret);
void llm_sse_free(struct llm_sse *s);
/* Feeds bytes as they arrive; -1 and *e on a malformed or error event or a cancel. */
int llm_sse_feed(struct llm_sse *s, const char *data, size_t len, struct llm_error *e);
/* After the body ended: the assembled answer, or -1 when the stream was incomplete. */
int llm_sse_finish(struct llm_sse *s, struct llm_response *rs, struct llm_error *e);
/* Whether any content delta reached the callback (then a retry would repeat text). */
bool llm_sse_delivered(const struct llm_sse *s);

/* The HTTP back end (llm_http.c). */
struct llm *llm_http_open(const struct llm_config *cfg, char *err, size_t errlen);

/* One audit record for a finished call (llm_audit.c); -1 when it was not written. */
int llm_audit_call(struct llm *llm, const struct llm_request *rq, const struct llm_response *rs,
                   const struct llm_error *e, uint64_t duration_ns);

#endif
