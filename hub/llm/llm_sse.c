/* Streamed answers: server-sent events ("data: {chunk}\n\n" ... "data: [DONE]") parsed
 * incrementally, whatever way the bytes are split, and assembled into one answer.
 *
 * Content deltas go to the caller's callback as they arrive. Tool calls arrive in
 * pieces keyed by "index": the id and name usually in the first piece, the arguments
 * as string fragments to concatenate. Quirks accepted: a missing index (one call at
 * a time, or a new id starts a new call), the full name repeated in every piece,
 * arguments sent whole as an object, usage in a last chunk with no choices or in
 * the chunk with finish_reason, no usage at all, no [DONE] after a finish_reason.
 * The assembled message goes through the same validation as a non-streamed one. */
#include "llm_impl.h"

#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVENT_TYPE_MAX 32

struct call_acc {
    bool used;
    struct llm_buf id;
    struct llm_buf name;
    struct llm_buf args;
    json_t *args_obj; /* arguments sent whole as an object */
};

struct llm_sse {
    size_t max_bytes;
    const char *secret; /* redacted from error events */
    llm_delta_fn fn;
    void *arg;
    struct llm_buf line;
    bool after_cr; /* a '\r' ended the last line: a following '\n' belongs to it */
    struct llm_buf data;
    bool have_data;
    char event[EVENT_TYPE_MAX + 1];
    unsigned events;
    bool done;
    bool failed;
    bool delivered;
    struct llm_buf content;
    bool has_content;
    struct call_acc calls[LLM_MAX_TOOL_CALLS];
    int last_call;
    char *finish_reason;
    char *model;
    json_t *usage;
};

struct llm_sse *llm_sse_new(size_t max_bytes, llm_delta_fn fn, void *arg, const char *secret)
{
    struct llm_sse *s = xcalloc(1, sizeof(*s));
    s->secret = secret;
    s->max_bytes = max_bytes;
    s->fn = fn;
    s->arg = arg;
    s->last_call = -1;
    return s;
}

void llm_sse_free(struct llm_sse *s)
{
    if (!s)
        return;
    llm_buf_free(&s->line);
    llm_buf_free(&s->data);
    llm_buf_free(&s->content);
    for (size_t i = 0; i < LLM_MAX_TOOL_CALLS; i++) {
        llm_buf_free(&s->calls[i].id);
        llm_buf_free(&s->calls[i].name);
        llm_buf_free(&s->calls[i].args);
        json_decref(s->calls[i].args_obj);
    }
    free(s->finish_reason);
    free(s->model);
    json_decref(s->usage);
    free(s);
}

bool llm_sse_delivered(const struct llm_sse *s)
{
    return s->delivered;
}

static int sse_fail(struct llm_sse *s, struct llm_error *e, enum llm_error_kind kind,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int sse_fail(struct llm_sse *s, struct llm_error *e, enum llm_error_kind kind,
                    const char *fmt, ...)
{
    s->failed = true;
    va_list ap;
    va_start(ap, fmt);
    llm_vfail(e, kind, fmt, ap);
    va_end(ap);
    return -1;
}

static int tool_delta(struct llm_sse *s, const json_t *tc, size_t pos, struct llm_error *e)
{
    if (!json_is_object(tc)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED,
                        "stream: event %u: tool_calls[%zu] must be an object", s->events, pos);
    }
    json_t *index = json_object_get(tc, "index");
    json_t *id = json_object_get(tc, "id");
    const char *idstr = json_is_string(id) && json_string_length(id) ? json_string_value(id) : NULL;
    int slot;
    if (index && !json_is_null(index)) {
        if (!json_is_integer(index) || json_integer_value(index) < 0 ||
            json_integer_value(index) >= LLM_MAX_TOOL_CALLS) {
            return sse_fail(s, e, LLM_ERR_MALFORMED,
                            "stream: event %u: tool call index must be an integer from 0 to %d",
                            s->events, LLM_MAX_TOOL_CALLS - 1);
        }
        slot = (int)json_integer_value(index);
    } else if (s->last_call < 0 || (idstr && s->calls[s->last_call].id.len &&
                                    strcmp(s->calls[s->last_call].id.p, idstr) != 0)) {
        slot = s->last_call + 1; /* no index: a new id starts the next call */
        if (slot >= LLM_MAX_TOOL_CALLS) {
            return sse_fail(s, e, LLM_ERR_MALFORMED, "stream: more than %d tool calls",
                            LLM_MAX_TOOL_CALLS);
        }
    } else {
        slot = s->last_call;
    }
    struct call_acc *c = &s->calls[slot];
    c->used = true;
    s->last_call = slot;
    if (idstr && c->id.len == 0)
        llm_buf_add(&c->id, idstr, strlen(idstr));
    json_t *fn = json_object_get(tc, "function");
    if (fn && !json_is_object(fn)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED,
                        "stream: event %u: tool call function must be an object", s->events);
    }
    json_t *name = json_object_get(fn, "name");
    if (json_is_string(name) && json_string_length(name) > 0) {
        const char *n = json_string_value(name);
        /* Some servers repeat the whole name in every piece; others split it. */
        if (c->name.len == 0 || strcmp(c->name.p, n) != 0)
            llm_buf_add(&c->name, n, json_string_length(name));
        if (c->name.len > LLM_MAX_NAME) {
            return sse_fail(s, e, LLM_ERR_MALFORMED,
                            "stream: tool call %d: name longer than %d bytes", slot, LLM_MAX_NAME);
        }
    }
    json_t *args = json_object_get(fn, "arguments");
    if (json_is_string(args)) {
        llm_buf_add(&c->args, json_string_value(args), json_string_length(args));
    } else if (json_is_object(args)) {
        json_decref(c->args_obj);
        c->args_obj = json_incref(args);
    } else if (args && !json_is_null(args)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED,
                        "stream: event %u: tool call arguments must be a string or an object",
                        s->events);
    }
    return 0;
}

