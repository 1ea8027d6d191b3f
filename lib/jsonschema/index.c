/* The first pass over a schema document: where each schema object sits (its base URI
 * and dialect), which URIs its "$id"s name, which anchors it defines. Only keywords
 * that hold schemas are walked, so an "$id" inside an enum or a property name is just
 * data. "$ref" resolution (schema_lookup) reads what this pass recorded. */
#include "impl.h"
#include "uri.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dialects ---- */

enum schema_dialect schema_dialect_of(const char *uri)
{
    static const struct {
        const char *uri;
        enum schema_dialect d;
    } known[] = {
        {"json-schema.org/draft-04/schema", SCHEMA_DRAFT_04},
        {"json-schema.org/draft-06/schema", SCHEMA_DRAFT_06},
        {"json-schema.org/draft-07/schema", SCHEMA_DRAFT_07},
        {"json-schema.org/draft/2019-09/schema", SCHEMA_DRAFT_2019_09},
        {"json-schema.org/draft/2020-12/schema", SCHEMA_DRAFT_2020_12},
    };
    /* As servers spell them: http or https, with or without the empty fragment. */
    if (strncmp(uri, "https://", 8) == 0)
        uri += 8;
    else if (strncmp(uri, "http://", 7) == 0)
        uri += 7;
    else
        return 0;
    size_t n = strlen(uri);
    if (n && uri[n - 1] == '#')
        n--;
    for (size_t i = 0; i < ARRAY_LEN(known); i++)
        if (strlen(known[i].uri) == n && strncmp(uri, known[i].uri, n) == 0)
            return known[i].d;
    return 0;
}

/* ---- the walk ---- */

static bool ifail(struct schema *s, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool ifail(struct schema *s, const char *path, const char *key, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(s->err, s->errlen, "%s%s%s: %s", path, *path && *key ? "." : "", key, msg);
    schema_one_line(s->err);
    s->failed = true;
    return false;
}

enum kind { K_NONE, K_ONE, K_LIST, K_MAP, K_ITEMS, K_DEPS };

/* Which keywords hold schemas, per dialect. */
static enum kind keyword_kind(const char *key, enum schema_dialect d)
{
    static const struct {
        const char *key;
        enum kind kind;
        enum schema_dialect since;
    } kw[] = {
        {"additionalItems", K_ONE, SCHEMA_DRAFT_04},
        {"additionalProperties", K_ONE, SCHEMA_DRAFT_04},
        {"items", K_ITEMS, SCHEMA_DRAFT_04},
        {"not", K_ONE, SCHEMA_DRAFT_04},
        {"allOf", K_LIST, SCHEMA_DRAFT_04},
        {"anyOf", K_LIST, SCHEMA_DRAFT_04},
        {"oneOf", K_LIST, SCHEMA_DRAFT_04},
        {"properties", K_MAP, SCHEMA_DRAFT_04},
        {"patternProperties", K_MAP, SCHEMA_DRAFT_04},
        {"definitions", K_MAP, SCHEMA_DRAFT_04},
        {"dependencies", K_DEPS, SCHEMA_DRAFT_04},
        {"contains", K_ONE, SCHEMA_DRAFT_06},
        {"propertyNames", K_ONE, SCHEMA_DRAFT_06},
        {"if", K_ONE, SCHEMA_DRAFT_07},
        {"then", K_ONE, SCHEMA_DRAFT_07},
        {"else", K_ONE, SCHEMA_DRAFT_07},
        {"$defs", K_MAP, SCHEMA_DRAFT_2019_09},
        {"dependentSchemas", K_MAP, SCHEMA_DRAFT_2019_09},
        {"unevaluatedItems", K_ONE, SCHEMA_DRAFT_2019_09},
        {"unevaluatedProperties", K_ONE, SCHEMA_DRAFT_2019_09},
        {"contentSchema", K_ONE, SCHEMA_DRAFT_2019_09},
        {"prefixItems", K_LIST, SCHEMA_DRAFT_2020_12},
    };
    for (size_t i = 0; i < ARRAY_LEN(kw); i++)
        if (strcmp(key, kw[i].key) == 0)
            return d >= kw[i].since ? kw[i].kind : K_NONE;
    return K_NONE;
}

static bool valid_anchor(const char *a)
{
    if (!((*a >= 'A' && *a <= 'Z') || (*a >= 'a' && *a <= 'z') || *a == '_'))
        return false;
    for (a++; *a; a++)
        if (!((*a >= 'A' && *a <= 'Z') || (*a >= 'a' && *a <= 'z') || (*a >= '0' && *a <= '9') ||
              *a == '_' || *a == '-' || *a == '.'))
            return false;
    return true;
}

static bool add_anchor(struct schema *s, const char *base, const char *name, const json_t *js,
                       const char *path, const char *key)
{
    char *k = xasprintf("%s#%s", base, name);
    const json_t *had = shash_get(&s->anchors, k, strlen(k));
    bool ok = !had || had == js;
    if (!had)
        shash_put(&s->anchors, k, strlen(k), (void *)js);
    free(k);
    return ok || ifail(s, path, key, "anchor \"%.64s\" is defined twice", name);
}

static bool index_id(struct schema *s, const json_t *js, const json_t *id, const char *path,
                     const char *key, char **base)
{
    if (!json_is_string(id))
        return ifail(s, path, key, "must be a string");
    char *abs = schema_uri_resolve(*base, json_string_value(id));
    const char *frag;
    char *nofrag = schema_uri_split(abs, &frag);
    bool ok = true;
    if (json_string_value(id)[0] != '#') {
        const json_t *had = shash_get(&s->resources, nofrag, strlen(nofrag));
        if (had && had != js)
            ok = ifail(s, path, key, "\"%.100s\" identifies two schemas", nofrag);
        else if (!had)
            shash_put(&s->resources, nofrag, strlen(nofrag), (void *)js);
        free(*base);
        *base = xstrdup(nofrag);
    }
    if (ok && *frag) /* draft-06/07's plain-name fragment: an anchor */
        ok = add_anchor(s, nofrag, frag, js, path, key);
    free(nofrag);
    free(abs);
    return ok;
}

static bool index_child(struct schema *s, const json_t *js, const char *base, enum schema_dialect d,
                        const char *path, const char *key, const char *sub, int depth)
{
    char *p = sub ? xasprintf("%s%s%s.%s", path, *path ? "." : "", key, sub)
                  : xasprintf("%s%s%s", path, *path ? "." : "", key);
    bool ok = schema_index(s, js, base, d, p, depth + 1);
    free(p);
    return ok;
}

static bool index_list(struct schema *s, const json_t *v, const char *base, enum schema_dialect d,
                       const char *path, const char *key, int depth)
{
    if (!json_is_array(v))
        return ifail(s, path, key, "must be an array of schemas");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        char *p = xasprintf("%s%s%s[%zu]", path, *path ? "." : "", key, i);
        bool ok = schema_index(s, e, base, d, p, depth + 1);
        free(p);
        if (!ok)
            return false;
    }
    return true;
}

