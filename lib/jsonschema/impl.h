/* The compiled form of a JSON Schema document, shared by its loader (schema.c,
 * schema_index.c) and its evaluator (schema_eval.c). */
#ifndef JSONSCHEMA_IMPL_H
#define JSONSCHEMA_IMPL_H

#include "jsonschema.h"
#include "pattern.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    T_NULL = 1 << 0,
    T_BOOLEAN = 1 << 1,
    T_OBJECT = 1 << 2,
    T_ARRAY = 1 << 3,
    T_NUMBER = 1 << 4,
    T_INTEGER = 1 << 5,
    T_STRING = 1 << 6,
};

struct snode;

struct snode_prop { /* properties, dependentSchemas: sorted by name */
    const char *name;
    struct snode *s;
};

struct snode_pprop { /* patternProperties */
    struct schema_pattern *re;
    const char *src;
    struct snode *s;
};

struct snode_dep { /* dependentRequired: when name is present, so must names be */
    const char *name;
    const char **names;
    size_t n;
};

/* One schema object (or boolean). Values of const, enum and the numeric keywords are
 * borrowed from the document, which the compiled schema owns. */
struct snode {
    bool is_bool, bool_value;
    enum schema_dialect dialect;
    unsigned types; /* 0: any */
    struct snode *ref;
    /* $dynamicRef (2020-12): its static target, and the anchor name when that target
     * defines it as a $dynamicAnchor (then the outermost resource in the dynamic scope
     * that defines it wins); $recursiveRef (2019-09) likewise, with $recursiveAnchor. */
    struct snode *dyn_ref;
    const char *dyn_name;
    bool dyn_recursive;
    const char *resource; /* interned base URI: the resource this node belongs to */
    const json_t *const_value, *enum_values;
    /* numbers */
    const json_t *multiple_of, *minimum, *maximum, *exclusive_min, *exclusive_max;
    bool minimum_exclusive, maximum_exclusive; /* draft-04's boolean forms */
    /* strings: counts are -1 when absent */
    long min_length, max_length;
    struct schema_pattern *pattern;
    const char *pattern_src;
    /* arrays */
    struct snode **prefix; /* prefixItems, or items as an array */
    size_t n_prefix;
    bool tuple;          /* prefix set: items (2020-12) or additionalItems apply after it */
    struct snode *items; /* every item after the prefix */
    struct snode *contains;
    long min_contains, max_contains;
    long min_items, max_items;
    bool unique_items;
    struct snode *unevaluated_items;
    /* objects */
    struct snode_prop *props;
    size_t n_props;
    struct snode_pprop *pprops;
    size_t n_pprops;
    struct snode *additional_props;
    struct snode *property_names;
    const char **required;
    size_t n_required;
    struct snode_dep *dep_required;
    size_t n_dep_required;
    struct snode_prop *dep_schemas;
    size_t n_dep_schemas;
    long min_props, max_props;
    struct snode *unevaluated_props;
    /* in-place applicators */
    struct snode **all_of, **any_of, **one_of;
    size_t n_all_of, n_any_of, n_one_of;
    struct snode *not_, *if_, *then_, *else_;
    /* unevaluatedItems or unevaluatedProperties here: in-place applicators below this
     * node report which items and properties they evaluated. */
    bool collects;
    struct snode *next_alloc;
};

/* schema_hash.c: a pointer-keyed or string-keyed hash table (open addressing, grows). */
struct shash_entry {
    uint64_t hash;
    const void *key; /* NULL: empty */
    size_t keylen;
    void *value;
};
struct shash {
    struct shash_entry *v;
    size_t cap, n;
};
void *shash_get(const struct shash *h, const void *key, size_t keylen);
/* false when key is already there (value unchanged). */
bool shash_put(struct shash *h, const void *key, size_t keylen, void *value);
void shash_free(struct shash *h, void (*free_value)(void *));

/* What the index knows of one schema location: its base URI and dialect. */
struct slocation {
    char *base;
    enum schema_dialect dialect;
    struct snode *node;
};

struct schema {
    json_t *docs; /* array: the document, then the extra documents */
    struct snode *root;
    struct snode *nodes; /* every node, for freeing */
    size_t n_nodes;
    struct shash locations;      /* const json_t * -> struct slocation * */
    struct shash resources;      /* absolute URI without fragment -> const json_t * */
    struct shash anchors;        /* "URI#name" -> const json_t * */
    struct shash extra;          /* URI -> const json_t *: other documents, indexed on use */
    struct shash dyn_anchors;    /* "URI#name" -> const json_t *, for $dynamicAnchor */
    struct shash rec_anchors;    /* URI -> its root, when it has "$recursiveAnchor": true */
    struct shash resource_names; /* base URI -> interned copy (the value) */
    bool dynamic;                /* some $dynamicRef or $recursiveRef is compiled */
    enum schema_dialect default_dialect;
    char *err;
    size_t errlen;
    bool failed;
};

/* schema_index.c: records base URIs, dialects, "$id"s and anchors of every schema in
 * doc (keywords that hold schemas only). false with s->err set on error. */
bool schema_index(struct schema *s, const json_t *doc, const char *base,
                  enum schema_dialect dialect, const char *path, int depth);
/* The dialect a "$schema" URI names; 0 when unknown. */
enum schema_dialect schema_dialect_of(const char *uri);
/* The schema a "$ref" (already resolved to an absolute URI) points to; NULL with why
 * set when it is outside every document or does not exist. */
const json_t *schema_lookup(struct schema *s, const char *uri, char *why, size_t whylen);

/* meta.c: the JSON text of a draft's meta-schema (or a 2019-09/2020-12 vocabulary) by
 * its URI without fragment, NULL for any other URI. */
const char *schema_builtin_meta(const char *uri);

/* schema_json.c */
unsigned schema_instance_type(const json_t *j);
bool schema_json_equal(const json_t *a, const json_t *b);
/* Equal values (schema_json_equal) hash equal. */
uint64_t schema_json_hash(const json_t *j);

/* schema_eval.c */
/* Control characters (from keys, names, patterns) replaced: messages stay one line. */
void schema_one_line(char *s);

#endif
