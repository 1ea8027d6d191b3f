/* The suites' checks (docs/benchmark.md, "Checks"): predicates over the environment
 * and the answer, never code. */
#include "agentbench_impl.h"
#include "jsonpath.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CHECK_MAX_DEPTH 8

static const char *const cond_keys[] = {
    "equals", "not_equals", "contains", "not_contains", "gt",   "gte",   "lt",
    "lte",    "length",     "exists",   "any",          "none", "every", NULL};

static bool failf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool failf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}

static bool is_cond_key(const char *k)
{
    for (const char *const *c = cond_keys; *c; c++)
        if (strcmp(*c, k) == 0)
            return true;
    return false;
}

static bool item_valid(const json_t *ic, const char *where, int depth, char *err, size_t errlen);

static bool conds_valid(const json_t *c, const char *where, int depth, char *err, size_t errlen)
{
    if (!json_is_object(c) || depth > CHECK_MAX_DEPTH)
        return failf(err, errlen, "%s: an object of conditions (equals, contains, ...)", where);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)c, k, v)
    {
        char w[400];
        snprintf(w, sizeof(w), "%.300s.%.60s", where, k);
        if (!is_cond_key(k))
            return failf(err, errlen, "%s: unknown condition", w);
        if ((!strcmp(k, "gt") || !strcmp(k, "gte") || !strcmp(k, "lt") || !strcmp(k, "lte")) &&
            !json_is_number(v))
            return failf(err, errlen, "%s: a number", w);
        if (!strcmp(k, "exists") && !json_is_boolean(v))
            return failf(err, errlen, "%s: true or false", w);
        if (!strcmp(k, "length") && !json_is_integer(v) &&
            !conds_valid(v, w, depth + 1, err, errlen))
            return false;
        if ((!strcmp(k, "any") || !strcmp(k, "none") || !strcmp(k, "every")) &&
            !item_valid(v, w, depth + 1, err, errlen))
            return false;
    }
    return true;
}

static bool item_valid(const json_t *ic, const char *where, int depth, char *err, size_t errlen)
{
    if (!json_is_object(ic))
        return failf(err, errlen, "%s: an object of FIELD: {conditions}", where);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ic, k, v)
    {
        char w[400];
        snprintf(w, sizeof(w), "%.300s.%.60s", where, k);
        if (!conds_valid(v, w, depth + 1, err, errlen))
            return false;
    }
    return true;
}

static bool check_valid(const json_t *c, const char *where, int depth, char *err, size_t errlen)
{
    if (!json_is_object(c) || depth > CHECK_MAX_DEPTH)
        return failf(err, errlen, "%s: a check is an object", where);
    char w[400];
    const json_t *v;
    if ((v = json_object_get(c, "not"))) {
        snprintf(w, sizeof(w), "%.300s.not", where);
        return json_object_size(c) == 1 ? check_valid(v, w, depth + 1, err, errlen)
                                        : failf(err, errlen, "%s: \"not\" stands alone", where);
    }
    if ((v = json_object_get(c, "all")) || (v = json_object_get(c, "either"))) {
        if (!json_is_array(v) || json_object_size(c) != 1)
            return failf(err, errlen, "%s: \"all\"/\"either\" take an array of checks, alone",
                         where);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            snprintf(w, sizeof(w), "%.300s[%zu]", where, i);
            if (!check_valid(x, w, depth + 1, err, errlen))
                return false;
        }
        return true;
    }
    if ((v = json_object_get(c, "unchanged_except"))) {
        size_t i;
        json_t *x;
        if (!json_is_array(v) || json_object_size(c) != 1)
            return failf(err, errlen, "%s.unchanged_except: an array of paths, alone", where);
        json_array_foreach(v, i, x) if (!json_is_string(x)) return failf(
            err, errlen, "%s.unchanged_except[%zu]: a path", where, i);
        return true;
    }
    if ((v = json_object_get(c, "answer"))) {
        snprintf(w, sizeof(w), "%.300s.answer", where);
        return json_object_size(c) == 1 ? conds_valid(v, w, depth + 1, err, errlen)
                                        : failf(err, errlen, "%s: \"answer\" stands alone", where);
    }
    if (!json_is_string(json_object_get(c, "path")))
        return failf(err, errlen, "%s: one of path, answer, unchanged_except, not, all, either",
                     where);
    json_t *conds = json_deep_copy(c);
    json_object_del(conds, "path");
    json_object_del(conds, "comment");
    bool ok = json_object_size(conds) > 0
                  ? conds_valid(conds, where, depth + 1, err, errlen)
                  : failf(err, errlen, "%s: a path check needs a condition", where);
    json_decref(conds);
    return ok;
}

bool ab_checks_valid(const json_t *checks, const char *where, char *err, size_t errlen)
{
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c)
    {
        char w[400];
        snprintf(w, sizeof(w), "%.300s[%zu]", where, i);
        if (!check_valid(c, w, 0, err, errlen))
            return false;
    }
    return true;
}

/* ---- evaluation ---- */

static bool icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return n == 0;
}

static bool contains(const json_t *v, const json_t *want)
{
    if (json_is_string(v) && json_is_string(want))
        return icontains(json_string_value(v), json_string_value(want));
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (jsonpath_equal(x, want) ||
                (json_is_string(x) && json_is_string(want) &&
                 strcasecmp(json_string_value(x), json_string_value(want)) == 0))
                return true;
        }
    }
    if (json_is_object(v) && json_is_string(want))
        return json_object_get(v, json_string_value(want)) != NULL;
    return false;
}