static bool index_map(struct schema *s, const json_t *v, const char *base, enum schema_dialect d,
                      const char *path, const char *key, int depth, bool deps)
{
    if (!json_is_object(v))
        return ifail(s, path, key, "must be an object");
    const char *name;
    json_t *e;
    json_object_foreach((json_t *)v, name, e)
    {
        if (deps && json_is_array(e)) /* dependencies: a list of names, not a schema */
            continue;
        if (!index_child(s, e, base, d, path, key, name, depth))
            return false;
    }
    return true;
}

bool schema_index(struct schema *s, const json_t *js, const char *base_in, enum schema_dialect d,
                  const char *path, int depth)
{
    if (shash_get(&s->locations, js, 0))
        return true;
    if (depth > SCHEMA_MAX_DEPTH)
        return ifail(s, path, "", "schemas nested more than %d deep", SCHEMA_MAX_DEPTH);
    if (++s->n_nodes > SCHEMA_MAX_NODES)
        return ifail(s, path, "", "more than %d schemas in one document", SCHEMA_MAX_NODES);
    if (!json_is_object(js) && !json_is_boolean(js))
        return ifail(s, path, "", "a schema must be an object or a boolean");
    char *base = xstrdup(base_in);
    bool ok = true;
    if (json_is_object(js)) {
        const json_t *v = json_object_get(js, "$schema");
        if (v) {
            enum schema_dialect nd =
                json_is_string(v) ? schema_dialect_of(json_string_value(v)) : 0;
            if (!nd) {
                free(base);
                return ifail(s, path, "$schema",
                             "unknown dialect (known: the draft-04, -06, -07, 2019-09 and "
                             "2020-12 meta-schemas)");
            }
            d = nd;
        }
        const char *idkey = d == SCHEMA_DRAFT_04 ? "id" : "$id";
        v = json_object_get(js, idkey);
        /* Up to draft-07 "$ref" makes its siblings, "$id" included, be ignored. */
        bool ref_alone = d <= SCHEMA_DRAFT_07 && json_object_get(js, "$ref");
        if (v && !ref_alone)
            ok = index_id(s, js, v, path, idkey, &base);
        if (ok && d >= SCHEMA_DRAFT_2019_09) {
            static const char *const anchor_keys[] = {"$anchor", "$dynamicAnchor"};
            for (size_t i = 0; ok && i < ARRAY_LEN(anchor_keys); i++) {
                v = json_object_get(js, anchor_keys[i]);
                if (!v)
                    continue;
                if (!json_is_string(v) || !valid_anchor(json_string_value(v)))
                    ok = ifail(s, path, anchor_keys[i],
                               "must be a plain name ([A-Za-z_][-A-Za-z0-9._]*)");
                else
                    ok = add_anchor(s, base, json_string_value(v), js, path, anchor_keys[i]);
                if (ok && i == 1) { /* what a $dynamicRef may land on instead */
                    char *k = xasprintf("%s#%s", base, json_string_value(v));
                    shash_put(&s->dyn_anchors, k, strlen(k), (void *)js);
                    free(k);
                }
            }
            v = json_object_get(js, "$recursiveAnchor"); /* 2019-09's form, per resource */
            if (ok && json_is_true(v))
                shash_put(&s->rec_anchors, base, strlen(base), (void *)js);
        }
    }
    if (!ok) {
        free(base);
        return false;
    }
    struct slocation *loc = xcalloc(1, sizeof(*loc));
    loc->base = base;
    loc->dialect = d;
    shash_put(&s->locations, js, 0, loc);
    if (!json_is_object(js))
        return true;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)js, key, v)
    {
        switch (keyword_kind(key, d)) {
        case K_NONE:
            continue;
        case K_ONE:
            ok = index_child(s, v, base, d, path, key, NULL, depth);
            break;
        case K_LIST:
            ok = index_list(s, v, base, d, path, key, depth);
            break;
        case K_ITEMS:
            ok = json_is_array(v) ? index_list(s, v, base, d, path, key, depth)
                                  : index_child(s, v, base, d, path, key, NULL, depth);
            break;
        case K_MAP:
            ok = index_map(s, v, base, d, path, key, depth, false);
            break;
        case K_DEPS:
            ok = index_map(s, v, base, d, path, key, depth, true);
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* ---- lookup ---- */

static const json_t *pointer(const json_t *at, const char *ptr, char *why, size_t whylen)
{
    /* RFC 6901: "/a~1b/0" is key "a/b", then index 0; "~0" is "~". */
    const char *p = ptr;
    char tok[512];
    while (*p == '/') {
        p++;
        size_t n = 0;
        for (; *p && *p != '/'; p++) {
            char c = *p;
            if (c == '~') {
                if (p[1] != '0' && p[1] != '1') {
                    snprintf(why, whylen, "a malformed JSON pointer");
                    return NULL;
                }
                c = p[1] == '0' ? '~' : '/';
                p++;
            }
            if (n + 1 >= sizeof(tok)) {
                snprintf(why, whylen, "a JSON pointer token too long");
                return NULL;
            }
            tok[n++] = c;
        }
        tok[n] = '\0';
        if (json_is_object(at))
            at = json_object_getn(at, tok, n);
        else if (json_is_array(at)) {
            char *end;
            unsigned long i = strtoul(tok, &end, 10);
            bool digits = n > 0 && *end == '\0' && tok[0] >= '0' && tok[0] <= '9' &&
                          (n == 1 || tok[0] != '0');
            at = digits ? json_array_get(at, i) : NULL;
        } else
            at = NULL;
        if (!at) {
            snprintf(why, whylen, "no such location");
            return NULL;
        }
    }
    return at;
}

const json_t *schema_lookup(struct schema *s, const char *uri, char *why, size_t whylen)
{
    const char *frag;
    char *nofrag = schema_uri_split(uri, &frag);
    const json_t *res = shash_get(&s->resources, nofrag, strlen(nofrag));
    const json_t *doc = res ? NULL : shash_get(&s->extra, nofrag, strlen(nofrag));
    const char *meta = res || doc ? NULL : schema_builtin_meta(nofrag);
    if (meta) { /* a draft's meta-schema: built in, loaded when first used */
        json_t *m = json_loads(meta, 0, NULL);
        json_array_append_new(s->docs, m);
        doc = m;
    }
    if (doc) { /* another document, first used here */
        shash_put(&s->resources, nofrag, strlen(nofrag), (void *)doc);
        char *saved = s->err;
        char inner[256];
        s->err = inner;
        size_t savedlen = s->errlen;
        s->errlen = sizeof(inner);
        if (schema_index(s, doc, nofrag, s->default_dialect, "", 0))
            res = doc;
        else
            snprintf(why, whylen, "in \"%.100s\": %s", nofrag, inner);
        s->err = saved;
        s->errlen = savedlen;
        if (!res) {
            free(nofrag);
            return NULL;
        }
    }
    const json_t *out = NULL;
    size_t len;
    char *dec = res ? schema_uri_decode(frag, &len) : NULL;
    if (!res)
        snprintf(why, whylen,
                 "\"%.200s\" is not in this schema (remote references are not fetched)", nofrag);
    else if (!dec)
        snprintf(why, whylen, "a malformed percent-escape in the fragment");
    else if (len != strlen(dec))
        snprintf(why, whylen, "a NUL byte in the fragment");
    else if (*dec == '\0')
        out = res;
    else if (*dec == '/')
        out = pointer(res, dec, why, whylen);
    else {
        char *k = xasprintf("%s#%s", nofrag, dec);
        out = shash_get(&s->anchors, k, strlen(k));
        free(k);
        if (!out)
            snprintf(why, whylen, "no anchor \"%.100s\" in \"%.100s\"", dec, nofrag);
    }
    free(dec);
    free(nofrag);
    return out;
}
