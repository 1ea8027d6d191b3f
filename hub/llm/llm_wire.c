/* The Chat Completions wire format: the request body we send and the strict, bounded
 * reading of what servers answer. Server quirks accepted on purpose:
 *   - "content": null or "" next to tool_calls (OpenAI, vLLM, llama.cpp);
 *   - tool call arguments as a JSON object instead of a string (ollama), as "" or null
 *     for a function without parameters, or double-encoded as a JSON string;
 *   - missing tool call ids (some llama.cpp versions) and missing "usage";
 *   - content as an array of {"type":"text","text":..} parts.
 * Anything else that is not a chat completion is LLM_ERR_MALFORMED. */
#include "llm_impl.h"

#include "audit.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_MESSAGE_CAP 300
#define FINISH_REASON_MAX 64
#define MODEL_MAX 256

json_t *llm_wire_body(const struct llm_config *cfg, const struct llm_request *rq, bool stream)
{
    json_t *body = json_object();
    const char *model = rq->model ? rq->model : cfg->model;
    if (model)
        json_object_set_new(body, "model", llm_json_text(model));

    json_t *msgs = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(rq->messages, i, m)
    {
        json_t *copy = json_copy(m);
        /* "name" on a tool message is ours (replay matching); servers differ on it. */
        if (strcmp(json_string_value(json_object_get(m, "role")), "tool") == 0)
            json_object_del(copy, "name");
        json_array_append_new(msgs, copy);
    }
    json_object_set_new(body, "messages", msgs);
    if (json_array_size(rq->tools) > 0)
        json_object_set(body, "tools", rq->tools);

    if (rq->has_temperature)
        json_object_set_new(body, "temperature", json_real(rq->temperature));
    else if (cfg->has_temperature)
        json_object_set_new(body, "temperature", json_real(cfg->temperature));
    long max_tokens = rq->max_tokens >= 0 ? rq->max_tokens : cfg->max_tokens;
    if (max_tokens > 0)
        json_object_set_new(body,
                            cfg->max_completion_tokens ? "max_completion_tokens" : "max_tokens",
                            json_integer(max_tokens));
    if (rq->json_object)
        json_object_set_new(body, "response_format", json_pack("{s:s}", "type", "json_object"));
    if (stream) {
        json_object_set_new(body, "stream", json_true());
        if (cfg->stream_usage)
            json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
    }
    return body;
}

/* A bounded, printable string from the answer (ids, names, finish reasons). */
static bool printable(const char *s, size_t n, size_t max)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* A tool call's name or id: printable and without spaces (an identifier that is
 * looked up and echoed, never free text). */
static bool identifier(const char *s, size_t n, size_t max)
{
    if (!printable(s, n, max))
        return false;
    return memchr(s, ' ', n) == NULL;
}

char *llm_wire_arguments(const json_t *args, const char **why)
{
    json_t *owned = NULL;
    const json_t *v = args;
    if (!v || json_is_null(v))
        return xstrdup("{}");
    /* A string holds the JSON text (the OpenAI form); models sometimes encode twice. */
    for (int depth = 0; json_is_string(v) && depth < 2; depth++) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        size_t k = 0;
        while (k < n && strchr(" \t\r\n", s[k]))
            k++;
        if (k == n) {
            json_decref(owned);
            return xstrdup("{}");
        }
        json_error_t je;
        json_t *parsed = json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
        json_decref(owned);
        owned = parsed;
        if (!parsed) {
            *why = "arguments are not valid JSON";
            return NULL;
        }
        v = parsed;
    }
    if (json_is_null(v)) {
        json_decref(owned);
        return xstrdup("{}");
    }
    if (!json_is_object(v)) {
        json_decref(owned);
        *why = "arguments must be a JSON object";
        return NULL;
    }
    char *text = json_dumps(v, JSON_COMPACT);
    json_decref(owned);
    if (!text) {
        *why = "arguments could not be encoded";
        return NULL;
    }
    return text;
}

/* content: a string, null, or an array of text parts. */
static int read_content(const json_t *c, char **out, const char *what, struct llm_error *e)
{
    *out = NULL;
    if (!c || json_is_null(c))
        return 0;
    if (json_is_string(c)) {
        *out = xstrndup(json_string_value(c), json_string_length(c));
        return 0;
    }
    if (!json_is_array(c))
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: \"content\" must be a string or null", what);
    size_t total = 0, i;
    json_t *part;
    json_array_foreach(c, i, part)
    {
        json_t *t = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(t))
            return llm_fail(e, LLM_ERR_MALFORMED,
                            "%s: content[%zu] must be an object with a \"text\" string", what, i);
        total += json_string_length(t);
    }
    char *buf = xmalloc(total + 1);
    size_t o = 0;
    json_array_foreach(c, i, part)
    {
        json_t *t = json_object_get(part, "text");
        memcpy(buf + o, json_string_value(t), json_string_length(t));
        o += json_string_length(t);
    }
    buf[o] = '\0';
    *out = buf;
    return 0;
}

