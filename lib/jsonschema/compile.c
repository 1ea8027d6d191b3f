/* Loading a JSON Schema document: index it (schema_index.c), then compile every schema
 * reachable from the root into a node whose keywords are checked and pre-digested
 * (sorted property tables, compiled patterns, resolved references). Nodes are compiled
 * from a work queue rather than by recursion, so a long chain of "$ref"s costs heap,
 * not stack. */
#include "impl.h"
#include "uri.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The base URI of a document without "$id": relative references resolve against it,
 * and nothing outside the document can be found under it. */
#define DEFAULT_BASE "urn:hub:schema"

struct pending {
    struct snode *node;
    const json_t *js;
    struct slocation *loc;
    char *path;
};

struct loader {
    struct schema *s;
    struct pending *queue;
    size_t n_queue, cap_queue;
};

static bool lfail(struct loader *l, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool lfail(struct loader *l, const char *path, const char *key, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(l->s->err, l->s->errlen, "%s%s%s: %s", path, *path && *key ? "." : "", key, msg);
    schema_one_line(l->s->err);
    l->s->failed = true;
    return false;
}

/* The node for a schema location the index has seen; queued for compiling. */
static struct snode *node_for(struct loader *l, const json_t *js, const char *path)
{
    struct slocation *loc = shash_get(&l->s->locations, js, 0);
    if (!loc) {
        lfail(l, path, "", "internal error: a schema the index did not see");
        return NULL;
    }
    if (loc->node)
        return loc->node;
    struct snode *n = xcalloc(1, sizeof(*n));
    n->next_alloc = l->s->nodes;
    l->s->nodes = n;
    loc->node = n;
    n->dialect = loc->dialect;
    n->resource = shash_get(&l->s->resource_names, loc->base, strlen(loc->base));
    if (!n->resource) {
        char *name = xstrdup(loc->base);
        shash_put(&l->s->resource_names, loc->base, strlen(loc->base), name);
        n->resource = name;
    }
    n->min_length = n->max_length = n->min_items = n->max_items = -1;
    n->min_props = n->max_props = n->max_contains = -1;
    n->min_contains = 1;
    if (json_is_boolean(js)) {
        n->is_bool = true;
        n->bool_value = json_is_true(js);
        return n;
    }
    if (l->n_queue == l->cap_queue) {
        l->cap_queue = l->cap_queue ? l->cap_queue * 2 : 32;
        l->queue = xrealloc(l->queue, l->cap_queue * sizeof(*l->queue));
    }
    l->queue[l->n_queue++] = (struct pending){n, js, loc, xstrdup(path)};
    return n;
}

static struct snode *child(struct loader *l, const json_t *js, const char *path, const char *key,
                           const char *sub, long index)
{
    char *p = sub          ? xasprintf("%s%s%s.%s", path, *path ? "." : "", key, sub)
              : index >= 0 ? xasprintf("%s%s%s[%ld]", path, *path ? "." : "", key, index)
                           : xasprintf("%s%s%s", path, *path ? "." : "", key);
    struct snode *n = node_for(l, js, p);
    free(p);
    return n;
}

static bool type_bit(const char *name, unsigned *bit)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"null", T_NULL},     {"boolean", T_BOOLEAN}, {"object", T_OBJECT}, {"array", T_ARRAY},
        {"number", T_NUMBER}, {"integer", T_INTEGER}, {"string", T_STRING},
    };
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        if (strcmp(name, names[i].name) == 0) {
            *bit = names[i].bit;
            return true;
        }
    return false;
}

/* A count keyword: a non-negative integer (2.0 counts as 2). */
static bool get_count(struct loader *l, const char *path, const char *key, const json_t *v,
                      long *out)
{
    double d = json_is_integer(v) ? (double)json_integer_value(v)
               : json_is_real(v)  ? json_real_value(v)
                                  : -1;
    if (d < 0 || d > 2147483647.0 || d != (double)(long)d)
        return lfail(l, path, key, "must be a non-negative integer");
    *out = (long)d;
    return true;
}

