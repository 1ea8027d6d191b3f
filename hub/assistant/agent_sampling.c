/* sampling/createMessage in the assistant: a spoke's own LLM context, served by the
 * hub's LLM in the assistant's loop, with the checks, caps and per-app rate limit of
 * llm.h's llm_sampling_* (hub.json's llm.sampling_*). The key never leaves the hub,
 * and every call is audited by the LLM client (and the runtime's "sampling" record). */
#include "agent_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

struct sampling {
    struct agent *a;
    struct llm_sampling_buckets *buckets;
};

static void create_message(struct sampling_hook *h, const struct hook_request *req,
                           hook_done_fn done, void *done_ud)
{
    struct sampling *s = h->ud;
    struct agent *a = s->a;
    const struct llm_sampling_limits *l = &a->o.limits.sampling;
    char why[300];
    if (!llm_sampling_take(s->buckets, req->app, l)) {
        snprintf(why, sizeof(why), "sampling rate limit: at most %u requests per minute per app",
                 l->per_minute);
        done(done_ud, NULL, HUB_ERR_BUSY, why);
        return;
    }
    struct llm_request *rq = llm_sampling_request(req->app, req->params, l, why, sizeof(why));
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
    json_t *result = llm_sampling_result(&rs);
    llm_response_free(&rs);
    done(done_ud, result, 0, NULL);
}

static void sampling_free(struct sampling_hook *h)
{
    struct sampling *s = h->ud;
    llm_sampling_buckets_free(s->buckets);
    free(s);
    free(h);
}

struct sampling_hook *agent_sampling_hook(struct agent *a)
{
    struct sampling *s = xcalloc(1, sizeof(*s));
    s->a = a;
    s->buckets = llm_sampling_buckets_new();
    struct sampling_hook *h = xcalloc(1, sizeof(*h));
    h->create_message = create_message;
    h->free = sampling_free;
    h->ud = s;
    return h;
}
