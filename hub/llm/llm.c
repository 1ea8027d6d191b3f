/* The LLM client's front: configuration, request building, the back-end dispatch and
 * the per-call wrapper (timing, audit). The wire format is in llm_wire.c, HTTP in
 * llm_http.c, streaming in llm_sse.c, replay in replay.c. */
#include "llm_impl.h"
#include "replay.h"

#include "audit.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [LLM_OK] = "ok",
    [LLM_ERR_CONFIG] = "config",
    [LLM_ERR_CONNECT] = "connect",
    [LLM_ERR_TIMEOUT] = "timeout",
    [LLM_ERR_AUTH] = "auth",
    [LLM_ERR_NOT_FOUND] = "not-found",
    [LLM_ERR_BAD_REQUEST] = "bad-request",
    [LLM_ERR_RATE_LIMIT] = "rate-limit",
    [LLM_ERR_SERVER] = "server-error",
    [LLM_ERR_HTTP] = "http-status",
    [LLM_ERR_MALFORMED] = "malformed",
    [LLM_ERR_TOO_LARGE] = "too-large",
    [LLM_ERR_CANCELLED] = "cancelled",
    [LLM_ERR_UNCOVERED] = "uncovered",
    [LLM_ERR_AUDIT] = "audit",
    [LLM_ERR_TRUNCATED] = "truncated",
};

const char *llm_error_kind_name(enum llm_error_kind kind)
{
    if ((size_t)kind < ARRAY_LEN(kind_names) && kind_names[kind])
        return kind_names[kind];
    return "unknown";
}

int llm_vfail(struct llm_error *e, enum llm_error_kind kind, const char *fmt, va_list ap)
{
    e->kind = kind;
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    return -1;
}

int llm_fail(struct llm_error *e, enum llm_error_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    llm_vfail(e, kind, fmt, ap);
    va_end(ap);
    return -1;
}

void llm_buf_add(struct llm_buf *b, const char *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void llm_buf_reset(struct llm_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void llm_buf_free(struct llm_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

bool llm_context_valid(const char *s, bool wildcard)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > LLM_MAX_CONTEXT)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr("_.:/@-", c) != NULL || (wildcard && c == '*');
        if (!ok || c == '\0')
            return false;
    }
    return true;
}

json_t *llm_json_text(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    /* Each invalid byte may grow to a 3-byte U+FFFD: 3n never truncates. */
    return audit_string(s, n, 3 * n + 32);
}

/* --- configuration ------------------------------------------------------------- */

void llm_config_defaults(struct llm_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->connect_timeout_ms = 10000;
    cfg->timeout_ms = 120000;
    cfg->max_attempts = 4;
    cfg->backoff_ms = 500;
    cfg->backoff_max_ms = 8000;
    cfg->retry_after_max_ms = 60000;
    cfg->max_response_bytes = 8u << 20;
    cfg->stream_usage = true;
}

bool llm_config_parse(struct jf_ctx *c, const json_t *obj, const char *where,
                      struct llm_config *cfg)
{
    static const char *const keys[] = {
        "base_url",           "model",          "api_key_env",
        "connect_timeout_ms", "timeout_ms",     "max_attempts",
        "backoff_ms",         "backoff_max_ms", "retry_after_max_ms",
        "max_response_bytes", "stream_usage",   "max_completion_tokens",
        "temperature",        "max_tokens",     NULL};
    if (!jf_object(c, obj, where, keys))
        return false;
    int64_t v;
    if (!jf_string(c, obj, where, "base_url", false, 2048, &cfg->base_url) ||
        !jf_string(c, obj, where, "model", false, 256, &cfg->model) ||
        !jf_string(c, obj, where, "api_key_env", false, 128, &cfg->api_key_env))
        return false;
    if (cfg->api_key_env) {
        for (const char *p = cfg->api_key_env; *p; p++)
            if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                  (*p >= '0' && *p <= '9') || *p == '_'))
                return jf_fail(c, where, "api_key_env",
                               "must name an environment variable ([A-Za-z0-9_]), not hold "
                               "the key itself");
    }
