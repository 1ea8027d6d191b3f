/* Validating an instance against a compiled schema (schema.c).
 *
 * Every evaluation of a (schema, instance location) pair costs one step from a budget
 * per call, so nested anyOf/oneOf and "$ref" recursion end with "validation stopped"
 * instead of running for exponential time; the nesting of evaluations is bounded too.
 * A stopped validation is a failed one: the hub refuses what it could not check.
 *
 * unevaluatedProperties/unevaluatedItems need to know what the in-place applicators at
 * the same instance location evaluated: a node that has them asks its applicators for
 * annotations (struct ann: which property and item indices were evaluated); nodes
 * evaluated without that request skip the bookkeeping and short-circuit anyOf. */
#include "impl.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- annotations ---- */

struct bits {
    unsigned char *b;
    size_t n;
};

struct ann {
    struct bits items, props;
};

static void bits_set(struct bits *x, size_t n, size_t i)
{
    if (!x->b) {
        x->n = n;
        x->b = xcalloc(n / 8 + 1, 1);
    }
    if (i < x->n)
        x->b[i / 8] |= (unsigned char)(1u << (i % 8));
}

static bool bits_get(const struct bits *x, size_t i)
{
    return x->b && i < x->n && (x->b[i / 8] >> (i % 8)) & 1;
}

static void bits_or(struct bits *dst, const struct bits *src)
{
    if (!src->b)
        return;
    if (!dst->b) {
        dst->n = src->n;
        dst->b = xcalloc(src->n / 8 + 1, 1);
    }
    for (size_t i = 0; i < src->n / 8 + 1 && i < dst->n / 8 + 1; i++)
        dst->b[i] |= src->b[i];
}

static void ann_merge(struct ann *dst, const struct ann *src)
{
    bits_or(&dst->items, &src->items);
    bits_or(&dst->props, &src->props);
}

static void ann_free(struct ann *a)
{
    free(a->items.b);
    free(a->props.b);
    *a = (struct ann){0};
}

/* ---- context, instance paths, errors ---- */

/* The instance path grows and shrinks as validation descends; it is capped so that a
 * deep or long-keyed instance cannot make error messages unbounded. */
struct vctx {
    char path[512];
    size_t len;
    char *err;
    size_t errlen;
    unsigned long steps, budget;
    int depth;
    bool stopped;
    const struct schema *s;
    /* The dynamic scope: the resources evaluation has entered, outermost first (for
     * $dynamicRef and $recursiveRef). */
    const char *scope[SCHEMA_MAX_EVAL_DEPTH + 1];
    int n_scope;
};

