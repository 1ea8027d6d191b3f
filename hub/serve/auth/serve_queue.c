/* Approvals out of band: a permission question that cannot be put to the client (it
 * declared no elicitation, runs in a non-interactive mode, has too many open, or the
 * operator's policy sends every question here: serve.approvals_only) waits in this
 * queue, bounded in number and in time (serve.approval_wait_s), for an answer given
 * with `hub approvals allow|deny ID` on the control socket (serve_control.c). The client
 * is told at once what waits and how it is answered (a log message, and progress when
 * it asked for progress); a question is withdrawn when its call is cancelled or its
 * session ends, and one nobody answered in time is left to --answers (default no).
 *
 * Control requests:
 *   {"op":"approvals","user":U}      -> {"ok":true,"approvals":[{"id",...}]}
 *   {"op":"answer","id":ID,"decision":"allow"|"deny","for":"once"|"session"|"always"}
 * Root sees and answers every user's questions (or one user's, with "user"); another
 * account (serve.control_users "unix") only its own. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Waiting at once, in all and per user: beyond them --answers decides at once. */
#define QUEUE_MAX 256
#define QUEUE_MAX_PER_USER 32
#define QUESTION_MAX 4600

struct approval {
    TAILQ_ENTRY(approval) link;
    struct serve *sv;
    char id[9];
    struct serve_call *sc;
    char user[65], app[65], tool[65], caller[65];
    enum perm_category category;
    enum perm_stage stage;
    bool irreversible;
    char *question;
    time_t asked; /* wall clock, for the listing */
    unsigned wait_s;
    struct event *ev_expire;
    serve_approval_fn done;
    void *ud;
};

static size_t count_user(const struct serve *sv, const char *user)
{
    size_t n = 0;
    const struct approval *a;
    TAILQ_FOREACH(a, &sv->approvals, link)
    if (strcmp(a->user, user) == 0)
        n++;
    return n;
}

/* Takes a off the queue and tells its owner: answered (with a) or not (reason). */
static void settle(struct approval *a, bool answered, enum perm_answer ans, const char *reason)
{
    struct serve *sv = a->sv;
    TAILQ_REMOVE(&sv->approvals, a, link);
    sv->n_approvals--;
    event_free(a->ev_expire);
    json_t *rec = haudit_new("serve-approval", answered ? "success" : "failure");
    audit_set_str(rec, "isolate.serve.approval", a->id);
    audit_set_str(rec, "isolate.user", a->user);
    audit_set_str(rec, "isolate.app", a->app);
    audit_set_str(rec, "isolate.tool", a->tool);
    audit_set_str(rec, "event.reason", reason);
    haudit_note(sv->hub, rec);
    a->done(a->ud, answered, ans, reason);
    free(a->question);
    free(a);
}

static void on_expire(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct approval *a = ud;
    char reason[200];
    snprintf(reason, sizeof(reason), "nobody answered question %s with hub approvals within %u s",
             a->id, a->wait_s);
    settle(a, false, PERM_ANSWER_NO, reason);
}

/* The client learns what waits and how it is answered. */
static void tell_client(const struct approval *a)
{
    struct serve_session *ss = a->sc->ss;
    if (!ss)
        return;
    const char *nl = strchr(a->question, '\n');
    char text[900];
    snprintf(text, sizeof(text),
             "%.*s ... This question waits for an answer out of band, up to %u s: on the hub's "
             "host run `hub approvals allow %s` (add --for session or --for always to keep the "
             "answer) or `hub approvals deny %s`.",
             nl ? (int)(nl - a->question) : 400, a->question, a->wait_s, a->id, a->id);
    json_t *p = json_pack("{s:s,s:s,s:s}", "level", "warning", "logger", "isolategpt/approvals",
                          "data", text);
    serve_session_send(ss, jrpc_notification("notifications/message", p), a->sc->req_id);
    if (a->sc->progress_token)
        serve_session_send(
            ss,
            jrpc_notification("notifications/progress",
                              json_pack("{s:O,s:i,s:s}", "progressToken", a->sc->progress_token,
                                        "progress", 0, "message", text)),
            a->sc->req_id);
}

int serve_queue_add(struct serve *sv, struct serve_call *sc, const char *user,
                    const struct perm_request *q, const char *question, serve_approval_fn done,
                    void *ud, char *id, size_t idlen)
{
    if (sv->n_approvals >= QUEUE_MAX || count_user(sv, user) >= QUEUE_MAX_PER_USER)
        return -1;
    struct approval *a = xcalloc(1, sizeof(*a));
    a->sv = sv;
    char full[33];
    audit_new_id(full);
    str_copy(a->id, full, sizeof(a->id)); /* 8 hex digits: short enough to type */
    a->sc = sc;
    str_copy(a->user, user, sizeof(a->user));
    str_copy(a->app, q->app ? q->app : "", sizeof(a->app));
    str_copy(a->tool, q->tool ? q->tool : "", sizeof(a->tool));
    str_copy(a->caller, q->caller ? q->caller : "", sizeof(a->caller));
    a->category = q->category;
    a->stage = q->stage;
    a->irreversible = q->irreversible;
    a->question = strndup(question, QUESTION_MAX);
    a->asked = time(NULL);
    a->wait_s = sv->cfg->approval_wait_s ? sv->cfg->approval_wait_s : SERVE_APPROVAL_WAIT_S;
    a->done = done;
    a->ud = ud;
    a->ev_expire = evtimer_new(sv->base, on_expire, a);
    struct timeval tv = {.tv_sec = a->wait_s};
    evtimer_add(a->ev_expire, &tv);
    TAILQ_INSERT_TAIL(&sv->approvals, a, link);
    sv->n_approvals++;
    str_copy(id, a->id, idlen);
    json_t *rec = haudit_new("serve-approval", "unknown");
    audit_set_str(rec, "isolate.serve.approval", a->id);
    audit_set_str(rec, "isolate.user", a->user);
    audit_set_str(rec, "isolate.app", a->app);
    audit_set_str(rec, "isolate.tool", a->tool);
    audit_set_str(rec, "event.reason", "waiting for an answer out of band");
    haudit_note(sv->hub, rec);
    tell_client(a);
    return 0;
}

