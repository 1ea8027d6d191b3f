#include "standin.h"
#include "keylike.h"
#include "util.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How much of the value's beginning is its kind, not its randomness: a known prefix,
 * or a short word ending in '_' or '-' ("secret_", "pk-"). */
static size_t prefix_len(const char *value, size_t len)
{
    size_t known = keylike_prefix_len(value);
    size_t sep = 0;
    for (size_t i = 0; i < len && i < 12; i++)
        if (value[i] == '_' || value[i] == '-')
            sep = i + 1;
    return known > sep ? known : sep;
}

char *standin_make(const char *value, size_t len, char *err, size_t errlen)
{
    size_t keep = prefix_len(value, len), random = 0;
    for (size_t i = keep; i < len; i++)
        if ((value[i] >= 'a' && value[i] <= 'z') || (value[i] >= 'A' && value[i] <= 'Z') ||
            (value[i] >= '0' && value[i] <= '9'))
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
    char *out = xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        char c = value[i];
        /* 256 is not a multiple of 26 or 10: the bias (under 2 %) does not matter for
         * a value that only has to be unique. */
        if (i < keep)
            out[i] = c;
        else if (c >= 'a' && c <= 'z')
            out[i] = (char)('a' + rnd[i] % 26);
        else if (c >= 'A' && c <= 'Z')
            out[i] = (char)('A' + rnd[i] % 26);
        else if (c >= '0' && c <= '9')
            out[i] = (char)('0' + rnd[i] % 10);
        else
            out[i] = c;
    }
    out[len] = '\0';
    free(rnd);
    return out;
}
