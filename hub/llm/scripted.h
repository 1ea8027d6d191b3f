/* A scripted back end: a function in the hub answers each request, through the same
 * struct llm as the HTTP client and replay, so the contexts that talk to it (planner,
 * merge, extraction, the none loop, a spoke's sampling) cannot tell it from a model.
 * The agent benchmark's ground-truth and compromised models are such functions
 * (hub/agentbench/). Calls are audited like any other (backend "scripted"). */
#ifndef HUB_LLM_SCRIPTED_H
#define HUB_LLM_SCRIPTED_H

#include "llm.h"

/* The request as the wire would carry it: messages [{"role", "content",
 * "tool_calls"?, "tool_call_id"?, "name"?}], tools [{"type": "function", "function":
 * {"name", "description", "parameters"}}] (borrowed, valid during the call). */
const json_t *llm_request_messages(const struct llm_request *rq);
const json_t *llm_request_tools(const struct llm_request *rq);

/* Answers rq: sets *answer to a message {"content": text|null, "tool_calls": [{"id",
 * "name", "arguments": object}]} (a new reference, checked like a replayed one), or
 * returns -1 with why (the call then fails as LLM_ERR_UNCOVERED). */
typedef int (*llm_script_fn)(void *arg, const struct llm_request *rq, json_t **answer, char *why,
                             size_t whylen);

/* describe is what llm_describe() says ("scripted:ground-truth"). cfg supplies the
 * audit log. Never NULL. */
struct llm *llm_scripted_open(const char *describe, llm_script_fn fn, void *arg,
                              const struct llm_config *cfg);

#endif
