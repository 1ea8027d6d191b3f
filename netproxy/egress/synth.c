#include "synth.h"

#include "util.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct synth_map {
    pthread_mutex_t lock;
    uint32_t base;       /* the range's first address, host order */
    uint32_t range_size; /* addresses in the range */
    uint32_t slots;      /* the offsets that can ever be handed out (a prefix of it) */
    unsigned max;
    uint32_t next; /* the next offset to try */
    unsigned count;
    char **by_offset;  /* slots entries: the name at base + offset, or NULL */
    uint32_t *buckets; /* open addressing: offset + 1, 0 = empty */
    size_t nbuckets;   /* a power of two, at least twice max */
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* The bucket that holds name, or the empty one where it would go. */
static size_t find_bucket(const struct synth_map *m, const char *name)
{
    size_t mask = m->nbuckets - 1;
    for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        uint32_t v = m->buckets[i];
        if (v == 0 || strcmp(m->by_offset[v - 1], name) == 0)
            return i;
    }
}

static bool usable(uint32_t addr)
{
    uint8_t last = (uint8_t)addr;
    return last != 0 && last != 255;
}

struct synth_map *synth_new(const struct cidr *range, unsigned max, char *err, size_t errlen)
{
    if (range->family != AF_INET || range->prefix < 4 || range->prefix > 24) {
        snprintf(err, errlen, "the synthetic range must be an IPv4 range of at least a /24");
        return NULL;
    }
    uint32_t slots = range->prefix == 0 ? UINT32_MAX : (uint32_t)1 << (32 - range->prefix);
    /* Usable addresses: all but two of every 256. */
    if (max == 0 || (uint64_t)max > (uint64_t)slots / 256 * 254) {
        snprintf(err, errlen, "%u names do not fit the synthetic range", max);
        return NULL;
    }
    struct synth_map *m = xcalloc(1, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
    uint32_t be;
    memcpy(&be, range->addr, 4);
    m->base = ntohl(be);
    m->range_size = slots;
    /* Only the offsets that can ever be handed out need a slot. */
    m->slots = (uint32_t)((uint64_t)max * 256 / 254 + 2);
    if (m->slots > slots)
        m->slots = slots;
    m->max = max;
    m->nbuckets = 16;
    while (m->nbuckets < (size_t)max * 2)
        m->nbuckets *= 2;
    return m;
}

/* The tables are made on the first name: most spokes never resolve one, and a full
 * map's tables are some 64 KiB. */
static void tables(struct synth_map *m)
{
    if (m->by_offset)
        return;
    m->by_offset = xcalloc(m->slots, sizeof(char *));
    m->buckets = xcalloc(m->nbuckets, sizeof(*m->buckets));
}

void synth_free(struct synth_map *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; m->by_offset && i < m->slots; i++)
        free(m->by_offset[i]);
    free(m->by_offset);
    free(m->buckets);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void put(struct synth_map *m, size_t bucket, uint32_t off, const char *name)
{
    m->by_offset[off] = xstrdup(name);
    m->buckets[bucket] = off + 1;
    m->count++;
}

int synth_assign(struct synth_map *m, const char *name, struct in_addr *out, bool *fresh)
{
    pthread_mutex_lock(&m->lock);
    tables(m);
    size_t b = find_bucket(m, name);
    int rc = 0;
    *fresh = false;
    if (m->buckets[b]) {
        out->s_addr = htonl(m->base + m->buckets[b] - 1);
    } else if (m->count >= m->max) {
        rc = -1;
    } else {
        while (m->next < m->slots && (!usable(m->base + m->next) || m->by_offset[m->next]))
            m->next++;
        if (m->next >= m->slots) {
            rc = -1;
        } else {
            put(m, b, m->next, name);
            out->s_addr = htonl(m->base + m->next);
            *fresh = true;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int synth_preset(struct synth_map *m, const char *name, struct in_addr addr)
{
    uint32_t a = ntohl(addr.s_addr);
    pthread_mutex_lock(&m->lock);
    tables(m);
    int rc = -1;
    if (a >= m->base && a - m->base < m->slots && usable(a) && m->count < m->max) {
        uint32_t off = a - m->base;
        size_t b = find_bucket(m, name);
        if (m->buckets[b])
            rc = m->buckets[b] - 1 == off ? 0 : -1;
        else if (!m->by_offset[off]) {
            put(m, b, off, name);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

bool synth_in_range(const struct synth_map *m, struct in_addr addr)
{
    uint32_t a = ntohl(addr.s_addr);
    /* The whole configured range counts, not only the slots in use: an address past
     * them is still synthetic (and unknown), never a real destination. */
    return a >= m->base && a - m->base < m->range_size;
}

bool synth_lookup(struct synth_map *m, struct in_addr addr, char *buf, size_t len)
{
    uint32_t a = ntohl(addr.s_addr);
    pthread_mutex_lock(&m->lock);
    bool ok = m->by_offset && a >= m->base && a - m->base < m->slots && m->by_offset[a - m->base];
    if (ok)
        ok = str_copy(buf, m->by_offset[a - m->base], len);
    pthread_mutex_unlock(&m->lock);
    return ok;
}

unsigned synth_count(struct synth_map *m)
{
    pthread_mutex_lock(&m->lock);
    unsigned n = m->count;
    pthread_mutex_unlock(&m->lock);
    return n;
}
