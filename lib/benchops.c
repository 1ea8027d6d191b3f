#include "benchops.h"
#include "jsonpath.h"
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ops[] = {"list", "search", "get", "append", "update", "delete", NULL};
static const char *const expr_keys[] = {"arg", "value", "state",  "auto",    "now", "push",
                                        "add", "put",   "concat", "default", NULL};

static bool fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return false;
}

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static bool expr_valid(const json_t *e, const char *where, char *why, size_t whylen)
{
    if (!json_is_object(e) || json_object_size(e) == 0)
        return fail(why, whylen, "%s: an expression is an object such as {\"arg\": \"NAME\"}",
                    where);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e, k, v)
    {
        if (!in_list(k, expr_keys))
            return fail(why, whylen, "%s: unknown expression key \"%s\"", where, k);
        if (strcmp(k, "value") && strcmp(k, "default") && strcmp(k, "auto") && strcmp(k, "now") &&
            !json_is_string(v))
            return fail(why, whylen, "%s.%s: a string", where, k);
    }
    return true;
}

static bool exprs_valid(const json_t *obj, const char *where, char *why, size_t whylen)
{
    if (!obj)
        return true;
    if (!json_is_object(obj))
        return fail(why, whylen, "%s: an object of FIELD: EXPR", where);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        char w[160];
        snprintf(w, sizeof(w), "%s.%s", where, k);
        if (!expr_valid(v, w, why, whylen))
            return false;
    }
    return true;
}

bool suiteapp_tool_valid(const json_t *tool, char *why, size_t whylen)
{
    const char *op = json_string_value(json_object_get(tool, "op"));
    if (!op || !in_list(op, ops))
        return fail(why, whylen, "op: one of list, search, get, append, update, delete");
    if (!json_is_string(json_object_get(tool, "collection")))
        return fail(why, whylen, "collection: a string is required");
    if (!exprs_valid(json_object_get(tool, "match"), "match", why, whylen) ||
        !exprs_valid(json_object_get(tool, "values"), "values", why, whylen))
        return false;
    const json_t *last = json_object_get(tool, "last"), *query = json_object_get(tool, "query");
    if (last && !expr_valid(last, "last", why, whylen))
        return false;
    if (strcmp(op, "search") == 0) {
        if (!query || !expr_valid(query, "query", why, whylen))
            return fail(why, whylen, "query: an expression is required for search");
        const json_t *in = json_object_get(tool, "in");
        if (!json_is_array(in) || json_array_size(in) == 0)
            return fail(why, whylen, "in: the fields searched (an array of strings)");
    }
    if ((strcmp(op, "append") == 0 || strcmp(op, "update") == 0) &&
        !json_is_object(json_object_get(tool, "values")))
        return fail(why, whylen, "values: required for %s", op);
    if (strcmp(op, "delete") == 0 && !json_is_object(json_object_get(tool, "match")))
        return fail(why, whylen, "match: required for delete");
    return true;
}

/* ---- evaluation ---- */

struct ctx {
    const json_t *args;
    json_t *state;
    json_t *coll;
    const char *date;
};

/* The expression's value (new reference), or NULL when it names an argument that was
 * not given and has no default (the field is then left alone). */