static bool id_taken(const struct llm_response *rs, const char *id)
{
    for (size_t i = 0; i < rs->n_tool_calls; i++)
        if (strcmp(rs->tool_calls[i].id, id) == 0)
            return true;
    return false;
}

static int read_tool_call(const json_t *call, size_t i, struct llm_response *rs, const char *what,
                          struct llm_error *e)
{
    if (!json_is_object(call))
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: tool_calls[%zu] must be an object", what, i);
    json_t *type = json_object_get(call, "type");
    if (type && !json_is_null(type) &&
        !(json_is_string(type) && strcmp(json_string_value(type), "function") == 0))
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: tool_calls[%zu].type must be \"function\"", what,
                        i);
    /* OpenAI nests name and arguments in "function"; replay files may not. */
    const json_t *fn = json_object_get(call, "function");
    if (!fn)
        fn = call;
    else if (!json_is_object(fn))
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: tool_calls[%zu].function must be an object",
                        what, i);
    json_t *name = json_object_get(fn, "name");
    if (!json_is_string(name) ||
        !identifier(json_string_value(name), json_string_length(name), LLM_MAX_NAME))
        return llm_fail(e, LLM_ERR_MALFORMED,
                        "%s: tool_calls[%zu]: the function name must be 1 to %d printable "
                        "characters without spaces",
                        what, i, LLM_MAX_NAME);
    const char *why = NULL;
    char *args = llm_wire_arguments(json_object_get(fn, "arguments"), &why);
    if (!args && rs->finish_reason && strcmp(rs->finish_reason, "length") == 0)
        return llm_fail(e, LLM_ERR_TRUNCATED,
                        "the model hit its token limit (finish_reason \"length\") while "
                        "writing the arguments of tool_calls[%zu] (%s): they are cut off, so "
                        "the call is not run; raise llm.max_tokens (or the server's limit) or "
                        "ask for less at once",
                        i, json_string_value(name));
    if (!args)
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: tool_calls[%zu] (%s): %s", what, i,
                        json_string_value(name), why);

    json_t *id = json_object_get(call, "id");
    char *idstr;
    if (json_is_string(id) && json_string_length(id) > 0) {
        if (!identifier(json_string_value(id), json_string_length(id), LLM_MAX_NAME)) {
            free(args);
            return llm_fail(e, LLM_ERR_MALFORMED,
                            "%s: tool_calls[%zu].id must be 1 to %d printable characters "
                            "without spaces",
                            what, i, LLM_MAX_NAME);
        }
        idstr = xstrdup(json_string_value(id));
    } else if (!id || json_is_null(id) || json_is_string(id)) {
        idstr = xasprintf("call_%zu", i);
    } else {
        free(args);
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: tool_calls[%zu].id must be a string", what, i);
    }
    /* Tool results are matched to calls by id: ids must be unique in one answer. */
    if (id_taken(rs, idstr)) {
        char *uniq = xasprintf("%s_%zu", idstr, i);
        free(idstr);
        idstr = uniq;
    }
    struct llm_tool_call *tc = &rs->tool_calls[rs->n_tool_calls++];
    tc->id = idstr;
    tc->name = xstrdup(json_string_value(name));
    tc->arguments = args;
    return 0;
}

int llm_wire_message(const json_t *msg, struct llm_response *rs, const char *what,
                     struct llm_error *e)
{
    if (!json_is_object(msg))
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: the message must be a JSON object", what);
    if (read_content(json_object_get(msg, "content"), &rs->content, what, e) < 0)
        return -1;
    json_t *calls = json_object_get(msg, "tool_calls");
    if (calls && !json_is_null(calls)) {
        if (!json_is_array(calls))
            return llm_fail(e, LLM_ERR_MALFORMED, "%s: \"tool_calls\" must be an array", what);
        if (json_array_size(calls) > LLM_MAX_TOOL_CALLS)
            return llm_fail(e, LLM_ERR_MALFORMED, "%s: %zu tool calls, more than the %d allowed",
                            what, json_array_size(calls), LLM_MAX_TOOL_CALLS);
        rs->tool_calls = xcalloc(json_array_size(calls) + 1, sizeof(*rs->tool_calls));
        size_t i;
        json_t *call;
        json_array_foreach(calls, i, call)
        {
            if (read_tool_call(call, i, rs, what, e) < 0)
                return -1;
        }
    }
    /* Neither text nor a call: nothing to act on, and nothing a caller should have to
     * guess about (fuzz_replay: "content": null alone was served as an empty answer). */
    if (!rs->content && rs->n_tool_calls == 0)
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: the message has neither content nor tool calls",
                        what);
    /* An empty text next to tool calls is no text (servers differ: null or ""). */
    if (rs->content && rs->content[0] == '\0' && rs->n_tool_calls > 0) {
        free(rs->content);
        rs->content = NULL;
    }
    return 0;
}

