#include "scrub.h"

#include "util.h"

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* A base64 run shorter than this could occur by chance in any body. */
#define MIN_B64_CORE 8

struct pattern {
    char *find, *repl; /* the same length */
    size_t len;
    const struct cred *c;
};

struct scrub {
    struct cred_set *set;
    struct pattern *p;
    size_t n, cap;
    size_t longest;
    char *hold;
    size_t hold_len;
    scrub_found_fn found;
    void *ud;
};

static void wipe_free(char *p, size_t n)
{
    if (p) {
        explicit_bzero(p, n);
        free(p);
    }
}

/* Takes find and repl (malloc'd, len bytes each); a duplicate is dropped. */
static void add(struct scrub *sc, const struct cred *c, char *find, char *repl, size_t len)
{
    bool same = memcmp(find, repl, len) == 0;
    for (size_t i = 0; i < sc->n && !same; i++)
        same = sc->p[i].len == len && memcmp(sc->p[i].find, find, len) == 0;
    if (same || len == 0) {
        wipe_free(find, len);
        wipe_free(repl, len);
        return;
    }
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 16;
        sc->p = xrealloc(sc->p, sc->cap * sizeof(*sc->p));
    }
    sc->p[sc->n++] = (struct pattern){find, repl, len, c};
    if (len > sc->longest)
        sc->longest = len;
}

static bool unreserved(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* Percent-encoding of raw (hex in upper or lower case); *n its length. */
static char *pct(const char *raw, size_t len, bool lower, size_t *n)
{
    const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
    char *out = xmalloc(3 * len + 1), *o = out;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)raw[i];
        if (unreserved(ch)) {
            *o++ = (char)ch;
        } else {
            *o++ = '%';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        }
    }
    *n = (size_t)(o - out);
    return out;
}

/* The base64 characters of raw placed `lead` bytes into a 3-byte group that depend on
 * raw's bytes alone (a neighbour's bits are in the first and last otherwise). */
static char *b64_core(const char *raw, size_t len, size_t lead, bool url, size_t *n)
{
    size_t total = lead + len, padded = (total + 2) / 3 * 3;
    unsigned char *in = xcalloc(padded ? padded : 1, 1);
    memcpy(in + lead, raw, len);
    char *enc = xmalloc(padded / 3 * 4 + 1);
    EVP_EncodeBlock((unsigned char *)enc, in, (int)padded);
    explicit_bzero(in, padded);
    free(in);
    /* Character k holds bits [6k, 6k+6): inside raw's [8 lead, 8 total). */
    size_t k0 = (8 * lead + 5) / 6, k1 = 8 * total / 6;
    *n = k1 > k0 ? k1 - k0 : 0;
    char *out = xmalloc(*n + 1);
    memcpy(out, enc + k0, *n);
    wipe_free(enc, padded / 3 * 4 + 1);
    if (url)
        for (size_t i = 0; i < *n; i++)
            out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return out;
}

static void add_cred(struct scrub *sc, const struct cred *c)
{
    size_t len = c->value_len;
    if (len == 0 || c->standin_len == 0)
        return;
    /* The mask: the stand-in, cut or repeated to the value's length. */
    char *mask = xmalloc(len);
    for (size_t i = 0; i < len; i++)
        mask[i] = c->standin[i % c->standin_len];
    char *f = xmalloc(len), *r = xmalloc(len);
    memcpy(f, c->value, len);
    memcpy(r, mask, len);
    add(sc, c, f, r, len);
    for (int lower = 0; lower < 2; lower++) {
        size_t fl, rl;
        f = pct(c->value, len, lower, &fl);
        r = pct(mask, len, lower, &rl);
        if (fl == rl)
            add(sc, c, f, r, fl);
        else { /* the mask needs another encoding's length: cut or padded in kind */
            char *r2 = xmalloc(fl);
            for (size_t i = 0; i < fl; i++)
                r2[i] = mask[i % len];
            wipe_free(r, rl);
            add(sc, c, f, r2, fl);
        }
    }
    for (int url = 0; url < 2; url++)
        for (size_t lead = 0; lead < 3; lead++) {
            size_t fl, rl;
            f = b64_core(c->value, len, lead, url, &fl);
            r = b64_core(mask, len, lead, url, &rl);
            if (fl >= MIN_B64_CORE && fl == rl)
                add(sc, c, f, r, fl);
            else {
                wipe_free(f, fl);
                wipe_free(r, rl);
            }
        }
    wipe_free(mask, len);
}

