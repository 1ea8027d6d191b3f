/* Argument-source policies (policy.h). */
#include "policy.h"
#include "runtime/runtime.h"
#include "util.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATTERN_MAX 160

struct rule {
    char *tool;     /* "APP.TOOL", "APP.*", "*" */
    char *argument; /* a name or "*" */
    char **from;    /* patterns */
    size_t n_from;
    bool deny_else;
    bool from_manifest;
};

struct policy {
    struct rule *v;
    size_t n;
};

const char *policy_decision_name(enum policy_decision d)
{
    return d == POLICY_ALLOW ? "allow" : d == POLICY_DENY ? "deny" : "ask";
}

/* Patterns: printable, no spaces, bounded; '*' is the only wildcard that matters. */
static bool pattern_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > PATTERN_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == '[' || *p == '?' || *p == '\\')
            return false;
    return true;
}

static int add_rule(struct policy *p, const char *tool, const char *argument, const json_t *body,
                    bool from_manifest, const char *where, char *err, size_t errlen)
{
    static const char *const keys[] = {"tool", "argument", "from", "else", "comment", NULL};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        bool known = false;
        for (const char *const *kk = keys; *kk; kk++)
            known = known || strcmp(*kk, k) == 0;
        if (!known || (from_manifest && (strcmp(k, "tool") == 0 || strcmp(k, "argument") == 0)))
            return err_fail(err, errlen, "%s: unknown key \"%s\"", where, k);
    }
    const json_t *from = json_object_get(body, "from");
    if (!json_is_array(from) || json_array_size(from) > 64)
        return err_fail(err, errlen, "%s.from: an array of at most 64 source patterns", where);
    const char *els = json_string_value(json_object_get(body, "else"));
    if (json_object_get(body, "else") && (!els || (strcmp(els, "deny") && strcmp(els, "ask"))))
        return err_fail(err, errlen, "%s.else: \"deny\" or \"ask\"", where);
    if (!tool || !pattern_ok(tool) || !argument || !pattern_ok(argument))
        return err_fail(err, errlen, "%s: \"tool\" and \"argument\" are required patterns", where);
    if (p->n == POLICY_MAX_RULES)
        return err_fail(err, errlen, "%s: more than %d rules", where, POLICY_MAX_RULES);
    struct rule r = {.tool = xstrdup(tool),
                     .argument = xstrdup(argument),
                     .deny_else = !els || strcmp(els, "deny") == 0,
                     .from_manifest = from_manifest};
    r.from = xcalloc(json_array_size(from) + 1, sizeof(char *));
    size_t i;
    json_t *f;
    json_array_foreach(from, i, f)
    {
        if (!json_is_string(f) || !pattern_ok(json_string_value(f))) {
            for (size_t j = 0; j < r.n_from; j++)
                free(r.from[j]);
            free(r.from);
            free(r.tool);
            free(r.argument);
            return err_fail(err, errlen,
                        "%s.from[%zu]: a source pattern such as \"request\", "
                        "\"APP.TOOL\" or \"extract:APP.*\"",
                        where, i);
        }
        r.from[r.n_from++] = xstrdup(json_string_value(f));
    }
    p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
    p->v[p->n++] = r;
    return 0;
}

struct policy *policy_new(const json_t *rules, char *err, size_t errlen)
{
    struct policy *p = xcalloc(1, sizeof(*p));
    if (rules && !json_is_array(rules)) {
        err_fail(err, errlen, "policies: an array of rules");
        policy_free(p);
        return NULL;
    }
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r)
    {
        char where[40];
        snprintf(where, sizeof(where), "policies[%zu]", i);
        if (!json_is_object(r)) {
            err_fail(err, errlen, "%s: a rule is an object", where);
            policy_free(p);
            return NULL;
        }
        if (add_rule(p, json_string_value(json_object_get(r, "tool")),
                     json_string_value(json_object_get(r, "argument")), r, false, where, err,
                     errlen) < 0) {
            policy_free(p);
            return NULL;
        }
    }
    return p;
}

