/* The scripted back end (scripted.h). */
#include "llm_impl.h"
#include "scripted.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct scripted {
    llm_script_fn fn;
    void *arg;
};

const json_t *llm_request_messages(const struct llm_request *rq)
{
    return rq->messages;
}

const json_t *llm_request_tools(const struct llm_request *rq)
{
    return rq->tools;
}

static int scripted_complete(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                             struct llm_error *e)
{
    struct scripted *s = llm->impl;
    json_t *answer = NULL;
    char why[512] = "";
    if (s->fn(s->arg, rq, &answer, why, sizeof(why)) < 0 || !answer) {
        json_decref(answer);
        return llm_fail(e, LLM_ERR_UNCOVERED, "%s: no answer for context \"%s\": %s", llm->describe,
                        rq->context, why[0] ? why : "(none given)");
    }
    int rc = llm_wire_message(answer, rs, "scripted", e);
    json_decref(answer);
    if (rc < 0)
        return -1;
    rs->finish_reason = xstrdup(rs->n_tool_calls ? "tool_calls" : "stop");
    rs->model = xstrdup(llm->describe);
    if (rq->on_delta && rs->content &&
        rq->on_delta(rq->delta_arg, rs->content, strlen(rs->content)) != 0)
        return llm_fail(e, LLM_ERR_CANCELLED, "cancelled while streaming");
    return 0;
}

static void scripted_destroy(struct llm *llm)
{
    free(llm->impl);
}

static const struct llm_ops scripted_ops = {
    .kind = "scripted",
    .complete = scripted_complete,
    .destroy = scripted_destroy,
};

struct llm *llm_scripted_open(const char *describe, llm_script_fn fn, void *arg,
                              const struct llm_config *cfg)
{
    struct scripted *s = xcalloc(1, sizeof(*s));
    s->fn = fn;
    s->arg = arg;
    struct llm *llm = xcalloc(1, sizeof(*llm));
    llm->ops = &scripted_ops;
    llm->impl = s;
    llm->cfg = *cfg;
    llm->model = NULL;
    llm->cfg.model = NULL;
    llm->cfg.base_url = NULL;
    llm->cfg.api_key_env = NULL;
    llm->cfg.api_key = NULL;
    llm->describe = xstrdup(describe);
    return llm;
}