static bool compile_list(struct loader *l, const char *path, const char *key, const json_t *v,
                         struct snode ***out, size_t *n)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return lfail(l, path, key, "must be a non-empty array of schemas");
    *out = xcalloc(json_array_size(v), sizeof(**out));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (!((*out)[i] = child(l, e, path, key, NULL, (long)i)))
            return false;
        *n = i + 1;
    }
    return true;
}

static int prop_cmp(const void *a, const void *b)
{
    return strcmp(((const struct snode_prop *)a)->name, ((const struct snode_prop *)b)->name);
}

static bool compile_props(struct loader *l, const char *path, const char *key, const json_t *v,
                          struct snode_prop **out, size_t *n)
{
    if (!json_is_object(v))
        return lfail(l, path, key, "must be an object of schemas");
    *out = xcalloc(json_object_size(v) + 1, sizeof(**out));
    const char *name;
    json_t *e;
    json_object_foreach((json_t *)v, name, e)
    {
        struct snode *c = child(l, e, path, key, name, -1);
        if (!c)
            return false;
        (*out)[*n].name = name;
        (*out)[(*n)++].s = c;
    }
    qsort(*out, *n, sizeof(**out), prop_cmp);
    return true;
}

static bool compile_names(struct loader *l, const char *path, const char *key, const json_t *v,
                          const char ***out, size_t *n)
{
    if (!json_is_array(v))
        return lfail(l, path, key, "must be an array of property names");
    *out = xcalloc(json_array_size(v) + 1, sizeof(**out));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e))
            return lfail(l, path, key, "must be an array of property names");
        (*out)[(*n)++] = json_string_value(e);
    }
    return true;
}

static void add_dep_required(struct snode *n, const char *name, const char **names, size_t count)
{
    n->dep_required = xrealloc(n->dep_required, (n->n_dep_required + 1) * sizeof(struct snode_dep));
    n->dep_required[n->n_dep_required++] = (struct snode_dep){name, names, count};
}

static bool compile_deps(struct loader *l, struct snode *n, const char *path, const char *key,
                         const json_t *v, bool names_only, bool schemas_only)
{
    if (!json_is_object(v))
        return lfail(l, path, key, "must be an object");
    const char *name;
    json_t *e;
    json_object_foreach((json_t *)v, name, e)
    {
        if (json_is_array(e) && !schemas_only) {
            const char **names = NULL;
            size_t count = 0;
            char *p = xasprintf("%s%s%s", path, *path ? "." : "", key);
            bool ok = compile_names(l, p, name, e, &names, &count);
            free(p);
            add_dep_required(n, name, names, count);
            if (!ok)
                return false;
            continue;
        }
        if (names_only)
            return lfail(l, path, key, "must map names to arrays of property names");
        struct snode *c = child(l, e, path, key, name, -1);
        if (!c)
            return false;
        n->dep_schemas =
            xrealloc(n->dep_schemas, (n->n_dep_schemas + 1) * sizeof(struct snode_prop));
        n->dep_schemas[n->n_dep_schemas++] = (struct snode_prop){name, c};
    }
    if (n->n_dep_schemas) /* qsort(NULL, 0, ...) is undefined */
        qsort(n->dep_schemas, n->n_dep_schemas, sizeof(*n->dep_schemas), prop_cmp);
    return true;
}

static bool compile_pattern_props(struct loader *l, struct snode *n, const char *path,
                                  const char *key, const json_t *v)
{
    if (!json_is_object(v))
        return lfail(l, path, key, "must be an object of schemas");
    n->pprops = xcalloc(json_object_size(v) + 1, sizeof(*n->pprops));
    const char *re;
    json_t *e;
    json_object_foreach((json_t *)v, re, e)
    {
        char why[200];
        struct snode_pprop *pp = &n->pprops[n->n_pprops];
        pp->re = schema_pattern_compile(re, strlen(re), why, sizeof(why));
        if (!pp->re)
            return lfail(l, path, key, "\"%.64s\": %s", re, why);
        n->n_pprops++;
        pp->src = re;
        if (!(pp->s = child(l, e, path, key, re, -1)))
            return false;
    }
    return true;
}

