/* Untrusted text as quoted, inert data on the terminal (see termtext.h). */
#include "termtext.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Where decoded text goes: a prefixed stream, or one inline line, written to a FILE
 * or (out NULL) into a fixed buffer, which never allocates: lib/log.c runs it in
 * forked children of a threaded process. */
struct sink {
    struct tt_stream *s; /* NULL: inline */
    FILE *out;
    char *buf; /* when out is NULL: buf[0, len) of cap, always terminated */
    size_t len, cap;
    size_t cols, max_cols; /* inline only */
    bool full;
};

static void sink_puts(struct sink *k, const char *text)
{
    if (k->out) {
        fputs(text, k->out);
        return;
    }
    size_t n = strlen(text);
    if (k->full || k->len + n + 1 > k->cap) {
        k->full = true; /* whole characters only: the rest is dropped */
        return;
    }
    memcpy(k->buf + k->len, text, n + 1);
    k->len += n;
}

static void line_start(struct sink *k)
{
    if (k->s && k->s->at_line_start) {
        sink_puts(k, k->s->prefix);
        k->s->at_line_start = false;
    }
}

/* Counts a column in inline mode; false once the line is full. */
static bool room(struct sink *k, size_t n)
{
    if (k->s)
        return true;
    if (k->full)
        return false;
    if (k->cols + n > k->max_cols) {
        sink_puts(k, "...");
        k->full = true;
        return false;
    }
    k->cols += n;
    return true;
}

static void put_text(struct sink *k, const char *text, size_t cols)
{
    if (!room(k, cols))
        return;
    line_start(k);
    sink_puts(k, text);
}

enum cp_kind { CP_PLAIN, CP_CONTROL, CP_TAG, CP_BIDI, CP_INVISIBLE };

/* What a reader would not see, or what reorders what is seen. Zero-width (non-)joiners
 * and the emoji variation selectors stay plain: scripts and emoji need them. */
static enum cp_kind cp_kind(uint32_t cp)
{
    if (cp == '\n' || cp == '\t' || cp == '\r')
        return CP_PLAIN; /* the terminal's writer and tt_visible_str() treat CR themselves */
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
        return CP_CONTROL;
    if (cp >= 0xe0000 && cp <= 0xe007f)
        return CP_TAG; /* "ASCII smuggling": invisible copies of ASCII */
    if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
        return CP_BIDI;
    if (cp == 0x200b || (cp >= 0x2060 && cp <= 0x2064) || cp == 0xfeff || cp == 0x2028 ||
        cp == 0x2029 || cp == 0x180e || (cp >= 0xfff9 && cp <= 0xfffb) ||
        (cp >= 0xe0100 && cp <= 0xe01ef))
        return CP_INVISIBLE;
    return CP_PLAIN;
}

static bool invisible_control(uint32_t cp)
{
    enum cp_kind k = cp_kind(cp);
    return k != CP_PLAIN && !(cp < 0x20 || cp == 0x7f);
}

static void put_cp(struct sink *k, uint32_t cp, const unsigned char *raw, size_t rawlen)
{
    char buf[16];
    if (cp == '\n') {
        if (!k->s) {
            put_text(k, "\u23ce", 1); /* ⏎ */
            return;
        }
        line_start(k);
        sink_puts(k, "\n");
        k->s->at_line_start = true;
        return;
    }
    if (cp == '\t') {
        put_text(k, "    ", 4);
        return;
    }
    if (cp < 0x20 || cp == 0x7f) {
        snprintf(buf, sizeof(buf), "^%c", (char)(cp ^ 0x40));
        put_text(k, buf, 2);
        return;
    }
    if (invisible_control(cp)) {
        snprintf(buf, sizeof(buf), "\\u%04x", (unsigned)cp);
        put_text(k, buf, 6);
        return;
    }
    if (cp == 0xfffd && !raw) {
        put_text(k, "\xef\xbf\xbd", 1);
        return;
    }
    memcpy(buf, raw, rawlen);
    buf[rawlen] = '\0';
    put_text(k, buf, 1);
}

static size_t seq_len(unsigned char c)
{
    if (c >= 0xc2 && c <= 0xdf)
        return 2;
    if (c >= 0xe0 && c <= 0xef)
        return 3;
    if (c >= 0xf0 && c <= 0xf4)
        return 4;
    return 0;
}

/* Decodes a complete sequence of seq_len(p[0]) bytes; 0xfffd when it is invalid
 * (overlong, surrogate, beyond U+10FFFF). */
static uint32_t decode(const unsigned char *p, size_t n)
{
    uint32_t cp = n == 2 ? p[0] & 0x1f : n == 3 ? p[0] & 0x0f : p[0] & 0x07;
    for (size_t i = 1; i < n; i++)
        cp = (cp << 6) | (p[i] & 0x3f);
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0xfffd;
    return cp;
}

/* Feeds bytes; pend/npend carry an incomplete sequence between calls. */
static void feed(struct sink *k, unsigned char *pend, size_t *npend, const unsigned char *p,
                 size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (*npend > 0) {
            if ((c & 0xc0) == 0x80) {
                pend[(*npend)++] = c;
                size_t need = seq_len(pend[0]);
                if (*npend == need) {
                    uint32_t cp = decode(pend, need);
                    put_cp(k, cp, cp == 0xfffd ? NULL : pend, need);
                    *npend = 0;
                }
                continue;
            }
            put_cp(k, 0xfffd, NULL, 0); /* cut short: the byte starts something new */
            *npend = 0;
        }
        if (c < 0x80) {
            put_cp(k, c, &c, 1);
        } else if (seq_len(c)) {
            pend[0] = c;
            *npend = 1;
        } else {
            put_cp(k, 0xfffd, NULL, 0);
        }
    }
}