void llm_wire_usage(const json_t *usage, struct llm_response *rs)
{
    if (!json_is_object(usage))
        return;
    static const char *const keys[] = {"prompt_tokens", "completion_tokens", "total_tokens"};
    int64_t *dst[] = {&rs->usage.prompt_tokens, &rs->usage.completion_tokens,
                      &rs->usage.total_tokens};
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        json_t *v = json_object_get(usage, keys[i]);
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
            *dst[i] = json_integer_value(v);
            rs->usage.present = true;
        }
    }
    if (rs->usage.present && rs->usage.total_tokens == 0)
        rs->usage.total_tokens = rs->usage.prompt_tokens + rs->usage.completion_tokens;
}

static int read_short_string(const json_t *v, size_t max, char **out, const char *what,
                             const char *key, struct llm_error *e)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || !printable(json_string_value(v), json_string_length(v), max))
        return llm_fail(e, LLM_ERR_MALFORMED, "%s: \"%s\" must be a short printable string", what,
                        key);
    *out = xstrdup(json_string_value(v));
    return 0;
}

int llm_wire_parse(const char *body, size_t len, struct llm_response *rs, struct llm_error *e)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return llm_fail(e, LLM_ERR_MALFORMED, "malformed answer: not a JSON object (%s at byte %d)",
                        je.text, je.position);
    int rc = -1;
    json_t *choices = json_object_get(root, "choices");
    json_t *error = json_object_get(root, "error");
    if (!choices && error) {
        char *msg = llm_wire_error_message(body, len, NULL);
        llm_fail(e, LLM_ERR_HTTP, "the server answered with an error");
        str_copy(e->detail, msg, sizeof(e->detail));
        free(msg);
        goto out;
    }
    if (!json_is_array(choices) || json_array_size(choices) == 0) {
        llm_fail(e, LLM_ERR_MALFORMED, "malformed answer: \"choices\" must be a non-empty array");
        goto out;
    }
    json_t *choice = json_array_get(choices, 0);
    if (!json_is_object(choice)) {
        llm_fail(e, LLM_ERR_MALFORMED, "malformed answer: choices[0] must be an object");
        goto out;
    }
    json_t *msg = json_object_get(choice, "message");
    if (!msg) {
        llm_fail(e, LLM_ERR_MALFORMED, "malformed answer: choices[0] has no \"message\"");
        goto out;
    }
    /* The finish reason first: it says whether cut arguments are the model's token
     * limit (LLM_ERR_TRUNCATED) or a malformed answer. */
    if (read_short_string(json_object_get(choice, "finish_reason"), FINISH_REASON_MAX,
                          &rs->finish_reason, "malformed answer: choices[0]", "finish_reason",
                          e) < 0 ||
        llm_wire_message(msg, rs, "malformed answer: choices[0].message", e) < 0 ||
        read_short_string(json_object_get(root, "model"), MODEL_MAX, &rs->model, "malformed answer",
                          "model", e) < 0)
        goto out;
    llm_wire_usage(json_object_get(root, "usage"), rs);
    rc = 0;
out:
    json_decref(root);
    return rc;
}

static char *sanitised(const char *s, size_t len)
{
    json_t *js = audit_string(s, len, ERROR_MESSAGE_CAP);
    char *out = xstrdup(json_string_value(js));
    json_decref(js);
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return out;
}

char *llm_redact(const char *s, size_t n, const char *secret, size_t *out_len)
{
    static const char mark[] = "[redacted]";
    size_t k = secret ? strlen(secret) : 0;
    struct llm_buf b = {0};
    size_t i = 0;
    while (i < n) {
        if (k > 0 && n - i >= k && memcmp(s + i, secret, k) == 0) {
            llm_buf_add(&b, mark, sizeof(mark) - 1);
            i += k;
        } else {
            llm_buf_add(&b, s + i, 1);
            i++;
        }
    }
    llm_buf_add(&b, "", 0);
    *out_len = b.len;
    return b.p;
}

char *llm_wire_error_message(const char *raw, size_t raw_len, const char *secret)
{
    if (!raw || raw_len == 0)
        return xstrdup("(empty body)");
    size_t len;
    char *body = llm_redact(raw, raw_len, secret, &len);
    json_t *root = json_loadb(body, len, 0, NULL);
    const json_t *pick = NULL;
    if (json_is_object(root)) {
        json_t *err = json_object_get(root, "error");
        if (json_is_object(err) && json_is_string(json_object_get(err, "message")))
            pick = json_object_get(err, "message");
        else if (json_is_string(err))
            pick = err;
        else if (json_is_string(json_object_get(root, "message")))
            pick = json_object_get(root, "message");
        else if (json_object_get(root, "detail"))
            pick = json_object_get(root, "detail"); /* FastAPI validation errors (vLLM) */
    }
    char *out;
    if (json_is_string(pick)) {
        out = sanitised(json_string_value(pick), json_string_length(pick));
    } else if (pick) {
        char *dump = json_dumps(pick, JSON_COMPACT);
        out = sanitised(dump ? dump : "", dump ? strlen(dump) : 0);
        free(dump);
    } else {
        out = sanitised(body, len);
    }
    json_decref(root);
    free(body);
    return out;
}
