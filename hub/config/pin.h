/* The pin: what a spoke's tools/list must equal. A manifest holds each tool's MCP
 * object as it was approved; a server that later lists a tool whose object differs in
 * any field (a description, a schema, an annotation: a "rug pull") is refused, and the
 * message names the tool and the field.
 *
 * Objects are compared as canonical JSON (RFC 8785's notion): key order does not
 * matter, numbers are compared by value (1 and 1.0 are the same), strings byte for
 * byte. Keys that are this project's and not MCP's (manifest_tool_key_is_local) are
 * not part of the pin. */
#ifndef HUB_PIN_H
#define HUB_PIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Canonical equality of two JSON values (NULL equals only NULL). */
bool pin_json_equal(const json_t *a, const json_t *b);

/* The first place where a and b differ, as a path from the value's root
 * ("inputSchema.properties.path.description", "annotations.readOnlyHint",
 * "enum[2]"); "" when the roots themselves differ. false when they are equal. */
bool pin_first_diff(const json_t *a, const json_t *b, char *path, size_t len);

/* Checks the tools a server listed against the pinned tool objects (an array of MCP
 * tool objects without local keys). true when equal as sets (by name); otherwise
 * false and one line in err naming the first difference:
 *   tool "echo": description changed: pinned "Echoes back", listed "Echoes back!"
 *   tool "rm": not pinned (listed by the server)
 *   tool "get": pinned but no longer listed */
bool pin_check_tools(const json_t *pinned, const json_t *listed, char *err, size_t errlen);

/* Every difference between pinned and listed, one line each (the form above), for
 * `hub spokes update` and `verify`; NULL when there is none. Free with free(). */
char *pin_diff_text(const json_t *pinned, const json_t *listed);

/* The tool object as pinned: a copy of t without the local keys. */
json_t *pin_tool_object(const json_t *t);

#endif
