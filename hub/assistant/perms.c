/* The agent's permission hook: grants first, then the asker (see perms.h). */
#include "perms.h"
#include "runtime/runtime.h"
#include "audit.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct perms {
    struct memory *mem;
    struct perm_asker *asker;
    struct audit *audit;
    bool debug;
};

const char *perms_describe_category(enum perm_category c)
{
    switch (c) {
    case PERM_EXEC:
        return "run an app";
    case PERM_DATA:
        return "share data with an app";
    case PERM_COLLAB:
        return "let one app call another";
    case PERM_SECRET:
        return "let a secret through to or from an app";
    }
    return "?";
}

static void audit_question(struct perms *p, const struct perm_request *q, const char *action,
                           const char *outcome, const char *reason, const char *answer,
                           bool offer_always)
{
    if (!p->audit)
        return;
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    audit_set_str(rec, "isolate.permission.category", perm_category_name(q->category));
    audit_set_str(rec, "isolate.permission.stage", perm_stage_name(q->stage));
    audit_set_str(rec, "isolate.user", q->user);
    audit_set_str(rec, "isolate.app", q->app);
    audit_set_str(rec, "isolate.tool", q->tool);
    if (q->caller)
        audit_set_str(rec, "isolate.caller.app", q->caller);
    if (q->call_id)
        audit_set_str(rec, "isolate.call.id", q->call_id);
    audit_set(rec, "isolate.irreversible", json_boolean(q->irreversible));
    audit_set(rec, "isolate.in_plan", json_boolean(q->in_plan));
    audit_set(rec, "isolate.permission.offer_always", json_boolean(offer_always));
    if (answer)
        audit_set_str(rec, "isolate.permission.answer", answer);
    if (reason)
        audit_set_str(rec, "event.reason", reason);
    if (p->debug && q->body) {
        char *body = json_dumps(q->body, JSON_COMPACT | JSON_ENCODE_ANY);
        if (body)
            audit_set(rec, "isolate.body", audit_string(body, strlen(body), 4096));
        free(body);
    }
    /* Best-effort: the decision that lets something happen is its asker's record (call.c,
     * mediate.c, agent_ask), refused when it cannot be written; a loss here is counted
     * and said once per outage by the log itself (hub.c). */
    (void)audit_write(p->audit, rec);
}

static const char *peer_of(const struct perm_request *q)
{
    return q->category == PERM_EXEC ? NULL : (q->caller ? q->caller : "*");
}

/* Stores the answer's scope as a grant; a failure is logged and audited but does not
 * change this answer (the user decided; only the memory of it is lost). */
static void remember(struct perms *p, const struct perm_request *q, enum grant_scope scope)
{
    struct grant g;
    char err[300];
    if (!grant_init(&g, (enum grant_category)q->category, q->app, q->tool, peer_of(q), scope, err,
                    sizeof(err)) ||
        memory_grant_set(p->mem, q->user, &g, q->irreversible, err, sizeof(err)) < 0) {
        log_warnx("the %s grant for %s.%s was not stored: %s", grant_scope_name(scope), q->app,
                  q->tool, err);
        audit_question(p, q, "permission-grant", "failure", err, grant_scope_name(scope), false);
    }
}

static void perms_ask(struct perm_hook *h, const struct perm_request *q, perm_done_fn done,
                      void *done_ud)
{
    struct perms *p = h->ud;
    char err[300], why[512];
    struct grant matched;
    /* A secret in a call's traffic is asked about each time: no grant answers it. */
    bool secret = q->category == PERM_SECRET;
    int d = secret ? GRANT_ASK
                   : memory_grant_check(p->mem, q->user, (enum grant_category)q->category, q->app,
                                        q->tool, peer_of(q), q->irreversible, &matched, err,
                                        sizeof(err));
    if (d < 0) {
        snprintf(why, sizeof(why), PERMS_WHY_STORE_DOWN ": %s", err);
        audit_question(p, q, "permission-answer", "failure", why, NULL, false);
        done(done_ud, PERM_DENY, why);
        return;
    }
    if (d != GRANT_ASK) {
        /* "deny grant ..." is PERMS_WHY_DENY_GRANT: callers look for it. */
        snprintf(why, sizeof(why), "%s grant %s|%s|%s|%s", grant_scope_name(matched.scope),
                 grant_category_name(matched.category), matched.app, matched.tool, matched.peer);
        done(done_ud, d == GRANT_ALLOW ? PERM_ALLOW : PERM_DENY, why);
        return;
    }
    bool offer_always = !q->irreversible;
    audit_question(p, q, "permission-question", "unknown", NULL, NULL, offer_always);
    char asked_why[160] = "";
    enum perm_answer a = p->asker->ask(p->asker, q, offer_always, asked_why, sizeof(asked_why));
    const char *note = "";
    if (a == PERM_ANSWER_ALWAYS && !offer_always) {
        /* Only a script can say it (the prompt does not offer it): allow this once. */
        a = PERM_ANSWER_ONCE;
        note = " (always is never granted for an irreversible tool: once)";
    }
    snprintf(why, sizeof(why), "%s: %s%s", asked_why[0] ? asked_why : "asked", perm_answer_name(a),
             note);
    audit_question(p, q, "permission-answer",
                   perm_answer_decision(a) == PERM_ALLOW ? "success" : "failure", why,
                   perm_answer_name(a), offer_always);
    if (!secret) { /* an answer about a secret is never kept */
        if (a == PERM_ANSWER_SESSION)
            remember(p, q, GRANT_SESSION);
        else if (a == PERM_ANSWER_ALWAYS)
            remember(p, q, GRANT_ALWAYS);
        else if (a == PERM_ANSWER_NEVER)
            remember(p, q, GRANT_DENY);
    }
    done(done_ud, perm_answer_decision(a), why);
}

static void perms_free(struct perm_hook *h)
{
    free(h->ud);
    free(h);
}

struct perm_hook *perms_hook_new(struct memory *mem, struct perm_asker *asker, struct audit *audit,
                                 bool debug)
{
    struct perms *p = xcalloc(1, sizeof(*p));
    p->mem = mem;
    p->asker = asker;
    p->audit = audit;
    p->debug = debug;
    struct perm_hook *h = xcalloc(1, sizeof(*h));
    h->ask = perms_ask;
    h->free = perms_free;
    h->ud = p;
    return h;
}

/* --- scripted answers ---------------------------------------------------------- */

static enum perm_answer scripted_ask(struct perm_asker *a, const struct perm_request *q,
                                     bool offer_always, char *why, size_t whylen)
{
    (void)offer_always;
    return answers_decide(a->ud, q, why, whylen);
}

static bool scripted_confirm(struct perm_asker *a, const char *question)
{
    (void)question;
    return answers_replan(a->ud);
}

static void scripted_free(struct perm_asker *a)
{
    answers_free(a->ud);
    free(a);
}

struct perm_asker *perm_asker_scripted(struct answers *ans)
{
    struct perm_asker *a = xcalloc(1, sizeof(*a));
    a->ask = scripted_ask;
    a->confirm = scripted_confirm;
    a->free = scripted_free;
    a->ud = ans;
    answers_ref(ans);
    return a;
}