void serve_queue_withdraw(struct serve *sv, const struct serve_call *sc, const char *why)
{
    struct approval *a = TAILQ_FIRST(&sv->approvals), *next;
    for (; a; a = next) {
        next = TAILQ_NEXT(a, link);
        if (a->sc == sc)
            settle(a, false, PERM_ANSWER_NO, why);
    }
}

void serve_queue_withdraw_session(struct serve *sv, const struct serve_session *ss, const char *why)
{
    /* From the head again after each one: a settled question may end its call and
     * with it others. */
    for (bool again = true; again;) {
        again = false;
        struct approval *a;
        TAILQ_FOREACH(a, &sv->approvals, link)
        if (a->sc->ss == ss) {
            settle(a, false, PERM_ANSWER_NO, why);
            again = true;
            break;
        }
    }
}

void serve_queue_free(struct serve *sv)
{
    while (!TAILQ_EMPTY(&sv->approvals))
        settle(TAILQ_FIRST(&sv->approvals), false, PERM_ANSWER_NO, "the hub is shutting down");
}

/* ---- the control socket's requests ---- */

static json_t *describe(const struct approval *a)
{
    char when[32];
    struct tm tm;
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&a->asked, &tm));
    long left = (long)a->wait_s - (long)(time(NULL) - a->asked);
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:s,s:s,s:i}", "id", a->id, "user", a->user,
                     "category", perm_category_name(a->category), "stage",
                     perm_stage_name(a->stage), "app", a->app, "tool", a->tool, "caller", a->caller,
                     "irreversible", a->irreversible, "question", a->question, "asked", when,
                     "expires_in_s", left > 0 ? left : 0);
}

static void op_list(struct ctl_conn *c, const json_t *req)
{
    const char *want = json_string_value(json_object_get(req, "user"));
    char user[65];
    bool root = serve_control_peer_privileged(c);
    if (!root && !serve_control_user(c, want, user, sizeof(user)))
        return;
    const char *only = root ? want : user;
    json_t *list = json_array();
    struct approval *a;
    TAILQ_FOREACH(a, &serve_control_serve(c)->approvals, link)
    if (!only || strcmp(a->user, only) == 0)
        json_array_append_new(list, describe(a));
    serve_control_reply(c, json_pack("{s:b,s:o}", "ok", 1, "approvals", list));
}

static void op_answer(struct ctl_conn *c, const json_t *req)
{
    struct serve *sv = serve_control_serve(c);
    const char *id = json_string_value(json_object_get(req, "id"));
    const char *decision = json_string_value(json_object_get(req, "decision"));
    const char *scope = json_string_value(json_object_get(req, "for"));
    if (!id || !decision || (strcmp(decision, "allow") != 0 && strcmp(decision, "deny") != 0)) {
        serve_control_refuse(c, "answer needs an id and a decision (allow or deny)");
        return;
    }
    if (!scope)
        scope = "once";
    enum perm_answer ans;
    bool allow = strcmp(decision, "allow") == 0;
    if (strcmp(scope, "once") == 0)
        ans = allow ? PERM_ANSWER_ONCE : PERM_ANSWER_NO;
    else if (strcmp(scope, "always") == 0)
        ans = allow ? PERM_ANSWER_ALWAYS : PERM_ANSWER_NEVER;
    else if (strcmp(scope, "session") == 0 && allow)
        ans = PERM_ANSWER_SESSION;
    else {
        serve_control_refuse(c, "--for must be once, session or always (deny: once or always)");
        return;
    }
    struct approval *a;
    TAILQ_FOREACH(a, &sv->approvals, link)
    if (strcmp(a->id, id) == 0)
        break;
    char user[65];
    /* Another account's question is as good as absent: it learns nothing of it. */
    if (a && !serve_control_peer_privileged(c) &&
        (!serve_control_user(c, NULL, user, sizeof(user)) || strcmp(user, a->user) != 0))
        a = NULL;
    if (!a) {
        serve_control_refuse(c, "no question %.16s is waiting (answered, withdrawn or expired?)",
                             id);
        return;
    }
    if (ans == PERM_ANSWER_ALWAYS && a->irreversible) {
        serve_control_refuse(c, "%s.%s cannot be undone: \"always\" is not offered for it", a->app,
                             a->tool);
        return;
    }
    char reason[200];
    snprintf(reason, sizeof(reason), "the user answered %s through hub approvals (uid %u)",
             perm_answer_name(ans), serve_control_peer_uid(c));
    serve_control_reply(
        c, json_pack("{s:b,s:s,s:s}", "ok", 1, "id", a->id, "answer", perm_answer_name(ans)));
    settle(a, true, ans, reason);
}

bool serve_queue_control(struct ctl_conn *c, const char *op, const json_t *req)
{
    if (strcmp(op, "approvals") == 0)
        op_list(c, req);
    else if (strcmp(op, "answer") == 0)
        op_answer(c, req);
    else
        return false;
    return true;
}
