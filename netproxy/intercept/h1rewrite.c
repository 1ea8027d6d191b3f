#include "h1rewrite.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHUNK_LINE_MAX 4096

enum h1_state {
    S_HEAD,       /* collecting a request head */
    S_BODY,       /* Content-Length bytes left */
    S_CHUNK_SIZE, /* a chunk-size line */
    S_CHUNK_DATA,
    S_CHUNK_CRLF, /* the CRLF after a chunk's data */
    S_TRAILER,    /* trailer lines, until an empty one */
    S_OPAQUE,     /* after Upgrade / CONNECT */
    S_DEAD,
};

struct h1rw {
    struct h1rw_ops ops;
    enum h1_state state;
    char *head; /* the head being collected (S_HEAD), or a chunk/trailer line */
    size_t head_len, head_cap;
    size_t scanned; /* head bytes already searched for the blank line */
    unsigned long long left;
    enum reason reason;
    char detail[300];
    int status;
    char method[16];
    char path[256];
    bool client_close;
};

struct h1rw *h1rw_new(const struct h1rw_ops *ops)
{
    struct h1rw *r = xcalloc(1, sizeof(*r));
    r->ops = *ops;
    r->state = S_HEAD;
    return r;
}

void h1rw_free(struct h1rw *r)
{
    if (!r)
        return;
    if (r->head) {
        explicit_bzero(r->head, r->head_cap);
        free(r->head);
    }
    free(r);
}

enum reason h1rw_refusal(const struct h1rw *r, const char **detail, int *status)
{
    *detail = r->detail;
    *status = r->status;
    return r->reason;
}

const char *h1rw_method(const struct h1rw *r)
{
    return r->method;
}

const char *h1rw_path(const struct h1rw *r)
{
    return r->path;
}

bool h1rw_client_close(const struct h1rw *r)
{
    return r->client_close;
}

bool h1rw_idle(const struct h1rw *r)
{
    return r->state == S_HEAD && r->head_len == 0;
}

static enum h1_status fail(struct h1rw *r, enum reason why, int status, const char *detail)
{
    r->state = S_DEAD;
    r->reason = why;
    r->status = status;
    str_copy(r->detail, detail, sizeof(r->detail));
    return why == R_ALLOWED ? H1_OUT : H1_ERROR;
}

/* The caller's scan refused the request (r->detail says why): it ends here. */
static enum h1_status refused(struct h1rw *r, enum reason why)
{
    r->state = S_DEAD;
    r->reason = why;
    r->status = reason_status(why);
    return H1_REFUSED;
}

static bool append(struct h1rw *r, const char *buf, size_t len, size_t max)
{
    if (r->head_len + len > max)
        return false;
    if (r->head_len + len > r->head_cap) {
        size_t cap = r->head_cap ? r->head_cap : 1024;
        while (cap < r->head_len + len)
            cap *= 2;
        char *n = xmalloc(cap);
        if (r->head) {
            memcpy(n, r->head, r->head_len);
            explicit_bzero(r->head, r->head_cap);
            free(r->head);
        }
        r->head = n;
        r->head_cap = cap;
    }
    memcpy(r->head + r->head_len, buf, len);
    r->head_len += len;
    return true;
}

static bool tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool field_is(const struct inject_field *f, const char *name)
{
    return f->name_len == strlen(name) && strncasecmp(f->name, name, f->name_len) == 0;
}

/* Trims optional whitespace around a field value. */
static void trim(const char **v, size_t *n)
{
    while (*n && ((*v)[0] == ' ' || (*v)[0] == '\t')) {
        (*v)++;
        (*n)--;
    }
    while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
        (*n)--;
}

static enum h1_status emit(struct h1rw *r, const char *buf, size_t len)
{
    if (len && r->ops.out(r->ops.ud, buf, len) != 0)
        return fail(r, R_ALLOWED, 0, "the other side failed");
    return H1_OK;
}

/* The whole head is in r->head[0..n) (the blank line included): parse, decide,
 * rewrite, send on, and set up the body. */
