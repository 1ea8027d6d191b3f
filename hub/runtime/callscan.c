/* A call's arguments and result through the secret scan (secretscan.h), with the app's
 * policy, one audit record per scan that finds something, the call refused when the
 * policy blocks, and the user asked (the permission hook, category secret) when it says
 * ask: the traffic goes on untouched only on the user's yes. */
#include "internal.h"
#include "secrets/secrets.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What to do with a kind: the manifest's word for every kind, else the default. */
static int policy_for(const struct manifest *m, enum scan_kind k)
{
    if (m->secret_scan)
        return m->secret_scan;
    /* A stand-in is worth nothing but through netproxy, to its own spoke's hosts: on
     * record, not in the way (a spoke may show what it holds). */
    return k == SCAN_SECRET_VALUE ? SCAN_BLOCK : k == SCAN_STANDIN ? SCAN_LOG : SCAN_REDACT;
}

/* The stand-ins the running spokes hold, borrowed from them for the scan. */
static struct scan_standin *live_standins(struct hub *h, size_t *n)
{
    size_t cap = 0;
    struct proc *p;
    LIST_FOREACH(p, &h->procs, link)
    cap += p->secrets.n;
    struct scan_standin *v = xcalloc(cap ? cap : 1, sizeof(*v));
    *n = 0;
    LIST_FOREACH(p, &h->procs, link)
    for (size_t i = 0; i < p->secrets.n && *n < cap; i++)
        if (p->secrets.b[i].standin)
            v[(*n)++] = (struct scan_standin){p->secrets.b[i].standin, p->secrets.b[i].meta.name};
    return v;
}

/* A question about a secret in c's traffic, open while the user is asked. */
struct scan_ask {
    struct call *c;
    json_t *result; /* held until the answer; NULL: the arguments (c->args) */
    json_t *rec;    /* the secret-detected record, written with the answer */
    uint64_t t0;    /* when the user was asked (the question's span) */
};

static void on_scan_answer(void *ud, enum perm_decision d, const char *reason)
{
    struct scan_ask *sa = ud;
    struct call *c = sa->c;
    bool allow = d == PERM_ALLOW;
    json_t *rec = sa->rec;
    json_object_set_new(json_object_get(rec, "event"), "outcome",
                        json_string(allow ? "success" : "failure"));
    audit_set(rec, "event.type", json_pack("[s]", allow ? "allowed" : "denied"));
    audit_set_str(rec, "isolate.secret_scan.answer", allow ? "allowed" : "denied");
    audit_set_str(rec, "isolate.permission.reason", reason ? reason : "");
    char name[200];
    snprintf(name, sizeof(name), "question secret %s.%s", c->m->name, c->tool->name);
    haudit_child_span(c, name, sa->t0, allow, reason, rec);
    int logged = haudit_write(c->hub, rec);
    int err = errno;
    call_resume(c);
    if (c->cancelled)
        call_fail(c, HUB_ERR_CANCELLED, "cancelled", "cancelled while asking");
    else if (!allow)
        call_fail(c, HUB_ERR_DENIED, "secret-scan",
                  "%s.%s: letting the secret in its %s through was denied%s%.300s", c->m->name,
                  c->tool->name, sa->result ? "result" : "arguments", reason && *reason ? ": " : "",
                  reason ? reason : "");
    else if (logged < 0) {
        char msg[600];
        haudit_refusal(c->hub, err, msg, sizeof(msg), "pass %s.%s's %s on", c->m->name,
                       c->tool->name, sa->result ? "result" : "arguments");
        call_fail(c, HUB_ERR_AUDIT, "audit", "%s", msg);
    } else
        call_scan_resume(c, sa->result);
    json_decref(sa->result);
    free(sa);
}

/* Asks the user whether what was found (what) may go on; rec is written with the answer.
 * The call leaves its spoke's window meanwhile (a result is in; the user's time is not
 * the spoke's), and its deadline is paused. */
static void ask_user(struct call *c, json_t *v, bool result, json_t *rec, const char *what)
{
    struct scan_ask *sa = xcalloc(1, sizeof(*sa));
    sa->c = c;
    sa->rec = rec;
    if (result) {
        sa->result = json_incref(v);
        spoke_call_off(c->target, c);
        c->state = CALL_ASK_EXEC;
    }
    c->asked = true;
    struct perm_request q = {
        .category = PERM_SECRET,
        .stage = result ? PERM_STAGE_RELAY : PERM_STAGE_CALL,
        .user = c->target->user,
        .app = c->m->name,
        .tool = c->tool->name,
        .caller = c->caller ? c->caller->m->name : NULL,
        .body = NULL,
        .irreversible = true, /* never "always": a secret is asked about each time */
        .in_plan = c->in_plan,
        .call_id = c->id,
        .origin = c->origin,
        .detail = what,
    };
    call_pause(c);
    sa->t0 = now_mono_ns();
    c->hub->perm->ask(c->hub->perm, &q, on_scan_answer, sa);
}

