#include "schema.h"
#include "schema_pattern.h"
#include "util.h"

#include <stdarg.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    T_NULL = 1 << 0,
    T_BOOLEAN = 1 << 1,
    T_OBJECT = 1 << 2,
    T_ARRAY = 1 << 3,
    T_NUMBER = 1 << 4,
    T_INTEGER = 1 << 5,
    T_STRING = 1 << 6,
};

static const struct {
    const char *name;
    unsigned bit;
} type_names[] = {
    {"null", T_NULL},     {"boolean", T_BOOLEAN}, {"object", T_OBJECT}, {"array", T_ARRAY},
    {"number", T_NUMBER}, {"integer", T_INTEGER}, {"string", T_STRING},
};

struct schema_prop {
    char *name;
    struct schema *schema;
};

struct schema {
    unsigned types;    /* 0: any */
    bool always_false; /* the schema `false` */
    struct schema_prop *props;
    size_t n_props;
    char **required;
    size_t n_required;
    bool additional_forbidden;
    struct schema *additional; /* schema for properties not in props */
    json_t *enum_values;       /* array, or NULL */
    json_t *const_value;
    struct schema *items;
    bool has_min_items, has_max_items;
    size_t min_items, max_items;
    bool has_minimum, has_maximum;
    double minimum, maximum;
    bool has_min_len, has_max_len;
    size_t min_len, max_len;
    bool has_pattern;
    regex_t pattern;
    char *pattern_src;
};

static const char *const annotations[] = {
    "title", "description", "default", "examples", "format", "$schema", "$id", "$comment", NULL};

struct compile_ctx {
    char *err;
    size_t errlen;
};

static bool cfail(struct compile_ctx *c, const char *path, const char *key, const char *msg)
{
    snprintf(c->err, c->errlen, "%s%s%s: %s", path, *path ? "." : "", key, msg);
    return false;
}

static bool is_annotation(const char *key)
{
    for (size_t i = 0; annotations[i]; i++)
        if (strcmp(key, annotations[i]) == 0)
            return true;
    return false;
}

static bool type_bit(const char *name, unsigned *bit)
{
    for (size_t i = 0; i < ARRAY_LEN(type_names); i++)
        if (strcmp(name, type_names[i].name) == 0) {
            *bit = type_names[i].bit;
            return true;
        }
    return false;
}

static bool get_count(struct compile_ctx *c, const char *path, const char *key, const json_t *v,
                      size_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)INT32_MAX)
        return cfail(c, path, key, "must be a non-negative integer");
    *out = (size_t)json_integer_value(v);
    return true;
}

static struct schema *compile(struct compile_ctx *c, const json_t *js, const char *path, int depth);

static char *child_path(const char *path, const char *a, const char *b)
{
    return xasprintf("%s%s%s%s%s", path, *path ? "." : "", a, b ? "." : "", b ? b : "");
}

static bool compile_keyword(struct compile_ctx *c, struct schema *s, const char *path,
                            const char *key, const json_t *v, int depth)
{
    if (strcmp(key, "type") == 0) {
        if (json_is_string(v)) {
            if (!type_bit(json_string_value(v), &s->types))
                return cfail(c, path, key, "unknown type name");
            return true;
        }
        if (!json_is_array(v) || json_array_size(v) == 0)
            return cfail(c, path, key, "must be a type name or a non-empty list of them");
        size_t i;
        json_t *t;
        json_array_foreach(v, i, t)
        {
            unsigned bit;
            if (!json_is_string(t) || !type_bit(json_string_value(t), &bit))
                return cfail(c, path, key, "unknown type name in list");
            s->types |= bit;
        }
        return true;
    }
    if (strcmp(key, "properties") == 0) {
        if (!json_is_object(v))
            return cfail(c, path, key, "must be an object");
        s->props = xcalloc(json_object_size(v) + 1, sizeof(*s->props));
        const char *name;
        json_t *sub;
        json_object_foreach((json_t *)v, name, sub)
        {
            char *p = child_path(path, "properties", name);
            struct schema *cs = compile(c, sub, p, depth + 1);
            free(p);
            if (!cs)
                return false;
            s->props[s->n_props].name = xstrdup(name);
            s->props[s->n_props++].schema = cs;
        }
        return true;
    }
    if (strcmp(key, "required") == 0) {
        if (!json_is_array(v))
            return cfail(c, path, key, "must be an array of property names");
        s->required = xcalloc(json_array_size(v) + 1, sizeof(char *));
        size_t i;
        json_t *n;
        json_array_foreach(v, i, n)
        {
            if (!json_is_string(n))
                return cfail(c, path, key, "must be an array of property names");
            s->required[s->n_required++] = xstrdup(json_string_value(n));
        }
        return true;
    }
    if (strcmp(key, "additionalProperties") == 0) {
        if (json_is_false(v)) {
            s->additional_forbidden = true;
            return true;
        }
        if (json_is_true(v))
            return true;
        char *p = child_path(path, key, NULL);
        s->additional = compile(c, v, p, depth + 1);
        free(p);
        return s->additional != NULL;
    }
    if (strcmp(key, "items") == 0) {
        char *p = child_path(path, key, NULL);
        s->items = compile(c, v, p, depth + 1);
        free(p);
        return s->items != NULL;
    }
    if (strcmp(key, "enum") == 0) {
        if (!json_is_array(v) || json_array_size(v) == 0)
            return cfail(c, path, key, "must be a non-empty array");
        s->enum_values = json_deep_copy(v);
        return true;
    }
    if (strcmp(key, "const") == 0) {
        s->const_value = json_deep_copy(v);
        return true;
    }
    if (strcmp(key, "minimum") == 0 || strcmp(key, "maximum") == 0) {
        if (!json_is_number(v))
            return cfail(c, path, key, "must be a number");
        if (key[1] == 'i') {
            s->has_minimum = true;
            s->minimum = json_number_value(v);
        } else {
            s->has_maximum = true;
            s->maximum = json_number_value(v);
        }
        return true;
    }
    if (strcmp(key, "minLength") == 0) {
        s->has_min_len = true;
        return get_count(c, path, key, v, &s->min_len);
    }
    if (strcmp(key, "maxLength") == 0) {
        s->has_max_len = true;
        return get_count(c, path, key, v, &s->max_len);
    }
    if (strcmp(key, "minItems") == 0) {
        s->has_min_items = true;
        return get_count(c, path, key, v, &s->min_items);
    }
    if (strcmp(key, "maxItems") == 0) {
        s->has_max_items = true;
        return get_count(c, path, key, v, &s->max_items);
    }
    if (strcmp(key, "pattern") == 0) {
        if (!json_is_string(v) || json_string_length(v) > 1024)
            return cfail(c, path, key, "must be a string of at most 1024 bytes");
        char why[128];
        if (!schema_pattern_check(json_string_value(v), why, sizeof(why)))
            return cfail(c, path, key, why);
        int rc = regcomp(&s->pattern, json_string_value(v), REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            regerror(rc, &s->pattern, why, sizeof(why));
            return cfail(c, path, key, why);
        }
        s->has_pattern = true;
        s->pattern_src = xstrdup(json_string_value(v));
        return true;
    }
    if (is_annotation(key))
        return true;
    return cfail(c, path, key, "unsupported JSON Schema keyword");
}

