/* Scripted answers (`--answers allow|deny|FILE`); the format is in answers.h. */
#include "answers.h"
#include "jsonfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANSWERS_MAX_BYTES (256 * 1024)
#define MAX_RULES 256

/* A rule field: NULL (absent or "*") matches anything. */
struct rule {
    char *category, *stage, *app, *tool, *caller, *user;
    int irreversible; /* -1 any, 0, 1 */
    int in_plan;
    enum perm_answer decision;
};

struct elicit_answer {
    char *app;
    json_t *result; /* {"action": ..., "content": ...} */
    bool used;
};

struct answers {
    int refs; /* the loader's and each hook's */
    enum perm_answer dflt;
    bool replan;
    struct rule *rules;
    size_t n_rules;
    struct elicit_answer *elicits;
    size_t n_elicits;
};

static void answers_unref(struct answers *a)
{
    if (--a->refs > 0)
        return;
    for (size_t i = 0; i < a->n_rules; i++) {
        struct rule *r = &a->rules[i];
        free(r->category);
        free(r->stage);
        free(r->app);
        free(r->tool);
        free(r->caller);
        free(r->user);
    }
    free(a->rules);
    for (size_t i = 0; i < a->n_elicits; i++) {
        free(a->elicits[i].app);
        json_decref(a->elicits[i].result);
    }
    free(a->elicits);
    free(a);
}

static bool field_matches(const char *pattern, const char *value)
{
    if (!pattern)
        return true;
    if (!value)
        return pattern[0] == '\0';
    return strcmp(pattern, value) == 0;
}

enum perm_answer answers_decide(struct answers *a, const struct perm_request *q, char *why,
                                size_t whylen)
{
    for (size_t i = 0; i < a->n_rules; i++) {
        const struct rule *r = &a->rules[i];
        if (!field_matches(r->category, perm_category_name(q->category)) ||
            !field_matches(r->stage, perm_stage_name(q->stage)) || !field_matches(r->app, q->app) ||
            !field_matches(r->tool, q->tool) ||
            !field_matches(r->caller, q->caller ? q->caller : "") ||
            !field_matches(r->user, q->user) ||
            (r->irreversible >= 0 && r->irreversible != (int)q->irreversible) ||
            (r->in_plan >= 0 && r->in_plan != (int)q->in_plan))
            continue;
        snprintf(why, whylen, "scripted rule %zu", i);
        return r->decision;
    }
    snprintf(why, whylen, "scripted default");
    return a->dflt;
}

bool answers_replan(const struct answers *a)
{
    return a->replan;
}

static void perm_ask(struct perm_hook *h, const struct perm_request *q, perm_done_fn done,
                     void *done_ud)
{
    char why[48];
    enum perm_answer ans = answers_decide(h->ud, q, why, sizeof(why));
    done(done_ud, perm_answer_decision(ans), why);
}

static void perm_free(struct perm_hook *h)
{
    answers_unref(h->ud);
    free(h);
}

static void elicit_create(struct elicit_hook *h, const struct hook_request *req, hook_done_fn done,
                          void *done_ud)
{
    struct answers *a = h->ud;
    for (size_t i = 0; i < a->n_elicits; i++) {
        struct elicit_answer *e = &a->elicits[i];
        if (e->used || (strcmp(e->app, "*") != 0 && strcmp(e->app, req->app) != 0))
            continue;
        e->used = true;
        done(done_ud, json_deep_copy(e->result), 0, NULL);
        return;
    }
    done(done_ud, json_pack("{s:s}", "action", "decline"), 0, NULL);
}

static void elicit_free(struct elicit_hook *h)
{
    answers_unref(h->ud);
    free(h);
}

static bool opt_str(struct jf_ctx *c, const json_t *o, const char *where, const char *key,
                    char **dst)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return true;
    if (!json_is_string(v) || json_string_length(v) > 128)
        return jf_fail(c, where, key, "must be a string of at most 128 bytes");
    if (strcmp(json_string_value(v), "*") != 0)
        *dst = xstrdup(json_string_value(v));
    return true;
}

static bool opt_tristate(struct jf_ctx *c, const json_t *o, const char *where, const char *key,
                         int *dst)
{
    bool b;
    *dst = -1;
    if (!json_object_get(o, key))
        return true;
    if (!jf_bool(c, o, where, key, false, &b))
        return false;
    *dst = b;
    return true;
}

static bool parse_answer(const char *s, enum perm_answer *d)
{
    static const struct {
        const char *name;
        enum perm_answer answer;
    } names[] = {{"allow", PERM_ANSWER_ONCE},      {"once", PERM_ANSWER_ONCE},
                 {"session", PERM_ANSWER_SESSION}, {"always", PERM_ANSWER_ALWAYS},
                 {"deny", PERM_ANSWER_NO},         {"no", PERM_ANSWER_NO},
                 {"never", PERM_ANSWER_NEVER}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(s, names[i].name) == 0) {
            *d = names[i].answer;
            return true;
        }
    return false;
}

static bool parse_decision(struct jf_ctx *c, const json_t *o, const char *where, const char *key,
                           bool required, enum perm_answer *d)
{
    const char *s = NULL;
    if (!jf_string(c, o, where, key, required, 16, &s))
        return false;
    if (!s)
        return true;
    if (!parse_answer(s, d))
        return jf_fail(c, where, key, "must be allow, once, session, always, deny, no or never");
    return true;
}