/* The node a reference (as written in v, relative to loc's base) points to, in *out;
 * its schema in *target when asked. */
static bool resolve_ref(struct loader *l, const struct slocation *loc, const char *path,
                        const char *key, const json_t *v, struct snode **out,
                        const json_t **target_out)
{
    if (!json_is_string(v))
        return lfail(l, path, key, "must be a string");
    char *abs = schema_uri_resolve(loc->base, json_string_value(v));
    char why[300];
    const json_t *target = schema_lookup(l->s, abs, why, sizeof(why));
    bool ok = target != NULL;
    if (!ok)
        lfail(l, path, key, "cannot resolve \"%.100s\": %s", json_string_value(v), why);
    else if (!shash_get(&l->s->locations, target, 0)) {
        /* A pointer to a place the walk did not enter (under an unknown keyword):
         * index it now, in its resource's base and dialect. */
        const char *frag;
        char *nofrag = schema_uri_split(abs, &frag);
        const json_t *res = shash_get(&l->s->resources, nofrag, strlen(nofrag));
        const struct slocation *rl = shash_get(&l->s->locations, res, 0);
        char *p = xasprintf("%s%s%s", path, *path ? "." : "", key);
        ok = schema_index(l->s, target, rl ? rl->base : nofrag,
                          rl ? rl->dialect : SCHEMA_DRAFT_2020_12, p, 0);
        free(p);
        free(nofrag);
    }
    if (ok) {
        char *p = xasprintf("%s%s%s", path, *path ? "." : "", key);
        *out = node_for(l, target, p);
        free(p);
        ok = *out != NULL;
    }
    if (target_out)
        *target_out = target;
    free(abs);
    return ok;
}

static bool compile_ref(struct loader *l, struct snode *n, const struct slocation *loc,
                        const char *path, const char *key, const json_t *v)
{
    return resolve_ref(l, loc, path, key, v, &n->ref, NULL);
}

/* 2020-12: resolved like $ref; dynamic only when the fragment names a $dynamicAnchor
 * that the static target itself defines. */
static bool compile_dynamic_ref(struct loader *l, struct snode *n, const struct slocation *loc,
                                const char *path, const char *key, const json_t *v)
{
    const json_t *target = NULL;
    if (!resolve_ref(l, loc, path, key, v, &n->dyn_ref, &target))
        return false;
    const char *hash = strchr(json_string_value(v), '#');
    const json_t *da = json_object_get(target, "$dynamicAnchor");
    if (hash && hash[1] && hash[1] != '/' && json_is_string(da) &&
        strcmp(json_string_value(da), hash + 1) == 0) {
        n->dyn_name = hash + 1; /* borrowed from the document */
        l->s->dynamic = true;
    }
    return true;
}

/* 2019-09: "$recursiveRef": "#" points to its resource's root; dynamic when that root
 * says "$recursiveAnchor": true. */
static bool compile_recursive_ref(struct loader *l, struct snode *n, const struct slocation *loc,
                                  const char *path, const char *key, const json_t *v)
{
    if (!json_is_string(v) || strcmp(json_string_value(v), "#") != 0)
        return lfail(l, path, key, "must be \"#\"");
    const json_t *target = NULL;
    if (!resolve_ref(l, loc, path, key, v, &n->dyn_ref, &target))
        return false;
    if (json_is_true(json_object_get(target, "$recursiveAnchor"))) {
        n->dyn_recursive = true;
        l->s->dynamic = true;
    }
    return true;
}

static bool compile_type(struct loader *l, struct snode *n, const char *path, const json_t *v)
{
    if (json_is_string(v)) {
        if (!type_bit(json_string_value(v), &n->types))
            return lfail(l, path, "type", "unknown type name \"%.32s\"", json_string_value(v));
        return true;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return lfail(l, path, "type", "must be a type name or a non-empty list of them");
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t)
    {
        unsigned bit;
        if (!json_is_string(t) || !type_bit(json_string_value(t), &bit))
            return lfail(l, path, "type", "unknown type name in list");
        n->types |= bit;
    }
    return true;
}