int call_scan_traffic(struct call *c, json_t *v, bool result)
{
    struct hub *h = c->hub;
    size_t n_st;
    struct scan_standin *st = live_standins(h, &n_st);
    struct scan_report r = {0};
    bool none[SCAN_NKINDS] = {0};
    secretscan_json(v, st, n_st, none, &r);
    size_t total = 0;
    for (int k = 0; k < SCAN_NKINDS; k++)
        total += r.hits[k];
    if (total == 0) {
        free(st);
        return 0;
    }
    /* The strictest policy among the kinds found decides; redaction of those kinds
     * whose policy is redact happens only when the call goes on. */
    bool block = false, redact[SCAN_NKINDS] = {0}, any_redact = false;
    int action = SCAN_LOG;
    for (int k = 0; k < SCAN_NKINDS; k++) {
        if (!r.hits[k])
            continue;
        int p = policy_for(c->m, (enum scan_kind)k);
        if (p == SCAN_BLOCK || p == SCAN_ASK)
            block = true;
        if (p == SCAN_REDACT)
            redact[k] = any_redact = true;
        if (p == SCAN_BLOCK || p == SCAN_ASK || (p == SCAN_REDACT && action == SCAN_LOG))
            action = p;
    }
    if (block)
        action = c->m->secret_scan == SCAN_ASK ? SCAN_ASK : SCAN_BLOCK;
    if (!block && any_redact) {
        struct scan_report again = {0};
        secretscan_json(v, st, n_st, redact, &again);
    }
    free(st);

    const char *dir = result ? "result" : "arguments";
    json_t *rec = haudit_new("secret-detected", block ? "failure" : "success");
    audit_set(rec, "event.type", json_pack("[s]", block ? "denied" : "info"));
    audit_set_str(rec, "event.reason", result ? "secret-in-result" : "secret-in-arguments");
    audit_set_str(rec, "rule.name", "secret-in-tool-traffic");
    haudit_call(rec, c);
    json_t *kinds = json_array(), *counts = json_object();
    for (int k = 0; k < SCAN_NKINDS; k++)
        if (r.hits[k]) {
            json_array_append_new(kinds, json_string(secretscan_kind_name((enum scan_kind)k)));
            json_object_set_new(counts, secretscan_kind_name((enum scan_kind)k),
                                json_integer((json_int_t)r.hits[k]));
        }
    audit_set(rec, "isolate.secret_scan.kinds", kinds);
    audit_set(rec, "isolate.secret_scan.counts", counts);
    audit_set_str(rec, "isolate.secret_scan.direction", dir);
    audit_set_str(rec, "isolate.secret_scan.action", secretscan_policy_name(action));
    if (r.name[0])
        audit_set_str(rec, "isolate.secret.name", r.name);
    if (r.shape)
        audit_set_str(rec, "isolate.secret_scan.shape", r.shape);
    char what[200];
    snprintf(what, sizeof(what), "%s%s%s%s%s", r.name[0] ? "the secret " : "",
             r.name[0] ? r.name : "", r.name[0] && r.shape ? " and " : "", r.shape ? r.shape : "",
             !r.name[0] && !r.shape ? "a private key" : "");
    if (action == SCAN_ASK) {
        ask_user(c, v, result, rec, what);
        return 1;
    }
    if (block) {
        haudit_note(h, rec);
        call_fail(c, HUB_ERR_DENIED, "secret-scan",
                  "%s.%s: its %s %s %s: refused (secret_scan: %s%s)", c->m->name, c->tool->name,
                  dir, result ? "carries" : "carry", what, secretscan_policy_name(action),
                  c->m->secret_scan ? "" : ", the default for a secret's value");
        return -1;
    }
    /* Going on with the secret in it (log) or redacted: the record must be there. */
    if (haudit_write(h, rec) < 0) {
        int e = errno;
        char msg[600];
        haudit_refusal(h, e, msg, sizeof(msg), "pass %s.%s's %s on", c->m->name, c->tool->name,
                       dir);
        call_fail(c, HUB_ERR_AUDIT, "audit", "%s", msg);
        return -1;
    }
    return 0;
}
