/* JSON values as JSON Schema sees them: an instance's type ("integer" includes 2.0),
 * equality for const, enum and uniqueItems (numbers by value, objects regardless of
 * key order), and a hash that agrees with that equality. */
#include "impl.h"

#include <string.h>

static bool integral(double d)
{
    /* Integral within int64 range (no libm: the cast truncates). */
    return d >= -9.2e18 && d <= 9.2e18 && d == (double)(long long)d;
}

unsigned schema_instance_type(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_NULL:
        return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOLEAN;
    case JSON_OBJECT:
        return T_OBJECT;
    case JSON_ARRAY:
        return T_ARRAY;
    case JSON_INTEGER:
        return T_INTEGER | T_NUMBER;
    case JSON_REAL:
        return integral(json_real_value(j)) ? (T_INTEGER | T_NUMBER) : T_NUMBER;
    case JSON_STRING:
        return T_STRING;
    }
    return 0;
}

/* JSON Schema's equality: numbers by value (1 == 1.0), objects regardless of order. */
bool schema_json_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!schema_json_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        size_t klen;
        json_t *va;
        json_object_keylen_foreach((json_t *)a, key, klen, va)
        {
            const json_t *vb = json_object_getn(b, key, klen);
            if (!vb || !schema_json_equal(va, vb))
                return false;
        }
        return true;
    }
    default: /* null, true, false */
        return true;
    }
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    return x ^ (x >> 33);
}

static uint64_t bytes_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

/* Equal values (schema_json_equal) hash equal. */
uint64_t schema_json_hash(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_INTEGER:
        return mix((uint64_t)json_integer_value(j));
    case JSON_REAL: {
        double d = json_real_value(j);
        if (integral(d))
            return mix((uint64_t)(long long)d);
        uint64_t bitsv;
        memcpy(&bitsv, &d, sizeof(bitsv));
        return mix(bitsv ^ 0x5555);
    }
    case JSON_STRING:
        return mix(bytes_hash(json_string_value(j), json_string_length(j)) ^ 4);
    case JSON_ARRAY: {
        uint64_t h = 5;
        for (size_t i = 0; i < json_array_size(j); i++)
            h = mix(h * 31 + schema_json_hash(json_array_get(j, i)));
        return h;
    }
    case JSON_OBJECT: {
        uint64_t h = 6;
        const char *key;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach((json_t *)j, key, klen, v)
        {
            h += mix(bytes_hash(key, klen) * 31 + schema_json_hash(v)); /* order-independent */
        }
        return mix(h);
    }
    case JSON_TRUE:
        return 2;
    case JSON_FALSE:
        return 3;
    default:
        return 1;
    }
}
