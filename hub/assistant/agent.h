/* The assistant's core, as a library: one user request, in the hub's isolation mode,
 * with a given LLM, memory, permission asker and user, returning the answer, the
 * plan, and every tool call made (or refused) with its result. The terminal
 * (agent_cli.c) and the case-study runner (issue 6) both drive it.
 *
 * process / namespace modes (the hub plans; apps never steer the planner):
 *   1. the planner LLM ("planner" context) sees the request, the user's earlier
 *      requests and the manifests' tools, and returns a plan (planner.h);
 *   2. the hub validates the whole plan before any spoke runs; a bad plan is refused
 *      with a message naming the step and the reason;
 *   3. each step runs in its app's spoke through hub_call() with the exec permission
 *      asked (in_plan); an earlier step's result passed to another app, or text from
 *      the user's earlier conversation, is shared only with the data permission;
 *   4. after a denial the hub offers to re-plan (the asker's confirm()); the new plan
 *      may use the results of the steps that already ran, by id;
 *   5. the answer is composed in a fresh "merge" context that is offered no tools:
 *      a tool call it returns anyway is ignored and audited, never run.
 * none mode (the VanillaGPT baseline, for comparison): one tool-calling loop ("none"
 * context) sees every tool, every result and the whole conversation, and runs every
 * tool call it makes without asking (at most max_rounds rounds).
 *
 * The agent also serves the spokes' sampling/createMessage (each app its own
 * "spoke:APP" context, rate-limited, audited; no credential enters a spoke) and
 * keeps the history: every request and answer is appended to the user's memory.
 *
 * Everything is synchronous: agent_run() drives the hub's event loop while spokes
 * work and returns when the answer is composed. */
#ifndef HUB_AGENT_H
#define HUB_AGENT_H

#include "runtime/runtime.h"
#include "llm/llm.h"
#include "memory/memory.h"
#include "perms.h"
#include "policy.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* Tunables; hub.json's "llm" object may set them under the same names. */
struct agent_limits {
    size_t max_plan_steps;        /* default 8, at most 32 */
    size_t max_tool_rounds;       /* none mode: LLM rounds with tool calls; default 8 */
    unsigned max_replans;         /* re-plans after denials per request; default 2 */
    size_t history_entries;       /* earlier requests shown to the planner; default 20 */
    size_t result_max_bytes;      /* one step's result as shown to the merge; 16 KiB */
    struct llm_sampling_limits sampling; /* a spoke's own requests (llm.h) */
};
void agent_limits_defaults(struct agent_limits *l);

/* Progress for a user interface: kind is "plan" (the validated plan, before any step
 * runs), "plan-refused" ({"error"}), "step" ({"id","tool","arguments"} before it runs),
 * "step-done" ({"id","tool","outcome","layer"?,"error"?}), "replan" ({"reason"}),
 * "tool-call" (none mode: {"tool","arguments"}), "step-result" (answer_refs only, before
 * the merge: {"id","result"}, the value the answer's references resolve against).
 * detail is borrowed. */
typedef void (*agent_event_fn)(void *arg, const char *kind, const json_t *detail);

struct agent_options {
    const char *user;           /* NULL: cfg->user */
    struct agent_limits limits; /* start from agent_limits_defaults() */
    bool debug;                 /* content of requests and bodies in audit records */
    llm_delta_fn on_answer;     /* the answer as it streams; NULL: not streamed */
    void *answer_arg;
    agent_event_fn on_event; /* may be NULL */
    void *event_arg;
    const volatile sig_atomic_t *cancel; /* non-zero: stop the request soon (may be NULL) */
    llm_wait_fn on_wait; /* an LLM call waits before a retry (llm.h); may be NULL */
    void *wait_arg;
    /* process and namespace modes: offer the planner the extraction step (hub.extract,
     * agent_extract.c) and decide steps by argument-source policies (policy.h; borrowed,
     * NULL: none) before any question is asked. */
    bool extract;
    const struct policy *policy;
    /* No one to ask (unattended): a step the rules leave to the user is refused. */
    bool policy_no_ask;
    /* process and namespace modes: the answer is written by reference (agent_answer.h):
     * the merge context sees the results' shape, never their text. */
    bool answer_refs;
};

struct agent;

/* Installs the agent's permission hook (grants in mem, questions to asker) and its
 * sampling hook on h. Everything passed is borrowed and must outlive the agent;
 * cfg->isolation picks the mode. The elicitation hook stays the caller's. */
struct agent *agent_new(struct hub *h, struct event_base *base, const struct hub_config *cfg,
                        const struct manifest_set *ms, struct llm *llm, struct memory *mem,
                        struct perm_asker *asker, const struct agent_options *o, char *err,
                        size_t errlen);
