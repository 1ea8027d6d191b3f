#include "h1answer.h"

#include "log.h"
#include "util.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HEAD_MAX (64 * 1024)
#define LINE_MAX_ (4 * 1024)
#define PENDING_MAX 64 /* requests whose answers are awaited, kept for their method */

enum a_state {
    A_HEAD,
    A_BODY,       /* Content-Length bytes left */
    A_CHUNK_SIZE, /* a chunk-size line */
    A_CHUNK_DATA,
    A_CHUNK_CRLF,
    A_TRAILER,
    A_RAW, /* unframed from here on */
};

enum method_kind { M_OTHER, M_HEAD, M_CONNECT };

struct h1ans {
    enum a_state state;
    char *buf; /* the head, or a chunk-size or trailer line, being collected */
    size_t len, cap;
    unsigned long long left;
    unsigned char pending[PENDING_MAX];
    size_t first, n_pending;
    bool overflow; /* a method was not kept: framing is given up at the next answer */
    bool closing;  /* an answer said the connection ends after it */
    struct evbuffer *tmp;
};

struct h1ans *h1ans_new(void)
{
    struct h1ans *a = xcalloc(1, sizeof(*a));
    a->tmp = evbuffer_new();
    if (!a->tmp)
        fatalx("out of memory");
    return a;
}

void h1ans_free(struct h1ans *a)
{
    if (!a)
        return;
    if (a->buf) {
        explicit_bzero(a->buf, a->cap);
        free(a->buf);
    }
    evbuffer_free(a->tmp);
    free(a);
}

void h1ans_request(struct h1ans *a, const char *method, size_t len)
{
    if (a->n_pending == PENDING_MAX) {
        a->overflow = true;
        return;
    }
    enum method_kind k = M_OTHER;
    if (len == 4 && memcmp(method, "HEAD", 4) == 0)
        k = M_HEAD;
    else if (len == 7 && memcmp(method, "CONNECT", 7) == 0)
        k = M_CONNECT;
    a->pending[(a->first + a->n_pending++) % PENDING_MAX] = (unsigned char)k;
}

static enum method_kind pop(struct h1ans *a)
{
    if (!a->n_pending)
        return M_OTHER;
    enum method_kind k = a->pending[a->first];
    a->first = (a->first + 1) % PENDING_MAX;
    a->n_pending--;
    return k;
}

bool h1ans_raw(const struct h1ans *a)
{
    return a->state == A_RAW;
}

bool h1ans_idle(const struct h1ans *a)
{
    return a->state == A_HEAD && a->len == 0 && a->n_pending == 0 && !a->overflow && !a->closing;
}

bool h1ans_between(const struct h1ans *a)
{
    return (a->state == A_HEAD && a->len == 0) || a->state == A_RAW;
}

static bool collect(struct h1ans *a, const char *buf, size_t len, size_t max)
{
    if (a->len + len > max)
        return false;
    if (a->len + len > a->cap) {
        size_t cap = a->cap ? a->cap : 1024;
        while (cap < a->len + len)
            cap *= 2;
        char *n = xmalloc(cap);
        if (a->buf) {
            memcpy(n, a->buf, a->len);
            explicit_bzero(a->buf, a->cap);
            free(a->buf);
        }
        a->buf = n;
        a->cap = cap;
    }
    memcpy(a->buf + a->len, buf, len);
    a->len += len;
    return true;
}

/* What was collected goes out scrubbed, and the rest of the stream unframed. */
static void give_up(struct h1ans *a, struct scrub *sc, struct evbuffer *out)
{
    scrub_piece(sc, a->buf, a->len);
    evbuffer_add(out, a->buf, a->len);
    a->len = 0;
    a->state = A_RAW;
}

