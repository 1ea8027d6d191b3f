/* The planner's half that needs no spoke: the request the planner LLM gets, and the
 * strict validation of the plan it returns, before anything runs.
 *
 * The planner sees the user's request, the user's earlier requests (never an earlier
 * answer: those were composed from app output) and the manifests' tools. It answers
 * either with tool calls (one per step, in order, offered as app__tool) or with JSON:
 *
 *   {"steps": [
 *      {"id": "s1", "tool": "metro_hail.estimate_fare",
 *       "arguments": {"from": "Main Street", "to": "Elm Avenue"}},
 *      {"id": "s2", "tool": "notes.add",
 *       "arguments": {"title": "fare", "text": {"$ref": "s1.fare"}}}
 *   ]}
 *
 * or with plain text when no app is needed (a direct answer). Step ids default to
 * s1, s2, ... in order (tool-call plans may also use the tool call's id). A reference
 * {"$ref": "ID"} or {"$ref": "ID.field.0.name"} stands for an earlier step's result
 * (its structuredContent, or its text when it has none) or a field in it; references
 * are whole values of top-level arguments, so the rest of the arguments can be
 * checked against the tool's inputSchema now, and the referenced values when they
 * are known (the hub checks every call's arguments again before the spoke sees them).
 *
 * A plan is refused, with a message that says which step and why, when it names a
 * tool that is not installed, breaks a tool's inputSchema, references a step that is
 * not earlier (or a field the source tool's outputSchema does not declare), or has
 * more than max_steps steps. */
#ifndef HUB_PLANNER_H
#define HUB_PLANNER_H

#include "agent_tools.h"
#include "llm/llm.h"
#include "runtime/runtime.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define PLAN_STEP_ID_MAX 32
#define PLAN_MAX_STEPS 32
#define PLAN_REF_MAX_DEPTH 8

struct plan_step {
    char id[PLAN_STEP_ID_MAX + 1];
    const struct manifest *m;
    const struct manifest_tool *t;
    json_t *args; /* as planned: may hold {"$ref": ...} values */
};

struct plan {
    struct plan_step *steps;
    size_t n;
    char *answer; /* the planner answered directly, without steps */
};

/* A step that ran under an earlier plan for the same request (before a re-plan):
 * later plans may reference it but not reuse its id. */
struct plan_known {
    const char *id;
    const struct manifest_tool *t;
};

/* The planner's request: history holds the user's earlier requests, oldest first;
 * note (may be NULL) says what happened to an earlier plan (a denied step). */
struct llm_request *planner_request(const struct tool_map *map, const char *const *history,
                                    size_t n_history, const char *request, const char *note,
                                    char *err, size_t errlen);

/* Turns the planner's answer into a validated plan. Steps without an id are numbered
 * s<id_offset+1>, s<id_offset+2>, ... (after a re-plan, id_offset is the number of
 * steps that already ran). 0, or -1 and err. */
int plan_from_response(const struct llm_response *rs, const struct tool_map *map,
                       const struct plan_known *known, size_t n_known, size_t id_offset,
                       size_t max_steps, struct plan *out, char *err, size_t errlen);
void plan_free(struct plan *p);
/* {"steps": [{"id", "tool": "app.tool", "arguments"}], "answer"?} */
json_t *plan_json(const struct plan *p);

/* Whether v is a reference; then *id (and *path, NULL or the dotted rest) point into
 * v's string, and id_len is the id's length. */
bool plan_ref(const json_t *v, const char **id, size_t *id_len, const char **path);

/* The result a reference stands for: structuredContent, or the joined text content. */
typedef const json_t *(*plan_lookup_fn)(void *ud, const char *id);
/* A copy of the step's arguments with every reference replaced by its value; NULL
 * and err when a referenced step has no result or the field is missing. */
json_t *plan_resolve(const struct plan_step *s, plan_lookup_fn lookup, void *ud, char *err,
                     size_t errlen);
/* The value a CallToolResult gives a reference (new reference; a string for text). */
json_t *plan_result_value(const json_t *call_result);

#endif