static bool compile_number(struct loader *l, struct snode *n, const char *path, const char *key,
                           const json_t *v)
{
    bool excl = strncmp(key, "exclusive", 9) == 0;
    bool is_max = strstr(key, "aximum") != NULL;
    if (excl && json_is_boolean(v)) { /* draft-04: a flag on minimum/maximum */
        *(is_max ? &n->maximum_exclusive : &n->minimum_exclusive) = json_is_true(v);
        return true;
    }
    if (!json_is_number(v))
        return lfail(l, path, key, "must be a number");
    if (strcmp(key, "multipleOf") == 0) {
        if (json_number_value(v) <= 0)
            return lfail(l, path, key, "must be greater than 0");
        n->multiple_of = v;
    } else if (excl)
        *(is_max ? &n->exclusive_max : &n->exclusive_min) = v;
    else
        *(is_max ? &n->maximum : &n->minimum) = v;
    return true;
}

static bool compile_one(struct loader *l, const char *path, const char *key, const json_t *v,
                        struct snode **out)
{
    return (*out = child(l, v, path, key, NULL, -1)) != NULL;
}

static bool compile_keyword(struct loader *l, struct snode *n, const struct slocation *loc,
                            const json_t *js, const char *path, const char *key, const json_t *v)
{
    enum schema_dialect d = n->dialect;
    bool d19 = d >= SCHEMA_DRAFT_2019_09;
    if (strcmp(key, "$ref") == 0)
        return compile_ref(l, n, loc, path, key, v);
    if (strcmp(key, "$dynamicRef") == 0 && d >= SCHEMA_DRAFT_2020_12)
        return compile_dynamic_ref(l, n, loc, path, key, v);
    if (strcmp(key, "$recursiveRef") == 0 && d == SCHEMA_DRAFT_2019_09)
        return compile_recursive_ref(l, n, loc, path, key, v);
    if (strcmp(key, "type") == 0)
        return compile_type(l, n, path, v);
    if (strcmp(key, "enum") == 0) {
        if (!json_is_array(v))
            return lfail(l, path, key, "must be an array");
        n->enum_values = v;
        return true;
    }
    if (strcmp(key, "const") == 0 && d >= SCHEMA_DRAFT_06) {
        n->const_value = v;
        return true;
    }
    if (strcmp(key, "multipleOf") == 0 || strcmp(key, "minimum") == 0 ||
        strcmp(key, "maximum") == 0 || strcmp(key, "exclusiveMinimum") == 0 ||
        strcmp(key, "exclusiveMaximum") == 0)
        return compile_number(l, n, path, key, v);
    static const struct {
        const char *key;
        size_t off;
        bool since2019;
    } counts[] = {
        {"minLength", offsetof(struct snode, min_length), false},
        {"maxLength", offsetof(struct snode, max_length), false},
        {"minItems", offsetof(struct snode, min_items), false},
        {"maxItems", offsetof(struct snode, max_items), false},
        {"minProperties", offsetof(struct snode, min_props), false},
        {"maxProperties", offsetof(struct snode, max_props), false},
        {"minContains", offsetof(struct snode, min_contains), true},
        {"maxContains", offsetof(struct snode, max_contains), true},
    };
    for (size_t i = 0; i < ARRAY_LEN(counts); i++)
        if (strcmp(key, counts[i].key) == 0) {
            if (counts[i].since2019 && !d19)
                return true;
            return get_count(l, path, key, v, (long *)((char *)n + counts[i].off));
        }
    if (strcmp(key, "pattern") == 0) {
        if (!json_is_string(v))
            return lfail(l, path, key, "must be a string");
        char why[200];
        n->pattern =
            schema_pattern_compile(json_string_value(v), json_string_length(v), why, sizeof(why));
        n->pattern_src = json_string_value(v);
        return n->pattern || lfail(l, path, key, "%s", why);
    }
    if (strcmp(key, "patternProperties") == 0)
        return compile_pattern_props(l, n, path, key, v);
    if (strcmp(key, "uniqueItems") == 0) {
        if (!json_is_boolean(v))
            return lfail(l, path, key, "must be a boolean");
        n->unique_items = json_is_true(v);
        return true;
    }
    if (strcmp(key, "items") == 0) {
        if (!json_is_array(v)) {
            /* In 2020-12 "items" takes what "prefixItems" leaves. */
            return compile_one(l, path, key, v, &n->items);
        }
        if (json_object_get(js, "prefixItems") && d >= SCHEMA_DRAFT_2020_12)
            return lfail(l, path, key, "an array of schemas next to prefixItems");
        /* The tuple form (up to 2019-09; accepted in 2020-12 too, as servers write it),
         * with additionalItems for the rest. */
        n->tuple = true;
        if (json_array_size(v) > 0 && !compile_list(l, path, key, v, &n->prefix, &n->n_prefix))
            return false;
        const json_t *ai = json_object_get(js, "additionalItems");
        return !ai || compile_one(l, path, "additionalItems", ai, &n->items);
    }
    if (strcmp(key, "prefixItems") == 0 && d >= SCHEMA_DRAFT_2020_12) {
        n->tuple = true;
        return compile_list(l, path, key, v, &n->prefix, &n->n_prefix);
    }
    if (strcmp(key, "contains") == 0 && d >= SCHEMA_DRAFT_06)
        return compile_one(l, path, key, v, &n->contains);
    if (strcmp(key, "properties") == 0)
        return compile_props(l, path, key, v, &n->props, &n->n_props);
    if (strcmp(key, "additionalProperties") == 0)
        return compile_one(l, path, key, v, &n->additional_props);
    if (strcmp(key, "propertyNames") == 0 && d >= SCHEMA_DRAFT_06)
        return compile_one(l, path, key, v, &n->property_names);
    if (strcmp(key, "required") == 0)
        return compile_names(l, path, key, v, &n->required, &n->n_required);
    if (strcmp(key, "dependencies") == 0) /* kept in 2019-09 and later, as servers write it */
        return compile_deps(l, n, path, key, v, false, false);
    if (strcmp(key, "dependentRequired") == 0 && d19)
        return compile_deps(l, n, path, key, v, true, false);
    if (strcmp(key, "dependentSchemas") == 0 && d19)
        return compile_deps(l, n, path, key, v, false, true);
    if (strcmp(key, "allOf") == 0)
        return compile_list(l, path, key, v, &n->all_of, &n->n_all_of);
    if (strcmp(key, "anyOf") == 0)
        return compile_list(l, path, key, v, &n->any_of, &n->n_any_of);
    if (strcmp(key, "oneOf") == 0)
        return compile_list(l, path, key, v, &n->one_of, &n->n_one_of);
    if (strcmp(key, "not") == 0)
        return compile_one(l, path, key, v, &n->not_);
    if (d >= SCHEMA_DRAFT_07) {
        if (strcmp(key, "if") == 0)
            return compile_one(l, path, key, v, &n->if_);
        if (strcmp(key, "then") == 0)
            return compile_one(l, path, key, v, &n->then_);
        if (strcmp(key, "else") == 0)
            return compile_one(l, path, key, v, &n->else_);
    }
    if (d19 && strcmp(key, "unevaluatedItems") == 0) {
        n->collects = true;
        return compile_one(l, path, key, v, &n->unevaluated_items);
    }
    if (d19 && strcmp(key, "unevaluatedProperties") == 0) {
        n->collects = true;
        return compile_one(l, path, key, v, &n->unevaluated_props);
    }
    /* Annotations (title, description, default, examples, format, content*, ...),
     * identifiers handled by the index, and unknown keywords: ignored. */
    return true;
}

