#include "inject.h"

#include "util.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BASIC_MAX 4096

static bool not_for_host(const struct cred *c, void *ud)
{
    return !cred_for_host(c, ud);
}

const struct cred *inject_wrong_host(const struct cred_set *s, const char *host, const char *buf,
                                     size_t len)
{
    size_t at;
    return cred_set_find(s, buf, len, not_for_host, (void *)host, &at);
}

bool inject_authority_is(const struct inject_dest *d, const char *a, size_t len)
{
    size_t hl = strlen(d->host);
    if (len < hl || strncasecmp(a, d->host, hl) != 0)
        return false;
    if (len == hl)
        return true;
    if (a[hl] != ':' || len - hl - 1 == 0 || len - hl - 1 > 5)
        return false;
    unsigned port = 0;
    for (size_t i = hl + 1; i < len; i++) {
        if (a[i] < '0' || a[i] > '9')
            return false;
        port = port * 10 + (unsigned)(a[i] - '0');
    }
    return port == d->port;
}

/* Replaces every occurrence of c's stand-in in in[0..len) by its value: a new buffer,
 * or NULL when there is none. */
static char *replace_all(const struct cred *c, const char *in, size_t len, size_t *out_len)
{
    const char *p = memmem(in, len, c->standin, c->standin_len);
    if (!p)
        return NULL;
    size_t count = 0;
    for (const char *q = p; q;
         q = memmem(q + c->standin_len, len - (size_t)(q + c->standin_len - in), c->standin,
                    c->standin_len))
        count++;
    size_t n = len + count * c->value_len - count * c->standin_len;
    char *out = xmalloc(n + 1);
    size_t o = 0, pos = 0;
    while (p) {
        size_t at = (size_t)(p - in);
        memcpy(out + o, in + pos, at - pos);
        o += at - pos;
        memcpy(out + o, c->value, c->value_len);
        o += c->value_len;
        pos = at + c->standin_len;
        p = memmem(in + pos, len - pos, c->standin, c->standin_len);
    }
    memcpy(out + o, in + pos, len - pos);
    o += len - pos;
    out[o] = '\0';
    *out_len = o;
    return out;
}

static void wipe_free(char *p, size_t n)
{
    if (p) {
        explicit_bzero(p, n);
        free(p);
    }
}

static void note_injected(struct inject_result *res, const struct cred *c)
{
    for (size_t i = 0; i < res->n_injected; i++)
        if (res->injected[i] == c)
            return;
    if (res->n_injected < INJECT_MAX_INJECTED)
        res->injected[res->n_injected++] = c;
}

static bool refuse(struct inject_result *res, enum reason r, const struct cred *wrong,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static bool refuse(struct inject_result *res, enum reason r, const struct cred *wrong,
                   const char *fmt, ...)
{
    res->verdict = r;
    res->wrong = wrong;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->detail, sizeof(res->detail), fmt, ap);
    va_end(ap);
    return false;
}

/* "Basic base64(user:pass)": the decoded credential, or NULL. */
static char *basic_decode(const char *v, size_t len, size_t *out_len)
{
    if (len < 7 || strncasecmp(v, "Basic ", 6) != 0)
        return NULL;
    const char *b = v + 6;
    size_t bl = len - 6;
    while (bl && *b == ' ') {
        b++;
        bl--;
    }
    if (bl == 0 || bl % 4 || bl > BASIC_MAX)
        return NULL;
    unsigned char *out = xmalloc(bl);
    int n = EVP_DecodeBlock(out, (const unsigned char *)b, (int)bl);
    if (n < 0) {
        free(out);
        return NULL;
    }
    n -= (b[bl - 1] == '=') + (b[bl - 2] == '=');
    *out_len = (size_t)n;
    return (char *)out;
}

static char *basic_encode(const char *raw, size_t len, size_t *out_len)
{
    size_t b64 = 4 * ((len + 2) / 3);
    char *out = xmalloc(6 + b64 + 1);
    memcpy(out, "Basic ", 6);
    EVP_EncodeBlock((unsigned char *)out + 6, (const unsigned char *)raw, (int)len);
    *out_len = 6 + b64;
    return out;
}

static bool is_auth_field(const struct inject_field *f)
{
    return (f->name_len == 13 && strncasecmp(f->name, "authorization", 13) == 0) ||
           (f->name_len == 19 && strncasecmp(f->name, "proxy-authorization", 19) == 0);
}

