/* URI references as JSON Schema uses them ("$id", "$ref"): RFC 3986 resolution against
 * a base, and the fragment's percent-decoding. */
#ifndef JSONSCHEMA_URI_H
#define JSONSCHEMA_URI_H

#include <stdbool.h>
#include <stddef.h>

/* ref resolved against base (RFC 3986 section 5.2), fragment included; malloc'd. */
char *schema_uri_resolve(const char *base, const char *ref);

/* A malloc'd copy of uri without its fragment; *frag points at what follows '#' in uri
 * ("" when there is none). */
char *schema_uri_split(const char *uri, const char **frag);

/* The percent-decoded fragment in a malloc'd buffer (*len bytes, NUL-terminated);
 * NULL when an escape is malformed. */
char *schema_uri_decode(const char *s, size_t *len);

#endif
