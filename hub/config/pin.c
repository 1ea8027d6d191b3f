#include "pin.h"
#include "manifest.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds what a hostile server can make the hub walk: manifests are at most 1 MiB
 * and the schemas in them at most SCHEMA_MAX_DEPTH deep, a listed tool is bounded by
 * the frame size; this bounds the recursion itself. */
#define PIN_MAX_DEPTH 128
#define SHOW_MAX 120

static bool number_equal(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) == json_integer_value(b);
    return json_number_value(a) == json_number_value(b);
}

static bool equal_depth(const json_t *a, const json_t *b, unsigned depth)
{
    if (!a || !b)
        return !a && !b;
    if (depth > PIN_MAX_DEPTH)
        return false;
    if (json_is_number(a) && json_is_number(b))
        return number_equal(a, b);
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            if (!equal_depth(v, json_object_get(b, k), depth + 1))
                return false;
        }
        return true;
    }
    case JSON_ARRAY: {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!equal_depth(json_array_get(a, i), json_array_get(b, i), depth + 1))
                return false;
        return true;
    }
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    default:
        return true; /* true, false, null: the type is the value */
    }
}

bool pin_json_equal(const json_t *a, const json_t *b)
{
    return equal_depth(a, b, 0);
}

static void path_append(char *path, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void path_append(char *path, size_t len, const char *fmt, ...)
{
    size_t used = strlen(path);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path + used, len - used, fmt, ap);
    va_end(ap);
}

/* Object keys in sorted order, so that the first difference reported does not depend
 * on the order the server wrote them in. */
static int cmp_key(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static bool diff_depth(const json_t *a, const json_t *b, char *path, size_t len, unsigned depth)
{
    if (equal_depth(a, b, depth))
        return false;
    if (!a || !b || depth > PIN_MAX_DEPTH || json_typeof(a) != json_typeof(b))
        return true;
    if (json_is_object(a)) {
        size_t n = 0, cap = json_object_size(a) + json_object_size(b);
        const char **keys = xcalloc(cap + 1, sizeof(char *));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) keys[n++] = k;
        json_object_foreach((json_t *)b, k, v) if (!json_object_get(a, k)) keys[n++] = k;
        qsort(keys, n, sizeof(char *), cmp_key);
        for (size_t i = 0; i < n; i++) {
            const json_t *va = json_object_get(a, keys[i]), *vb = json_object_get(b, keys[i]);
            if (equal_depth(va, vb, depth + 1))
                continue;
            path_append(path, len, "%s%s", path[0] ? "." : "", keys[i]);
            diff_depth(va, vb, path, len, depth + 1);
            break;
        }
        free(keys);
        return true;
    }
    if (json_is_array(a)) {
        size_t na = json_array_size(a), nb = json_array_size(b);
        for (size_t i = 0; i < na && i < nb; i++) {
            if (equal_depth(json_array_get(a, i), json_array_get(b, i), depth + 1))
                continue;
            path_append(path, len, "[%zu]", i);
            diff_depth(json_array_get(a, i), json_array_get(b, i), path, len, depth + 1);
            return true;
        }
        path_append(path, len, "[%zu]", na < nb ? na : nb); /* one is longer */
        return true;
    }
    return true;
}

bool pin_first_diff(const json_t *a, const json_t *b, char *path, size_t len)
{
    if (len)
        path[0] = '\0';
    return diff_depth(a, b, path, len, 0);
}

