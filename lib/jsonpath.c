#include "jsonpath.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* One segment of path starting at *p: copied into seg, *p moved past it and its dot. */
static bool next_segment(const char **p, char *seg, size_t seglen)
{
    size_t n = strcspn(*p, ".");
    if (n == 0 || n >= seglen)
        return false;
    memcpy(seg, *p, n);
    seg[n] = '\0';
    *p += n;
    if (**p == '.') {
        (*p)++;
        if (**p == '\0')
            return false; /* a trailing dot */
    }
    return true;
}

static bool array_index(const json_t *a, const char *seg, size_t *out)
{
    int64_t i;
    bool neg = seg[0] == '-';
    if (!parse_i64(neg ? seg + 1 : seg, 0, 1000000, &i))
        return false;
    size_t n = json_array_size(a);
    if (neg) {
        if (i == 0 || (size_t)i > n)
            return false;
        *out = n - (size_t)i;
    } else {
        if ((size_t)i >= n)
            return false;
        *out = (size_t)i;
    }
    return true;
}

static json_t *step(const json_t *v, const char *seg)
{
    if (json_is_object(v))
        return json_object_get(v, seg);
    size_t i;
    if (json_is_array(v) && array_index(v, seg, &i))
        return json_array_get(v, i);
    return NULL;
}

json_t *jsonpath_get(const json_t *root, const char *path)
{
    if (!path || strlen(path) > JSONPATH_MAX_LEN)
        return NULL;
    const json_t *v = root;
    const char *p = path;
    char seg[JSONPATH_MAX_LEN + 1];
    for (int depth = 0; *p && v; depth++) {
        if (depth == JSONPATH_MAX_DEPTH || !next_segment(&p, seg, sizeof(seg)))
            return NULL;
        v = step(v, seg);
    }
    return (json_t *)v;
}

/* The parent of the last segment (created as objects when missing) and that segment. */
static json_t *parent_of(json_t *root, const char *path, char *last, size_t lastlen, bool create)
{
    if (!path || !*path || strlen(path) > JSONPATH_MAX_LEN)
        return NULL;
    json_t *v = root;
    const char *p = path;
    char seg[JSONPATH_MAX_LEN + 1];
    for (int depth = 0;; depth++) {
        if (depth == JSONPATH_MAX_DEPTH || !next_segment(&p, seg, sizeof(seg)))
            return NULL;
        if (!*p) {
            str_copy(last, seg, lastlen);
            return v;
        }
        json_t *next = step(v, seg);
        if (!next && create && json_is_object(v)) {
            next = json_object();
            json_object_set_new(v, seg, next);
        }
        if (!next)
            return NULL;
        v = next;
    }
}

bool jsonpath_set(json_t *root, const char *path, json_t *value)
{
    char last[JSONPATH_MAX_LEN + 1];
    json_t *parent = parent_of(root, path, last, sizeof(last), true);
    size_t i;
    if (json_is_object(parent))
        return json_object_set_new(parent, last, value) == 0;
    if (json_is_array(parent) && array_index(parent, last, &i))
        return json_array_set_new(parent, i, value) == 0;
    json_decref(value);
    return false;
}

bool jsonpath_del(json_t *root, const char *path)
{
    char last[JSONPATH_MAX_LEN + 1];
    json_t *parent = parent_of(root, path, last, sizeof(last), false);
    return json_is_object(parent) && json_object_del(parent, last) == 0;
}

bool jsonpath_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!jsonpath_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            if (!jsonpath_equal(v, json_object_get(b, k)))
                return false;
        }
        return true;
    }
    return json_equal(a, b) != 0;
}