static bool compile_node(struct loader *l, const struct pending *p)
{
    const json_t *js = p->js;
    struct snode *n = p->node;
    /* Up to draft-07, "$ref" replaces the whole schema it sits in. */
    const json_t *ref = json_object_get(js, "$ref");
    if (ref && n->dialect <= SCHEMA_DRAFT_07)
        return compile_ref(l, n, p->loc, p->path, "$ref", ref);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)js, key, v)
    {
        if (strcmp(key, "additionalItems") == 0)
            continue; /* read with "items" */
        if (!compile_keyword(l, n, p->loc, js, p->path, key, v))
            return false;
    }
    /* 2019-09: without a tuple, "items" covers every item and additionalItems nothing;
     * with one, the same holds, since the rest was read with "items". In 2020-12 a
     * schema "items" next to "prefixItems" is already the rest. */
    return true;
}

static void free_location(void *p)
{
    struct slocation *loc = p;
    free(loc->base);
    free(loc);
}

static void free_node(struct snode *n)
{
    free(n->prefix);
    free(n->props);
    for (size_t i = 0; i < n->n_pprops; i++)
        schema_pattern_free(n->pprops[i].re);
    free(n->pprops);
    free(n->required);
    for (size_t i = 0; i < n->n_dep_required; i++)
        free(n->dep_required[i].names);
    free(n->dep_required);
    free(n->dep_schemas);
    free(n->all_of);
    free(n->any_of);
    free(n->one_of);
    schema_pattern_free(n->pattern);
    free(n);
}

