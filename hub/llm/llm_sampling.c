/* sampling/createMessage: a spoke's own LLM context, served by the hub (llm.h). The
 * request is untrusted and checked with bounds: text messages of the user and
 * assistant roles only, a size cap, maxTokens capped, no tools. The assistant serves
 * it in its own loop (agent_sampling.c), hub serve on a thread of its own for clients
 * that sample no model themselves (serve_sampling.c). */
#include "llm_impl.h"
#include "runtime/runtime.h"
#include "tokenbucket.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLING_MAX_MESSAGES 64
#define SAMPLING_MAX_TEXT (256 * 1024)
#define APP_MAX 64

struct bucket {
    char app[APP_MAX + 1];
    struct token_bucket tb;
};

struct llm_sampling_buckets {
    struct bucket *b;
    size_t n;
};

void llm_sampling_limits_defaults(struct llm_sampling_limits *l)
{
    l->per_minute = 20;
    l->burst = 5;
    l->max_tokens = 1024;
}

int llm_sampling_limits_parse(const struct hub_config *cfg, struct llm_sampling_limits *l,
                              char *err, size_t errlen)
{
    llm_sampling_limits_defaults(l);
    if (!cfg->llm)
        return 0;
    struct jf_ctx c = {.file = cfg->file ? cfg->file : "hub.json", .err = err, .errlen = errlen};
    int64_t per_minute = -1, burst = -1, max_tokens = -1;
    if (!jf_int(&c, cfg->llm, "llm", "sampling_per_minute", false, 1, 6000, &per_minute) ||
        !jf_int(&c, cfg->llm, "llm", "sampling_burst", false, 1, 1000, &burst) ||
        !jf_int(&c, cfg->llm, "llm", "sampling_max_tokens", false, 1, 1 << 20, &max_tokens))
        return -1;
    if (per_minute >= 0)
        l->per_minute = (unsigned)per_minute;
    if (burst >= 0)
        l->burst = (unsigned)burst;
    if (max_tokens >= 0)
        l->max_tokens = (long)max_tokens;
    return 0;
}

struct llm_sampling_buckets *llm_sampling_buckets_new(void)
{
    return xcalloc(1, sizeof(struct llm_sampling_buckets));
}

void llm_sampling_buckets_free(struct llm_sampling_buckets *b)
{
    if (!b)
        return;
    free(b->b);
    free(b);
}

bool llm_sampling_take(struct llm_sampling_buckets *s, const char *app,
                       const struct llm_sampling_limits *l)
{
    struct bucket *b = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->b[i].app, app) == 0)
            b = &s->b[i];
    uint64_t now = now_mono_ns();
    if (!b) {
        s->b = xrealloc(s->b, (s->n + 1) * sizeof(*s->b));
        b = &s->b[s->n++];
        str_copy(b->app, app, sizeof(b->app));
        tb_init(&b->tb, l->burst, l->per_minute / 60.0, now);
    }
    return tb_take(&b->tb, 1, now);
}

/* The text of a content block or array of blocks; NULL when it holds anything else. */
static const char *content_text(const json_t *c, char *why, size_t whylen)
{
    if (json_is_array(c) && json_array_size(c) == 1)
        c = json_array_get(c, 0);
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *text = json_string_value(json_object_get(c, "text"));
    if (!type || strcmp(type, "text") != 0 || !text) {
        snprintf(why, whylen, "only text content is supported");
        return NULL;
    }
    return text;
}

struct llm_request *llm_sampling_request(const char *app, const json_t *p,
                                         const struct llm_sampling_limits *l, char *why,
                                         size_t whylen)
{
    const json_t *msgs = json_object_get(p, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0 ||
        json_array_size(msgs) > SAMPLING_MAX_MESSAGES) {
        snprintf(why, whylen, "messages must be an array of 1 to %d messages",
                 SAMPLING_MAX_MESSAGES);
        return NULL;
    }
    const json_t *sys = json_object_get(p, "systemPrompt");
    if (sys && !json_is_string(sys)) {
        snprintf(why, whylen, "systemPrompt must be a string");
        return NULL;
    }
    const json_t *mt = json_object_get(p, "maxTokens");
    if (mt && (!json_is_integer(mt) || json_integer_value(mt) < 1)) {
        snprintf(why, whylen, "maxTokens must be a positive integer");
        return NULL;
    }
    const json_t *temp = json_object_get(p, "temperature");
    if (temp &&
        (!json_is_number(temp) || json_number_value(temp) < 0 || json_number_value(temp) > 2)) {
        snprintf(why, whylen, "temperature must be a number from 0 to 2");
        return NULL;
    }
    char ctx[LLM_MAX_CONTEXT + 1];
    snprintf(ctx, sizeof(ctx), "spoke:%s", app);
    struct llm_request *rq = llm_request_new(ctx);
    size_t total = sys ? json_string_length(sys) : 0;
    if (sys)
        llm_request_system(rq, json_string_value(sys));
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *text = content_text(json_object_get(m, "content"), why, whylen);
        if (!text || !role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0)) {
            if (text)
                snprintf(why, whylen, "messages[%zu].role must be user or assistant", i);
            llm_request_free(rq);
            return NULL;
        }
        total += strlen(text);
        if (total > SAMPLING_MAX_TEXT) {
            snprintf(why, whylen, "the messages hold more than %d bytes", SAMPLING_MAX_TEXT);
            llm_request_free(rq);
            return NULL;
        }
        if (strcmp(role, "user") == 0)
            llm_request_user(rq, text);
        else
            llm_request_assistant_text(rq, text);
    }
    long max = l->max_tokens;
    if (mt && json_integer_value(mt) < max)
        max = (long)json_integer_value(mt);
    llm_request_set_max_tokens(rq, max);
    if (temp)
        llm_request_set_temperature(rq, json_number_value(temp));
    return rq;
}

json_t *llm_sampling_result(const struct llm_response *rs)
{
    const char *stop =
        rs->finish_reason && strcmp(rs->finish_reason, "length") == 0 ? "maxTokens" : "endTurn";
    return json_pack("{s:s,s:{s:s,s:s},s:s,s:s}", "role", "assistant", "content", "type", "text",
                     "text", rs->content ? rs->content : "", "model",
                     rs->model ? rs->model : "unknown", "stopReason", stop);
}
