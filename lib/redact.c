#include "redact.h"
#include "secret.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *value;   /* secret memory */
    char *escaped; /* as JSON writes it, when that differs; secret memory */
    size_t len, escaped_len;
    char label[72];
    unsigned refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static size_t n_entries;
static size_t longest; /* the longest form registered, for streams */
static atomic_bool active;

/* The value as a JSON string body: \" \\ and control characters escaped. */
static char *json_escaped(const char *v, size_t len, size_t *out_len)
{
    bool differs = false;
    for (size_t i = 0; i < len && !differs; i++)
        differs = v[i] == '"' || v[i] == '\\' || (unsigned char)v[i] < 0x20;
    if (!differs)
        return NULL;
    char *out = secret_alloc(6 * len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                          : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f"
                                      : NULL;
        if (esc) {
            memcpy(out + n, esc, 2);
            n += 2;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, 7, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    *out_len = n;
    return out;
}

static void recompute_longest(void)
{
    longest = 0;
    for (size_t i = 0; i < n_entries; i++) {
        if (entries[i].len > longest)
            longest = entries[i].len;
        if (entries[i].escaped_len > longest)
            longest = entries[i].escaped_len;
    }
}

void redact_add(const char *value, size_t len, const char *label)
{
    if (len < REDACT_MIN_LEN)
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_entries; i++)
        if (entries[i].len == len && memcmp(entries[i].value, value, len) == 0) {
            entries[i].refs++;
            pthread_mutex_unlock(&lock);
            return;
        }
    entries = xrealloc(entries, (n_entries + 1) * sizeof(*entries));
    struct entry *e = &entries[n_entries++];
    memset(e, 0, sizeof(*e));
    e->value = secret_alloc(len + 1);
    memcpy(e->value, value, len);
    e->len = len;
    e->escaped = json_escaped(value, len, &e->escaped_len);
    snprintf(e->label, sizeof(e->label), "[secret %.60s]", label);
    e->refs = 1;
    recompute_longest();
    atomic_store(&active, true);
    pthread_mutex_unlock(&lock);
}

void redact_remove(const char *value, size_t len)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_entries; i++) {
        struct entry *e = &entries[i];
        if (e->len != len || memcmp(e->value, value, len) != 0 || --e->refs)
            continue;
        secret_free(e->value);
        secret_free(e->escaped);
        entries[i] = entries[--n_entries];
        recompute_longest();
        break;
    }
    atomic_store(&active, n_entries > 0);
    pthread_mutex_unlock(&lock);
}

bool redact_active(void)
{
    return atomic_load_explicit(&active, memory_order_relaxed);
}

/* The earliest registered form at or after buf[from]: its offset, length and label. */
static bool find_next(const char *buf, size_t len, size_t from, size_t *at, size_t *mlen,
                      const char **label)
{
    bool found = false;
    for (size_t i = 0; i < n_entries; i++) {
        const struct entry *e = &entries[i];
        const char *forms[2] = {e->value, e->escaped};
        size_t lens[2] = {e->len, e->escaped_len};
        for (int f = 0; f < 2; f++) {
            if (!forms[f] || lens[f] > len - from)
                continue;
            const char *p = memmem(buf + from, len - from, forms[f], lens[f]);
            if (p && (!found || (size_t)(p - buf) < *at)) {
                found = true;
                *at = (size_t)(p - buf);
                *mlen = lens[f];
                *label = e->label;
            }
        }
    }
    return found;
}

/* Under the lock. */
static char *copy_locked(const char *buf, size_t len, size_t *out_len)
{
    size_t at, mlen;
    const char *label;
    if (!find_next(buf, len, 0, &at, &mlen, &label))
        return NULL;
    size_t cap = len + 64, n = 0, pos = 0;
    char *out = xmalloc(cap);
    do {
        size_t ll = strlen(label);
        if (n + (at - pos) + ll + 1 > cap) {
            cap = 2 * cap + (at - pos) + ll;
            out = xrealloc(out, cap);
        }
        memcpy(out + n, buf + pos, at - pos);
        n += at - pos;
        memcpy(out + n, label, ll);
        n += ll;
        pos = at + mlen;
    } while (find_next(buf, len, pos, &at, &mlen, &label));
    if (n + (len - pos) + 1 > cap)
        out = xrealloc(out, n + (len - pos) + 1);
    memcpy(out + n, buf + pos, len - pos);
    n += len - pos;
    out[n] = '\0';
    *out_len = n;
    return out;
}

char *redact_copy(const char *buf, size_t len, size_t *out_len)
{
    if (!redact_active())
        return NULL;
    pthread_mutex_lock(&lock);
    char *out = copy_locked(buf, len, out_len);
    pthread_mutex_unlock(&lock);
    return out;
}

static int emit(const char *buf, size_t len, redact_write_fn fn, void *ud)
{
    if (!len)
        return 0;
    size_t rl;
    char *r = redact_copy(buf, len, &rl);
    int rc = r ? fn(ud, r, rl) : fn(ud, buf, len);
    free(r);
    return rc;
}

int redact_stream_feed(struct redact_stream *rs, const char *buf, size_t len, redact_write_fn fn,
                       void *ud)
{
    if (!redact_active() && !rs->held_len)
        return fn(ud, buf, len);
    size_t total = rs->held_len + len;
    char *all = xmalloc(total ? total : 1);
    if (rs->held_len)
        memcpy(all, rs->held, rs->held_len);
    memcpy(all + rs->held_len, buf, len);
    free(rs->held);
    rs->held = NULL;
    rs->held_len = 0;
    /* Redact the whole, then hold back a tail that could be the start of a value cut
     * by the chunk's end. A value found is replaced before the cut is placed, so the
     * cut never splits a label from what it replaced. */
    size_t rl = total;
    char *red = NULL;
    pthread_mutex_lock(&lock);
    size_t keep = longest > 1 ? longest - 1 : 0;
    red = copy_locked(all, total, &rl);
    pthread_mutex_unlock(&lock);
    const char *src = red ? red : all;
    if (keep > rl)
        keep = rl;
    int rc = 0;
    if (rl - keep)
        rc = fn(ud, src, rl - keep);
    if (keep) {
        rs->held = xmalloc(keep);
        memcpy(rs->held, src + rl - keep, keep);
        rs->held_len = keep;
    }
    free(red);
    free(all);
    return rc;
}

int redact_stream_flush(struct redact_stream *rs, redact_write_fn fn, void *ud)
{
    int rc = emit(rs->held, rs->held_len, fn, ud);
    free(rs->held);
    rs->held = NULL;
    rs->held_len = 0;
    return rc;
}
