/* PCRE2 in place of ECMA-262's regular expressions: UTF mode; "\uXXXX", "\u{X...}" and
 * "\xXX" as JavaScript reads them (ALT_BSUX); "$" only at the very end; a
 * back-reference to a group that did not take part matches the empty string; "[]" and
 * "[^]" as JavaScript's empty and any-character classes; "." stops at every line
 * terminator. Unicode property escapes take ECMA-262's long category names
 * ("\p{Letter}", "\p{gc=Lu}", "\p{Script=Greek}"). Differences left: "\s", "\w", "\d"
 * are ASCII-only here (JavaScript's "\s" takes Unicode spaces), and PCRE2's own syntax (possessive
 * quantifiers, atomic groups) is accepted where JavaScript would refuse it.
 *
 * Bounds: the pattern's length and parenthesis nesting at compile time; at match time
 * PCRE2's match, depth and heap limits, so a pattern that backtracks catastrophically
 * fails in bounded time instead of hanging the hub, and an automatic callout at every
 * pattern item that charges the work to the validation's step budget (1.3 to 1.7 times
 * slower matching, measured on a 1 MB subject), so that many costly matches cannot add
 * up either. */
#include "pattern.h"
#include "jsonschema.h"
#include "log.h"
#include "util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backtracking steps of one match: a base, and more for a longer subject so that a
 * linear pattern over a long string is not cut short. */
#define MATCH_LIMIT_BASE 200000u
#define MATCH_LIMIT_PER_BYTE 16u
#define MATCH_LIMIT_MAX 20000000u
#define DEPTH_LIMIT 5000u /* nested backtracking points */
#define HEAP_LIMIT_KIB 4096u
#define PARENS_LIMIT 64u

struct schema_pattern {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
};

/* ECMA-262 names Unicode general categories long or short ("\\p{Letter}",
 * "\\p{gc=L}", "\\p{General_Category=Lowercase_Letter}") and scripts with a prefix
 * ("\\p{Script=Greek}"); PCRE2 10.42 knows the short category names and bare script
 * names. */
static const char *property_name(const char *name, size_t n, size_t *outlen)
{
    static const struct {
        const char *longname, *shortname;
    } cats[] = {
        {"Letter", "L"},
        {"Cased_Letter", "L&"},
        {"Uppercase_Letter", "Lu"},
        {"Lowercase_Letter", "Ll"},
        {"Titlecase_Letter", "Lt"},
        {"Modifier_Letter", "Lm"},
        {"Other_Letter", "Lo"},
        {"Mark", "M"},
        {"Combining_Mark", "M"},
        {"Nonspacing_Mark", "Mn"},
        {"Spacing_Mark", "Mc"},
        {"Enclosing_Mark", "Me"},
        {"Number", "N"},
        {"Decimal_Number", "Nd"},
        {"digit", "Nd"},
        {"Letter_Number", "Nl"},
        {"Other_Number", "No"},
        {"Punctuation", "P"},
        {"punct", "P"},
        {"Connector_Punctuation", "Pc"},
        {"Dash_Punctuation", "Pd"},
        {"Open_Punctuation", "Ps"},
        {"Close_Punctuation", "Pe"},
        {"Initial_Punctuation", "Pi"},
        {"Final_Punctuation", "Pf"},
        {"Other_Punctuation", "Po"},
        {"Symbol", "S"},
        {"Math_Symbol", "Sm"},
        {"Currency_Symbol", "Sc"},
        {"Modifier_Symbol", "Sk"},
        {"Other_Symbol", "So"},
        {"Separator", "Z"},
        {"Space_Separator", "Zs"},
        {"Line_Separator", "Zl"},
        {"Paragraph_Separator", "Zp"},
        {"Other", "C"},
        {"Control", "Cc"},
        {"cntrl", "Cc"},
        {"Format", "Cf"},
        {"Surrogate", "Cs"},
        {"Private_Use", "Co"},
        {"Unassigned", "Cn"},
    };
    static const char *const prefixes[] = {"General_Category=", "gc=", "Script=", "sc="};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t pl = strlen(prefixes[i]);
        if (n > pl && strncmp(name, prefixes[i], pl) == 0) {
            name += pl;
            n -= pl;
            break;
        }
    }
    for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
        if (strlen(cats[i].longname) == n && strncmp(name, cats[i].longname, n) == 0) {
            *outlen = strlen(cats[i].shortname);
            return cats[i].shortname;
        }
    *outlen = n;
    return name;
}