#define GET_INT(key, min, max, field)                                                              \
    do {                                                                                           \
        v = (int64_t)(cfg->field);                                                                 \
        if (!jf_int(c, obj, where, key, false, min, max, &v))                                      \
            return false;                                                                          \
        cfg->field = (__typeof__(cfg->field))v;                                                    \
    } while (0)
    GET_INT("connect_timeout_ms", 1, 600000, connect_timeout_ms);
    GET_INT("timeout_ms", 1, 3600000, timeout_ms);
    GET_INT("max_attempts", 1, 10, max_attempts);
    GET_INT("backoff_ms", 1, 600000, backoff_ms);
    GET_INT("backoff_max_ms", 1, 600000, backoff_max_ms);
    GET_INT("retry_after_max_ms", 0, 3600000, retry_after_max_ms);
    GET_INT("max_response_bytes", 1024, 256 << 20, max_response_bytes);
    GET_INT("max_tokens", 1, 10000000, max_tokens);
#undef GET_INT
    if (!jf_bool(c, obj, where, "stream_usage", false, &cfg->stream_usage) ||
        !jf_bool(c, obj, where, "max_completion_tokens", false, &cfg->max_completion_tokens))
        return false;
    json_t *t = json_object_get(obj, "temperature");
    if (t) {
        if (!json_is_number(t) || json_number_value(t) < 0 || json_number_value(t) > 2)
            return jf_fail(c, where, "temperature", "must be a number from 0 to 2");
        cfg->has_temperature = true;
        cfg->temperature = json_number_value(t);
    }
    return true;
}

/* --- requests ------------------------------------------------------------------ */

struct llm_request *llm_request_new(const char *context)
{
    struct llm_request *rq = xcalloc(1, sizeof(*rq));
    rq->context = xstrdup(context ? context : "");
    rq->messages = json_array();
    rq->tools = json_array();
    rq->max_tokens = -1;
    return rq;
}

void llm_request_free(struct llm_request *rq)
{
    if (!rq)
        return;
    free(rq->context);
    free(rq->user);
    free(rq->model);
    json_decref(rq->messages);
    json_decref(rq->tools);
    free(rq);
}

static void add_message(struct llm_request *rq, const char *role, const char *text)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "content", llm_json_text(text));
    json_array_append_new(rq->messages, m);
}

void llm_request_system(struct llm_request *rq, const char *text)
{
    add_message(rq, "system", text);
}

void llm_request_user(struct llm_request *rq, const char *text)
{
    add_message(rq, "user", text);
}

void llm_request_assistant_text(struct llm_request *rq, const char *text)
{
    add_message(rq, "assistant", text);
}

void llm_request_assistant(struct llm_request *rq, const struct llm_response *rs)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string("assistant"));
    json_object_set_new(m, "content", rs->content ? llm_json_text(rs->content) : json_null());
    if (rs->n_tool_calls > 0) {
        json_t *calls = json_array();
        for (size_t i = 0; i < rs->n_tool_calls; i++) {
            const struct llm_tool_call *tc = &rs->tool_calls[i];
            json_t *fn = json_object();
            json_object_set_new(fn, "name", llm_json_text(tc->name));
            json_object_set_new(fn, "arguments", llm_json_text(tc->arguments));
            json_t *call = json_object();
            json_object_set_new(call, "id", llm_json_text(tc->id));
            json_object_set_new(call, "type", json_string("function"));
            json_object_set_new(call, "function", fn);
            json_array_append_new(calls, call);
        }
        json_object_set_new(m, "tool_calls", calls);
    }
    json_array_append_new(rq->messages, m);
}

void llm_request_tool_result(struct llm_request *rq, const char *call_id, const char *name,
                             const char *text)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string("tool"));
    json_object_set_new(m, "tool_call_id", llm_json_text(call_id));
    if (name)
        json_object_set_new(m, "name", llm_json_text(name));
    json_object_set_new(m, "content", llm_json_text(text));
    json_array_append_new(rq->messages, m);
}

