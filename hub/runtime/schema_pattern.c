/* A JSON Schema "pattern" is compiled with glibc's regcomp(), which expands every
 * counted or "+" repetition by copying the repeated subexpression: "a{1000}" becomes a
 * thousand nodes and "((a+)+)+" doubles at each level, so a short pattern in a manifest
 * can take minutes and gigabytes to compile (found by fuzz_schema: "[a-z]++++...").
 * Matching with back-references can take exponential time too. This estimates the size
 * regcomp() would build, before it runs, and refuses what is too large or ambiguous. */
#include "schema_pattern.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_NODES 10000u
#define MAX_GROUP_DEPTH 32

struct frame {
    uint64_t alternatives; /* the size of the finished branches of this group */
    uint64_t branch;       /* the size of the branch being read */
    uint64_t last;         /* the size of the last atom, 0 when a quantifier may not follow */
};

static uint64_t capped(uint64_t v)
{
    return v > MAX_NODES + 1 ? MAX_NODES + 1 : v;
}

/* The end of a bracket expression that starts at p ('['), or NULL when unclosed. */
static const char *bracket_end(const char *p)
{
    p++;
    if (*p == '^')
        p++;
    if (*p == ']') /* a literal ']' first */
        p++;
    for (; *p && *p != ']'; p++) {
        if (*p == '[' && (p[1] == ':' || p[1] == '=' || p[1] == '.')) {
            char kind = p[1];
            const char *q = p + 2;
            while (*q && !(q[0] == kind && q[1] == ']'))
                q++;
            if (!*q)
                return NULL;
            p = q + 1;
        }
    }
    return *p ? p : NULL;
}

/* "{m}", "{m,}" or "{m,n}" at p: how many copies regcomp makes, and its end. */
static bool interval(const char *p, uint64_t *copies, const char **end)
{
    char *q;
    if (!isdigit((unsigned char)p[1]))
        return false;
    unsigned long m = strtoul(p + 1, &q, 10), n = m;
    if (*q == ',') {
        if (isdigit((unsigned char)q[1]))
            n = strtoul(q + 1, &q, 10);
        else {
            n = m + 1; /* "{m,}": m copies and a star */
            q++;
        }
    }
    if (*q != '}')
        return false;
    *copies = n > m ? n : m;
    if (*copies == 0)
        *copies = 1;
    if (*copies > MAX_NODES) /* regcomp refuses over RE_DUP_MAX; this keeps the sum small */
        *copies = MAX_NODES + 1;
    *end = q;
    return true;
}

bool schema_pattern_check(const char *re, char *why, size_t whylen)
{
    struct frame stack[MAX_GROUP_DEPTH + 1] = {{0}};
    int depth = 0;
    for (const char *p = re; *p; p++) {
        struct frame *f = &stack[depth];
        uint64_t copies = 0;
        switch (*p) {
        case '(':
            if (depth == MAX_GROUP_DEPTH) {
                snprintf(why, whylen, "groups nested more than %d deep", MAX_GROUP_DEPTH);
                return false;
            }
            stack[++depth] = (struct frame){0};
            continue;
        case ')': {
            if (depth == 0) /* regcomp says what is wrong */
                return true;
            uint64_t size = capped(f->alternatives + f->branch + 1);
            f = &stack[--depth];
            f->branch = capped(f->branch + size);
            f->last = size;
            continue;
        }
        case '|':
            f->alternatives = capped(f->alternatives + f->branch);
            f->branch = f->last = 0;
            continue;
        case '^':
        case '$':
            f->last = 0;
            continue;
        case '*':
        case '?':
            copies = 1;
            break;
        case '+':
            copies = 2; /* "E+" is "EE*" */
            break;
        case '{':
            if (interval(p, &copies, &p))
                break;
            f->branch = capped(f->branch + 1); /* a literal '{' */
            f->last = 1;
            continue;
        case '[': {
            const char *end = bracket_end(p);
            if (!end)
                return true; /* unclosed: regcomp says so */
            p = end;
            f->branch = capped(f->branch + 1);
            f->last = 1;
            continue;
        }
        case '\\':
            if (p[1] >= '1' && p[1] <= '9') {
                snprintf(why, whylen, "back-references (\\%c) are not supported", p[1]);
                return false;
            }
            if (p[1]) /* an escaped character is one atom */
                p++;
            /* fall through */
        default:
            f->branch = capped(f->branch + 1);
            f->last = 1;
            continue;
        }
        /* A quantifier: it repeats the last atom, and nothing else may repeat it again
         * ("a++", "a{2}*" are undefined in POSIX and exponential in glibc). */
        if (f->last == 0) {
            snprintf(why, whylen, "a repetition operator at byte %zu follows no atom",
                     (size_t)(p - re));
            return false;
        }
        f->branch = capped(f->branch + f->last * (copies - 1));
        f->last = 0;
        if (f->branch > MAX_NODES) {
            snprintf(why, whylen, "too complex: its repetitions expand to more than %u nodes",
                     MAX_NODES);
            return false;
        }
    }
    /* Unclosed groups are regcomp's to report; the size so far still counts. */
    uint64_t total = 0;
    for (int d = 0; d <= depth; d++)
        total = capped(total + stack[d].alternatives + stack[d].branch);
    if (total > MAX_NODES) {
        snprintf(why, whylen, "too complex: its repetitions expand to more than %u nodes",
                 MAX_NODES);
        return false;
    }
    return true;
}
