/* The small hash table the schema loader and evaluator share (schema_impl.h): keys are
 * byte strings (copied in) or pointers (by identity, keylen 0); open addressing, grown
 * at half full. */
#include "impl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_key(const void *key, size_t keylen)
{
    if (keylen == 0) { /* a pointer, by identity */
        uint64_t x = (uint64_t)(uintptr_t)key;
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        return x;
    }
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < keylen; i++)
        h = (h ^ ((const unsigned char *)key)[i]) * 0x100000001b3ULL;
    return h;
}

static bool same_key(const struct shash_entry *e, uint64_t h, const void *key, size_t keylen)
{
    if (e->hash != h || e->keylen != keylen)
        return false;
    return keylen == 0 ? e->key == key : memcmp(e->key, key, keylen) == 0;
}

void *shash_get(const struct shash *h, const void *key, size_t keylen)
{
    if (h->cap == 0)
        return NULL;
    uint64_t hv = hash_key(key, keylen);
    for (size_t i = hv & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
        const struct shash_entry *e = &h->v[i];
        if (!e->key)
            return NULL;
        if (same_key(e, hv, key, keylen))
            return e->value;
    }
}

bool shash_put(struct shash *h, const void *key, size_t keylen, void *value)
{
    if (shash_get(h, key, keylen))
        return false;
    if ((h->n + 1) * 2 > h->cap) {
        struct shash old = *h;
        h->cap = old.cap ? old.cap * 2 : 64;
        h->v = xcalloc(h->cap, sizeof(*h->v));
        h->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.v[i].key) {
                size_t j = old.v[i].hash & (h->cap - 1);
                while (h->v[j].key)
                    j = (j + 1) & (h->cap - 1);
                h->v[j] = old.v[i];
                h->n++;
            }
        free(old.v);
    }
    uint64_t hv = hash_key(key, keylen);
    size_t i = hv & (h->cap - 1);
    while (h->v[i].key)
        i = (i + 1) & (h->cap - 1);
    if (keylen) {
        char *copy = xmalloc(keylen);
        memcpy(copy, key, keylen);
        key = copy;
    }
    h->v[i] = (struct shash_entry){.hash = hv, .key = key, .keylen = keylen, .value = value};
    h->n++;
    return true;
}

void shash_free(struct shash *h, void (*free_value)(void *))
{
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->v[i].key)
            continue;
        if (h->v[i].keylen)
            free((void *)h->v[i].key);
        if (free_value)
            free_value(h->v[i].value);
    }
    free(h->v);
    *h = (struct shash){0};
}
