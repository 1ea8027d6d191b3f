/* sampling/createMessage: a spoke's own LLM context, served by the hub.
 *
 * Each app gets the context "spoke:APP" (its conversation is whatever it sends; it
 * never sees the planner's, another app's or the user's). No tools are offered, the
 * key never leaves the hub, maxTokens is capped, every call is audited by the LLM
 * client (and the runtime's "sampling" record), and each app is rate-limited with a
 * token bucket (sampling_per_minute, sampling_burst): a spoke in a loop cannot spend
 * the user's budget. The request is untrusted and checked with bounds. */
#include "agent_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLING_MAX_MESSAGES 64
#define SAMPLING_MAX_TEXT (256 * 1024)

struct bucket {
    char app[MANIFEST_NAME_MAX + 1];
    double tokens;
    uint64_t last_ns;
};

struct sampling {
    struct agent *a;
    struct bucket *b;
    size_t n;
};

static bool take_token(struct sampling *s, const char *app)
{
    const struct agent_limits *l = &s->a->o.limits;
    struct bucket *b = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->b[i].app, app) == 0)
            b = &s->b[i];
    uint64_t now = now_mono_ns();
    if (!b) {
        s->b = xrealloc(s->b, (s->n + 1) * sizeof(*s->b));
        b = &s->b[s->n++];
        str_copy(b->app, app, sizeof(b->app));
        b->tokens = l->sampling_burst;
        b->last_ns = now;
    }
    b->tokens += (double)(now - b->last_ns) / 1e9 * l->sampling_per_minute / 60.0;
    if (b->tokens > l->sampling_burst)
        b->tokens = l->sampling_burst;
    b->last_ns = now;
    if (b->tokens < 1.0)
        return false;
    b->tokens -= 1.0;
    return true;
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

/* Builds the request from the spoke's params; NULL and why when they break the rules. */
static struct llm_request *build(struct agent *a, const struct hook_request *req, char *why,
                                 size_t whylen)
{
    const json_t *p = req->params;
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
    snprintf(ctx, sizeof(ctx), "spoke:%s", req->app);
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
    long max = a->o.limits.sampling_max_tokens;
    if (mt && json_integer_value(mt) < max)
        max = (long)json_integer_value(mt);
    llm_request_set_max_tokens(rq, max);
    if (temp)
        llm_request_set_temperature(rq, json_number_value(temp));
    return rq;
}

static void create_message(struct sampling_hook *h, const struct hook_request *req,
                           hook_done_fn done, void *done_ud)
{
    struct sampling *s = h->ud;
    struct agent *a = s->a;
    char why[300];
    if (!take_token(s, req->app)) {
        snprintf(why, sizeof(why), "sampling rate limit: at most %u requests per minute per app",
                 a->o.limits.sampling_per_minute);
        done(done_ud, NULL, HUB_ERR_BUSY, why);
        return;
    }
    struct llm_request *rq = build(a, req, why, sizeof(why));
    if (!rq) {
        done(done_ud, NULL, -32602, why);
        return;
    }
    agent_llm_prepare(a, rq);
    struct llm_response rs;
    struct llm_error e;
    int rc = llm_complete(a->llm, rq, &rs, &e);
    llm_request_free(rq);
    if (rc < 0) {
        snprintf(why, sizeof(why), "the LLM call failed (%s)", llm_error_kind_name(e.kind));
        done(done_ud, NULL, HUB_ERR_SPOKE, why);
        return;
    }
    const char *stop =
        rs.finish_reason && strcmp(rs.finish_reason, "length") == 0 ? "maxTokens" : "endTurn";
    json_t *result = json_pack("{s:s,s:{s:s,s:s},s:s,s:s}", "role", "assistant", "content", "type",
                               "text", "text", rs.content ? rs.content : "", "model",
                               rs.model ? rs.model : "unknown", "stopReason", stop);
    llm_response_free(&rs);
    done(done_ud, result, 0, NULL);
}

static void sampling_free(struct sampling_hook *h)
{
    struct sampling *s = h->ud;
    free(s->b);
    free(s);
    free(h);
}

struct sampling_hook *agent_sampling_hook(struct agent *a)
{
    struct sampling *s = xcalloc(1, sizeof(*s));
    s->a = a;
    struct sampling_hook *h = xcalloc(1, sizeof(*h));
    h->create_message = create_message;
    h->free = sampling_free;
    h->ud = s;
    return h;
}