static json_t *eval(const struct ctx *c, const json_t *e, const json_t *current)
{
    const json_t *v;
    if ((v = json_object_get(e, "value")))
        return json_deep_copy(v);
    if (json_is_true(json_object_get(e, "now")))
        return json_string(c->date);
    if (json_is_true(json_object_get(e, "auto"))) {
        json_int_t max = 0;
        size_t i;
        json_t *item;
        json_array_foreach(c->coll, i, item)
        {
            json_t *id = json_object_get(item, "id");
            if (json_is_integer(id) && json_integer_value(id) > max)
                max = json_integer_value(id);
            else if (json_is_string(id)) {
                int64_t n;
                if (parse_i64(json_string_value(id), 0, INT64_MAX / 2, &n) && n > max)
                    max = n;
            }
        }
        return json_integer(max + 1);
    }
    if ((v = json_object_get(e, "state"))) {
        json_t *s = jsonpath_get(c->state, json_string_value(v));
        return s ? json_deep_copy(s) : json_null();
    }
    if ((v = json_object_get(e, "push"))) {
        json_t *a = json_object_get(c->args, json_string_value(v));
        if (!a)
            return NULL;
        json_t *out = json_is_array(current) ? json_deep_copy(current) : json_array();
        if (json_is_array(a))
            json_array_extend(out, a);
        else
            json_array_append(out, a);
        return out;
    }
    if ((v = json_object_get(e, "concat"))) {
        json_t *a = json_object_get(c->args, json_string_value(v));
        if (!json_is_string(a))
            return NULL;
        const char *base = json_is_string(current) ? json_string_value(current) : "";
        char *joined = xasprintf("%s%s", base, json_string_value(a));
        json_t *out = json_string(joined);
        free(joined);
        return out;
    }
    if ((v = json_object_get(e, "add"))) {
        json_t *a = json_object_get(c->args, json_string_value(v));
        if (!json_is_number(a))
            return NULL;
        double base = json_is_number(current) ? json_number_value(current) : 0;
        return json_real(base + json_number_value(a));
    }
    if ((v = json_object_get(e, "put"))) {
        json_t *key = json_object_get(c->args, json_string_value(v));
        json_t *val = json_object_get(c->args, json_string_value(json_object_get(e, "arg")));
        if (!json_is_string(key) || !val)
            return NULL;
        json_t *out = json_is_object(current) ? json_deep_copy(current) : json_object();
        json_object_set(out, json_string_value(key), val);
        return out;
    }
    if ((v = json_object_get(e, "arg"))) {
        json_t *a = json_object_get(c->args, json_string_value(v));
        if (a)
            return json_deep_copy(a);
        if ((a = json_object_get(e, "default")))
            return json_deep_copy(a);
        return NULL;
    }
    return NULL;
}

static bool matches(const struct ctx *c, const json_t *match, const json_t *item)
{
    const char *field;
    json_t *e;
    json_object_foreach((json_t *)match, field, e)
    {
        json_t *want = eval(c, e, NULL);
        if (!want)
            continue; /* an optional filter that was not given */
        bool ok = jsonpath_equal(jsonpath_get(item, field), want);
        json_decref(want);
        if (!ok)
            return false;
    }
    return true;
}

static bool icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return true;
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

static bool search_hit(const json_t *item, const json_t *in, const char *q)
{
    size_t i;
    json_t *f;
    json_array_foreach(in, i, f)
    {
        const json_t *v = jsonpath_get(item, json_string_value(f));
        if (json_is_string(v) && icontains(json_string_value(v), q))
            return true;
        if (json_is_array(v)) {
            size_t j;
            json_t *s;
            json_array_foreach(v, j, s) if (json_is_string(s) &&
                                            icontains(json_string_value(s), q)) return true;
        }
    }
    return false;
}

/* The items (borrowed references in a new array) that match and, for search, hit. */
static json_t *select_items(const struct ctx *c, const json_t *tool, const char *q)
{
    const json_t *match = json_object_get(tool, "match");
    const json_t *in = json_object_get(tool, "in");
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(c->coll, i, item)
    {
        if (match && !matches(c, match, item))
            continue;
        if (q && !search_hit(item, in, q))
            continue;
        json_array_append(out, item);
    }
    return out;
}

static json_t *take_last(const struct ctx *c, const json_t *tool, json_t *items)
{
    const json_t *last = json_object_get(tool, "last");
    json_t *n = last ? eval(c, last, NULL) : NULL;
    if (json_is_integer(n) && json_integer_value(n) >= 0 &&
        (size_t)json_integer_value(n) < json_array_size(items)) {
        size_t drop = json_array_size(items) - (size_t)json_integer_value(n);
        json_t *kept = json_array();
        for (size_t i = drop; i < json_array_size(items); i++)
            json_array_append(kept, json_array_get(items, i));
        json_decref(items);
        items = kept;
    }
    json_decref(n);
    return items;
}

static json_t *items_result(json_t *items)
{
    json_t *copy = json_deep_copy(items);
    json_decref(items);
    return json_pack("{s:o,s:I}", "items", copy, "count", (json_int_t)json_array_size(copy));
}

static void set_values(const struct ctx *c, const json_t *values, json_t *item)
{
    const char *field;
    json_t *e;
    json_object_foreach((json_t *)values, field, e)
    {
        json_t *v = eval(c, e, jsonpath_get(item, field));
        if (v)
            jsonpath_set(item, field, v);
    }
}