static struct schema *compile(struct compile_ctx *c, const json_t *js, const char *path, int depth)
{
    if (depth > SCHEMA_MAX_DEPTH) {
        cfail(c, path, "", "schema nested too deeply");
        return NULL;
    }
    struct schema *s = xcalloc(1, sizeof(*s));
    if (json_is_boolean(js)) {
        s->always_false = json_is_false(js);
        return s;
    }
    if (!json_is_object(js)) {
        cfail(c, path, "", "a schema must be an object or a boolean");
        free(s);
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)js, key, v)
    {
        if (!compile_keyword(c, s, path, key, v, depth)) {
            schema_free(s);
            return NULL;
        }
    }
    return s;
}

struct schema *schema_compile(const json_t *js, char *err, size_t errlen)
{
    struct compile_ctx c = {.err = err, .errlen = errlen};
    return compile(&c, js, "", 0);
}

void schema_free(struct schema *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_props; i++) {
        free(s->props[i].name);
        schema_free(s->props[i].schema);
    }
    free(s->props);
    for (size_t i = 0; i < s->n_required; i++)
        free(s->required[i]);
    free(s->required);
    schema_free(s->additional);
    schema_free(s->items);
    json_decref(s->enum_values);
    json_decref(s->const_value);
    if (s->has_pattern)
        regfree(&s->pattern);
    free(s->pattern_src);
    free(s);
}

/* ---- validation ---- */

/* The instance path grows and shrinks as validation descends; it is capped so that a
 * deep or long-keyed instance cannot make error messages unbounded. */
struct vctx {
    char path[512];
    size_t len;
    char *err;
    size_t errlen;
};

static size_t path_push_key(struct vctx *v, const char *key)
{
    size_t old = v->len;
    bool plain = *key && strlen(key) <= 64;
    for (const char *p = key; plain && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-'))
            plain = false;
    int n = plain ? snprintf(v->path + v->len, sizeof(v->path) - v->len, ".%s", key)
                  : snprintf(v->path + v->len, sizeof(v->path) - v->len, "[\"%.40s%s\"]", key,
                             strlen(key) > 40 ? "..." : "");
    if (n > 0)
        v->len = v->len + (size_t)n >= sizeof(v->path) ? sizeof(v->path) - 1 : v->len + (size_t)n;
    return old;
}

static size_t path_push_index(struct vctx *v, size_t i)
{
    size_t old = v->len;
    int n = snprintf(v->path + v->len, sizeof(v->path) - v->len, "[%zu]", i);
    if (n > 0)
        v->len = v->len + (size_t)n >= sizeof(v->path) ? sizeof(v->path) - 1 : v->len + (size_t)n;
    return old;
}

static void path_pop(struct vctx *v, size_t old)
{
    v->len = old;
    v->path[old] = '\0';
}

static bool vfail(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool vfail(struct vctx *v, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(v->err, v->errlen, "%s: %s", v->path, msg);
    return false;
}

static unsigned instance_type(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_NULL:
        return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOLEAN;
    case JSON_OBJECT:
        return T_OBJECT;
    case JSON_ARRAY:
        return T_ARRAY;
    case JSON_INTEGER:
        return T_INTEGER | T_NUMBER;
    case JSON_REAL: {
        double d = json_real_value(j);
        /* Integral within int64 range (no libm: the cast truncates). */
        bool integral = d >= -9.2e18 && d <= 9.2e18 && d == (double)(long long)d;
        return integral ? (T_INTEGER | T_NUMBER) : T_NUMBER;
    }
    case JSON_STRING:
        return T_STRING;
    }
    return 0;
}

static void type_list(unsigned types, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ARRAY_LEN(type_names); i++) {
        if (!(types & type_names[i].bit))
            continue;
        int n = snprintf(buf + o, size - o, "%s%s", o ? " or " : "", type_names[i].name);
        if (n < 0 || (size_t)n >= size - o)
            return;
        o += (size_t)n;
    }
}