static void keep_string(char **dst, const json_t *v, size_t max)
{
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max)
        return;
    for (const char *p = json_string_value(v); *p; p++)
        if ((unsigned char)*p < 0x20)
            return;
    free(*dst);
    *dst = xstrdup(json_string_value(v));
}

static int chunk(struct llm_sse *s, json_t *root, struct llm_error *e)
{
    json_t *err = json_object_get(root, "error");
    if (err) {
        char *text = json_dumps(root, JSON_COMPACT);
        char *why = llm_wire_error_message(text, text ? strlen(text) : 0, s->secret);
        sse_fail(s, e, LLM_ERR_SERVER, "the server reported an error in the middle of the stream");
        str_copy(e->detail, why, sizeof(e->detail));
        free(why);
        free(text);
        return -1;
    }
    if (!json_is_object(root)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED, "stream: event %u is not a JSON object",
                        s->events);
    }
    if (!s->model)
        keep_string(&s->model, json_object_get(root, "model"), 256);
    json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage)) {
        json_decref(s->usage);
        s->usage = json_incref(usage);
    }
    json_t *choices = json_object_get(root, "choices");
    if (!choices || json_is_null(choices))
        return 0;
    if (!json_is_array(choices)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED, "stream: event %u: \"choices\" must be an array",
                        s->events);
    }
    if (json_array_size(choices) == 0)
        return 0; /* the usage-only chunk of stream_options.include_usage */
    json_t *choice = json_array_get(choices, 0);
    if (!json_is_object(choice)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED, "stream: event %u: choices[0] must be an object",
                        s->events);
    }
    keep_string(&s->finish_reason, json_object_get(choice, "finish_reason"), 64);
    json_t *delta = json_object_get(choice, "delta");
    if (!delta || json_is_null(delta))
        return 0;
    if (!json_is_object(delta)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED, "stream: event %u: \"delta\" must be an object",
                        s->events);
    }
    json_t *content = json_object_get(delta, "content");
    if (json_is_string(content)) {
        s->has_content = true;
        size_t n = json_string_length(content);
        if (n > 0) {
            llm_buf_add(&s->content, json_string_value(content), n);
            if (s->fn) {
                s->delivered = true;
                if (s->fn(s->arg, json_string_value(content), n) != 0)
                    return sse_fail(s, e, LLM_ERR_CANCELLED, "cancelled while streaming");
            }
        }
    } else if (content && !json_is_null(content)) {
        return sse_fail(s, e, LLM_ERR_MALFORMED,
                        "stream: event %u: delta.content must be a string or null", s->events);
    }
    json_t *calls = json_object_get(delta, "tool_calls");
    if (calls && !json_is_null(calls)) {
        if (!json_is_array(calls)) {
            return sse_fail(s, e, LLM_ERR_MALFORMED,
                            "stream: event %u: delta.tool_calls must be an array", s->events);
        }
        size_t i;
        json_t *tc;
        json_array_foreach(calls, i, tc)
        {
            if (tool_delta(s, tc, i, e) < 0)
                return -1;
        }
    }
    return 0;
}

static int dispatch(struct llm_sse *s, struct llm_error *e)
{
    if (!s->have_data) {
        s->event[0] = '\0';
        return 0;
    }
    s->have_data = false;
    s->events++;
    bool error_event = strcmp(s->event, "error") == 0;
    s->event[0] = '\0';
    if (strcmp(s->data.p, "[DONE]") == 0) {
        s->done = true;
        llm_buf_reset(&s->data);
        return 0;
    }
    if (s->done)
        return 0; /* nothing counts after [DONE] */
    json_error_t je;
    json_t *root = json_loadb(s->data.p, s->data.len, JSON_REJECT_DUPLICATES, &je);
    llm_buf_reset(&s->data);
    if (!root) {
        if (error_event)
            return sse_fail(s, e, LLM_ERR_SERVER, "the server sent an error event in the stream");
        return sse_fail(s, e, LLM_ERR_MALFORMED, "stream: event %u is not valid JSON (%s)",
                        s->events, je.text);
    }
    if (error_event && !json_object_get(root, "error")) {
        json_t *wrapped = json_pack("{s:O}", "error", root);
        json_decref(root);
        root = wrapped;
    }
    int rc = chunk(s, root, e);
    json_decref(root);
    return rc;
}