/* re with its \\p{...} and \\P{...} names as PCRE2 spells them; never longer. */
static char *translate(const char *re, size_t len, size_t *outlen)
{
    char *out = xmalloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (re[i] != '\\' || i + 1 == len) {
            out[o++] = re[i];
            continue;
        }
        const char *close = NULL;
        if ((re[i + 1] == 'p' || re[i + 1] == 'P') && i + 2 < len && re[i + 2] == '{')
            close = memchr(re + i + 3, '}', len - i - 3);
        if (!close) { /* any other escape: both characters as they are */
            out[o++] = re[i];
            out[o++] = re[++i];
            continue;
        }
        size_t n;
        const char *name = property_name(re + i + 3, (size_t)(close - (re + i + 3)), &n);
        memcpy(out + o, re + i, 3);
        o += 3;
        memcpy(out + o, name, n);
        o += n;
        out[o++] = '}';
        i = (size_t)(close - re);
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

struct schema_pattern *schema_pattern_compile(const char *re, size_t len, char *why, size_t whylen)
{
    if (len > SCHEMA_MAX_PATTERN_BYTES) {
        snprintf(why, whylen, "longer than %d bytes", SCHEMA_MAX_PATTERN_BYTES);
        return NULL;
    }
    pcre2_compile_context *cctx = pcre2_compile_context_create(NULL);
    if (!cctx)
        fatalx("out of memory compiling a pattern");
    pcre2_set_parens_nest_limit(cctx, PARENS_LIMIT);
    pcre2_set_max_pattern_length(cctx, SCHEMA_MAX_PATTERN_BYTES);
    pcre2_set_newline(cctx, PCRE2_NEWLINE_ANY);
    pcre2_set_compile_extra_options(cctx, PCRE2_EXTRA_ALT_BSUX);
    int errcode;
    PCRE2_SIZE erroff;
    size_t tlen;
    char *tre = translate(re, len, &tlen);
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)tre, tlen,
                                     PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY |
                                         PCRE2_MATCH_UNSET_BACKREF | PCRE2_ALLOW_EMPTY_CLASS |
                                         PCRE2_NEVER_BACKSLASH_C | PCRE2_AUTO_CALLOUT,
                                     &errcode, &erroff, cctx);
    free(tre);
    pcre2_compile_context_free(cctx);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        snprintf(why, whylen, "%s at byte %zu", (const char *)msg, (size_t)erroff);
        return NULL;
    }
    struct schema_pattern *p = xcalloc(1, sizeof(*p));
    p->code = code;
    p->md = pcre2_match_data_create(1, NULL);
    p->mctx = pcre2_match_context_create(NULL);
    if (!p->md || !p->mctx)
        fatalx("out of memory compiling a pattern");
    pcre2_set_depth_limit(p->mctx, DEPTH_LIMIT);
    pcre2_set_heap_limit(p->mctx, HEAP_LIMIT_KIB);
    return p;
}

void schema_pattern_free(struct schema_pattern *p)
{
    if (!p)
        return;
    pcre2_code_free(p->code);
    pcre2_match_data_free(p->md);
    pcre2_match_context_free(p->mctx);
    free(p);
}

/* Called by PCRE2 at every pattern item (PCRE2_AUTO_CALLOUT): the work counter. */
static int count_item(pcre2_callout_block *cb, void *data)
{
    (void)cb;
    struct schema_match_budget *b = data;
    if (++b->items < SCHEMA_PATTERN_ITEMS_PER_STEP)
        return 0;
    b->items = 0;
    return ++*b->steps > b->limit ? PCRE2_ERROR_CALLOUT : 0;
}

int schema_pattern_match(struct schema_pattern *p, const char *s, size_t len,
                         struct schema_match_budget *budget)
{
    pcre2_set_callout(p->mctx, count_item, budget);
    size_t limit = MATCH_LIMIT_BASE + MATCH_LIMIT_PER_BYTE * len;
    pcre2_set_match_limit(p->mctx, limit > MATCH_LIMIT_MAX ? MATCH_LIMIT_MAX : (uint32_t)limit);
    /* NUL bytes count by length. The subject's UTF-8 is checked (a linear scan): jansson
     * parses only valid UTF-8, but a value the hub built itself might not be. */
    int rc = pcre2_match(p->code, (PCRE2_SPTR)s, len, 0, 0, p->md, p->mctx);
    if (rc >= 0) /* 0: a match, with more groups than the match data holds */
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
        return -2;
    if (rc == PCRE2_ERROR_CALLOUT)
        return -3;
    return -1;
}
