/* The JSON Schema subset that manifests use for tool arguments and results.
 *
 * A schema is compiled once when its manifest is loaded (regular expressions built,
 * every keyword checked), so that a typo or an unsupported keyword is an error at
 * start instead of a check that silently never runs. Supported: type (a name or a
 * list; "integer" accepts 2.0), properties, required, additionalProperties (boolean or
 * schema), enum, const, items, minItems/maxItems, minimum/maximum,
 * minLength/maxLength (in code points), pattern (POSIX extended regex, unanchored as
 * in JSON Schema). Annotations (title, description, default, examples, format,
 * $schema, $id, $comment) are accepted and ignored. Anything else is refused.
 *
 * Validation errors say where: "$.items[2].name: must be at most 10 characters". */
#ifndef HUB_SCHEMA_H
#define HUB_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SCHEMA_MAX_DEPTH 32

struct schema;

/* NULL and a message naming the keyword's path ("properties.x.type: ...") on error. */
struct schema *schema_compile(const json_t *js, char *err, size_t errlen);
void schema_free(struct schema *s);

/* true when inst conforms; otherwise false and "$.path: what is wrong" in err. */
bool schema_validate(const struct schema *s, const json_t *inst, char *err, size_t errlen);

#endif