static int field(struct llm_sse *s, const char *line, size_t n, struct llm_error *e)
{
    if (n == 0)
        return dispatch(s, e);
    if (line[0] == ':')
        return 0; /* comment / keep-alive */
    const char *colon = memchr(line, ':', n);
    size_t name_len = colon ? (size_t)(colon - line) : n;
    const char *value = colon ? colon + 1 : line + n;
    size_t value_len = colon ? n - name_len - 1 : 0;
    if (value_len > 0 && value[0] == ' ') {
        value++;
        value_len--;
    }
    if (name_len == 4 && memcmp(line, "data", 4) == 0) {
        if (s->have_data)
            llm_buf_add(&s->data, "\n", 1);
        llm_buf_add(&s->data, value, value_len);
        s->have_data = true;
        if (s->data.len > s->max_bytes)
            return sse_fail(s, e, LLM_ERR_TOO_LARGE, "stream: an event exceeds the size cap");
    } else if (name_len == 5 && memcmp(line, "event", 5) == 0) {
        size_t k = value_len < EVENT_TYPE_MAX ? value_len : EVENT_TYPE_MAX;
        memcpy(s->event, value, k);
        s->event[k] = '\0';
    }
    return 0; /* id:, retry: and unknown fields do not matter here */
}

int llm_sse_feed(struct llm_sse *s, const char *data, size_t len, struct llm_error *e)
{
    if (s->failed)
        return -1;
    size_t i = 0;
    while (i < len) {
        if (s->after_cr) {
            s->after_cr = false;
            if (data[i] == '\n') {
                i++;
                continue;
            }
        }
        size_t k = i;
        while (k < len && data[k] != '\n' && data[k] != '\r')
            k++;
        if (s->line.len + (k - i) > s->max_bytes)
            return sse_fail(s, e, LLM_ERR_TOO_LARGE, "stream: an event line exceeds the size cap");
        llm_buf_add(&s->line, data + i, k - i);
        if (k == len)
            break;
        s->after_cr = data[k] == '\r';
        i = k + 1;
        int rc = field(s, s->line.p ? s->line.p : "", s->line.len, e);
        llm_buf_reset(&s->line);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int llm_sse_finish(struct llm_sse *s, struct llm_response *rs, struct llm_error *e)
{
    if (s->failed)
        return -1;
    /* A last line or event without its terminating newline still counts. */
    if (s->line.len > 0) {
        int rc = field(s, s->line.p, s->line.len, e);
        llm_buf_reset(&s->line);
        if (rc < 0)
            return -1;
    }
    if (dispatch(s, e) < 0)
        return -1;
    if (!s->done && !s->finish_reason)
        return llm_fail(e, LLM_ERR_MALFORMED,
                        "stream: it ended after %u events without [DONE] or a finish_reason: "
                        "the answer is incomplete",
                        s->events);

    json_t *content = s->has_content
                          ? json_stringn(s->content.p ? s->content.p : "", s->content.len)
                          : json_null();
    if (!content)
        return llm_fail(e, LLM_ERR_MALFORMED, "stream: the content is not valid UTF-8");
    json_t *msg = json_object();
    json_object_set_new(msg, "content", content);
    json_t *calls = json_array();
    for (size_t i = 0; i < LLM_MAX_TOOL_CALLS; i++) {
        struct call_acc *c = &s->calls[i];
        if (!c->used)
            continue;
        json_t *fn = json_object();
        if (c->name.len)
            json_object_set_new(fn, "name", json_stringn(c->name.p, c->name.len));
        if (c->args_obj)
            json_object_set(fn, "arguments", c->args_obj);
        else
            json_object_set_new(fn, "arguments",
                                json_stringn(c->args.p ? c->args.p : "", c->args.len));
        json_t *call = json_object();
        if (c->id.len)
            json_object_set_new(call, "id", json_stringn(c->id.p, c->id.len));
        json_object_set_new(call, "function", fn);
        json_array_append_new(calls, call);
    }
    json_object_set_new(msg, "tool_calls", calls);
    if (s->finish_reason) /* first: cut arguments are then told from malformed ones */
        rs->finish_reason = xstrdup(s->finish_reason);
    int rc = llm_wire_message(msg, rs, "stream", e);
    json_decref(msg);
    if (rc < 0)
        return -1;
    if (s->model)
        rs->model = xstrdup(s->model);
    llm_wire_usage(s->usage, rs);
    return 0;
}
