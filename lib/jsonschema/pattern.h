/* A JSON Schema "pattern" (an ECMA-262 regular expression, unanchored) compiled with
 * PCRE2 in its JavaScript-compatible modes, and matched under limits. */
#ifndef JSONSCHEMA_PATTERN_H
#define JSONSCHEMA_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

struct schema_pattern;

/* NULL with why set when re (len bytes, UTF-8) does not compile or is too long. */
struct schema_pattern *schema_pattern_compile(const char *re, size_t len, char *why, size_t whylen);
void schema_pattern_free(struct schema_pattern *p);

/* The validation's step budget, which matching spends too: one step per
 * SCHEMA_PATTERN_ITEMS_PER_STEP pattern items the matcher visits, backtracking included,
 * so that many matches just under PCRE2's own limit cannot add up to a long stall. */
#define SCHEMA_PATTERN_ITEMS_PER_STEP 4
struct schema_match_budget {
    unsigned long *steps;
    unsigned long limit;
    unsigned items;
};

/* 1 when s (len bytes, UTF-8) contains a match, 0 when not, -1 when the match exceeded
 * PCRE2's limits (catastrophic backtracking), -2 when s is not valid UTF-8, -3 when the
 * budget ran out: the caller refuses the instance. */
int schema_pattern_match(struct schema_pattern *p, const char *s, size_t len,
                         struct schema_match_budget *budget);

#endif
