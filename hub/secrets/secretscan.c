#include "secretscan.h"
#include "keylike.h"
#include "redact.h"
#include "util.h"

#include <string.h>

/* The longest token judged as a key shape: longer runs are data, not keys. */
#define SHAPE_TOKEN_MAX 512

int secretscan_policy_parse(const char *s)
{
    static const char *const names[] = {"block", "redact", "ask", "log"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return SCAN_BLOCK + i;
    return 0;
}

const char *secretscan_policy_name(int policy)
{
    switch (policy) {
    case SCAN_BLOCK:
        return "block";
    case SCAN_REDACT:
        return "redact";
    case SCAN_ASK:
        return "ask";
    case SCAN_LOG:
        return "log";
    default:
        return "default";
    }
}

const char *secretscan_kind_name(enum scan_kind k)
{
    static const char *const names[] = {"secret-value", "stand-in", "private-key", "key-shape"};
    return (unsigned)k < SCAN_NKINDS ? names[k] : "?";
}

/* A string being rewritten: bytes and length (NUL inside is possible in JSON). */
struct sbuf {
    char *p;
    size_t n;
};

static void replace(struct sbuf *b, size_t from, size_t to, const char *with)
{
    size_t wl = strlen(with);
    char *out = xmalloc(b->n - (to - from) + wl + 1);
    memcpy(out, b->p, from);
    memcpy(out + from, with, wl);
    memcpy(out + from + wl, b->p + to, b->n - to);
    b->n = b->n - (to - from) + wl;
    out[b->n] = '\0';
    free(b->p);
    b->p = out;
}

static bool token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '+' || c == '/' || c == '=' || c == '.';
}

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static void scan_values(struct sbuf *b, bool redact, struct scan_report *r)
{
    if (!redact_active())
        return;
    size_t cl;
    char *copy = redact_copy(b->p, b->n, &cl);
    if (!copy)
        return;
    r->hits[SCAN_SECRET_VALUE]++;
    /* The name from the first "[secret NAME]" the copy has where the string had none. */
    const char *m = memmem(copy, cl, "[secret ", 8);
    if (m && !r->name[0]) {
        const char *end = memchr(m + 8, ']', cl - (size_t)(m + 8 - copy));
        size_t len = end ? (size_t)(end - m - 8) : 0;
        if (len < sizeof(r->name)) {
            memcpy(r->name, m + 8, len);
            r->name[len] = '\0';
        }
    }
    if (redact) {
        free(b->p);
        b->p = copy;
        b->n = cl;
    } else {
        free(copy);
    }
}

static void scan_standins(struct sbuf *b, const struct scan_standin *st, size_t n, bool redact,
                          struct scan_report *r)
{
    for (size_t i = 0; i < n; i++) {
        size_t sl = strlen(st[i].standin);
        size_t at = 0;
        const char *m;
        while (sl && at < b->n && (m = memmem(b->p + at, b->n - at, st[i].standin, sl))) {
            r->hits[SCAN_STANDIN]++;
            if (!r->name[0])
                snprintf(r->name, sizeof(r->name), "%s", st[i].name);
            size_t from = (size_t)(m - b->p);
            if (!redact) {
                at = from + sl;
                continue;
            }
            char with[96];
            snprintf(with, sizeof(with), "[stand-in %s]", st[i].name);
            replace(b, from, from + sl, with);
            at = from + strlen(with);
        }
    }
}