/* A value for a message: compact JSON, at most SHOW_MAX bytes, "(absent)" for none. */
static void show(const json_t *v, char *out, size_t len)
{
    if (!v) {
        snprintf(out, len, "(absent)");
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    if (!text) {
        snprintf(out, len, "?");
        return;
    }
    if (strlen(text) > SHOW_MAX)
        snprintf(out, len, "%.*s...", SHOW_MAX, text);
    else
        snprintf(out, len, "%s", text);
    free(text);
}

/* The value at a path made by pin_first_diff (a key holding '.' or '[' is not found
 * again: the message then shows "(absent)", the path is still right). */
static const json_t *at_path(const json_t *root, const char *path)
{
    const json_t *v = root;
    const char *p = path;
    while (v && *p) {
        if (*p == '[') {
            char *end;
            unsigned long i = strtoul(p + 1, &end, 10);
            v = json_is_array(v) ? json_array_get(v, i) : NULL;
            p = *end == ']' ? end + 1 : end;
        } else {
            if (*p == '.')
                p++;
            size_t n = strcspn(p, ".[");
            char key[256];
            snprintf(key, sizeof(key), "%.*s", (int)(n < 255 ? n : 255), p);
            v = json_is_object(v) ? json_object_get(v, key) : NULL;
            p += n;
        }
    }
    return v;
}

static void describe_change(const char *name, const json_t *pinned, const json_t *listed, char *out,
                            size_t len)
{
    char path[512];
    pin_first_diff(pinned, listed, path, sizeof(path));
    char a[SHOW_MAX + 8], b[SHOW_MAX + 8];
    show(at_path(pinned, path), a, sizeof(a));
    show(at_path(listed, path), b, sizeof(b));
    snprintf(out, len, "tool \"%.64s\": %s changed: pinned %s, listed %s", name,
             path[0] ? path : "the object", a, b);
}

static const json_t *find_tool(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && strcmp(n, name) == 0)
            return t;
    }
    return NULL;
}

json_t *pin_tool_object(const json_t *t)
{
    json_t *o = json_deep_copy(t);
    if (json_is_object(o))
        json_object_del(o, "irreversible"); /* manifest_tool_key_is_local() */
    return o;
}

/* Appends every difference (or only the first when first_only) to *buf. */
static size_t diff_lines(const json_t *pinned, const json_t *listed, bool first_only, char **buf)
{
    size_t n = 0, used = 0;
    *buf = NULL;
    char line[1024];
#define EMIT()                                                                                     \
    do {                                                                                           \
        size_t l = strlen(line);                                                                   \
        *buf = xrealloc(*buf, used + l + 2);                                                       \
        memcpy(*buf + used, line, l);                                                              \
        used += l;                                                                                 \
        (*buf)[used++] = '\n';                                                                     \
        (*buf)[used] = '\0';                                                                       \
        if (++n && first_only)                                                                     \
            return n;                                                                              \
    } while (0)
    size_t i;
    json_t *t;
    json_array_foreach(listed, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name) {
            snprintf(line, sizeof(line), "tool %zu of the list has no name", i);
            EMIT();
            continue;
        }
        for (size_t j = 0; j < i; j++)
            if (pin_json_equal(json_object_get(json_array_get(listed, j), "name"),
                               json_object_get(t, "name"))) {
                snprintf(line, sizeof(line), "tool \"%.64s\": listed twice", name);
                EMIT();
            }
        const json_t *p = find_tool(pinned, name);
        if (!p) {
            snprintf(line, sizeof(line), "tool \"%.64s\": not pinned (listed by the server)", name);
            EMIT();
            continue;
        }
        json_t *seen = pin_tool_object(t);
        bool same = pin_json_equal(p, seen);
        if (!same)
            describe_change(name, p, seen, line, sizeof(line));
        json_decref(seen);
        if (!same)
            EMIT();
    }
    json_array_foreach(pinned, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (name && !find_tool(listed, name)) {
            snprintf(line, sizeof(line), "tool \"%.64s\": pinned but no longer listed", name);
            EMIT();
        }
    }
#undef EMIT
    return n;
}

bool pin_check_tools(const json_t *pinned, const json_t *listed, char *err, size_t errlen)
{
    char *text = NULL;
    size_t n = diff_lines(pinned, listed, true, &text);
    if (n && errlen) {
        size_t l = strlen(text);
        if (l && text[l - 1] == '\n')
            text[l - 1] = '\0';
        snprintf(err, errlen, "%s", text);
    }
    free(text);
    return n == 0;
}

char *pin_diff_text(const json_t *pinned, const json_t *listed)
{
    char *text = NULL;
    diff_lines(pinned, listed, false, &text);
    return text;
}
