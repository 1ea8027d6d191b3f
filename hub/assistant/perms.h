/* The agent's permission hook: the user's grants decide when they can, and the user
 * is asked when they cannot.
 *
 * For each question (permission.h) the hook
 *   1. looks for a grant (memory_grant_check: once, session, always, deny; the most
 *      specific key wins, deny wins a tie, "always" never counts for an irreversible
 *      tool) and answers from it;
 *   2. otherwise asks the asker - the terminal prompt (agent_cli.c), or scripted
 *      answers (--answers) - offering once, session, always (never for an irreversible
 *      tool), no and never;
 *   3. records the answer's scope as a grant: session in the hub process, always and
 *      never in the store (Redis), once not at all (it is used up by this action);
 *   4. writes an audit record for the question and one for the answer.
 * A grant store that cannot be read refuses (fails closed).
 *
 * Grant keys: exec (app, tool, *); collab (app, tool, calling app); data (app, tool,
 * the data's source: another app, or PERMS_MEMORY_PEER for the user's earlier
 * conversation). */
#ifndef HUB_PERMS_H
#define HUB_PERMS_H

#include "memory/memory.h"
#include "runtime/runtime.h"

#include <stdbool.h>
#include <stddef.h>

struct answers;
struct audit;

/* The data source "the user's earlier conversation": no manifest can take this name
 * (app names start with a lower-case letter). */
#define PERMS_MEMORY_PEER "_memory"

/* How the hook's reasons start when no one was asked, so that a caller can tell the
 * user which it was (a standing grant is not a fresh "no", and a store that cannot be
 * read is no one's "no"): "deny grant CATEGORY|APP|TOOL|PEER" and
 * "grant store unavailable: ...". */
#define PERMS_WHY_DENY_GRANT "deny grant "
#define PERMS_WHY_STORE_DOWN "grant store unavailable"

/* Who answers what the grants do not decide. Synchronous: ask() returns the answer. */
struct perm_asker {
    enum perm_answer (*ask)(struct perm_asker *a, const struct perm_request *q, bool offer_always,
                            char *why, size_t whylen);
    /* A yes/no question from the hub itself (e.g. "re-plan without it?"). */
    bool (*confirm)(struct perm_asker *a, const char *question);
    void (*free)(struct perm_asker *a);
    void *ud;
};

/* Scripted answers (answers.h); takes its own reference to a. */
struct perm_asker *perm_asker_scripted(struct answers *a);

/* The hook (owned by the hub once installed). mem, asker and audit are borrowed and
 * must outlive it; audit may be NULL. debug puts request bodies into audit records. */
struct perm_hook *perms_hook_new(struct memory *mem, struct perm_asker *asker, struct audit *audit,
                                 bool debug);

/* What the question is about, for prompts: "exec", "data" or "collab" as a phrase. */
const char *perms_describe_category(enum perm_category c);

#endif