/* One header field: wrong-host stand-ins refuse; this host's are replaced (in the
 * binding's header only, when it names one). */
static bool do_field(const struct cred_set *s, const struct inject_dest *d,
                     const struct inject_field *f, size_t idx, struct inject_result *res)
{
    const struct cred *w = inject_wrong_host(s, d->host, f->value, f->value_len);
    size_t dl = 0;
    char *decoded = is_auth_field(f) ? basic_decode(f->value, f->value_len, &dl) : NULL;
    if (!w && decoded)
        w = inject_wrong_host(s, d->host, decoded, dl);
    if (w) {
        wipe_free(decoded, dl);
        char name[80];
        snprintf(name, sizeof(name), "%.*s", (int)(f->name_len < 64 ? f->name_len : 64), f->name);
        return refuse(res, R_CRED_WRONG_HOST, w,
                      "the stand-in of secret %s is in header %s of a request to a host it is "
                      "not for",
                      w->name, name);
    }
    if (!d->tls) {
        wipe_free(decoded, dl);
        return true;
    }
    char *cur = NULL, *cur_dec = decoded;
    size_t cur_len = 0, cur_dec_len = dl;
    for (size_t i = 0; i < s->n; i++) {
        const struct cred *c = &s->v[i];
        if (!cred_for_host(c, d->host) ||
            (c->header && (strlen(c->header) != f->name_len ||
                           strncasecmp(c->header, f->name, f->name_len) != 0)))
            continue;
        size_t nl;
        char *n = replace_all(c, cur ? cur : f->value, cur ? cur_len : f->value_len, &nl);
        if (n) {
            wipe_free(cur, cur_len);
            cur = n;
            cur_len = nl;
            note_injected(res, c);
            continue;
        }
        if (cur_dec && (n = replace_all(c, cur_dec, cur_dec_len, &nl))) {
            wipe_free(cur_dec, cur_dec_len);
            cur_dec = n;
            cur_dec_len = nl;
            wipe_free(cur, cur_len);
            cur = basic_encode(cur_dec, cur_dec_len, &cur_len);
            note_injected(res, c);
        }
    }
    wipe_free(cur_dec, cur_dec_len);
    if (cur) {
        res->values[idx] = cur;
        res->value_lens[idx] = cur_len;
    }
    return true;
}

static bool unreserved(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* The query parameter a binding names: its value's stand-in replaced by the value,
 * percent-encoded. */
static void do_query(const struct cred *c, const char *t, size_t tl, struct inject_result *res)
{
    const char *cur = res->target ? res->target : t;
    size_t cl = res->target ? res->target_len : tl;
    const char *q = memchr(cur, '?', cl);
    if (!q)
        return;
    size_t nl = strlen(c->query);
    const char *p = q + 1, *end = cur + cl;
    const char *frag = memchr(p, '#', (size_t)(end - p));
    if (frag)
        end = frag;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        if ((size_t)(pe - p) > nl && strncmp(p, c->query, nl) == 0 && p[nl] == '=') {
            const char *v = p + nl + 1;
            size_t vl = (size_t)(pe - v);
            if (vl == c->standin_len && memcmp(v, c->standin, vl) == 0) {
                size_t enc = 0;
                for (size_t i = 0; i < c->value_len; i++)
                    enc += unreserved(c->value[i]) ? 1 : 3;
                size_t n = cl - vl + enc;
                char *out = xmalloc(n + 1), *o = out;
                memcpy(o, cur, (size_t)(v - cur));
                o += v - cur;
                for (size_t i = 0; i < c->value_len; i++) {
                    unsigned char ch = (unsigned char)c->value[i];
                    if (unreserved((char)ch)) {
                        *o++ = (char)ch;
                    } else {
                        *o++ = '%';
                        *o++ = "0123456789ABCDEF"[ch >> 4];
                        *o++ = "0123456789ABCDEF"[ch & 15];
                    }
                }
                memcpy(o, pe, (size_t)(cur + cl - pe));
                o += cur + cl - pe;
                *o = '\0';
                wipe_free(res->target, res->target_len);
                res->target = out;
                res->target_len = (size_t)(o - out);
                note_injected(res, c);
                return;
            }
        }
        p = pe + 1;
    }
}

