/* Dotted paths into JSON values ("account.iban", "items.0.id", "transactions.-1"):
 * object members by name, array elements by index (negative from the end). Used by
 * the agent benchmark's generic app spoke (its operations) and by its runner (the
 * suites' checks), which must read paths the same way. */
#ifndef ISOLATE_JSONPATH_H
#define ISOLATE_JSONPATH_H

#include <jansson.h>
#include <stdbool.h>

#define JSONPATH_MAX_DEPTH 16
#define JSONPATH_MAX_LEN 512

/* The value at path under root (borrowed), or NULL when some segment is missing, the
 * path is malformed or longer than the bounds. An empty path is root itself. */
json_t *jsonpath_get(const json_t *root, const char *path);

/* Sets the member or element at path to value (stolen) in root, creating missing
 * objects on the way. false (value released) when the path does not lead there
 * (a segment that is not an object member or an existing array index). */
bool jsonpath_set(json_t *root, const char *path, json_t *value);

/* Removes what path names (an object member); true when something was removed. */
bool jsonpath_del(json_t *root, const char *path);

/* JSON equality where 1 and 1.0 are equal (numbers compared as numbers, also inside
 * arrays and objects). */
bool jsonpath_equal(const json_t *a, const json_t *b);

#endif
