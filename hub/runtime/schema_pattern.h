/* The bound on a JSON Schema "pattern" before regcomp() sees it (hub/runtime/schema.c). */
#ifndef HUB_SCHEMA_PATTERN_H
#define HUB_SCHEMA_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

/* true when the POSIX extended regular expression re is cheap to compile and match;
 * false with why set when its repetitions would expand past a fixed bound, a
 * repetition follows another, groups nest too deep, or it has back-references.
 * Syntax errors are left to regcomp(). */
bool schema_pattern_check(const char *re, char *why, size_t whylen);

#endif
