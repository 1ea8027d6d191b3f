#include "standin.h"
#include "keylike.h"
#include "util.h"

#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int hex_index(char c, bool upper)
{
    if (is_digit(c))
        return c - '0';
    char a = upper ? 'A' : 'a';
    return c >= a && c <= a + 5 ? c - a + 10 : -1;
}

/* Whether every letter and digit after keep is a hex digit of one case (a UUID, a
 * hex token): the stand-in is then hex too, so that a format check still passes. */
static bool all_hex(const char *value, size_t len, size_t keep, bool *upper)
{
    bool lower_seen = false, upper_seen = false;
    for (size_t i = keep; i < len; i++) {
        char c = value[i];
        if (is_lower(c)) {
            if (c > 'f')
                return false;
            lower_seen = true;
        } else if (is_upper(c)) {
            if (c > 'F')
                return false;
            upper_seen = true;
        }
    }
    *upper = upper_seen;
    return !(lower_seen && upper_seen);
}

/* A character of the class of size n starting at base (or the hex alphabet), never
 * the value's own: the stand-in then shares no character with the value at the same
 * position (what it gives away, that the value's character is not this one, is
 * log2(n / (n - 1)) bits a position). 256 is not a multiple of n: the bias (under 4 %)
 * does not matter for a value that only has to be unique. */
static char other_of(int own, int n, unsigned char r, char (*at)(int))
{
    return at((own + 1 + r % (n - 1)) % n);
}

static char lower_at(int i)
{
    return (char)('a' + i);
}
static char upper_at(int i)
{
    return (char)('A' + i);
}
static char digit_at(int i)
{
    return (char)('0' + i);
}
static char hexl_at(int i)
{
    return (char)(i < 10 ? '0' + i : 'a' + i - 10);
}
static char hexu_at(int i)
{
    return (char)(i < 10 ? '0' + i : 'A' + i - 10);
}

char *standin_make(const char *value, size_t len, char *err, size_t errlen)
{
    /* Only a known prefix is the value's kind; anything else (a UUID's first group, a
     * word before a dash) may be key material, and is replaced. */
    size_t keep = keylike_prefix_len(value), random = 0;
    if (keep > len)
        keep = len;
    for (size_t i = keep; i < len; i++)
        if (is_lower(value[i]) || is_upper(value[i]) || is_digit(value[i]))
            random++;
    if (random < STANDIN_MIN_RANDOM) {
        snprintf(err, errlen,
                 "the value has %zu letters and digits after its prefix; a stand-in needs at "
                 "least %d",
                 random, STANDIN_MIN_RANDOM);
        return NULL;
    }
    unsigned char *rnd = xmalloc(len);
    if (RAND_bytes(rnd, (int)len) != 1) {
        free(rnd);
        snprintf(err, errlen, "no randomness for a stand-in");
        return NULL;
    }
    bool hex_upper = false, hex = all_hex(value, len, keep, &hex_upper);
    char *out = xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        char c = value[i];
        if (i < keep)
            out[i] = c;
        else if (hex && (is_lower(c) || is_upper(c) || is_digit(c)))
            out[i] = other_of(hex_index(c, hex_upper), 16, rnd[i], hex_upper ? hexu_at : hexl_at);
        else if (is_lower(c))
            out[i] = other_of(c - 'a', 26, rnd[i], lower_at);
        else if (is_upper(c))
            out[i] = other_of(c - 'A', 26, rnd[i], upper_at);
        else if (is_digit(c))
            out[i] = other_of(c - '0', 10, rnd[i], digit_at);
        else
            out[i] = c; /* a separator: its position is the format, not the key */
    }
    out[len] = '\0';
    free(rnd);
    return out;
}
