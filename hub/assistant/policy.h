/* Policies that decide without asking: for each tool argument, where its value may
 * come from (Progent's argument policies, CaMeL's capabilities, on the hub's plans).
 *
 * In process and namespace modes the hub knows where every argument of a plan step
 * comes from, because the planner saw only the user's request and passes results as
 * references:
 *   "request"            a value the planner wrote itself (from the request);
 *   "APP.TOOL"           an earlier step's result (a reference to it);
 *   "extract:APP.TOOL"   a value the extraction step read out of that tool's result
 *                        (text that may hold anything, an attacker's words included).
 * A rule names a tool ("APP.TOOL", "APP.*" or "*"), an argument (a name or "*"), the
 * sources it allows ("from", patterns: "*", "APP.*", "extract:*", ...) and what happens
 * to any other source ("else": "deny", the default, or "ask"):
 *
 *   {"tool": "bank.send_money", "argument": "recipient",
 *    "from": ["request", "bank.get_scheduled_transactions"], "else": "ask"}
 *
 * Rules come from hub.json ("policies": [RULE...]) and from a manifest's tools (a
 * tool's "policy": {"ARGUMENT": {"from": [...], "else": ...}}, the tool implied);
 * for each argument the manifest's rule wins, then the first hub.json rule that
 * matches (a rule for the argument by name before one for "*"). A step is
 *   denied   when some argument's source is refused by a rule saying "deny";
 *   allowed  when some rule covers the tool and every argument's source is allowed:
 *            it runs without a question (exec and data decided by the policy);
 *   asked    otherwise: the usual questions (docs/assistant.md, "Permissions"), or,
 *            when rules cover the tool, one question: the call with its arguments.
 * Every decision is audited by the agent (event.action "policy"). */
#ifndef HUB_POLICY_H
#define HUB_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define POLICY_MAX_RULES 1024

enum policy_decision { POLICY_ASK, POLICY_ALLOW, POLICY_DENY };
const char *policy_decision_name(enum policy_decision d); /* "ask", "allow", "deny" */

struct policy;

/* The rules (an array, borrowed; NULL: none). NULL and "policies[3].from: ..." when a
 * rule is malformed. */
struct policy *policy_new(const json_t *rules, char *err, size_t errlen);
/* Adds a manifest tool's "policy" object for app.tool; -1 and why when malformed. */
int policy_add_tool(struct policy *p, const char *app, const char *tool, const json_t *block,
                    char *err, size_t errlen);
void policy_free(struct policy *p);
/* The hub's rules: hub.json's "policies" (NULL: none) and every manifest tool's
 * "policy" block in ms. NULL with *err empty when there are none at all (no policy:
 * the usual questions); NULL and why when one is malformed. */
struct manifest_set;
struct policy *policy_for_hub(const json_t *hub_rules, const struct manifest_set *ms, char *err,
                              size_t errlen);
size_t policy_rule_count(const struct policy *p);

/* Whether some rule names app.tool: then a step the rules leave to the user is asked
 * once, as the call itself (exec, with every argument shown), without a separate data
 * question for the flows the rules already judged. */
bool policy_covers(const struct policy *p, const char *app, const char *tool);

/* The decision for a step of app.tool whose arguments come from sources ({"ARG":
 * "SOURCE"}); why says which rule and argument decided (or none did). */
enum policy_decision policy_decide(const struct policy *p, const char *app, const char *tool,
                                   const json_t *sources, char *why, size_t whylen);

#endif
