/* none mode: the VanillaGPT baseline the case studies compare against. One LLM
 * context sees every tool, every tool result and the whole conversation, and the hub
 * runs every tool call it makes, without asking. This is the design whose flaw the
 * other modes fix: an app's output (a tool result) can make the LLM call any tool. */
#include "agent_impl.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char none_system[] =
    "You are a helpful personal assistant. The tools offered to you are the user's apps: "
    "use them to do what the user asks, then answer the user.";

/* A tool result as the LLM sees it: the CallToolResult's JSON, bounded. */
static char *result_text(const json_t *result, size_t max)
{
    char *text = json_dumps(result, JSON_COMPACT);
    if (!text)
        return xstrdup("{}");
    if (strlen(text) > max) {
        char *cut = xasprintf("%.*s...[truncated]", (int)max, text);
        free(text);
        return cut;
    }
    return text;
}

int agent_run_none(struct agent_req *r)
{
    struct agent *a = r->a;
    char err[700];
    struct llm_request *rq = llm_request_new("none");
    llm_request_system(rq, none_system);
    /* Only whole exchanges, a request and its answer: roles then alternate (user,
     * assistant, ..., user), which the chat templates of many open models (llama.cpp,
     * vLLM) require. An answer whose request was trimmed off, and a request that got
     * no answer (it failed), are left out. */
    for (size_t i = 0; i + 1 < r->n_msgs; i++) {
        if (strcmp(r->msgs[i].role, "user") == 0 && strcmp(r->msgs[i + 1].role, "assistant") == 0) {
            llm_request_user(rq, r->msgs[i].text);
            llm_request_assistant_text(rq, r->msgs[i + 1].text);
            i++;
        }
    }
    llm_request_user(rq, r->request);
    if (tool_map_offer(&a->tools, rq, err, sizeof(err)) < 0) {
        llm_request_free(rq);
        r->out->status = AGENT_FAILED;
        snprintf(r->out->error, sizeof(r->out->error), "offering the tools: %s", err);
        return -1;
    }
    agent_llm_prepare(a, rq);
    if (a->o.on_answer)
        llm_request_set_stream(rq, a->o.on_answer, a->o.answer_arg);
    int rc = -1;
    for (size_t round = 0;; round++) {
        if (agent_cancelled(a)) {
            r->out->status = AGENT_FAILED;
            snprintf(r->out->error, sizeof(r->out->error), "interrupted");
            break;
        }
        struct llm_response rs;
        if (agent_llm_call(r, rq, &rs, "the LLM call failed") < 0)
            break;
        if (rs.truncated && rs.n_tool_calls > 0) {
            /* The last call may be whole and still not the one the model meant. */
            r->out->status = AGENT_LLM_FAILED;
            r->out->truncated = true;
            snprintf(r->out->error, sizeof(r->out->error),
                     "the model hit its token limit (finish_reason \"length\") while writing "
                     "its tool calls: none of them was run; raise llm.max_tokens (or the "
                     "server's limit)");
            llm_response_free(&rs);
            break;
        }
        if (rs.n_tool_calls == 0) {
            r->out->answer = xstrdup(rs.content ? rs.content : "");
            if (rs.truncated)
                agent_answer_cut(r, "the answer");
            llm_response_free(&rs);
            rc = 0;
            break;
        }
        if (round >= a->o.limits.max_tool_rounds) {
            r->out->answer = xasprintf("(Stopped after %zu rounds of tool calls.)", round);
            if (a->o.on_answer)
                a->o.on_answer(a->o.answer_arg, r->out->answer, strlen(r->out->answer));
            llm_response_free(&rs);
            rc = 0;
            break;
        }
        if (agent_request_stored(r) < 0) {
            llm_response_free(&rs);
            break;
        }
        llm_request_assistant(rq, &rs);
        for (size_t i = 0; i < rs.n_tool_calls; i++) {
            const struct llm_tool_call *tc = &rs.tool_calls[i];
            json_t *args = llm_tool_call_args(tc);
            const struct tool_entry *te = tool_map_find(&a->tools, tc->name);
            char *text;
            if (!te) {
                json_array_append_new(r->out->ignored_tool_calls,
                                      json_pack("{s:s,s:s,s:O}", "context", "none", "name",
                                                tc->name, "arguments", args));
                text = xasprintf("error: there is no tool named %s", tc->name);
            } else {
                agent_event(a, "tool-call",
                            json_pack("{s:s++,s:O}", "tool", te->m->name, ".", te->t->name,
                                      "arguments", args));
                /* The baseline asks nobody: that is what is being compared. */
                struct call_opts co = {.user = a->user, .traceparent = a->traceparent};
                json_t *result = NULL;
                const char *layer = NULL;
                int code = hub_call_sync(a->hub, &co, te->m->name, te->t->name, args, &result, err,
                                         sizeof(err), &layer);
                agent_record_call(r, NULL, te->m->name, te->t->name, args, false, result, code, err,
                                  layer);
                text = result ? result_text(result, a->o.limits.result_max_bytes)
                              : xasprintf("error: %s", err);
                json_decref(result);
            }
            llm_request_tool_result(rq, tc->id, tc->name, text);
            free(text);
            json_decref(args);
        }
        llm_response_free(&rs);
    }
    llm_request_free(rq);
    return rc;
}