static enum h1_status handle_head(struct h1rw *r, size_t n)
{
    const char *h = r->head, *end = h + n;
    const char *eol = memmem(h, n, "\r\n", 2);
    /* Request line: METHOD SP target SP HTTP/1.x */
    const char *sp1 = memchr(h, ' ', (size_t)(eol - h));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || sp1 == h || sp2 == sp1 + 1 || eol - sp2 - 1 != 8 ||
        (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
        return fail(r, R_BAD_REQUEST, 400, "not an HTTP/1.1 request line");
    for (const char *p = h; p < sp1; p++)
        if (!tchar(*p))
            return fail(r, R_BAD_REQUEST, 400, "a request method of other than token characters");
    for (const char *p = sp1 + 1; p < sp2; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return fail(r, R_BAD_REQUEST, 400, "a request target with spaces or control bytes");
    bool http10 = sp2[8] == '0';
    snprintf(r->method, sizeof(r->method), "%.*s", (int)(sp1 - h), h);
    size_t tl = (size_t)(sp2 - sp1 - 1);
    const char *q = memchr(sp1 + 1, '?', tl);
    size_t pl = q ? (size_t)(q - sp1 - 1) : tl;
    snprintf(r->path, sizeof(r->path), "%.*s", (int)(pl < 255 ? pl : 255), sp1 + 1);

    struct inject_field fields[H1_MAX_FIELDS];
    size_t nf = 0;
    const char *host = NULL;
    size_t host_len = 0;
    int hosts = 0, cls = 0, tes = 0;
    unsigned long long cl = 0;
    bool chunked = false, upgrade = false;
    for (const char *p = eol + 2; p < end - 2;) {
        const char *le = memmem(p, (size_t)(end - p), "\r\n", 2);
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (p[0] == ' ' || p[0] == '\t')
            return fail(r, R_BAD_REQUEST, 400, "obsolete line folding in the request's header");
        if (!colon || colon == p)
            return fail(r, R_BAD_REQUEST, 400, "a header line without a field name");
        for (const char *c = p; c < colon; c++)
            if (!tchar(*c))
                return fail(r, R_BAD_REQUEST, 400,
                            "a header field name of other than token characters");
        if (nf == H1_MAX_FIELDS)
            return fail(r, R_HEADERS_TOO_LARGE, 431, "more than 128 header fields");
        struct inject_field *f = &fields[nf++];
        f->name = p;
        f->name_len = (size_t)(colon - p);
        f->value = colon + 1;
        f->value_len = (size_t)(le - colon - 1);
        trim(&f->value, &f->value_len);
        for (size_t i = 0; i < f->value_len; i++)
            if ((f->value[i] < 0x20 && f->value[i] != '\t') || f->value[i] == 0x7f)
                return fail(r, R_BAD_REQUEST, 400, "a control byte in a header field's value");
        if (field_is(f, "host")) {
            hosts++;
            host = f->value;
            host_len = f->value_len;
        } else if (field_is(f, "content-length")) {
            unsigned long long v = 0;
            if (f->value_len == 0 || f->value_len > 15)
                return fail(r, R_BAD_REQUEST, 400, "a Content-Length that is not a number");
            for (size_t i = 0; i < f->value_len; i++) {
                if (f->value[i] < '0' || f->value[i] > '9')
                    return fail(r, R_BAD_REQUEST, 400, "a Content-Length that is not a number");
                v = v * 10 + (unsigned)(f->value[i] - '0');
            }
            if (cls++ && v != cl)
                return fail(r, R_BAD_REQUEST, 400, "two different Content-Lengths");
            cl = v;
        } else if (field_is(f, "transfer-encoding")) {
            tes++;
            if (f->value_len != 7 || strncasecmp(f->value, "chunked", 7) != 0)
                return fail(r, R_BAD_REQUEST, 501,
                            "a transfer coding other than chunked alone is not relayed");
            chunked = true;
        } else if (field_is(f, "upgrade")) {
            upgrade = true;
        } else if (field_is(f, "connection")) {
            for (size_t i = 0; i + 5 <= f->value_len; i++)
                if (strncasecmp(f->value + i, "close", 5) == 0)
                    r->client_close = true;
        }
        p = le + 2;
    }
    if (tes > 1 || (tes && cls))
        return fail(r, R_BAD_REQUEST, 400,
                    "Transfer-Encoding with Content-Length, or twice: where the request ends "
                    "would be ambiguous");
    if (hosts > 1 || (hosts == 0 && !http10))
        return fail(r, R_BAD_REQUEST, 400, "an HTTP/1.1 request needs exactly one Host");

    struct inject_req rq = {.method = h,
                            .method_len = (size_t)(sp1 - h),
                            .target = sp1 + 1,
                            .target_len = tl,
                            .authority = host,
                            .authority_len = host_len,
                            .fields = fields,
                            .n_fields = nf};
    struct inject_result res;
    r->ops.head(r->ops.ud, &rq, &res);
    if (res.verdict != R_ALLOWED) {
        str_copy(r->detail, res.detail, sizeof(r->detail));
        enum reason why = res.verdict;
        inject_result_free(&res);
        return refused(r, why);
    }
    /* Written back: the request line (its target rewritten or not), then each field
     * as it came (the name's spelling kept) with its value rewritten or not. */
    enum h1_status st = emit(r, h, (size_t)(sp1 + 1 - h));
    if (st == H1_OK)
        st = res.target ? emit(r, res.target, res.target_len) : emit(r, sp1 + 1, tl);
    if (st == H1_OK)
        st = emit(r, sp2, (size_t)(eol + 2 - sp2));
    for (size_t i = 0; st == H1_OK && i < nf; i++) {
        /* The close is the client's, not the upstream connection's (ops.keep_upstream). */
        if (r->ops.keep_upstream && r->client_close && field_is(&fields[i], "connection"))
            continue;
        st = emit(r, fields[i].name, fields[i].name_len);
        if (st == H1_OK)
            st = emit(r, ": ", 2);
        if (st == H1_OK)
            st = res.values[i] ? emit(r, res.values[i], res.value_lens[i])
                               : emit(r, fields[i].value, fields[i].value_len);
        if (st == H1_OK)
            st = emit(r, "\r\n", 2);
    }
    if (st == H1_OK)
        st = emit(r, "\r\n", 2);
    inject_result_free(&res);
    if (st != H1_OK)
        return st;
    if (upgrade || (sp1 - h == 7 && memcmp(h, "CONNECT", 7) == 0))
        r->state = S_OPAQUE;
    else if (chunked)
        r->state = S_CHUNK_SIZE;
    else if (cl) {
        r->state = S_BODY;
        r->left = cl;
    } else
        r->state = S_HEAD;
    return H1_OK;
}

static enum h1_status body_bytes(struct h1rw *r, const char *buf, size_t len)
{
    if (!len)
        return H1_OK;
    enum reason why = r->ops.body(r->ops.ud, buf, len, r->detail, sizeof(r->detail));
    if (why != R_ALLOWED)
        return refused(r, why);
    return emit(r, buf, len);
}

/* A line (chunk size or trailer) collected in r->head, CRLF included: 1 complete, 0
 * more needed, -1 too long. *used: bytes of buf taken. */
static int take_line(struct h1rw *r, const char *buf, size_t len, size_t *used)
{
    const char *lf = memchr(buf, '\n', len);
    size_t n = lf ? (size_t)(lf - buf) + 1 : len;
    if (!append(r, buf, n, CHUNK_LINE_MAX))
        return -1;
    *used = n;
    return lf ? 1 : 0;
}

enum h1_status h1rw_feed(struct h1rw *r, const char *buf, size_t len)
{
    while (len) {
        size_t used = 0;
        enum h1_status st = H1_OK;
        switch (r->state) {
        case S_DEAD:
            return r->reason == R_ALLOWED ? H1_OUT : H1_ERROR;
        case S_HEAD: {
            size_t before = r->head_len;
            size_t take = len;
            if (!append(r, buf, take > H1_MAX_HEAD - before ? H1_MAX_HEAD - before : take,
                        H1_MAX_HEAD))
                return fail(r, R_HEADERS_TOO_LARGE, 431, "a request head over 64 KiB");
            size_t from = r->scanned > 3 ? r->scanned - 3 : 0;
            const char *blank = memmem(r->head + from, r->head_len - from, "\r\n\r\n", 4);
            size_t limit = blank ? (size_t)(blank - r->head) + 4 : r->head_len;
            /* A bare LF where CRLF belongs: refused, not guessed at. */
            for (size_t i = from; i < limit; i++)
                if (r->head[i] == '\n' && (i == 0 || r->head[i - 1] != '\r'))
                    return fail(r, R_BAD_REQUEST, 400, "a bare LF in the request's head");
            r->scanned = r->head_len;
            if (!blank) {
                if (r->head_len == H1_MAX_HEAD)
                    return fail(r, R_HEADERS_TOO_LARGE, 431, "a request head over 64 KiB");
                used = r->head_len - before;
                break;
            }
            size_t n = (size_t)(blank - r->head) + 4;
            used = n - before;
            r->head_len = 0;
            r->scanned = 0;
            st = handle_head(r, n);
            break;
        }
        case S_BODY: {
            size_t n = len < r->left ? len : (size_t)r->left;
            st = body_bytes(r, buf, n);
            r->left -= n;
            used = n;
            if (r->left == 0 && st == H1_OK)
                r->state = S_HEAD;
            break;
        }
        case S_CHUNK_SIZE:
        case S_TRAILER: {
            int got = take_line(r, buf, len, &used);
            if (got < 0)
                return fail(r, R_BAD_REQUEST, 400, "a chunk-size or trailer line over 4 KiB");
            if (got == 0)
                break;
            const char *l = r->head;
            size_t ll = r->head_len;
            if (ll < 2 || l[ll - 2] != '\r')
                return fail(r, R_BAD_REQUEST, 400, "a bare LF in the chunked body");
            if (r->state == S_TRAILER) {
                /* Trailer fields are shown to the caller like body bytes. */
                enum reason w = r->ops.body(r->ops.ud, l, ll, r->detail, sizeof(r->detail));
                if (w != R_ALLOWED)
                    return refused(r, w);
                st = emit(r, l, ll);
                if (ll == 2 && st == H1_OK)
                    r->state = S_HEAD;
                r->head_len = 0;
                break;
            }
            unsigned long long size = 0;
            size_t i = 0, digits = 0;
            for (; i < ll - 2; i++) {
                int d = hex_digit_value(l[i]);
                if (d < 0)
                    break;
                if (++digits > 15)
                    return fail(r, R_BAD_REQUEST, 400, "a chunk size over 15 hex digits");
                size = size * 16 + (unsigned)d;
            }
            if (digits == 0 || (i < ll - 2 && l[i] != ';' && l[i] != ' ' && l[i] != '\t'))
                return fail(r, R_BAD_REQUEST, 400, "a chunk-size line that is not hex");
            /* The extension ("5;k=v") goes upstream too: scanned like the data. */
            if (i < ll - 2) {
                enum reason w = (r->ops.piece ? r->ops.piece : r->ops.body)(
                    r->ops.ud, l + i, ll - 2 - i, r->detail, sizeof(r->detail));
                if (w != R_ALLOWED)
                    return refused(r, w);
            }
            st = emit(r, l, ll);
            r->head_len = 0;
            if (size == 0)
                r->state = S_TRAILER;
            else {
                r->state = S_CHUNK_DATA;
                r->left = size;
            }
            break;
        }
        case S_CHUNK_DATA: {
            size_t n = len < r->left ? len : (size_t)r->left;
            st = body_bytes(r, buf, n);
            r->left -= n;
            used = n;
            if (r->left == 0 && st == H1_OK) {
                r->state = S_CHUNK_CRLF;
                r->left = 2;
            }
            break;
        }
        case S_CHUNK_CRLF: {
            size_t n = len < r->left ? len : (size_t)r->left;
            const char *want = "\r\n" + (2 - r->left);
            if (memcmp(buf, want, n) != 0)
                return fail(r, R_BAD_REQUEST, 400, "a chunk's data not followed by CRLF");
            st = emit(r, buf, n);
            r->left -= n;
            used = n;
            if (r->left == 0)
                r->state = S_CHUNK_SIZE;
            break;
        }
        case S_OPAQUE:
            st = body_bytes(r, buf, len);
            used = len;
            break;
        }
        if (st != H1_OK)
            return st;
        buf += used;
        len -= used;
    }
    return H1_OK;
}
