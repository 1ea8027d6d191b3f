/* Answers by reference (agent_answer.h): the shape the merge context is shown, and the
 * hub's filling-in of the references the model wrote. The model's text is untrusted
 * here too: a reference it writes is parsed with explicit bounds, and one that names
 * nothing is rendered as such, never guessed. */
#include "agent_answer.h"
#include "util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_DEPTH_MAX 16
#define REF_MAX 256 /* a reference longer than this is not one */

static json_t *ref(const char *path)
{
    return json_pack("{s:s}", "$ref", path);
}

static json_t *shape(const json_t *v, const char *path, int depth)
{
    if (json_is_string(v) || depth > SHAPE_DEPTH_MAX)
        return ref(path);
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            char *p = xasprintf("%s.%s", path, k);
            json_object_set_new(o, k, shape(m, p, depth + 1));
            free(p);
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            char *p = xasprintf("%s.%zu", path, i);
            json_array_append_new(a, shape(m, p, depth + 1));
            free(p);
        }
        return a;
    }
    return json_deep_copy(v); /* numbers, true, false, null: no words to obey */
}

json_t *answer_shape(const json_t *value, const char *base)
{
    return shape(value, base, 0);
}

struct out {
    char *buf;
    size_t len, max;
    bool cut;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->len + n > o->max) {
        n = o->max - o->len;
        o->cut = true;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

/* A reference object at p: {"$ref": "..."} and nothing else. Its length in *used. */
static json_t *ref_at(const char *p, size_t *used)
{
    json_error_t e;
    size_t avail = strnlen(p, REF_MAX + 64);
    json_t *j = json_loadb(p, avail, JSON_DISABLE_EOF_CHECK, &e);
    if (!j)
        return NULL;
    const char *r = json_string_value(json_object_get(j, "$ref"));
    if (!r || json_object_size(j) != 1 || strlen(r) > REF_MAX) {
        json_decref(j);
        return NULL;
    }
    *used = (size_t)e.position;
    return j;
}

char *answer_fill(const char *text, answer_lookup_fn lookup, void *arg, size_t max,
                  unsigned *filled, unsigned *unknown)
{
    struct out o = {.buf = xmalloc(max + 1), .max = max};
    o.buf[0] = '\0';
    *filled = *unknown = 0;
    const char *p = text ? text : "";
    while (*p && !o.cut) {
        const char *b = strchr(p, '{');
        if (!b) {
            put(&o, p, strlen(p));
            break;
        }
        put(&o, p, (size_t)(b - p));
        size_t used = 0;
        json_t *j = ref_at(b, &used);
        if (!j || used == 0) {
            put(&o, b, 1);
            p = b + 1;
            continue;
        }
        const char *r = json_string_value(json_object_get(j, "$ref"));
        json_t *v = lookup(arg, r);
        if (json_is_string(v)) {
            put(&o, json_string_value(v), json_string_length(v));
            (*filled)++;
        } else if (v) {
            /* 15 digits: what a number was written as, not its binary tail (4.4, not
             * 4.4000000000000004) */
            char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
            put(&o, t ? t : "", t ? strlen(t) : 0);
            free(t);
            (*filled)++;
        } else {
            char *t = xasprintf("[no value for %s]", r);
            put(&o, t, strlen(t));
            free(t);
            (*unknown)++;
        }
        json_decref(v);
        json_decref(j);
        p = b + used;
    }
    if (o.cut) {
        static const char more[] = "...[truncated]";
        if (o.len >= sizeof(more) - 1)
            memcpy(o.buf + o.len - (sizeof(more) - 1), more, sizeof(more));
    }
    return o.buf;
}