static size_t utf8_codepoints(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            n++;
    return n;
}

static bool validate(struct vctx *v, const struct schema *s, const json_t *inst);

static bool validate_object(struct vctx *v, const struct schema *s, const json_t *inst)
{
    for (size_t i = 0; i < s->n_required; i++)
        if (!json_object_get(inst, s->required[i]))
            return vfail(v, "missing required property \"%.64s\"", s->required[i]);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)inst, key, val)
    {
        const struct schema *ps = NULL;
        for (size_t i = 0; i < s->n_props; i++)
            if (strcmp(s->props[i].name, key) == 0) {
                ps = s->props[i].schema;
                break;
            }
        if (!ps) {
            if (s->additional_forbidden) {
                size_t old = path_push_key(v, key);
                bool r = vfail(v, "property not allowed here");
                path_pop(v, old);
                return r;
            }
            ps = s->additional;
        }
        if (!ps)
            continue;
        size_t old = path_push_key(v, key);
        bool ok = validate(v, ps, val);
        path_pop(v, old);
        if (!ok)
            return false;
    }
    return true;
}

static bool validate_array(struct vctx *v, const struct schema *s, const json_t *inst)
{
    size_t n = json_array_size(inst);
    if (s->has_min_items && n < s->min_items)
        return vfail(v, "must have at least %zu items", s->min_items);
    if (s->has_max_items && n > s->max_items)
        return vfail(v, "must have at most %zu items", s->max_items);
    if (!s->items)
        return true;
    for (size_t i = 0; i < n; i++) {
        size_t old = path_push_index(v, i);
        bool ok = validate(v, s->items, json_array_get(inst, i));
        path_pop(v, old);
        if (!ok)
            return false;
    }
    return true;
}

static bool validate_string(struct vctx *v, const struct schema *s, const json_t *inst)
{
    const char *str = json_string_value(inst);
    size_t len = json_string_length(inst);
    if (s->has_min_len || s->has_max_len) {
        size_t cps = utf8_codepoints(str, len);
        if (s->has_min_len && cps < s->min_len)
            return vfail(v, "must be at least %zu characters", s->min_len);
        if (s->has_max_len && cps > s->max_len)
            return vfail(v, "must be at most %zu characters", s->max_len);
    }
    if (s->has_pattern) {
        /* regexec stops at NUL: a string with one cannot be matched honestly. */
        if (memchr(str, '\0', len))
            return vfail(v, "must not contain NUL");
        if (regexec(&s->pattern, str, 0, NULL, 0) != 0)
            return vfail(v, "does not match the pattern \"%.100s\"", s->pattern_src);
    }
    return true;
}

static bool validate(struct vctx *v, const struct schema *s, const json_t *inst)
{
    if (s->always_false)
        return vfail(v, "no value is allowed here");
    unsigned it = instance_type(inst);
    if (s->types && !(s->types & it)) {
        char want[96];
        type_list(s->types, want, sizeof(want));
        return vfail(v, "must be %s", want);
    }
    if (s->const_value && !json_equal((json_t *)inst, s->const_value))
        return vfail(v, "must equal the constant value");
    if (s->enum_values) {
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach(s->enum_values, i, e)
        {
            if (json_equal((json_t *)inst, e)) {
                found = true;
                break;
            }
        }
        if (!found)
            return vfail(v, "must be one of the enumerated values");
    }
    if (it & T_NUMBER) {
        double d = json_number_value(inst);
        if (s->has_minimum && d < s->minimum)
            return vfail(v, "must be at least %g", s->minimum);
        if (s->has_maximum && d > s->maximum)
            return vfail(v, "must be at most %g", s->maximum);
    }
    if (it & T_OBJECT)
        return validate_object(v, s, inst);
    if (it & T_ARRAY)
        return validate_array(v, s, inst);
    if (it & T_STRING)
        return validate_string(v, s, inst);
    return true;
}

bool schema_validate(const struct schema *s, const json_t *inst, char *err, size_t errlen)
{
    struct vctx v = {.path = "$", .len = 1, .err = err, .errlen = errlen};
    return validate(&v, s, inst);
}
