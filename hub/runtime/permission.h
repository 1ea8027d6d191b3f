/* The permission hook: the single place where the hub asks whether something may
 * happen. The runtime asks it; the agent (issue 5) fills it with the terminal prompt
 * and the grants in Redis; `--answers allow|deny|FILE` (answers.c) scripts it for
 * non-interactive runs, tests and the case studies.
 *
 * When the runtime asks:
 *   exec    before a call the user did not type explicitly (the planner's steps;
 *           `hub call` itself is the user's explicit request and is not asked);
 *   collab  stage "call": spoke A's isolate/call to app B, body = the arguments,
 *           before B is started or sees anything;
 *   collab  stage "relay": B's result on its way back to A, body = the result;
 *   data    reserved for the agent (sharing the user's memory with an app);
 *   secret  a call's arguments (stage "call") or result (stage "relay") carry a secret
 *           and the app's secret_scan is "ask": body NULL (the value is never shown),
 *           detail names what was found; never kept as a grant (asked every time).
 * The request body is what will be sent, so the prompt can show it.
 *
 * The hook may answer at once (call done() before returning) or later (from the
 * event loop, e.g. after a terminal prompt). While a question is open the deadlines
 * of the calls waiting on it are paused: the user's thinking time is not the spoke's.
 * done() must be called exactly once. */
#ifndef HUB_PERMISSION_H
#define HUB_PERMISSION_H

#include <jansson.h>
#include <stdbool.h>

enum perm_category { PERM_EXEC, PERM_DATA, PERM_COLLAB, PERM_SECRET };
enum perm_stage { PERM_STAGE_CALL, PERM_STAGE_RELAY };
enum perm_decision { PERM_ALLOW, PERM_DENY };

struct perm_request {
    enum perm_category category;
    enum perm_stage stage;
    const char *user;
    const char *app;     /* the app that acts (exec, collab call) or whose result moves */
    const char *tool;    /* tool name within app */
    const char *caller;  /* the calling app for collab; NULL when the user/planner asks */
    const json_t *body;  /* arguments (call) or result (relay); borrowed for the call */
    bool irreversible;   /* the manifest marks the tool irreversible: never "always" */
    bool in_plan;        /* the step is part of the plan the user saw */
    const char *call_id; /* audit id shared with the call's records */
    void *origin;        /* call_opts.origin of the top-level call (hub.h) */
    const char *detail;  /* secret: what was found ("the secret NAME", a key's shape) */
};

/* What the user (or a script, answers.h) answers to a permission question, with its
 * scope. The agent turns scoped answers into grants (grants.h): session until the hub
 * exits, always persistent (never for an irreversible tool), never a persistent
 * refusal. Without a grant store they reduce to allow (once, session, always) or deny
 * (no, never). */
enum perm_answer {
    PERM_ANSWER_ONCE,
    PERM_ANSWER_SESSION,
    PERM_ANSWER_ALWAYS,
    PERM_ANSWER_NO,
    PERM_ANSWER_NEVER,
};

/* reason: a short phrase for the audit line ("scripted rule 3", "user said no"). */
typedef void (*perm_done_fn)(void *done_ud, enum perm_decision d, const char *reason);

struct perm_hook {
    void (*ask)(struct perm_hook *h, const struct perm_request *req, perm_done_fn done,
                void *done_ud);
    void (*free)(struct perm_hook *h);
    void *ud;
};

const char *perm_category_name(enum perm_category c);
const char *perm_stage_name(enum perm_stage s);
/* "once", "session", "always", "no", "never". */
const char *perm_answer_name(enum perm_answer a);
static inline enum perm_decision perm_answer_decision(enum perm_answer a)
{
    return a == PERM_ANSWER_NO || a == PERM_ANSWER_NEVER ? PERM_DENY : PERM_ALLOW;
}

#endif
