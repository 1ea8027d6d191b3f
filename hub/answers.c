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
    enum perm_decision decision;
};

struct elicit_answer {
    char *app;
    json_t *result; /* {"action": ..., "content": ...} */
    bool used;
};

struct answers {
    int refs; /* shared by the two hooks */
    enum perm_decision dflt;
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

static void perm_ask(struct perm_hook *h, const struct perm_request *q, perm_done_fn done,
                     void *done_ud)
{
    struct answers *a = h->ud;
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
        char why[48];
        snprintf(why, sizeof(why), "scripted rule %zu", i);
        done(done_ud, r->decision, why);
        return;
    }
    done(done_ud, a->dflt, "scripted default");
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

static bool parse_decision(struct jf_ctx *c, const json_t *o, const char *where, const char *key,
                           bool required, enum perm_decision *d)
{
    const char *s = NULL;
    if (!jf_string(c, o, where, key, required, 16, &s))
        return false;
    if (!s)
        return true;
    if (strcmp(s, "allow") == 0)
        *d = PERM_ALLOW;
    else if (strcmp(s, "deny") == 0)
        *d = PERM_DENY;
    else
        return jf_fail(c, where, key, "must be \"allow\" or \"deny\"");
    return true;
}

static bool load_rules(struct jf_ctx *c, const json_t *root, struct answers *a)
{
    static const char *const top[] = {"default", "rules", "elicitation", NULL};
    static const char *const rkeys[] = {"category", "stage",        "app",     "tool",     "caller",
                                        "user",     "irreversible", "in_plan", "decision", NULL};
    static const char *const ekeys[] = {"app", "action", "content", NULL};
    if (!jf_object(c, root, "", top) || !parse_decision(c, root, "", "default", false, &a->dflt))
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
            strcmp(rule->category, "data") != 0 && strcmp(rule->category, "collab") != 0)
            return jf_fail(c, where, "category", "must be exec, data, collab or *");
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

int answers_hooks(const char *spec, struct perm_hook **perm, struct elicit_hook **elicit, char *err,
                  size_t errlen)
{
    struct answers *a = xcalloc(1, sizeof(*a));
    a->dflt = PERM_DENY;
    if (strcmp(spec, "allow") == 0) {
        a->dflt = PERM_ALLOW;
    } else if (strcmp(spec, "deny") != 0) {
        struct jf_ctx c = {.file = spec, .err = err, .errlen = errlen};
        json_t *root = jf_load(&c, ANSWERS_MAX_BYTES);
        bool ok = root && load_rules(&c, root, a);
        json_decref(root);
        if (!ok) {
            a->refs = 1;
            answers_unref(a);
            return -1;
        }
    }
    a->refs = 2;
    struct perm_hook *p = xcalloc(1, sizeof(*p));
    p->ask = perm_ask;
    p->free = perm_free;
    p->ud = a;
    struct elicit_hook *e = xcalloc(1, sizeof(*e));
    e->create = elicit_create;
    e->free = elicit_free;
    e->ud = a;
    *perm = p;
    *elicit = e;
    return 0;
}
