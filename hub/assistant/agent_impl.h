/* Internals shared by the agent's files: agent.c (the object, requests, history,
 * audit), agent_plan.c (process/namespace modes), agent_none.c (the baseline),
 * agent_sampling.c, agent_data.c. Not for callers outside them. */
#ifndef HUB_AGENT_IMPL_H
#define HUB_AGENT_IMPL_H

#include "traceparent.h"
#include "agent.h"
#include "agent_tools.h"

struct agent {
    struct hub *hub;
    struct event_base *base;
    const struct hub_config *cfg;
    const struct manifest_set *ms;
    struct llm *llm;
    struct memory *mem;
    struct perm_asker *asker;
    struct agent_options o;
    char user[MEMORY_USER_MAX + 1];
    struct tool_map tools;
    struct audit *audit;
    struct manifest *extract_m; /* the hub.extract pseudo-app when o.extract; else NULL */
    /* The user's request in progress as a span (a new trace each): the parent of its
     * calls, extractions and policy decisions; traced false between requests. */
    struct trace_ctx trace;
    bool traced;
    char traceparent[56]; /* trace as handed to the calls */
};

/* One request in progress. */
struct agent_req {
    struct agent *a;
    const char *request;
    struct agent_result *out;
    char **history; /* the user's earlier requests, oldest first */
    size_t n_history;
    struct memory_msg *msgs; /* the whole recent history (requests and answers) */
    size_t n_msgs;
};

/* agent_extract.c: the extraction step (hub.extract). */
#define AGENT_EXTRACT_APP "hub"
#define AGENT_EXTRACT_TOOL "extract"
struct manifest *agent_extract_manifest(char *err, size_t errlen);
/* Runs one extraction (args checked against the tool's inputSchema); source is where
 * the text came from ("APP.TOOL"), for the audit. Always a CallToolResult (isError
 * with the reason when it failed). */
json_t *agent_extract_run(struct agent_req *r, const json_t *args, const char *source);

/* agent.c */
void agent_event(struct agent *a, const char *kind, json_t *detail_stolen);
/* An audit record of the agent's own (event.action, outcome); fields are consumed.
 * 0, or -1 and errno when it could not be written. */
int agent_audit(struct agent *a, const char *action, const char *outcome, json_t *fields);
/* A span of the request's own (an extraction, a policy decision) from t0 (monotonic) to
 * now, exported when the hub exports spans; its ids go into fields (for agent_audit). */
void agent_span(struct agent *a, const char *name, uint64_t t0, bool ok, json_t *fields);
/* Applies the common request options (user, cancel) to an LLM request. */
void agent_llm_prepare(struct agent *a, struct llm_request *rq);
/* One completion for the request r: 0 and *rs, or -1 with r's outcome set to
 * AGENT_LLM_FAILED and the error "<what> (<kind>): <message>". */
int agent_llm_call(struct agent_req *r, struct llm_request *rq, struct llm_response *rs,
                   const char *what);
/* Before the first action of a request: waits until its history entry is stored
 * (sent without waiting in agent_run). 0, or -1 with the request failed. */
int agent_request_stored(struct agent_req *r);
/* Marks r's answer as cut off by the model's token limit (truncated, and a warning
 * naming what was cut: "the answer", "the plan's answer"). */
void agent_answer_cut(struct agent_req *r, const char *what);
/* Appends a call record to out->calls. */
void agent_record_call(struct agent_req *r, const char *step, const char *app, const char *tool,
                       const json_t *args, bool in_plan, const json_t *result, int code,
                       const char *message, const char *layer);
bool agent_cancelled(const struct agent *a);
/* Runs the permission hook synchronously for a question of the agent's own (data).
 * *layer: "permission", or "audit" for a yes refused because its record could not be
 * written (why then says so). */
enum perm_decision agent_ask(struct agent *a, const struct perm_request *q, char *why,
                             size_t whylen, const char **layer);

/* agent_plan.c: process and namespace modes. Returns 0 with out->answer set, or -1. */
int agent_run_planned(struct agent_req *r);
/* agent_none.c: the baseline. */
int agent_run_none(struct agent_req *r);

/* agent_data.c: whether any string in args repeats the user's earlier words that the
 * current request does not hold (a word with a digit or '@', a long word, or three
 * words in a row); *snippet gets the first such words. */
bool agent_args_use_history(const json_t *args, char *const *history, size_t n_history,
                            const char *request, char *snippet, size_t snippet_len);

/* agent_sampling.c */
struct sampling_hook *agent_sampling_hook(struct agent *a);

#endif