static void scan_private_keys(struct sbuf *b, bool redact, struct scan_report *r)
{
    static const char begin[] = "-----BEGIN ", tail[] = "PRIVATE KEY-----";
    size_t at = 0;
    const char *m;
    while (at < b->n && (m = memmem(b->p + at, b->n - at, begin, sizeof(begin) - 1))) {
        size_t from = (size_t)(m - b->p);
        /* "-----BEGIN [RSA |EC |OPENSSH |ENCRYPTED ]PRIVATE KEY-----" */
        const char *label_end =
            memmem(m, b->n - from < 64 ? b->n - from : 64, tail, sizeof(tail) - 1);
        if (!label_end) {
            at = from + sizeof(begin) - 1;
            continue;
        }
        r->hits[SCAN_PRIVATE_KEY]++;
        size_t after = (size_t)(label_end - b->p) + sizeof(tail) - 1;
        if (!redact) {
            at = after;
            continue;
        }
        /* Up to its END line, or the string's end when it has none (a cut block). */
        const char *end = memmem(b->p + after, b->n - after, "-----END ", 9);
        const char *end_tail =
            end ? memmem(end, b->n - (size_t)(end - b->p), tail, sizeof(tail) - 1) : NULL;
        size_t to = end_tail ? (size_t)(end_tail - b->p) + sizeof(tail) - 1 : b->n;
        static const char with[] = "[redacted: a private key (PEM)]";
        replace(b, from, to, with);
        at = from + sizeof(with) - 1;
    }
}

static bool is_standin(const char *tok, const struct scan_standin *st, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(tok, st[i].standin))
            return true;
    return false;
}

static void scan_shapes(struct sbuf *b, const struct scan_standin *st, size_t n_st, bool redact,
                        struct scan_report *r)
{
    for (size_t i = 0; i < b->n; i++) {
        /* A token starts here, and a known prefix with it. */
        if (!alnum(b->p[i]) || (i > 0 && alnum(b->p[i - 1])))
            continue;
        char tok[SHAPE_TOKEN_MAX + 1];
        size_t t = 0;
        while (i + t < b->n && t < SHAPE_TOKEN_MAX && token_char(b->p[i + t]))
            t++;
        if (t < 8 || t == SHAPE_TOKEN_MAX)
            continue;
        memcpy(tok, b->p + i, t);
        tok[t] = '\0';
        const char *why;
        /* A stand-in has its value's shape: it is counted as what it is, above. */
        if (keylike_prefix_len(tok) == 0 || !keylike(tok, &why) || is_standin(tok, st, n_st))
            continue;
        r->hits[SCAN_KEY_SHAPE]++;
        if (!r->shape)
            r->shape = why;
        if (redact) {
            char with[128];
            snprintf(with, sizeof(with), "[redacted: %s]", why);
            replace(b, i, i + t, with);
            i += strlen(with) - 1;
        } else {
            i += t - 1;
        }
    }
}

static void scan_string(json_t *s, const struct scan_standin *st, size_t n_st,
                        const bool redact[SCAN_NKINDS], struct scan_report *r)
{
    size_t n = json_string_length(s);
    struct sbuf b = {.p = xmalloc(n + 1), .n = n};
    memcpy(b.p, json_string_value(s), n);
    b.p[n] = '\0';
    size_t before = 0;
    for (int k = 0; k < SCAN_NKINDS; k++)
        before += r->hits[k];
    scan_values(&b, redact[SCAN_SECRET_VALUE], r);
    scan_standins(&b, st, n_st, redact[SCAN_STANDIN], r);
    scan_private_keys(&b, redact[SCAN_PRIVATE_KEY], r);
    scan_shapes(&b, st, n_st, redact[SCAN_KEY_SHAPE], r);
    size_t after = 0;
    for (int k = 0; k < SCAN_NKINDS; k++)
        after += r->hits[k];
    if (after != before && (b.n != n || memcmp(b.p, json_string_value(s), n) != 0))
        json_string_setn_nocheck(s, b.p, b.n);
    free(b.p);
}

void secretscan_json(json_t *v, const struct scan_standin *standins, size_t n_standins,
                     const bool redact[SCAN_NKINDS], struct scan_report *r)
{
    if (json_is_string(v)) {
        scan_string(v, standins, n_standins, redact, r);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) secretscan_json(x, standins, n_standins, redact, r);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) secretscan_json(x, standins, n_standins, redact, r);
    }
}