static bool tool_name_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > LLM_TOOL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

int llm_request_tool(struct llm_request *rq, const char *name, const char *description,
                     const json_t *parameters, char *err, size_t errlen)
{
    if (!tool_name_valid(name)) {
        snprintf(err, errlen,
                 "tool name \"%.80s\" is not allowed: OpenAI-compatible servers take 1 to %d "
                 "characters of A-Z a-z 0-9 _ - (map \"app.tool\" to e.g. \"app__tool\")",
                 name ? name : "", LLM_TOOL_NAME_MAX);
        return -1;
    }
    if (parameters && !json_is_object(parameters)) {
        snprintf(err, errlen, "tool %s: parameters must be a JSON Schema object", name);
        return -1;
    }
    json_t *fn = json_object();
    json_object_set_new(fn, "name", json_string(name));
    if (description)
        json_object_set_new(fn, "description", llm_json_text(description));
    json_t *params = parameters ? json_deep_copy(parameters)
                                : json_pack("{s:s,s:{}}", "type", "object", "properties");
    if (!params) {
        json_decref(fn);
        snprintf(err, errlen, "tool %s: out of memory copying its parameters", name);
        return -1;
    }
    json_object_set_new(fn, "parameters", params);
    json_t *tool = json_object();
    json_object_set_new(tool, "type", json_string("function"));
    json_object_set_new(tool, "function", fn);
    json_array_append_new(rq->tools, tool);
    return 0;
}

void llm_request_set_model(struct llm_request *rq, const char *model)
{
    free(rq->model);
    rq->model = model ? xstrdup(model) : NULL;
}

void llm_request_set_temperature(struct llm_request *rq, double t)
{
    rq->has_temperature = true;
    rq->temperature = t;
}

void llm_request_set_max_tokens(struct llm_request *rq, long n)
{
    rq->max_tokens = n;
}

void llm_request_set_json_object(struct llm_request *rq, bool on)
{
    rq->json_object = on;
}

void llm_request_set_stream(struct llm_request *rq, llm_delta_fn fn, void *arg)
{
    rq->on_delta = fn;
    rq->delta_arg = arg;
}

void llm_request_set_cancel(struct llm_request *rq, const volatile sig_atomic_t *flag)
{
    rq->cancel = flag;
}

void llm_request_set_wait_notice(struct llm_request *rq, llm_wait_fn fn, void *arg)
{
    rq->on_wait = fn;
    rq->wait_arg = arg;
}

void llm_request_set_user(struct llm_request *rq, const char *user)
{
    free(rq->user);
    rq->user = user ? xstrdup(user) : NULL;
}

const char *llm_request_context(const struct llm_request *rq)
{
    return rq->context;
}

size_t llm_request_message_count(const struct llm_request *rq)
{
    return json_array_size(rq->messages);
}

/* --- responses ----------------------------------------------------------------- */

void llm_response_free(struct llm_response *rs)
{
    if (!rs)
        return;
    free(rs->content);
    for (size_t i = 0; i < rs->n_tool_calls; i++) {
        free(rs->tool_calls[i].id);
        free(rs->tool_calls[i].name);
        free(rs->tool_calls[i].arguments);
    }
    free(rs->tool_calls);
    free(rs->finish_reason);
    free(rs->model);
    memset(rs, 0, sizeof(*rs));
}

json_t *llm_tool_call_args(const struct llm_tool_call *tc)
{
    json_t *v = tc->arguments ? json_loads(tc->arguments, 0, NULL) : NULL;
    if (!json_is_object(v)) {
        json_decref(v);
        return json_object();
    }
    return v;
}

/* --- the client ---------------------------------------------------------------- */