static json_t *fail_null(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_t *fail_null(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return NULL;
}

static void describe_match(const struct ctx *c, const json_t *match, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *field;
    json_t *e;
    json_object_foreach((json_t *)match, field, e)
    {
        json_t *v = eval(c, e, NULL);
        char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%s %.80s", l ? ", " : "", field, t ? t : "(any)");
        free(t);
        json_decref(v);
    }
}

json_t *suiteapp_run(const json_t *tool, const json_t *args, json_t *state, const char *date,
                     bool *changed, char *err, size_t errlen)
{
    const char *op = json_string_value(json_object_get(tool, "op"));
    const char *cname = json_string_value(json_object_get(tool, "collection"));
    *changed = false;
    json_t *coll = json_object_get(state, cname);
    if (!json_is_array(coll) && !json_is_object(coll))
        return fail_null(err, errlen, "the app has no collection %s", cname);
    struct ctx c = {
        .args = args, .state = state, .coll = json_is_array(coll) ? coll : NULL, .date = date};
    const json_t *match = json_object_get(tool, "match");
    const json_t *values = json_object_get(tool, "values");
    json_int_t min = 1;
    if (json_is_integer(json_object_get(tool, "min")))
        min = json_integer_value(json_object_get(tool, "min"));

    if (json_is_object(coll)) { /* a record */
        if (strcmp(op, "get") == 0) {
            const char *field = json_string_value(json_object_get(tool, "field"));
            if (!field)
                return json_pack("{s:O}", "item", coll);
            json_t *v = jsonpath_get(coll, field);
            if (!v)
                return fail_null(err, errlen, "%s has no field %s", cname, field);
            return json_pack("{s:O}", "value", v);
        }
        if (strcmp(op, "update") == 0) {
            set_values(&c, values, coll);
            *changed = true;
            return json_pack("{s:O}", "item", coll);
        }
        return fail_null(err, errlen, "%s is a record: only get and update apply", cname);
    }

    if (strcmp(op, "list") == 0 || strcmp(op, "search") == 0) {
        const char *q = NULL;
        json_t *qv = NULL;
        if (strcmp(op, "search") == 0) {
            qv = eval(&c, json_object_get(tool, "query"), NULL);
            if (!json_is_string(qv)) {
                json_decref(qv);
                return fail_null(err, errlen, "the search needs a query");
            }
            q = json_string_value(qv);
        }
        json_t *items = take_last(&c, tool, select_items(&c, tool, q));
        json_decref(qv);
        return items_result(items);
    }
    if (strcmp(op, "get") == 0) {
        json_t *items = select_items(&c, tool, NULL);
        json_t *item = json_array_get(items, 0);
        if (!item) {
            char m[300];
            describe_match(&c, match, m, sizeof(m));
            json_decref(items);
            return fail_null(err, errlen, "no item in %s has %s", cname, m);
        }
        const char *field = json_string_value(json_object_get(tool, "field"));
        json_t *out;
        if (field) {
            json_t *v = jsonpath_get(item, field);
            out = v ? json_pack("{s:O}", "value", v) : NULL;
        } else {
            out = json_pack("{s:O}", "item", item);
        }
        json_decref(items);
        return out ? out : fail_null(err, errlen, "the item has no field %s", field);
    }
    if (strcmp(op, "append") == 0) {
        json_t *item = json_object();
        const char *field;
        json_t *e;
        json_object_foreach((json_t *)values, field, e)
        {
            json_t *v = eval(&c, e, NULL);
            jsonpath_set(item, field, v ? v : json_null());
        }
        json_array_append_new(coll, item); /* the state holds it now */
        *changed = true;
        return json_pack("{s:o}", "item", json_deep_copy(item));
    }
    /* update and delete */
    json_t *items = select_items(&c, tool, NULL);
    if ((json_int_t)json_array_size(items) < min) {
        char m[300];
        describe_match(&c, match, m, sizeof(m));
        json_decref(items);
        return fail_null(err, errlen, "no item in %s has %s", cname, m);
    }
    if (strcmp(op, "update") == 0) {
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item) set_values(&c, values, item);
        *changed = json_array_size(items) > 0;
        return items_result(items);
    }
    size_t n = json_array_size(items);
    for (size_t i = json_array_size(coll); i-- > 0;) {
        for (size_t j = 0; j < n; j++)
            if (json_array_get(coll, i) == json_array_get(items, j)) {
                json_array_remove(coll, i);
                break;
            }
    }
    json_decref(items);
    *changed = n > 0;
    return json_pack("{s:I}", "count", (json_int_t)n);
}
