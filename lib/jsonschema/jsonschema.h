/* JSON Schema for tool arguments and results, as MCP servers write them: drafts 06, 07,
 * 2019-09 and 2020-12 (chosen by "$schema"; 2020-12 when absent), draft-04's forms where
 * they are cheap (boolean exclusiveMinimum/Maximum, "id").
 *
 * A schema is compiled once when its manifest is loaded: every keyword's value checked,
 * every "$ref" resolved to a location in the same document (by JSON pointer, "$id" or
 * "$anchor"; "$dynamicRef" and 2019-09's "$recursiveRef" through the dynamic scope),
 * every "pattern" compiled (PCRE2, ECMA-262 options). A reference to anything outside
 * the document is refused then, with the reference named: schemas are never fetched
 * (the drafts' own meta-schemas are built in, meta.c).
 * Unknown keywords are ignored, as the specification says. "format" and the content keywords are
 * annotations only.
 *
 * Validation is bounded: a budget of evaluation steps per call, linear in the instance's
 * size (nested anyOf cannot blow up), a bound on nesting, PCRE2's match limits; exceeding one makes
 * the instance invalid with a message that says so. Errors say where:
 * "$.items[2].name: must be at most 10 characters". */
#ifndef JSONSCHEMA_H
#define JSONSCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SCHEMA_MAX_DEPTH 64           /* schema objects nested in a document */
#define SCHEMA_MAX_NODES 20000        /* schema objects in a document */
#define SCHEMA_MAX_EVAL_DEPTH 512     /* nested evaluations ($ref recursion included) */
#define SCHEMA_MAX_STEPS 1000000      /* evaluation steps per validation, plus: */
#define SCHEMA_STEPS_PER_VALUE 32     /* ... this many per value (and 2 string bytes) in it */
#define SCHEMA_MAX_PATTERN_BYTES 4096 /* one "pattern" or "patternProperties" key */

enum schema_dialect {
    SCHEMA_DRAFT_04 = 4,
    SCHEMA_DRAFT_06 = 6,
    SCHEMA_DRAFT_07 = 7,
    SCHEMA_DRAFT_2019_09 = 2019,
    SCHEMA_DRAFT_2020_12 = 2020,
};

/* Another document a "$ref" may point to, by its absolute URI (tests: the suite's
 * remotes and the meta-schemas). The hub itself passes none. */
struct schema_document {
    const char *uri;
    const json_t *schema;
};

struct schema_options {
    enum schema_dialect default_dialect; /* 0: 2020-12 */
    const struct schema_document *documents;
    size_t n_documents;
};

struct schema;

/* NULL and a message naming the keyword's path ("properties.x.type: ...") on error. */
struct schema *schema_compile(const json_t *js, char *err, size_t errlen);
struct schema *schema_compile_opts(const json_t *js, const struct schema_options *opts, char *err,
                                   size_t errlen);
void schema_free(struct schema *s);

/* true when inst conforms; otherwise false and "$.path: what is wrong" in err. */
bool schema_validate(const struct schema *s, const json_t *inst, char *err, size_t errlen);

#endif