static bool header_is(const char *line, size_t ll, const char *name, const char **v, size_t *vl)
{
    size_t nl = strlen(name);
    if (ll <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
        return false;
    *v = line + nl + 1;
    *vl = ll - nl - 1;
    while (*vl && (**v == ' ' || **v == '\t')) {
        (*v)++;
        (*vl)--;
    }
    while (*vl && ((*v)[*vl - 1] == ' ' || (*v)[*vl - 1] == '\t'))
        (*vl)--;
    return true;
}

/* A whole head in a->buf[0..n): scrubbed, sent, and the body's framing set up. */
static void head(struct h1ans *a, struct scrub *sc, size_t n, struct evbuffer *out)
{
    const char *h = a->buf;
    int status = 0;
    if (n < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ' || h[9] < '1' || h[9] > '5' ||
        h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9') {
        give_up(a, sc, out);
        return;
    }
    status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    if (h[7] != '1')
        a->closing = true; /* HTTP/1.0 */
    bool chunked = false, has_cl = false, other_te = false;
    unsigned long long cl = 0;
    for (const char *p = (const char *)memmem(h, n, "\r\n", 2) + 2; p < h + n - 2;) {
        const char *le = memmem(p, (size_t)(h + n - p), "\r\n", 2);
        size_t ll = (size_t)(le - p);
        const char *v;
        size_t vl;
        if (header_is(p, ll, "content-length", &v, &vl)) {
            unsigned long long x = 0;
            bool ok = vl > 0 && vl <= 15;
            for (size_t i = 0; ok && i < vl; i++) {
                ok = v[i] >= '0' && v[i] <= '9';
                x = x * 10 + (unsigned)(v[i] - '0');
            }
            if (!ok || (has_cl && x != cl)) {
                give_up(a, sc, out);
                return;
            }
            has_cl = true;
            cl = x;
        } else if (header_is(p, ll, "connection", &v, &vl)) {
            for (size_t i = 0; i + 5 <= vl; i++)
                if (strncasecmp(v + i, "close", 5) == 0)
                    a->closing = true;
        } else if (header_is(p, ll, "transfer-encoding", &v, &vl)) {
            /* chunked must be the last coding, or the body runs to the end */
            if (vl >= 7 && strncasecmp(v + vl - 7, "chunked", 7) == 0)
                chunked = true;
            else
                other_te = true;
        }
        p = le + 2;
    }
    scrub_piece(sc, a->buf, n);
    evbuffer_add(out, a->buf, n);
    if (status / 100 == 1) {
        a->state = status == 101 ? A_RAW : A_HEAD;
        return;
    }
    enum method_kind k = pop(a);
    if (k == M_HEAD || status == 204 || status == 304)
        a->state = A_HEAD;
    else if (k == M_CONNECT && status / 100 == 2)
        a->state = A_RAW;
    else if (other_te)
        a->state = A_RAW;
    else if (chunked)
        a->state = A_CHUNK_SIZE;
    else if (has_cl) {
        a->left = cl;
        a->state = cl ? A_BODY : A_HEAD;
    } else
        a->state = A_RAW; /* to the end of the connection */
}

/* Scrubbed body bytes (in a->tmp) as one chunk of our own. */
static void emit_chunk(struct h1ans *a, struct evbuffer *out)
{
    size_t n = evbuffer_get_length(a->tmp);
    if (!n)
        return;
    evbuffer_add_printf(out, "%zx\r\n", n);
    evbuffer_add_buffer(out, a->tmp);
    evbuffer_add(out, "\r\n", 2);
}

/* A line (chunk size, trailer) collected: 1 whole, 0 more needed, -1 too long. */
static int take_line(struct h1ans *a, const char *buf, size_t len, size_t *used)
{
    const char *lf = memchr(buf, '\n', len);
    size_t n = lf ? (size_t)(lf - buf) + 1 : len;
    *used = n;
    if (!collect(a, buf, n, LINE_MAX_))
        return -1;
    return lf ? 1 : 0;
}

void h1ans_feed(struct h1ans *a, struct scrub *sc, const char *buf, size_t len,
                struct evbuffer *out)
{
    while (len) {
        size_t used = len;
        switch (a->state) {
        case A_RAW:
            scrub_feed(sc, buf, len, out);
            break;
        case A_HEAD: {
            if (a->overflow && a->len == 0) {
                a->state = A_RAW;
                used = 0;
                break;
            }
            size_t from = a->len > 3 ? a->len - 3 : 0;
            size_t take = len < HEAD_MAX - a->len ? len : HEAD_MAX - a->len;
            if (!take) {
                give_up(a, sc, out);
                used = 0;
                break;
            }
            collect(a, buf, take, HEAD_MAX);
            /* Not an answer's status line: nothing to wait for. */
            if (memcmp(a->buf, "HTTP/1.", a->len < 7 ? a->len : 7) != 0) {
                give_up(a, sc, out);
                used = take;
                break;
            }
            const char *blank = memmem(a->buf + from, a->len - from, "\r\n\r\n", 4);
            if (!blank) {
                used = take;
                break;
            }
            size_t n = (size_t)(blank - a->buf) + 4;
            used = take - (a->len - n);
            a->len = n;
            head(a, sc, n, out);
            a->len = 0;
            break;
        }
        case A_BODY: {
            used = len < a->left ? len : (size_t)a->left;
            scrub_feed(sc, buf, used, out);
            a->left -= used;
            if (!a->left) {
                scrub_flush(sc, out);
                a->state = A_HEAD;
            }
            break;
        }
        case A_CHUNK_SIZE:
        case A_TRAILER: {
            int got = take_line(a, buf, len, &used);
            if (got < 0) {
                used = 0;
                give_up(a, sc, out);
                break;
            }
            if (!got)
                break;
            if (a->state == A_TRAILER) {
                scrub_piece(sc, a->buf, a->len);
                evbuffer_add(out, a->buf, a->len);
                bool last = a->len <= 2;
                a->len = 0;
                if (last)
                    a->state = A_HEAD;
                break;
            }
            unsigned long long size = 0;
            size_t i = 0;
            for (; i < a->len && i < 15; i++) {
                int d = hex_digit_value(a->buf[i]);
                if (d < 0)
                    break;
                size = size * 16 + (unsigned)d;
            }
            if (i == 0 || (a->buf[i] != '\r' && a->buf[i] != '\n' && a->buf[i] != ';' &&
                           a->buf[i] != ' ' && a->buf[i] != '\t')) {
                give_up(a, sc, out);
                break;
            }
            a->len = 0;
            if (size == 0) {
                /* The body's end: its held tail, then the last chunk. */
                scrub_flush(sc, a->tmp);
                emit_chunk(a, out);
                evbuffer_add(out, "0\r\n", 3);
                a->state = A_TRAILER;
            } else {
                a->left = size;
                a->state = A_CHUNK_DATA;
            }
            break;
        }
        case A_CHUNK_DATA: {
            used = len < a->left ? len : (size_t)a->left;
            scrub_feed(sc, buf, used, a->tmp);
            emit_chunk(a, out);
            a->left -= used;
            if (!a->left) {
                a->left = 2;
                a->state = A_CHUNK_CRLF;
            }
            break;
        }
        case A_CHUNK_CRLF: {
            /* "\r\n" (a bare "\n" taken too); anything else: unframed */
            used = 0;
            if (a->left == 2 && buf[0] == '\r') {
                used = 1;
                a->left = 1;
            } else if (buf[0] == '\n') {
                used = 1;
                a->state = A_CHUNK_SIZE;
            } else {
                a->state = A_RAW;
            }
            break;
        }
        }
        buf += used;
        len -= used;
    }
}
