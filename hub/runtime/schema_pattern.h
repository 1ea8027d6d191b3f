/* A JSON Schema "pattern" (an ECMA-262 regular expression, unanchored) compiled with
 * PCRE2 in its JavaScript-compatible modes, and matched under limits. */
#ifndef HUB_SCHEMA_PATTERN_H
#define HUB_SCHEMA_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

struct schema_pattern;

/* NULL with why set when re (len bytes, UTF-8) does not compile or is too long. */
struct schema_pattern *schema_pattern_compile(const char *re, size_t len, char *why, size_t whylen);
void schema_pattern_free(struct schema_pattern *p);

/* 1 when s (len bytes, UTF-8) contains a match, 0 when not, -1 when the match exceeded
 * its limits (catastrophic backtracking), -2 when s is not valid UTF-8: the caller
 * refuses the instance. */
int schema_pattern_match(struct schema_pattern *p, const char *s, size_t len);

#endif