void agent_free(struct agent *a);
/* The user the agent works for (after the default was applied). */
const char *agent_user(const struct agent *a);

enum agent_status {
    AGENT_OK,           /* answered (some steps may have been denied by the user) */
    AGENT_PLAN_REFUSED, /* the plan broke the rules: nothing ran; error says why */
    AGENT_LLM_FAILED,   /* the LLM failed (error says how); calls may have run */
    AGENT_FAILED,       /* the hub failed otherwise (memory, interrupted) */
    AGENT_STEPS_FAILED, /* answered, but a step failed (did not run, or the tool erred):
                           a script must not take the answer as the work done */
};
const char *agent_status_name(enum agent_status s); /* "ok", "plan-refused", ... */

struct agent_result {
    enum agent_status status;
    char *answer; /* the text the user is shown; NULL when there is none */
    /* Every plan this request ran (more than one after a re-plan): plan_json() form.
     * Empty in none mode. */
    json_t *plans;
    /* Every tool call the hub made or refused, in order:
     *   {"step": "s1" (null in none mode), "tool": "app.tool", "arguments": {...},
     *    "in_plan": bool, "outcome": "ok"|"tool-error"|"denied"|"failed",
     *    "result": CallToolResult (when it ran), "error", "layer" (when it did not)} */
    json_t *calls;
    /* Tool calls an LLM asked for that were not run because none may be made there
     * (the merge context) or the name is not an offered tool (none mode):
     *   {"context": "merge"|"none", "name": ..., "arguments": ...} */
    json_t *ignored_tool_calls;
    unsigned replans;
    /* The model hit its token limit (finish_reason "length") in this request: the
     * answer shown is cut off (a warning says so), or a cut plan or tool call was
     * refused before it ran. */
    bool truncated;
    char error[1024]; /* why, when status is not AGENT_OK */
    /* The part of error that is an LLM server's own words (llm_error.detail; error ends
     * with LLM_SERVER_SAID and it): to be shown as quoted data. "" when none. */
    char error_detail[384];
    /* What the user must know although the request may have succeeded: an answer or a
     * grant that could not be stored in the memory (Redis unreachable). Strings. */
    json_t *warnings;
};

/* Runs one request. 0 when an answer was produced (status OK), -1 otherwise; out is
 * filled either way and freed with agent_result_free(). */
int agent_run(struct agent *a, const char *request, struct agent_result *out);
void agent_result_free(struct agent_result *r);
/* How many of r's calls failed (outcome "failed" or "tool-error"; a denial is the
 * user's decision, not a failure). */
size_t agent_steps_failed(const struct agent_result *r);
/* {"status", "answer", "truncated", "plans", "calls", "ignored_tool_calls", "replans",
 *  "error", "warnings"} */
json_t *agent_result_json(const struct agent_result *r);

/* --- wiring from hub.json and the command line (agent_setup.c) ------------------- */

/* Reads the agent's limits from hub.json's "llm" object (cfg->llm, may be NULL) over
 * the defaults. 0, or -1 and "FILE: llm.x: ...". */
int agent_config_limits(const struct hub_config *cfg, struct agent_limits *lim, char *err,
                        size_t errlen);

/* Opens the LLM: spec is --llm (URL or replay:FILE) or NULL for hub.json's base_url.
 * The key is cfg->llm_api_key (taken out of the environment at start). audit gets a
 * record per call (content only when debug). NULL and a message (with the setup hint
 * when nothing is configured). */
struct llm *agent_llm_open(const struct hub_config *cfg, const char *spec, struct audit *audit,
                           bool debug, char *err, size_t errlen);

/* Opens the memory: spec is --memory (none, unix:PATH, HOST:PORT) or NULL for
 * hub.json's memory.redis; when neither names a server, the private redis-server in
 * <run_dir>/redis (scripts/redis-private), started when none runs there. Several hubs
 * of one configuration share it (one memory per user, as with a configured Redis):
 * each holds a shared lock on it for as long as it runs (*private is set), and
 * agent_memory_release_private() stops it when the last hub that uses it ends, if a
 * hub started it. NULL and a message that says what to do otherwise. */
struct private_redis;
struct memory *agent_memory_open(const struct hub_config *cfg, const char *spec,
                                 struct private_redis **private, char *err, size_t errlen);
void agent_memory_release_private(struct private_redis *pr);
/* The private Redis's directory (NULL for none). */
const char *agent_private_redis_dir(const struct private_redis *pr);
/* The private redis-server in dir (see above): 0 when it runs, 1 when it was not running
 * and has been started again (the memory reconnects by itself), -1 when it could not be
 * started (err then says how to do it by hand). Cheap when it runs (its pid file and
 * /proc, no process started): called before each request. */
int agent_memory_revive_private(const char *dir, char *err, size_t errlen);

#endif