int policy_add_tool(struct policy *p, const char *app, const char *tool, const json_t *block,
                    char *err, size_t errlen)
{
    if (!json_is_object(block))
        return err_fail(err, errlen, "%s.%s: policy: an object of ARGUMENT: {\"from\": [...]}", app,
                    tool);
    char *name = xasprintf("%s.%s", app, tool);
    const char *arg;
    json_t *body;
    int rc = 0;
    json_object_foreach((json_t *)block, arg, body)
    {
        char where[200];
        snprintf(where, sizeof(where), "%s: policy.%s", name, arg);
        if (!json_is_object(body)) {
            rc = err_fail(err, errlen, "%s: an object {\"from\": [...]}", where);
            break;
        }
        if ((rc = add_rule(p, name, arg, body, true, where, err, errlen)) < 0)
            break;
    }
    free(name);
    return rc;
}

void policy_free(struct policy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        for (size_t j = 0; j < p->v[i].n_from; j++)
            free(p->v[i].from[j]);
        free(p->v[i].from);
        free(p->v[i].tool);
        free(p->v[i].argument);
    }
    free(p->v);
    free(p);
}

struct policy *policy_for_hub(const json_t *hub_rules, const struct manifest_set *ms, char *err,
                              size_t errlen)
{
    err[0] = '\0';
    struct policy *p = policy_new(hub_rules, err, errlen);
    for (size_t i = 0; p && ms && i < ms->n; i++)
        for (size_t j = 0; j < ms->v[i]->n_tools; j++) {
            const struct manifest_tool *t = &ms->v[i]->tools[j];
            if (t->policy &&
                policy_add_tool(p, ms->v[i]->name, t->name, t->policy, err, errlen) < 0) {
                policy_free(p);
                return NULL;
            }
        }
    if (p && p->n == 0) {
        policy_free(p);
        return NULL;
    }
    return p;
}

size_t policy_rule_count(const struct policy *p)
{
    return p ? p->n : 0;
}

static bool glob(const char *pattern, const char *s)
{
    return fnmatch(pattern, s, 0) == 0;
}

/* The rule for one argument: the manifest's first, then hub.json's that name the
 * argument, then hub.json's for "*". */
static const struct rule *rule_for(const struct policy *p, const char *full, const char *arg)
{
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < p->n; i++) {
            const struct rule *r = &p->v[i];
            bool star = strcmp(r->argument, "*") == 0;
            if ((pass == 0) != r->from_manifest || (pass == 1 && star) || (pass == 2 && !star))
                continue;
            if (glob(r->tool, full) && glob(r->argument, arg))
                return r;
        }
    return NULL;
}

static bool covers(const struct policy *p, const char *full)
{
    for (size_t i = 0; i < p->n; i++)
        if (glob(p->v[i].tool, full))
            return true;
    return false;
}

static bool allows(const struct rule *r, const char *source)
{
    for (size_t i = 0; i < r->n_from; i++)
        if (glob(r->from[i], source))
            return true;
    return false;
}

bool policy_covers(const struct policy *p, const char *app, const char *tool)
{
    char full[PATTERN_MAX * 2];
    snprintf(full, sizeof(full), "%s.%s", app, tool);
    return p && covers(p, full);
}

enum policy_decision policy_decide(const struct policy *p, const char *app, const char *tool,
                                   const json_t *sources, char *why, size_t whylen)
{
    char full[PATTERN_MAX * 2];
    snprintf(full, sizeof(full), "%s.%s", app, tool);
    snprintf(why, whylen, "no rule covers %s", full);
    if (!p)
        return POLICY_ASK;
    bool covered = covers(p, full), undecided = false;
    const char *arg;
    json_t *src;
    json_object_foreach((json_t *)sources, arg, src)
    {
        const char *s = json_string_value(src);
        const struct rule *r = rule_for(p, full, arg);
        if (!r) {
            undecided = true;
            snprintf(why, whylen, "no rule for %s argument %s", full, arg);
            continue;
        }
        if (allows(r, s ? s : ""))
            continue;
        snprintf(why, whylen,
                 "%s argument %s comes from %s, which the rule for %s (%s) does not "
                 "allow",
                 full, arg, s ? s : "?", r->argument,
                 r->from_manifest ? "the manifest's" : "the hub's");
        if (r->deny_else)
            return POLICY_DENY;
        undecided = true;
    }
    if (!covered || undecided)
        return POLICY_ASK;
    snprintf(why, whylen, "every argument of %s comes from a source its rules allow", full);
    return POLICY_ALLOW;
}
