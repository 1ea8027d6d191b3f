/* One ECS audit record per LLM call: who asked in which context, which model, how
 * long, how many tokens and attempts, and how it ended. No prompt or answer text
 * unless the config asks for excerpts (--debug), and never the API key.
 *
 *   event.action "llm-call", event.outcome success|failure, event.reason (the error
 *   kind), event.duration (ns), error.message, http.response.status_code, url.full
 *   (the endpoint), isolate.user, isolate.llm.{backend, context, model,
 *   response_model, attempts, stream, finish_reason, tool_calls, tool_names,
 *   tokens.{prompt, completion, total}, request_excerpt, response_excerpt} */
#include "llm_impl.h"

#include "audit.h"

#include <string.h>

#define EXCERPT_CAP 200

static json_t *tool_names(const struct llm_response *rs)
{
    json_t *names = json_array();
    for (size_t i = 0; i < rs->n_tool_calls; i++)
        json_array_append_new(
            names, audit_string(rs->tool_calls[i].name, strlen(rs->tool_calls[i].name), 128));
    return names;
}

int llm_audit_call(struct llm *llm, const struct llm_request *rq, const struct llm_response *rs,
                   const struct llm_error *e, uint64_t duration_ns)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.action", "llm-call");
    audit_set_str(rec, "event.outcome", rs ? "success" : "failure");
    if (!rs)
        audit_set_str(rec, "event.reason", llm_error_kind_name(e->kind));
    audit_set_int(rec, "event.duration", (int64_t)duration_ns);
    if (llm->base_url)
        audit_set_str(rec, "url.full", llm->base_url);
    if (e->http_status)
        audit_set_int(rec, "http.response.status_code", e->http_status);
    audit_set_str(rec, "isolate.user", rq->user);
    audit_set_str(rec, "isolate.llm.backend", llm->ops->kind);
    audit_set_str(rec, "isolate.llm.context", rq->context);
    audit_set_str(rec, "isolate.llm.model", rq->model ? rq->model : llm->cfg.model);
    audit_set_int(rec, "isolate.llm.attempts", rs ? rs->attempts : e->attempts);
    audit_set(rec, "isolate.llm.stream", json_boolean(rq->on_delta != NULL));
    if (rs) {
        audit_set_str(rec, "isolate.llm.response_model", rs->model);
        audit_set_str(rec, "isolate.llm.finish_reason", rs->finish_reason);
        audit_set_int(rec, "isolate.llm.tool_calls", (int64_t)rs->n_tool_calls);
        if (rs->n_tool_calls)
            audit_set(rec, "isolate.llm.tool_names", tool_names(rs));
        if (rs->usage.present) {
            audit_set_int(rec, "isolate.llm.tokens.prompt", rs->usage.prompt_tokens);
            audit_set_int(rec, "isolate.llm.tokens.completion", rs->usage.completion_tokens);
            audit_set_int(rec, "isolate.llm.tokens.total", rs->usage.total_tokens);
        }
    } else if (e->kind == LLM_ERR_UNCOVERED && !llm->cfg.audit_content) {
        /* That message quotes the request; the record says only what happened. */
        audit_set_str(rec, "error.message", "the replay recording has no answer for this request");
    } else {
        audit_set_str(rec, "error.message", e->msg);
    }
    if (llm->cfg.audit_content) {
        size_t n = json_array_size(rq->messages);
        const char *last =
            n ? json_string_value(json_object_get(json_array_get(rq->messages, n - 1), "content"))
              : NULL;
        if (last)
            audit_set(rec, "isolate.llm.request_excerpt",
                      audit_string(last, strlen(last), EXCERPT_CAP));
        if (rs && rs->content)
            audit_set(rec, "isolate.llm.response_excerpt",
                      audit_string(rs->content, strlen(rs->content), EXCERPT_CAP));
    }
    return audit_write(llm->cfg.audit, rec);
}