static bool load_rules(struct jf_ctx *c, const json_t *root, struct answers *a)
{
    static const char *const top[] = {"default", "rules", "elicitation", "replan", NULL};
    static const char *const rkeys[] = {"category", "stage",        "app",     "tool",     "caller",
                                        "user",     "irreversible", "in_plan", "decision", NULL};
    static const char *const ekeys[] = {"app", "action", "content", NULL};
    if (!jf_object(c, root, "", top) || !parse_decision(c, root, "", "default", false, &a->dflt) ||
        !jf_bool(c, root, "", "replan", false, &a->replan))
        return false;
    json_t *rules = json_object_get(root, "rules");
    if (rules && (!json_is_array(rules) || json_array_size(rules) > MAX_RULES))
        return jf_fail(c, "", "rules", "must be an array of at most %d rules", MAX_RULES);
    a->rules = xcalloc(json_array_size(rules) + 1, sizeof(*a->rules));
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r)
    {
        char where[32];
        snprintf(where, sizeof(where), "rules[%zu]", i);
        struct rule *rule = &a->rules[a->n_rules++];
        if (!jf_object(c, r, where, rkeys) || !opt_str(c, r, where, "category", &rule->category) ||
            !opt_str(c, r, where, "stage", &rule->stage) ||
            !opt_str(c, r, where, "app", &rule->app) ||
            !opt_str(c, r, where, "tool", &rule->tool) ||
            !opt_str(c, r, where, "caller", &rule->caller) ||
            !opt_str(c, r, where, "user", &rule->user) ||
            !opt_tristate(c, r, where, "irreversible", &rule->irreversible) ||
            !opt_tristate(c, r, where, "in_plan", &rule->in_plan) ||
            !parse_decision(c, r, where, "decision", true, &rule->decision))
            return false;
        if (rule->category && strcmp(rule->category, "exec") != 0 &&
            strcmp(rule->category, "data") != 0 && strcmp(rule->category, "collab") != 0 &&
            strcmp(rule->category, "secret") != 0)
            return jf_fail(c, where, "category", "must be exec, data, collab, secret or *");
        if (rule->stage && strcmp(rule->stage, "call") != 0 && strcmp(rule->stage, "relay") != 0)
            return jf_fail(c, where, "stage", "must be call, relay or *");
    }
    json_t *el = json_object_get(root, "elicitation");
    if (el && (!json_is_array(el) || json_array_size(el) > MAX_RULES))
        return jf_fail(c, "", "elicitation", "must be an array of at most %d answers", MAX_RULES);
    a->elicits = xcalloc(json_array_size(el) + 1, sizeof(*a->elicits));
    json_array_foreach(el, i, r)
    {
        char where[40];
        snprintf(where, sizeof(where), "elicitation[%zu]", i);
        const char *app = NULL, *action = NULL;
        if (!jf_object(c, r, where, ekeys) || !jf_string(c, r, where, "app", true, 64, &app) ||
            !jf_string(c, r, where, "action", true, 16, &action))
            return false;
        if (strcmp(action, "accept") != 0 && strcmp(action, "decline") != 0 &&
            strcmp(action, "cancel") != 0)
            return jf_fail(c, where, "action", "must be accept, decline or cancel");
        json_t *content = json_object_get(r, "content");
        if (content && (strcmp(action, "accept") != 0 || !json_is_object(content)))
            return jf_fail(c, where, "content", "only an accept carries content (an object)");
        struct elicit_answer *e = &a->elicits[a->n_elicits++];
        e->app = xstrdup(app);
        e->result = json_pack("{s:s}", "action", action);
        if (content)
            json_object_set(e->result, "content", content);
    }
    return true;
}

struct answers *answers_load(const char *spec, char *err, size_t errlen)
{
    struct answers *a = xcalloc(1, sizeof(*a));
    a->refs = 1;
    a->dflt = PERM_ANSWER_NO;
    if (strcmp(spec, "allow") == 0) {
        a->dflt = PERM_ANSWER_ONCE;
    } else if (strcmp(spec, "deny") != 0) {
        struct jf_ctx c = {.file = spec, .err = err, .errlen = errlen};
        json_t *root = jf_load(&c, ANSWERS_MAX_BYTES);
        bool ok = root && load_rules(&c, root, a);
        json_decref(root);
        if (!ok) {
            answers_unref(a);
            return NULL;
        }
    }
    return a;
}

struct answers *answers_ref(struct answers *a)
{
    a->refs++;
    return a;
}

void answers_free(struct answers *a)
{
    if (a)
        answers_unref(a);
}

struct elicit_hook *answers_elicit_hook(struct answers *a)
{
    a->refs++;
    struct elicit_hook *e = xcalloc(1, sizeof(*e));
    e->create = elicit_create;
    e->free = elicit_free;
    e->ud = a;
    return e;
}

int answers_hooks(const char *spec, struct perm_hook **perm, struct elicit_hook **elicit, char *err,
                  size_t errlen)
{
    struct answers *a = answers_load(spec, err, errlen);
    if (!a)
        return -1;
    a->refs++;
    struct perm_hook *p = xcalloc(1, sizeof(*p));
    p->ask = perm_ask;
    p->free = perm_free;
    p->ud = a;
    *perm = p;
    *elicit = answers_elicit_hook(a);
    answers_unref(a); /* the loader's reference: the hooks hold theirs */
    return 0;
}
