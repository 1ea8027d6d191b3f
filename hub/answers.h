/* Scripted answers for the permission and elicitation hooks (`--answers`), for runs
 * without a user at a terminal: tests, benchmarks, the case studies, `hub call`.
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
 *     "elicitation": [
 *       {"app": "notes", "action": "accept", "content": {"confirm": true}}
 *     ]
 *   }
 * In a rule every key but "decision" is optional and "*" matches anything; "caller":
 * "" matches questions with no calling app (the user's own requests). An elicitation
 * entry answers the first elicitation/create from that app ("*" for any) with
 * action accept|decline|cancel (content only with accept). */
#ifndef HUB_ANSWERS_H
#define HUB_ANSWERS_H

#include "hooks.h"
#include "permission.h"

#include <stddef.h>

/* 0, or -1 with "FILE: rules[2].decision: ..." in err. */
int answers_hooks(const char *spec, struct perm_hook **perm, struct elicit_hook **elicit, char *err,
                  size_t errlen);

#endif