static bool item_holds(const json_t *ic, const json_t *item);

static bool conds_hold(const json_t *c, const json_t *v)
{
    const char *k;
    json_t *w;
    json_object_foreach((json_t *)c, k, w)
    {
        bool ok = true;
        double x = json_number_value(v), y = json_number_value(w);
        if (!strcmp(k, "equals"))
            ok = v && jsonpath_equal(v, w);
        else if (!strcmp(k, "not_equals"))
            ok = !v || !jsonpath_equal(v, w);
        else if (!strcmp(k, "contains"))
            ok = contains(v, w);
        else if (!strcmp(k, "not_contains"))
            ok = !contains(v, w);
        else if (!strcmp(k, "gt"))
            ok = json_is_number(v) && x > y;
        else if (!strcmp(k, "gte"))
            ok = json_is_number(v) && x >= y;
        else if (!strcmp(k, "lt"))
            ok = json_is_number(v) && x < y;
        else if (!strcmp(k, "lte"))
            ok = json_is_number(v) && x <= y;
        else if (!strcmp(k, "exists"))
            ok = (v != NULL) == json_is_true(w);
        else if (!strcmp(k, "length")) {
            size_t n = json_is_array(v)    ? json_array_size(v)
                       : json_is_object(v) ? json_object_size(v)
                       : json_is_string(v) ? strlen(json_string_value(v))
                                           : 0;
            json_t *nv = json_integer((json_int_t)n);
            ok = (json_is_array(v) || json_is_object(v) || json_is_string(v)) &&
                 (json_is_integer(w) ? (json_int_t)n == json_integer_value(w) : conds_hold(w, nv));
            json_decref(nv);
        } else if (!strcmp(k, "any") || !strcmp(k, "none") || !strcmp(k, "every")) {
            if (!json_is_array(v))
                return false;
            size_t hits = 0, i;
            json_t *item;
            json_array_foreach(v, i, item) hits += item_holds(w, item);
            ok = !strcmp(k, "any")    ? hits > 0
                 : !strcmp(k, "none") ? hits == 0
                                      : hits == json_array_size(v);
        }
        if (!ok)
            return false;
    }
    return true;
}

static bool item_holds(const json_t *ic, const json_t *item)
{
    const char *k;
    json_t *c;
    json_object_foreach((json_t *)ic, k, c)
    {
        if (!conds_hold(c, jsonpath_get(item, k)))
            return false;
    }
    return true;
}

/* Removes every listed path from a copy of both environments, then compares. */
static bool unchanged_except(const json_t *paths, const json_t *initial, const json_t *final,
                             char *why, size_t whylen)
{
    json_t *a = json_deep_copy(initial), *b = json_deep_copy(final);
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p)
    {
        jsonpath_del(a, json_string_value(p));
        jsonpath_del(b, json_string_value(p));
    }
    bool same = jsonpath_equal(a, b);
    if (!same) {
        const char *app;
        json_t *st;
        json_object_foreach(a, app, st)
        {
            const char *coll;
            json_t *cv;
            json_object_foreach(st, coll, cv)
            {
                if (!jsonpath_equal(cv, json_object_get(json_object_get(b, app), coll))) {
                    snprintf(why, whylen, "%s.%s changed", app, coll);
                    goto done;
                }
            }
        }
        snprintf(why, whylen, "the environment changed");
    }
done:
    json_decref(a);
    json_decref(b);
    return same;
}

static bool check_holds(const json_t *c, const json_t *initial, const json_t *final,
                        const char *answer, char *why, size_t whylen)
{
    const json_t *v;
    if ((v = json_object_get(c, "not"))) {
        char sub[200];
        bool held = check_holds(v, initial, final, answer, sub, sizeof(sub));
        if (held)
            snprintf(why, whylen, "a \"not\" check's inner check held");
        return !held;
    }
    if ((v = json_object_get(c, "all"))) {
        size_t i;
        json_t *x;
        json_array_foreach(
            v, i, x) if (!check_holds(x, initial, final, answer, why, whylen)) return false;
        return true;
    }
    if ((v = json_object_get(c, "either"))) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i,
                           x) if (check_holds(x, initial, final, answer, why, whylen)) return true;
        return false;
    }
    if ((v = json_object_get(c, "unchanged_except")))
        return unchanged_except(v, initial, final, why, whylen);
    if ((v = json_object_get(c, "answer"))) {
        json_t *a = json_string(answer ? answer : "");
        bool ok = conds_hold(v, a);
        json_decref(a);
        if (!ok)
            snprintf(why, whylen, "the answer does not satisfy the check");
        return ok;
    }
    const char *path = json_string_value(json_object_get(c, "path"));
    json_t *conds = json_deep_copy(c);
    json_object_del(conds, "path");
    json_object_del(conds, "comment");
    bool ok = conds_hold(conds, jsonpath_get(final, path));
    json_decref(conds);
    if (!ok) {
        char *t = json_dumps(c, JSON_COMPACT);
        snprintf(why, whylen, "check %.200s does not hold", t ? t : path);
        free(t);
    }
    return ok;
}

bool ab_checks_hold(const json_t *checks, const json_t *initial, const json_t *final,
                    const char *answer, char *why, size_t whylen)
{
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c)
    {
        if (!check_holds(c, initial, final, answer, why, whylen))
            return false;
    }
    return true;
}
