/* Does a planned step carry the user's earlier words to an app?
 *
 * The planner sees the user's earlier requests, so it can copy what the user said
 * before (a date of birth, a diagnosis, an address) into the arguments of an app that
 * has no business with it - the "inadvertent data exposure" the paper describes. The
 * hub cannot know what is sensitive, but it can see where words came from: a word or
 * phrase in the arguments that appears in the earlier requests and not in the
 * current one came from memory, and sharing memory with an app is the data
 * permission's to decide.
 *
 * Words are compared lower-cased. Counted: a word with a digit or '@' (4 characters
 * or more: dates, numbers, addresses), a word of 7 letters or more, and any three
 * words in a row. Short common words alone never count, so an app receiving "Paris"
 * because the user said "Paris" before and now does not is not flagged; this is a
 * heuristic that errs towards asking. */
#include "agent_impl.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define WORD_MAX 64
#define SCAN_MAX (64 * 1024) /* bytes of arguments examined */

static bool word_char(unsigned char c)
{
    return isalnum(c) || c == '@' || c == '.' || c == '-' || c == '_' || c == '+' || c == '/' ||
           c >= 0x80;
}

/* " w1 w2 w3 ": lower-case words separated by single spaces, with a space at each
 * end so that " w " finds whole words. Trailing dots are dropped from words. */
static char *normalise(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *out = xmalloc(n + 3);
    size_t o = 0;
    out[o++] = ' ';
    for (size_t i = 0; i < n;) {
        if (!word_char((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t start = o;
        while (i < n && word_char((unsigned char)s[i]))
            out[o++] = (char)tolower((unsigned char)s[i++]);
        while (o > start && out[o - 1] == '.')
            o--;
        if (o > start)
            out[o++] = ' ';
    }
    out[o] = '\0';
    return out;
}

static bool contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

static bool notable(const char *w, size_t n)
{
    bool digit = false, at = false;
    size_t letters = 0;
    for (size_t i = 0; i < n; i++) {
        digit = digit || isdigit((unsigned char)w[i]);
        at = at || w[i] == '@';
        letters += isalpha((unsigned char)w[i]) || (unsigned char)w[i] >= 0x80;
    }
    return ((digit || at) && n >= 4) || letters >= 7;
}

/* Checks one normalised argument string against history and request. */
static bool scan(const char *arg, const char *hist, const char *req, char *snippet, size_t len)
{
    /* Word starts in arg: at most one per two bytes. */
    const char **starts = xcalloc(strlen(arg) / 2 + 2, sizeof(*starts));
    size_t nw = 0;
    bool hit = false;
    for (const char *p = arg + 1; *p;) {
        starts[nw++] = p;
        p = strchr(p, ' ');
        if (!p)
            break;
        p++;
    }
    char needle[3 * WORD_MAX + 8];
    for (size_t i = 0; i < nw; i++) {
        const char *end = strchr(starts[i], ' ');
        size_t n = end ? (size_t)(end - starts[i]) : strlen(starts[i]);
        if (n == 0 || n > WORD_MAX)
            continue;
        /* One notable word. */
        if (notable(starts[i], n)) {
            snprintf(needle, sizeof(needle), " %.*s ", (int)n, starts[i]);
            if (contains(hist, needle) && !contains(req, needle)) {
                snprintf(snippet, len, "%.*s", (int)n, starts[i]);
                hit = true;
                break;
            }
        }
        /* Three words in a row. */
        if (i + 2 < nw) {
            const char *e3 = strchr(starts[i + 2], ' ');
            size_t n3 = e3 ? (size_t)(e3 - starts[i]) : strlen(starts[i]);
            if (n3 <= 3 * WORD_MAX) {
                snprintf(needle, sizeof(needle), " %.*s ", (int)n3, starts[i]);
                if (contains(hist, needle) && !contains(req, needle)) {
                    snprintf(snippet, len, "%.*s", (int)n3, starts[i]);
                    hit = true;
                    break;
                }
            }
        }
    }
    free(starts);
    return hit;
}

static bool walk(const json_t *v, const char *hist, const char *req, char *snippet, size_t len,
                 size_t *budget, int depth)
{
    if (depth > 32 || *budget == 0)
        return false;
    if (json_is_string(v)) {
        size_t n = json_string_length(v);
        if (n > *budget)
            n = *budget;
        *budget -= n;
        char *norm = normalise(json_string_value(v), n);
        bool hit = scan(norm, hist, req, snippet, len);
        free(norm);
        return hit;
    }
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
        {
            if (walk(x, hist, req, snippet, len, budget, depth + 1))
                return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            if (walk(x, hist, req, snippet, len, budget, depth + 1))
                return true;
        }
    }
    return false;
}

bool agent_args_use_history(const json_t *args, char *const *history, size_t n_history,
                            const char *request, char *snippet, size_t snippet_len)
{
    if (n_history == 0)
        return false;
    size_t total = 0;
    for (size_t i = 0; i < n_history; i++)
        total += strlen(history[i]) + 1;
    char *joined = xmalloc(total + 1);
    size_t off = 0;
    for (size_t i = 0; i < n_history; i++) {
        size_t n = strlen(history[i]);
        memcpy(joined + off, history[i], n);
        off += n;
        joined[off++] = '\n';
    }
    joined[off] = '\0';
    char *hist = normalise(joined, total);
    char *req = normalise(request, strlen(request));
    size_t budget = SCAN_MAX;
    bool hit = walk(args, hist, req, snippet, snippet_len, &budget, 0);
    free(hist);
    free(req);
    free(joined);
    return hit;
}