struct scrub *scrub_new(struct cred_set *s, scrub_found_fn found, void *ud)
{
    if (!s || s->n == 0)
        return NULL;
    struct scrub *sc = xcalloc(1, sizeof(*sc));
    sc->set = cred_set_ref(s);
    sc->found = found;
    sc->ud = ud;
    for (size_t i = 0; i < s->n; i++)
        add_cred(sc, &s->v[i]);
    sc->hold = xmalloc(sc->longest ? sc->longest : 1);
    return sc;
}

void scrub_free(struct scrub *sc)
{
    if (!sc)
        return;
    for (size_t i = 0; i < sc->n; i++) {
        wipe_free(sc->p[i].find, sc->p[i].len);
        wipe_free(sc->p[i].repl, sc->p[i].len);
    }
    free(sc->p);
    wipe_free(sc->hold, sc->longest ? sc->longest : 1);
    cred_set_unref(sc->set);
    free(sc);
}

const struct cred_set *scrub_set(const struct scrub *sc)
{
    return sc ? sc->set : NULL;
}

size_t scrub_held(const struct scrub *sc)
{
    return sc ? sc->hold_len : 0;
}

/* Replaces every whole pattern in buf[0..len) in place; returns where the bytes after
 * the last replacement begin (a held tail may only start there). Each pattern's next
 * occurrence is looked for again only once the scan has passed it: linear in len for
 * each pattern, however many values the bytes hold. */
static size_t replace(struct scrub *sc, char *buf, size_t len)
{
    size_t pos = 0, after = 0;
    const char **next = xcalloc(sc->n ? sc->n : 1, sizeof(*next));
    bool *gone = xcalloc(sc->n ? sc->n : 1, sizeof(*gone));
    while (pos < len) {
        const struct pattern *best = NULL;
        const char *at = NULL;
        for (size_t i = 0; i < sc->n; i++) {
            if (gone[i])
                continue;
            if (!next[i] || next[i] < buf + pos) {
                next[i] = memmem(buf + pos, len - pos, sc->p[i].find, sc->p[i].len);
                if (!next[i]) {
                    gone[i] = true;
                    continue;
                }
            }
            if (!at || next[i] < at) {
                at = next[i];
                best = &sc->p[i];
            }
        }
        if (!best)
            break;
        memcpy((char *)at, best->repl, best->len);
        pos = (size_t)(at - buf) + best->len;
        after = pos;
        if (sc->found)
            sc->found(sc->ud, best->c);
    }
    free(next);
    free(gone);
    return after;
}

/* The length of the longest tail of buf[from..len) that is a proper beginning of a
 * pattern. */
static size_t tail_to_hold(const struct scrub *sc, const char *buf, size_t from, size_t len)
{
    size_t start = len;
    for (size_t i = 0; i < sc->n; i++) {
        const struct pattern *p = &sc->p[i];
        size_t j = len - from > p->len - 1 ? len - (p->len - 1) : from;
        for (; j < start; j++)
            if (buf[j] == p->find[0] && memcmp(buf + j, p->find, len - j) == 0) {
                start = j;
                break;
            }
    }
    return len - start;
}

void scrub_feed(struct scrub *sc, const char *buf, size_t len, struct evbuffer *out)
{
    if (!len)
        return;
    if (!sc) {
        evbuffer_add(out, buf, len);
        return;
    }
    size_t n = sc->hold_len + len;
    char *work = xmalloc(n);
    memcpy(work, sc->hold, sc->hold_len);
    memcpy(work + sc->hold_len, buf, len);
    size_t after = replace(sc, work, n);
    size_t keep = tail_to_hold(sc, work, after, n);
    evbuffer_add(out, work, n - keep);
    memcpy(sc->hold, work + n - keep, keep);
    sc->hold_len = keep;
    wipe_free(work, n);
}

void scrub_flush(struct scrub *sc, struct evbuffer *out)
{
    if (!sc || !sc->hold_len)
        return;
    evbuffer_add(out, sc->hold, sc->hold_len);
    explicit_bzero(sc->hold, sc->hold_len);
    sc->hold_len = 0;
}

void scrub_piece(struct scrub *sc, char *buf, size_t len)
{
    if (sc && len)
        (void)replace(sc, buf, len);
}