struct llm *llm_open(const char *spec, const struct llm_config *cfg, char *err, size_t errlen)
{
    struct llm_config c = *cfg;
    if (spec && strncmp(spec, "replay:", 7) == 0) {
        if (spec[7] == '\0') {
            snprintf(err, errlen, "--llm replay:FILE needs a file name");
            return NULL;
        }
        return llm_replay_open(spec + 7, &c, err, errlen);
    }
    if (spec && *spec)
        c.base_url = spec;
    if (!c.base_url || !*c.base_url) {
        snprintf(err, errlen, "no LLM configured.\n%s", llm_setup_hint());
        return NULL;
    }
    /* Zero values mean "default", so a partly filled config still works. */
    struct llm_config d;
    llm_config_defaults(&d);
    if (c.connect_timeout_ms <= 0)
        c.connect_timeout_ms = d.connect_timeout_ms;
    if (c.timeout_ms <= 0)
        c.timeout_ms = d.timeout_ms;
    if (c.max_attempts == 0)
        c.max_attempts = d.max_attempts;
    if (c.max_attempts > 10)
        c.max_attempts = 10;
    if (c.backoff_ms <= 0)
        c.backoff_ms = d.backoff_ms;
    if (c.backoff_max_ms < c.backoff_ms)
        c.backoff_max_ms = c.backoff_ms;
    if (c.max_response_bytes == 0)
        c.max_response_bytes = d.max_response_bytes;
    return llm_http_open(&c, err, errlen);
}

void llm_close(struct llm *llm)
{
    if (!llm)
        return;
    if (llm->ops && llm->ops->destroy)
        llm->ops->destroy(llm);
    free(llm->describe);
    free(llm->model);
    free(llm->base_url);
    free(llm);
}

const char *llm_describe(const struct llm *llm)
{
    return llm->describe;
}

const char *llm_setup_hint(void)
{
    return "  point the hub at an OpenAI-compatible server: --llm http://127.0.0.1:11434/v1 "
           "(ollama) or :8080/v1 (llama.cpp) with --model NAME (and --api-key-env VAR, the "
           "variable that holds the key, for OpenAI), or set llm.base_url and llm.model in "
           "hub.json;\n"
           "  or run offline with recorded answers: --llm replay:FILE (make demo does this).";
}

int llm_complete(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                 struct llm_error *e)
{
    memset(rs, 0, sizeof(*rs));
    memset(e, 0, sizeof(*e));
    if (!llm_context_valid(rq->context, false))
        return llm_fail(e, LLM_ERR_CONFIG,
                        "request context label \"%.40s\" must be 1 to %d characters of "
                        "A-Z a-z 0-9 _ . : / @ -",
                        rq->context, LLM_MAX_CONTEXT);
    if (json_array_size(rq->messages) == 0)
        return llm_fail(e, LLM_ERR_CONFIG, "a request needs at least one message");
    uint64_t t0 = now_mono_ns();
    int rc = llm->ops->complete(llm, rq, rs, e);
    uint64_t dur = now_mono_ns() - t0;
    if (rc == 0) {
        rs->duration_ns = dur;
        rs->truncated = rs->finish_reason && strcmp(rs->finish_reason, "length") == 0;
        e->kind = LLM_OK;
        e->attempts = rs->attempts;
    } else {
        llm_response_free(rs);
        if (e->kind == LLM_OK)
            e->kind = LLM_ERR_MALFORMED; /* a back end that forgot to classify */
    }
    if (llm->cfg.audit && llm_audit_call(llm, rq, rc == 0 ? rs : NULL, e, dur) < 0) {
        if (rc == 0)
            llm_response_free(rs);
        unsigned attempts = e->attempts;
        e->detail[0] = '\0';
        llm_fail(e, LLM_ERR_AUDIT,
                 "the audit record for this LLM call could not be written (%s: %s): answer "
                 "withheld rather than used unlogged",
                 audit_path(llm->cfg.audit), strerror(errno));
        e->attempts = attempts;
        return -1;
    }
    return rc;
}