void tt_stream_init(struct tt_stream *s, FILE *out, const char *prefix, size_t max_bytes)
{
    memset(s, 0, sizeof(*s));
    s->out = out;
    s->prefix = prefix;
    s->at_line_start = true;
    s->max_bytes = max_bytes;
}

void tt_stream_write(struct tt_stream *s, const char *text, size_t len)
{
    if (s->cut)
        return;
    if (s->max_bytes && s->written + len > s->max_bytes) {
        len = s->max_bytes - s->written;
        s->cut = true;
    }
    struct sink k = {.s = s, .out = s->out};
    feed(&k, s->pend, &s->npend, (const unsigned char *)text, len);
    s->written += len;
    if (s->cut) {
        if (s->npend) {
            put_cp(&k, 0xfffd, NULL, 0);
            s->npend = 0;
        }
        line_start(&k);
        fputs(" ...[cut: too long to show]", s->out);
    }
    fflush(s->out);
}

void tt_stream_end(struct tt_stream *s)
{
    struct sink k = {.s = s, .out = s->out};
    if (s->npend) {
        put_cp(&k, 0xfffd, NULL, 0);
        s->npend = 0;
    }
    if (!s->at_line_start) {
        fputc('\n', s->out);
        s->at_line_start = true;
    }
    fflush(s->out);
}

void tt_inline(FILE *out, const char *text, size_t max_cols)
{
    struct sink k = {.out = out, .max_cols = max_cols};
    unsigned char pend[4];
    size_t npend = 0;
    feed(&k, pend, &npend, (const unsigned char *)text, strlen(text));
    if (npend)
        put_cp(&k, 0xfffd, NULL, 0);
}

size_t tt_inline_buf(char *dst, size_t size, const char *text, size_t len)
{
    if (size == 0)
        return 0;
    dst[0] = '\0';
    /* Columns are not counted here: the buffer is the bound, less room for "...". */
    size_t room_for_dots = size > 8 ? 3 : 0;
    struct sink k = {.buf = dst, .cap = size - room_for_dots, .max_cols = (size_t)-1};
    unsigned char pend[4];
    size_t npend = 0;
    feed(&k, pend, &npend, (const unsigned char *)text, len);
    if (npend)
        put_cp(&k, 0xfffd, NULL, 0);
    if (k.full && room_for_dots) {
        memcpy(dst + k.len, "...", 4);
        k.len += 3;
    }
    return k.len;
}

char *tt_inline_str(const char *text, size_t max_cols)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return xstrdup("?");
    tt_inline(f, text, max_cols);
    fclose(f);
    return buf;
}

/* ---- hidden characters, for readers other than the terminal ---- */

/* The next code point of p[*i, len) (U+FFFD for invalid UTF-8), *i moved past it. */
static uint32_t next_cp(const unsigned char *p, size_t len, size_t *i)
{
    unsigned char c = p[*i];
    size_t n = c < 0x80 ? 1 : seq_len(c);
    if (n == 0 || *i + n > len) {
        (*i)++;
        return 0xfffd;
    }
    for (size_t k = 1; k < n; k++)
        if ((p[*i + k] & 0xc0) != 0x80) {
            (*i)++;
            return 0xfffd;
        }
    uint32_t cp = n == 1 ? c : decode(p + *i, n);
    *i += n;
    return cp;
}

bool tt_hidden_count(const char *text, size_t len, struct tt_hidden *h)
{
    memset(h, 0, sizeof(*h));
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t at = i;
        uint32_t cp = next_cp(p, len, &i);
        switch (cp == 0xfffd && !(i - at == 3 && p[at] == 0xef) ? CP_CONTROL : cp_kind(cp)) {
        case CP_CONTROL:
            h->controls++;
            break;
        case CP_TAG:
            h->tags++;
            break;
        case CP_BIDI:
            h->bidi++;
            break;
        case CP_INVISIBLE:
            h->invisible++;
            break;
        default:
            break;
        }
    }
    return h->controls || h->tags || h->bidi || h->invisible;
}

char *tt_visible_str(const char *text, size_t len, size_t max_bytes)
{
    char *out = xmalloc(max_bytes + 16);
    size_t n = 0, newlines = 0;
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t at = i;
        uint32_t cp = next_cp(p, len, &i);
        char piece[16];
        size_t plen;
        if (cp == '\r')
            continue; /* CRLF is a newline; a lone CR would rewrite the line */
        if (cp == '\n') {
            if (++newlines > 2)
                continue; /* at most one blank line: a question cannot push its label away */
            piece[0] = '\n';
            plen = 1;
        } else {
            newlines = 0;
            if (cp == 0xfffd && !(i - at == 3 && p[at] == 0xef))
                plen = (size_t)snprintf(piece, sizeof(piece), "\xef\xbf\xbd");
            else if (cp < 0x20 && cp != '\t')
                plen = (size_t)snprintf(piece, sizeof(piece), "^%c", (char)(cp ^ 0x40));
            else if (cp_kind(cp) != CP_PLAIN)
                plen = (size_t)snprintf(piece, sizeof(piece), "\\u%04x", (unsigned)cp);
            else {
                plen = i - at;
                memcpy(piece, p + at, plen);
            }
        }
        if (n + plen > max_bytes) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        memcpy(out + n, piece, plen);
        n += plen;
    }
    out[n] = '\0';
    return out;
}