void schema_free(struct schema *s)
{
    if (!s)
        return;
    for (struct snode *n = s->nodes, *next; n; n = next) {
        next = n->next_alloc;
        free_node(n);
    }
    shash_free(&s->locations, free_location);
    shash_free(&s->resources, NULL);
    shash_free(&s->anchors, NULL);
    shash_free(&s->extra, NULL);
    shash_free(&s->dyn_anchors, NULL);
    shash_free(&s->rec_anchors, NULL);
    shash_free(&s->resource_names, free);
    json_decref(s->docs);
    free(s);
}

struct schema *schema_compile_opts(const json_t *js, const struct schema_options *opts, char *err,
                                   size_t errlen)
{
    struct schema *s = xcalloc(1, sizeof(*s));
    s->err = err;
    s->errlen = errlen;
    s->docs = json_array();
    enum schema_dialect d =
        opts && opts->default_dialect ? opts->default_dialect : SCHEMA_DRAFT_2020_12;
    bool ok = true;
    json_t *root = json_deep_copy(js);
    json_array_append_new(s->docs, root);
    if (!root) {
        snprintf(err, errlen, "no schema");
        ok = false;
    }
    s->default_dialect = d;
    for (size_t i = 0; ok && opts && i < opts->n_documents; i++) {
        json_t *doc = json_deep_copy(opts->documents[i].schema);
        json_array_append_new(s->docs, doc);
        const char *frag;
        char *nofrag = schema_uri_split(opts->documents[i].uri, &frag);
        shash_put(&s->extra, nofrag, strlen(nofrag), doc);
        free(nofrag);
    }
    if (ok) {
        shash_put(&s->resources, DEFAULT_BASE, strlen(DEFAULT_BASE), root);
        ok = schema_index(s, root, DEFAULT_BASE, d, "", 0);
    }
    struct loader l = {.s = s};
    if (ok)
        ok = (s->root = node_for(&l, root, "")) != NULL;
    bool anchors_compiled = false;
    for (size_t i = 0; i < l.n_queue; i++) {
        struct pending p = l.queue[i]; /* compiling may grow (move) the queue */
        if (ok)
            ok = compile_node(&l, &p);
        free(p.path);
        /* A dynamic reference may land on any $dynamicAnchor or $recursiveAnchor
         * root, reachable statically or not: compile them all once. */
        if (ok && i + 1 == l.n_queue && s->dynamic && !anchors_compiled) {
            anchors_compiled = true;
            const struct shash *tables[] = {&s->dyn_anchors, &s->rec_anchors};
            for (size_t t = 0; ok && t < 2; t++)
                for (size_t e = 0; ok && e < tables[t]->cap; e++)
                    if (tables[t]->v[e].key)
                        ok = node_for(&l, tables[t]->v[e].value, "(dynamic anchor)") != NULL;
        }
    }
    free(l.queue);
    if (!ok) {
        schema_free(s);
        return NULL;
    }
    s->err = NULL;
    s->errlen = 0;
    return s;
}

struct schema *schema_compile(const json_t *js, char *err, size_t errlen)
{
    return schema_compile_opts(js, NULL, err, errlen);
}
