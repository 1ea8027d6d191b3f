/* For the harnesses whose input is two JSON values one after the other (a schema and an
 * instance, a pin and a tool list): the first value, and where the rest starts. */
#ifndef TESTS_FUZZ_FUZZ_JSON_H
#define TESTS_FUZZ_FUZZ_JSON_H

#include "fuzz.h"

#include <jansson.h>

/* The first JSON value of data (NULL when there is none); *rest and *rest_len the bytes
 * after it. */
static inline json_t *fuzz_first_json(const uint8_t *data, size_t size, const char **rest,
                                      size_t *rest_len)
{
    json_error_t je;
    json_t *v = json_loadb((const char *)data, size, JSON_DISABLE_EOF_CHECK, &je);
    if (!v)
        return NULL;
    size_t used = (size_t)je.position;
    fuzz_assert(used <= size, "jansson consumed %zu of %zu", used, size);
    *rest = (const char *)data + used;
    *rest_len = size - used;
    return v;
}

#endif