/* The authority an absolute-form target names ("https://host/..."), or NULL. */
static const char *absolute_authority(const char *t, size_t tl, size_t *al)
{
    const char *p = NULL;
    if (tl > 7 && strncasecmp(t, "http://", 7) == 0)
        p = t + 7;
    else if (tl > 8 && strncasecmp(t, "https://", 8) == 0)
        p = t + 8;
    if (!p)
        return NULL;
    const char *e = p;
    while (e < t + tl && *e != '/' && *e != '?' && *e != '#')
        e++;
    *al = (size_t)(e - p);
    return p;
}

void inject_request(const struct cred_set *s, const struct inject_dest *d,
                    const struct inject_req *rq, struct inject_result *res)
{
    memset(res, 0, sizeof(*res));
    res->verdict = R_ALLOWED;
    res->n_values = rq->n_fields;
    res->values = xcalloc(rq->n_fields ? rq->n_fields : 1, sizeof(char *));
    res->value_lens = xcalloc(rq->n_fields ? rq->n_fields : 1, sizeof(size_t));
    char shown[200];
    size_t al = 0;
    const char *abs = absolute_authority(rq->target, rq->target_len, &al);
    /* Every authority the request names counts: HTTP/2's `host` beside `:authority`
     * too (RFC 9113 8.3.1), which a front end routing by Host would follow. */
    const struct inject_field *host_field = NULL;
    for (size_t i = 0; i < rq->n_fields && !host_field; i++)
        if (rq->fields[i].name_len == 4 && strncasecmp(rq->fields[i].name, "host", 4) == 0 &&
            !inject_authority_is(d, rq->fields[i].value, rq->fields[i].value_len))
            host_field = &rq->fields[i];
    if ((rq->authority && !inject_authority_is(d, rq->authority, rq->authority_len)) ||
        (abs && !inject_authority_is(d, abs, al)) || host_field) {
        const char *a = abs ? abs : host_field ? host_field->value : rq->authority;
        size_t n = abs ? al : host_field ? host_field->value_len : rq->authority_len;
        snprintf(shown, sizeof(shown), "%.*s", (int)(n < 120 ? n : 120), a);
        refuse(res, R_HOST_MISMATCH, NULL,
               "the request names %s, but this connection goes to %s: a request may only go "
               "to the host it was opened for",
               shown, d->host);
        return;
    }
    const struct cred *w = inject_wrong_host(s, d->host, rq->target, rq->target_len);
    if (w) {
        refuse(res, R_CRED_WRONG_HOST, w,
               "the stand-in of secret %s is in the URL of a request to %s, a host it is not "
               "for",
               w->name, d->host);
        return;
    }
    for (size_t i = 0; i < rq->n_fields; i++)
        if (!do_field(s, d, &rq->fields[i], i, res))
            return;
    if (!d->tls)
        return;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].query && cred_for_host(&s->v[i], d->host))
            do_query(&s->v[i], rq->target, rq->target_len, res);
}

void inject_result_free(struct inject_result *res)
{
    wipe_free(res->target, res->target_len);
    for (size_t i = 0; i < res->n_values; i++)
        wipe_free(res->values[i], res->value_lens[i]);
    free(res->values);
    free(res->value_lens);
    memset(res, 0, sizeof(*res));
}

const struct cred *inject_scan_stream(struct scan_carry *sc, const struct cred_set *s,
                                      const char *host, const char *buf, size_t len)
{
    if (!s || s->n == 0 || len == 0)
        return NULL;
    size_t keep = s->longest_standin - 1;
    const struct cred *w;
    if (sc->len == 0) {
        w = inject_wrong_host(s, host, buf, len);
    } else {
        char *all = xmalloc(sc->len + len);
        memcpy(all, sc->tail, sc->len);
        memcpy(all + sc->len, buf, len);
        w = inject_wrong_host(s, host, all, sc->len + len);
        free(all);
    }
    /* The new tail: the last `keep` bytes of what has been seen. */
    size_t total = sc->len + len, take = total < keep ? total : keep;
    char *tail = xmalloc(take ? take : 1);
    if (take <= len) {
        memcpy(tail, buf + len - take, take);
    } else {
        memcpy(tail, sc->tail + sc->len - (take - len), take - len);
        memcpy(tail + take - len, buf, len);
    }
    free(sc->tail);
    sc->tail = tail;
    sc->len = take;
    return w;
}

void scan_carry_free(struct scan_carry *sc)
{
    free(sc->tail);
    sc->tail = NULL;
    sc->len = 0;
}
