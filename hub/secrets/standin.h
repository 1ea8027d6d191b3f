/* Stand-ins: what a spoke holds in place of a secret that netproxy injects at the
 * egress. A stand-in has the value's length and shape, so that a client library's own
 * format check (a prefix, a length, which characters) passes: a known prefix is kept
 * (keylike's list: "ghp_", "sk-proj-", "AKIA", ...), and so is every character that is
 * not a letter or a digit (the separators, where they were); each other letter or digit
 * is replaced by a random one of its kind (lower case, upper case, digit; a hex digit
 * when the value is hex, as a UUID is) that is never the value's own character there.
 * Nothing else of the value is kept: no word before a dash, no first group of a UUID.
 * It is worthless anywhere but on its way through netproxy, which swaps it for the
 * value only in requests to the secret's own hosts. */
#ifndef HUB_STANDIN_H
#define HUB_STANDIN_H

#include <stddef.h>

/* At least this many random characters, so that a stand-in is unique and cannot turn
 * up in a request by chance. */
#define STANDIN_MIN_RANDOM 16

/* A new stand-in for value (malloc'd, NUL-terminated, the same length), or NULL and
 * why in err (the value is too short to have one). */
char *standin_make(const char *value, size_t len, char *err, size_t errlen);

#endif
