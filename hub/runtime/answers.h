/* Scripted answers for the permission and elicitation hooks (`--answers`), for runs
 * without a user at a terminal: tests, benchmarks, the case studies, `hub call`, and
 * the assistant reading requests from a pipe.
 *
 *   allow | deny   every permission question gets that answer; elicitations decline
 *   FILE           JSON rules, first match wins:
 *   {
 *     "default": "deny",
 *     "rules": [
 *       {"category": "collab", "stage": "call", "app": "fetch", "tool": "get",
 *        "caller": "notes", "user": "alice", "irreversible": false, "in_plan": true,
 *        "decision": "allow"}
 *     ],
 *     "replan": false,
 *     "elicitation": [
 *       {"app": "notes", "action": "accept", "content": {"confirm": true}}
 *     ]
 *   }
 * In a rule every key but "decision" is optional and "*" matches anything; "caller":
 * "" matches questions with no calling app (the user's own requests, the planner's
 * steps). "caller" is the calling app for collab and the data's source for data (the
 * user's earlier conversation is "_memory"). A decision is what a user at the
 * terminal could answer:
 *   allow | once   allow this one action
 *   session        allow, and the same action until the hub exits
 *   always         allow, and remember it (the agent stores it; an irreversible tool
 *                  never gets "always": the agent treats it as once)
 *   deny | no      refuse this one action
 *   never          refuse, and remember the refusal
 * (Without the agent's grant store - `hub call` - they reduce to allow or deny.)
 * "replan" answers the agent's offer to re-plan after a step was denied (default
 * false). An elicitation entry answers the first elicitation/create from that app
 * ("*" for any) with action accept|decline|cancel (content only with accept). */
#ifndef HUB_ANSWERS_H
#define HUB_ANSWERS_H

#include "hooks.h"
#include "permission.h"

#include <stdbool.h>
#include <stddef.h>

struct answers;

/* Loads spec (allow, deny or FILE). NULL and "FILE: rules[2].decision: ..." in err. */
struct answers *answers_load(const char *spec, char *err, size_t errlen);
/* The scripted answer to q; why gets "scripted rule 3" or "scripted default". */
enum perm_answer answers_decide(struct answers *a, const struct perm_request *q, char *why,
                                size_t whylen);
bool answers_replan(const struct answers *a);
/* An elicitation hook served from a's entries (takes its own reference to a). */
struct elicit_hook *answers_elicit_hook(struct answers *a);
/* Another reference; each is dropped by answers_free(). */
struct answers *answers_ref(struct answers *a);
void answers_free(struct answers *a);

/* Both hooks at once, for callers without grants (`hub call`): 0, or -1 and err. */
int answers_hooks(const char *spec, struct perm_hook **perm, struct elicit_hook **elicit, char *err,
                  size_t errlen);

#endif