static size_t path_push_key(struct vctx *v, const char *key, size_t keylen)
{
    size_t old = v->len;
    bool plain = keylen > 0 && keylen <= 64;
    for (size_t i = 0; plain && i < keylen; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            plain = false;
    }
    int n = plain ? snprintf(v->path + v->len, sizeof(v->path) - v->len, ".%.*s", (int)keylen, key)
                  : snprintf(v->path + v->len, sizeof(v->path) - v->len, "[\"%.*s%s\"]",
                             (int)(keylen > 40 ? 40 : keylen), key, keylen > 40 ? "..." : "");
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

/* Keys, names and patterns come from the instance and the schema: a message stays
 * one line of printable text. */
void schema_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* The message: the instance's path, then what (a prefix) and the formatted reason. */
static void vset(struct vctx *v, const char *what, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vset(struct vctx *v, const char *what, const char *fmt, va_list ap)
{
    char msg[384];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    snprintf(v->err, v->errlen, "%s: %s%s", v->path, what, msg);
    schema_one_line(v->err);
}

static bool vfail(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool vfail(struct vctx *v, const char *fmt, ...)
{
    if (v->stopped) /* the reason it stopped stays the message */
        return false;
    va_list ap;
    va_start(ap, fmt);
    vset(v, "", fmt, ap);
    va_end(ap);
    return false;
}

/* Ends the whole validation: no anyOf or not may turn this failure into a success. */
static bool vstop(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool vstop(struct vctx *v, const char *fmt, ...)
{
    if (v->stopped)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vset(v, "validation stopped: ", fmt, ap);
    va_end(ap);
    v->stopped = true;
    return false;
}

static bool spend(struct vctx *v, unsigned long steps)
{
    v->steps += steps;
    if (v->steps <= v->budget)
        return true;
    return vstop(v, "more than %lu evaluation steps", v->budget);
}

/* ---- JSON values ---- */

static void value_text(const json_t *j, char *buf, size_t size)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, size, "%.60s%s", s ? s : "?", s && strlen(s) > 60 ? "..." : "");
    free(s);
}

/* ---- numbers ---- */

static int num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    double x = json_number_value(a), y = json_number_value(b);
    return x < y ? -1 : x > y;
}

static bool is_multiple(const json_t *x, const json_t *m)
{
    if (json_is_integer(x) && json_is_integer(m)) /* m > 0: checked at load */
        return json_integer_value(x) % json_integer_value(m) == 0;
    double q = json_number_value(x) / json_number_value(m);
    if (!__builtin_isfinite(q))
        return false;
    double aq = q < 0 ? -q : q;
    if (aq >= 4503599627370496.0) /* 2^52: every double this large is integral */
        return true;
    double r = (double)(long long)(q + (q < 0 ? -0.5 : 0.5));
    double diff = q - r < 0 ? r - q : q - r;
    /* Binary floating point: 0.0075 / 0.0001 is 74.99999999999999. */
    return diff <= 1e-9 * (aq > 1 ? aq : 1);
}

static bool eval_number(struct vctx *v, const struct snode *n, const json_t *inst)
{
    char t[80];
    if (n->multiple_of && !is_multiple(inst, n->multiple_of)) {
        value_text(n->multiple_of, t, sizeof(t));
        return vfail(v, "must be a multiple of %s", t);
    }
    if (n->minimum) {
        int c = num_cmp(inst, n->minimum);
        if (c < 0 || (c == 0 && n->minimum_exclusive)) {
            value_text(n->minimum, t, sizeof(t));
            return vfail(v, "must be %s %s", n->minimum_exclusive ? "greater than" : "at least", t);
        }
    }
    if (n->maximum) {
        int c = num_cmp(inst, n->maximum);
        if (c > 0 || (c == 0 && n->maximum_exclusive)) {
            value_text(n->maximum, t, sizeof(t));
            return vfail(v, "must be %s %s", n->maximum_exclusive ? "less than" : "at most", t);
        }
    }
    if (n->exclusive_min && num_cmp(inst, n->exclusive_min) <= 0) {
        value_text(n->exclusive_min, t, sizeof(t));
        return vfail(v, "must be greater than %s", t);
    }
    if (n->exclusive_max && num_cmp(inst, n->exclusive_max) >= 0) {
        value_text(n->exclusive_max, t, sizeof(t));
        return vfail(v, "must be less than %s", t);
    }
    return true;
}

/* ---- strings ---- */

static size_t utf8_codepoints(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            n++;
    return n;
}

/* 1 match, 0 none, -1 stopped (message set). */
static int match(struct vctx *v, struct schema_pattern *re, const char *src, const char *s,
                 size_t len)
{
    if (!spend(v, 1 + len / 256))
        return -1;
    struct schema_match_budget b = {&v->steps, v->budget, 0};
    int rc = schema_pattern_match(re, s, len, &b);
    if (rc == -3)
        vstop(v, "more than %lu evaluation steps (in the pattern \"%.80s\")", v->budget, src);
    else if (rc == -2)
        vstop(v, "not valid UTF-8, so the pattern \"%.80s\" cannot be matched", src);
    else if (rc < 0)
        vstop(v, "the pattern \"%.80s\" is too costly to match here", src);
    return rc < 0 ? -1 : rc;
}

static bool eval_string(struct vctx *v, const struct snode *n, const json_t *inst)
{
    const char *str = json_string_value(inst);
    size_t len = json_string_length(inst);
    if (n->min_length >= 0 || n->max_length >= 0) {
        size_t cps = utf8_codepoints(str, len);
        if (n->min_length >= 0 && cps < (size_t)n->min_length)
            return vfail(v, "must be at least %ld characters", n->min_length);
        if (n->max_length >= 0 && cps > (size_t)n->max_length)
            return vfail(v, "must be at most %ld characters", n->max_length);
    }
    if (n->pattern) {
        int rc = match(v, n->pattern, n->pattern_src, str, len);
        if (rc < 0)
            return false;
        if (rc == 0)
            return vfail(v, "does not match the pattern \"%.100s\"", n->pattern_src);
    }
    return true;
}

/* ---- arrays ---- */

static bool eval(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a);

static bool eval_at_index(struct vctx *v, const struct snode *n, const json_t *arr, size_t i)
{
    size_t old = path_push_index(v, i);
    bool ok = eval(v, n, json_array_get(arr, i), NULL);
    path_pop(v, old);
    return ok;
}

struct hashed {
    uint64_t h;
    size_t i;
};

static int hashed_cmp(const void *a, const void *b)
{
    const struct hashed *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Sorting by hash keeps this O(n log n); only equal hashes are compared. */
static bool eval_unique(struct vctx *v, const json_t *inst)
{
    size_t n = json_array_size(inst);
    if (n < 2)
        return true;
    if (!spend(v, n))
        return false;
    struct hashed *hs = xcalloc(n, sizeof(*hs));
    for (size_t i = 0; i < n; i++)
        hs[i] = (struct hashed){schema_json_hash(json_array_get(inst, i)), i};
    qsort(hs, n, sizeof(*hs), hashed_cmp);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        for (size_t j = i + 1; ok && j < n && hs[j].h == hs[i].h; j++) {
            if (!spend(v, 1))
                ok = false;
            else if (schema_json_equal(json_array_get(inst, hs[i].i),
                                       json_array_get(inst, hs[j].i)))
                ok = vfail(v, "items %zu and %zu are equal (uniqueItems)", hs[i].i, hs[j].i);
        }
    free(hs);
    return ok;
}

/* minItems/maxItems and minProperties/maxProperties: size in [min, max], -1 for no bound. */
static bool eval_count(struct vctx *v, size_t size, long min, long max, const char *what)
{
    if (min >= 0 && size < (size_t)min)
        return vfail(v, "must have at least %ld %s", min, what);
    if (max >= 0 && size > (size_t)max)
        return vfail(v, "must have at most %ld %s", max, what);
    return true;
}

static bool eval_array(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    size_t size = json_array_size(inst);
    if (!eval_count(v, size, n->min_items, n->max_items, "items"))
        return false;
    if (n->unique_items && !eval_unique(v, inst))
        return false;
    size_t start = 0;
    if (n->tuple) {
        for (size_t i = 0; i < size && i < n->n_prefix; i++) {
            if (!eval_at_index(v, n->prefix[i], inst, i))
                return false;
            if (a)
                bits_set(&a->items, size, i);
        }
        start = n->n_prefix;
    }
    if (n->items)
        for (size_t i = start; i < size; i++) {
            if (!eval_at_index(v, n->items, inst, i))
                return false;
            if (a)
                bits_set(&a->items, size, i);
        }
    if (n->contains) {
        /* 2020-12: the items contains matched count as evaluated. */
        bool mark = a && n->dialect >= SCHEMA_DRAFT_2020_12;
        long count = 0;
        for (size_t i = 0; i < size; i++) {
            if (!mark && n->max_contains < 0 && count >= n->min_contains)
                break;
            bool ok = eval_at_index(v, n->contains, inst, i);
            if (v->stopped)
                return false;
            if (ok) {
                count++;
                if (mark)
                    bits_set(&a->items, size, i);
            }
        }
        if (count < n->min_contains)
            return vfail(v, "must contain at least %ld item%s matching \"contains\"",
                         n->min_contains, n->min_contains == 1 ? "" : "s");
        if (n->max_contains >= 0 && count > n->max_contains)
            return vfail(v, "must contain at most %ld item%s matching \"contains\"",
                         n->max_contains, n->max_contains == 1 ? "" : "s");
    }
    return true;
}

/* ---- objects ---- */

static const struct snode *find_prop(const struct snode_prop *props, size_t n, const char *key,
                                     size_t keylen)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *name = props[mid].name;
        size_t nlen = strlen(name);
        int c = memcmp(key, name, keylen < nlen ? keylen : nlen);
        if (c == 0)
            c = keylen < nlen ? -1 : keylen > nlen;
        if (c == 0)
            return props[mid].s;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static bool eval_at_key(struct vctx *v, const struct snode *n, const char *key, size_t keylen,
                        const json_t *val)
{
    size_t old = path_push_key(v, key, keylen);
    bool ok = n->is_bool && !n->bool_value ? vfail(v, "property not allowed here")
                                           : eval(v, n, val, NULL);
    path_pop(v, old);
    return ok;
}

static bool eval_property_name(struct vctx *v, const struct snode *n, const char *key,
                               size_t keylen)
{
    json_t *name = json_stringn_nocheck(key, keylen);
    size_t old = path_push_key(v, key, keylen);
    bool ok = eval(v, n, name, NULL);
    if (!ok && !v->stopped) {
        char inner[256];
        const char *colon = strstr(v->err, ": ");
        snprintf(inner, sizeof(inner), "%s", colon ? colon + 2 : v->err);
        vfail(v, "this property name is not allowed: %s", inner);
    }
    path_pop(v, old);
    json_decref(name);
    return ok;
}

static bool eval_object(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    size_t size = json_object_size(inst);
    if (!eval_count(v, size, n->min_props, n->max_props, "properties"))
        return false;
    for (size_t i = 0; i < n->n_required; i++)
        if (!json_object_get(inst, n->required[i]))
            return vfail(v, "missing required property \"%.64s\"", n->required[i]);
    for (size_t i = 0; i < n->n_dep_required; i++) {
        const struct snode_dep *d = &n->dep_required[i];
        if (!json_object_get(inst, d->name))
            continue;
        for (size_t j = 0; j < d->n; j++)
            if (!json_object_get(inst, d->names[j]))
                return vfail(v, "property \"%.64s\" requires property \"%.64s\"", d->name,
                             d->names[j]);
    }
    bool per_key = n->property_names || n->n_props || n->n_pprops || n->additional_props;
    if (per_key) {
        if (!spend(v, size))
            return false;
        const char *key;
        size_t klen, i = 0;
        json_t *val;
        json_object_keylen_foreach((json_t *)inst, key, klen, val)
        {
            if (n->property_names && !eval_property_name(v, n->property_names, key, klen))
                return false;
            bool matched = false;
            const struct snode *ps = find_prop(n->props, n->n_props, key, klen);
            if (ps) {
                if (!eval_at_key(v, ps, key, klen, val))
                    return false;
                matched = true;
            }
            for (size_t p = 0; p < n->n_pprops; p++) {
                int rc = match(v, n->pprops[p].re, n->pprops[p].src, key, klen);
                if (rc < 0)
                    return false;
                if (rc == 0)
                    continue;
                if (!eval_at_key(v, n->pprops[p].s, key, klen, val))
                    return false;
                matched = true;
            }
            if (!matched && n->additional_props) {
                if (!eval_at_key(v, n->additional_props, key, klen, val))
                    return false;
                matched = true;
            }
            if (a && matched)
                bits_set(&a->props, size, i);
            i++;
        }
    }
    for (size_t i = 0; i < n->n_dep_schemas; i++)
        if (json_object_get(inst, n->dep_schemas[i].name) && !eval(v, n->dep_schemas[i].s, inst, a))
            return false;
    return true;
}

static bool eval_unevaluated(struct vctx *v, const struct snode *n, const json_t *inst,
                             struct ann *a)
{
    if (n->unevaluated_props && json_is_object(inst)) {
        size_t size = json_object_size(inst), i = 0;
        const char *key;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach((json_t *)inst, key, klen, val)
        {
            if (!bits_get(&a->props, i)) {
                if (!eval_at_key(v, n->unevaluated_props, key, klen, val))
                    return false;
                bits_set(&a->props, size, i);
            }
            i++;
        }
    }
    if (n->unevaluated_items && json_is_array(inst)) {
        size_t size = json_array_size(inst);
        for (size_t i = 0; i < size; i++)
            if (!bits_get(&a->items, i)) {
                if (!eval_at_index(v, n->unevaluated_items, inst, i))
                    return false;
                bits_set(&a->items, size, i);
            }
    }
    return true;
}

/* ---- in-place applicators ---- */

/* The failure of the branch that got furthest into the instance, for the message. */
static void keep_closest(struct vctx *v, char **best, size_t *best_len, size_t idx,
                         size_t *best_idx)
{
    const char *colon = strstr(v->err, ": ");
    size_t len = colon ? (size_t)(colon - v->err) : 0;
    if (*best && len <= *best_len)
        return;
    free(*best);
    *best = xstrdup(v->err);
    *best_len = len;
    *best_idx = idx;
}

static bool eval_any_of(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    bool any = false;
    char *best = NULL;
    size_t best_len = 0, best_idx = 0;
    for (size_t i = 0; i < n->n_any_of; i++) {
        struct ann t = {0};
        bool ok = eval(v, n->any_of[i], inst, a ? &t : NULL);
        if (v->stopped) {
            ann_free(&t);
            free(best);
            return false;
        }
        if (ok) {
            any = true;
            if (a)
                ann_merge(a, &t);
        } else if (!any)
            keep_closest(v, &best, &best_len, i, &best_idx);
        ann_free(&t);
        if (ok && !a)
            break; /* nobody asks which branches matched */
    }
    if (!any)
        vfail(v, "matches none of the anyOf schemas (closest, anyOf[%zu]: %s)", best_idx, best);
    free(best);
    return any;
}

static bool eval_one_of(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    size_t matched = 0, first = 0;
    char *best = NULL;
    size_t best_len = 0, best_idx = 0;
    struct ann kept = {0};
    for (size_t i = 0; i < n->n_one_of && matched < 2; i++) {
        struct ann t = {0};
        bool ok = eval(v, n->one_of[i], inst, a ? &t : NULL);
        if (v->stopped) {
            ann_free(&t);
            ann_free(&kept);
            free(best);
            return false;
        }
        if (ok) {
            if (matched++ == 0) {
                first = i;
                kept = t;
                continue;
            }
            vfail(v, "matches both oneOf[%zu] and oneOf[%zu], not exactly one", first, i);
        } else
            keep_closest(v, &best, &best_len, i, &best_idx);
        ann_free(&t);
    }
    if (matched == 0)
        vfail(v, "matches none of the oneOf schemas (closest, oneOf[%zu]: %s)", best_idx, best);
    if (matched == 1 && a)
        ann_merge(a, &kept);
    ann_free(&kept);
    free(best);
    return matched == 1;
}

static bool eval_if(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    struct ann t = {0};
    bool cond = eval(v, n->if_, inst, a ? &t : NULL);
    if (v->stopped) {
        ann_free(&t);
        return false;
    }
    if (cond && a)
        ann_merge(a, &t);
    ann_free(&t);
    const struct snode *branch = cond ? n->then_ : n->else_;
    if (!branch || eval(v, branch, inst, a))
        return true;
    if (!v->stopped) {
        char inner[384];
        snprintf(inner, sizeof(inner), "%s", v->err);
        vfail(v, "fails the \"%s\" of its if (%s)", cond ? "then" : "else", inner);
    }
    return false;
}

/* Where a dynamic reference lands: the outermost resource in the dynamic scope that
 * defines the anchor, else its static target. */
static const struct snode *dynamic_target(const struct vctx *v, const struct snode *n)
{
    const struct schema *s = v->s;
    for (int i = 0; i < v->n_scope; i++) {
        const json_t *js;
        if (n->dyn_recursive)
            js = shash_get(&s->rec_anchors, v->scope[i], strlen(v->scope[i]));
        else {
            char *k = xasprintf("%s#%s", v->scope[i], n->dyn_name);
            js = shash_get(&s->dyn_anchors, k, strlen(k));
            free(k);
        }
        const struct slocation *loc = js ? shash_get(&s->locations, js, 0) : NULL;
        if (loc && loc->node)
            return loc->node;
    }
    return n->dyn_ref;
}

static bool eval_keywords(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    if (n->ref && !eval(v, n->ref, inst, a))
        return false;
    if (n->dyn_ref) {
        const struct snode *t = n->dyn_name || n->dyn_recursive ? dynamic_target(v, n) : n->dyn_ref;
        if (!eval(v, t, inst, a))
            return false;
    }
    unsigned it = schema_instance_type(inst);
    if (n->types && !(n->types & it)) {
        static const char *const names[] = {"null",   "boolean", "object", "array",
                                            "number", "integer", "string"};
        char want[96] = "";
        size_t o = 0;
        for (size_t i = 0; i < ARRAY_LEN(names); i++)
            if (n->types & (1u << i)) {
                int w = snprintf(want + o, sizeof(want) - o, "%s%s", o ? " or " : "", names[i]);
                if (w > 0 && (size_t)w < sizeof(want) - o)
                    o += (size_t)w;
            }
        return vfail(v, "must be %s", want);
    }
    if (n->const_value && !schema_json_equal(inst, n->const_value)) {
        char t[80];
        value_text(n->const_value, t, sizeof(t));
        return vfail(v, "must be %s (const)", t);
    }
    if (n->enum_values) {
        size_t count = json_array_size(n->enum_values);
        if (!spend(v, count))
            return false;
        bool found = false;
        for (size_t i = 0; !found && i < count; i++)
            found = schema_json_equal(inst, json_array_get(n->enum_values, i));
        if (!found)
            return vfail(v, "must be one of the enumerated values");
    }
    if ((it & T_NUMBER) && !eval_number(v, n, inst))
        return false;
    if ((it & T_STRING) && !eval_string(v, n, inst))
        return false;
    if ((it & T_ARRAY) && !eval_array(v, n, inst, a))
        return false;
    if ((it & T_OBJECT) && !eval_object(v, n, inst, a))
        return false;
    for (size_t i = 0; i < n->n_all_of; i++)
        if (!eval(v, n->all_of[i], inst, a))
            return false;
    if (n->n_any_of && !eval_any_of(v, n, inst, a))
        return false;
    if (n->n_one_of && !eval_one_of(v, n, inst, a))
        return false;
    if (n->not_) {
        bool ok = eval(v, n->not_, inst, NULL);
        if (v->stopped)
            return false;
        if (ok)
            return vfail(v, "must not match the schema in \"not\"");
    }
    if (n->if_ && !eval_if(v, n, inst, a))
        return false;
    return true;
}

static bool eval(struct vctx *v, const struct snode *n, const json_t *inst, struct ann *a)
{
    if (v->stopped || !spend(v, 1))
        return false;
    if (n->is_bool)
        return n->bool_value || vfail(v, "no value is allowed here (the schema false)");
    if (v->depth >= SCHEMA_MAX_EVAL_DEPTH)
        return vstop(v, "schemas nested more than %d deep here (a \"$ref\" loop?)",
                     SCHEMA_MAX_EVAL_DEPTH);
    v->depth++;
    bool entered = v->n_scope == 0 || v->scope[v->n_scope - 1] != n->resource;
    if (entered)
        v->scope[v->n_scope++] = n->resource;
    struct ann local = {0};
    struct ann *mine = n->collects ? &local : a;
    bool ok = eval_keywords(v, n, inst, mine);
    if (ok && n->collects)
        ok = eval_unevaluated(v, n, inst, mine);
    if (ok && a && mine != a)
        ann_merge(a, mine);
    ann_free(&local);
    if (entered)
        v->n_scope--;
    v->depth--;
    return ok;
}

/* The size of inst for its step budget: its values (itself included), and half the
 * bytes of its strings and keys, which patterns walk; at most cap. */
static unsigned long instance_size(const json_t *j, unsigned long cap)
{
    unsigned long n = 1;
    if (json_is_string(j))
        n += json_string_length(j) / 2;
    else if (json_is_array(j))
        for (size_t i = 0; i < json_array_size(j) && n < cap; i++)
            n += instance_size(json_array_get(j, i), cap - n);
    else if (json_is_object(j)) {
        const char *key;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach((json_t *)j, key, klen, v)
        {
            if (n >= cap)
                break;
            n += klen / 2 + instance_size(v, cap - n);
        }
    }
    return n < cap ? n : cap;
}

bool schema_validate(const struct schema *s, const json_t *inst, char *err, size_t errlen)
{
    char scratch[8];
    struct vctx v = {.s = s,
                     .path = "$",
                     .len = 1,
                     .err = errlen ? err : scratch,
                     .errlen = errlen ? errlen : sizeof(scratch)};
    v.err[0] = '\0';
    v.budget = SCHEMA_MAX_STEPS +
               SCHEMA_STEPS_PER_VALUE * instance_size(inst, (1ul << 40) / SCHEMA_STEPS_PER_VALUE);
    return eval(&v, s->root, inst, NULL);
}
