/* The scripted user (docs/benchmark.md, "Defences"): answers the hub's consent
 * questions the way the user who typed the task's request would. A question about a
 * tool the ground truth calls, with arguments that agree with the ground truth's (the
 * literals it wrote, the values an honest extraction reads), is allowed once; anything
 * else is denied, and a re-plan is never wanted. Values the ground truth takes from
 * another step's result are not compared: the user cannot know them in advance. */
#include "agentbench_impl.h"
#include "jsonpath.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

struct ab_user {
    struct perm_asker asker;
    bool consent;
    const struct ab_task *task;
    unsigned questions, denied;
};

/* The value the ground truth gives argument v, when the user can know it; NULL when
 * it comes from a tool's result (then anything is accepted). New reference. */
static json_t *expected(const struct ab_task *t, const json_t *v)
{
    const char *ref = json_string_value(json_object_get(v, "$ref"));
    if (!ref)
        return json_incref((json_t *)v);
    size_t n = strcspn(ref, ".");
    size_t i;
    json_t *st;
    json_array_foreach(t->plan, i, st)
    {
        const char *id = json_string_value(json_object_get(st, "id"));
        if (strlen(id) != n || strncmp(id, ref, n) != 0 || !ab_step_is_extract(st))
            continue;
        const json_t *ans = json_object_get(json_object_get(st, "extract"), "answer");
        json_t *val = ref[n] == '.' ? jsonpath_get(ans, ref + n + 1) : (json_t *)ans;
        return val ? json_incref(val) : NULL;
    }
    return NULL;
}

static bool agrees(const struct ab_task *t, const json_t *step, const json_t *body)
{
    const json_t *args = json_object_get(step, "arguments");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        const json_t *gt = json_object_get(args, k);
        if (!gt)
            continue;
        json_t *want = expected(t, gt);
        bool ok = !want || jsonpath_equal(want, v);
        json_decref(want);
        if (!ok)
            return false;
    }
    return true;
}

static enum perm_answer ask(struct perm_asker *a, const struct perm_request *q, bool offer_always,
                            char *why, size_t whylen)
{
    (void)offer_always;
    struct ab_user *u = a->ud;
    if (!u->consent) {
        snprintf(why, whylen, "consent off: not asked");
        return PERM_ANSWER_ONCE;
    }
    u->questions++;
    if (u->task && q->category != PERM_COLLAB) {
        char full[160];
        snprintf(full, sizeof(full), "%s.%s", q->app, q->tool);
        size_t i;
        json_t *st;
        json_array_foreach(u->task->plan, i, st)
        {
            const char *tool = json_string_value(json_object_get(st, "tool"));
            if (tool && strcmp(tool, full) == 0 && agrees(u->task, st, q->body)) {
                snprintf(why, whylen, "the request asked for it (step %s)",
                         json_string_value(json_object_get(st, "id")));
                return PERM_ANSWER_ONCE;
            }
        }
    }
    u->denied++;
    snprintf(why, whylen, "the request did not ask for this");
    return PERM_ANSWER_NO;
}

static bool confirm(struct perm_asker *a, const char *question)
{
    (void)a;
    (void)question;
    return false;
}

static void no_free(struct perm_asker *a)
{
    (void)a; /* a view of the ab_user, which its owner frees */
}

struct ab_user *ab_user_new(bool consent)
{
    struct ab_user *u = xcalloc(1, sizeof(*u));
    u->consent = consent;
    u->asker = (struct perm_asker){.ask = ask, .confirm = confirm, .free = no_free, .ud = u};
    return u;
}

void ab_user_set_case(struct ab_user *u, const struct ab_task *user)
{
    u->task = user;
    u->questions = u->denied = 0;
}

unsigned ab_user_questions(const struct ab_user *u)
{
    return u->questions;
}

unsigned ab_user_denied(const struct ab_user *u)
{
    return u->denied;
}

enum perm_answer ab_user_answer(struct ab_user *u, const struct perm_request *q)
{
    char why[200];
    return ask(&u->asker, q, false, why, sizeof(why));
}

struct perm_asker *ab_user_asker(struct ab_user *u)
{
    return &u->asker;
}
