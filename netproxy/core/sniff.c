#include "sniff.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TLS_HANDSHAKE 22
#define TLS_CLIENT_HELLO 1
#define TLS_RECORD_MAX 16384
#define EXT_SERVER_NAME 0
#define SNI_HOST_NAME 0
#define MAX_EXTENSIONS 128 /* a ClientHello has a few dozen at most */

void sniff_init(struct sniff *s, const struct req_limits *http_limits)
{
    memset(s, 0, sizeof(*s));
    req_init(&s->rp, http_limits);
}

void sniff_free(struct sniff *s)
{
    free(s->hello);
    s->hello = NULL;
}

static enum sniff_status fail(struct sniff *s, enum reason r, const char *why)
{
    s->error = r;
    s->why = why;
    return SNIFF_ERROR;
}

/* A bounded reader over one vector of the hello. */
struct rd {
    const uint8_t *p;
    size_t left;
    bool bad;
};

static uint32_t rd_uint(struct rd *r, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = true;
        return 0;
    }
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | r->p[i];
    r->p += n;
    r->left -= n;
    return v;
}

/* A sub-reader over the next n bytes (a length-prefixed vector's body). */
static struct rd rd_sub(struct rd *r, size_t n)
{
    struct rd sub = {.p = r->p, .left = n, .bad = r->bad || r->left < n};
    if (!sub.bad) {
        r->p += n;
        r->left -= n;
    } else {
        r->bad = true;
        sub.left = 0;
    }
    return sub;
}

/* The server_name extension's body (RFC 6066 3). */
static int read_server_name(struct rd ext, char *name, size_t namelen, const char **why)
{
    size_t list_len = rd_uint(&ext, 2);
    struct rd list = rd_sub(&ext, list_len);
    if (ext.bad || ext.left != 0 || list_len == 0) {
        *why = "the server_name extension's length is wrong";
        return -1;
    }
    bool found = false;
    while (list.left > 0) {
        unsigned type = rd_uint(&list, 1);
        size_t n = rd_uint(&list, 2);
        struct rd v = rd_sub(&list, n);
        if (list.bad) {
            *why = "a server_name entry runs past its list";
            return -1;
        }
        if (type != SNI_HOST_NAME)
            continue;
        if (found) {
            *why = "server_name lists more than one host name";
            return -1;
        }
        if (n == 0 || n >= namelen) {
            *why = "the server name is empty or longer than 253 bytes";
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            if (v.p[i] == 0) {
                *why = "the server name contains a NUL byte";
                return -1;
            }
        memcpy(name, v.p, n);
        name[n] = '\0';
        found = true;
    }
    if (!found) {
        *why = "server_name has no host name entry";
        return -1;
    }
    return 1;
}

int sniff_client_hello(const uint8_t *msg, size_t len, char *name, size_t namelen, const char **why)
{
    struct rd r = {.p = msg, .left = len};
    if (rd_uint(&r, 1) != TLS_CLIENT_HELLO) {
        *why = "the first handshake message is not a ClientHello";
        return -1;
    }
    size_t body_len = rd_uint(&r, 3);
    struct rd b = rd_sub(&r, body_len);
    if (r.bad || r.left != 0) {
        *why = "the ClientHello's length does not match its record";
        return -1;
    }
    unsigned version = rd_uint(&b, 2);
    rd_sub(&b, 32); /* random */
    size_t sid = rd_uint(&b, 1);
    rd_sub(&b, sid);
    size_t suites = rd_uint(&b, 2);
    rd_sub(&b, suites);
    size_t comp = rd_uint(&b, 1);
    rd_sub(&b, comp);
    if (b.bad || (version >> 8) != 3 || sid > 32 || suites < 2 || suites % 2 || comp < 1) {
        *why = "the ClientHello is malformed";
        return -1;
    }
    if (b.left == 0)
        return 0; /* no extensions at all (SSL 3.0 style): no server name */
    size_t ext_len = rd_uint(&b, 2);
    struct rd exts = rd_sub(&b, ext_len);
    if (b.bad || b.left != 0) {
        *why = "the ClientHello's extensions do not fill it exactly";
        return -1;
    }
    uint16_t seen[MAX_EXTENSIONS];
    size_t nseen = 0;
    int found = 0;
    while (exts.left > 0) {
        uint16_t type = (uint16_t)rd_uint(&exts, 2);
        size_t n = rd_uint(&exts, 2);
        struct rd ext = rd_sub(&exts, n);
        if (exts.bad) {
            *why = "an extension runs past the ClientHello";
            return -1;
        }
        if (nseen == MAX_EXTENSIONS) {
            *why = "the ClientHello has too many extensions";
            return -1;
        }
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == type) {
                *why = "the ClientHello repeats an extension";
                return -1;
            }
        seen[nseen++] = type;
        if (type == EXT_SERVER_NAME) {
            found = read_server_name(ext, name, namelen, why);
            if (found < 0)
                return -1;
        }
    }
    return found;
}

static enum sniff_status feed_tls(struct sniff *s, const uint8_t *buf, size_t len)
{
    while (s->rec_off + 5 <= len) {
        const uint8_t *h = buf + s->rec_off;
        size_t rlen = ((size_t)h[3] << 8) | h[4];
        if (h[0] != TLS_HANDSHAKE)
            return fail(s, R_PROTOCOL, "a TLS record before the ClientHello is not a handshake");
        if (h[1] != 3 || rlen == 0 || rlen > TLS_RECORD_MAX)
            return fail(s, R_PROTOCOL, "a malformed TLS record header");
        if (s->rec_off + 5 + rlen > len)
            return SNIFF_MORE;
        if (!s->hello)
            s->hello = xmalloc(SNIFF_HELLO_MAX);
        if (s->hello_len + rlen > SNIFF_HELLO_MAX)
            return fail(s, R_PROTOCOL, "the ClientHello is larger than 16 KiB");
        memcpy(s->hello + s->hello_len, h + 5, rlen);
        s->hello_len += rlen;
        s->rec_off += 5 + rlen;
        if (s->hello_len < 4)
            continue;
        size_t want = 4 + (((size_t)s->hello[1] << 16) | ((size_t)s->hello[2] << 8) | s->hello[3]);
        if (s->hello[0] != TLS_CLIENT_HELLO)
            return fail(s, R_PROTOCOL, "the first handshake message is not a ClientHello");
        if (want > SNIFF_HELLO_MAX)
            return fail(s, R_PROTOCOL, "the ClientHello is larger than 16 KiB");
        if (s->hello_len < want)
            continue;
        /* Whatever follows the hello in the same record (nothing, in practice) is the
         * client's business: only the hello is read. */
        const char *why = NULL;
        int rc = sniff_client_hello(s->hello, want, s->name, sizeof(s->name), &why);
        if (rc < 0)
            return fail(s, R_PROTOCOL, why);
        s->have_name = rc == 1;
        return SNIFF_DONE;
    }
    return SNIFF_MORE;
}

/* The host part of an authority ("name", "name:port", "[v6]:port") into out; NULL, or
 * what is wrong with it. */
static const char *host_of_authority(const char *v, size_t n, char *out, size_t size)
{
    size_t hlen = n;
    if (n && v[0] == '[') {
        const char *close = memchr(v, ']', n);
        hlen = close ? (size_t)(close - v) + 1 : n;
    } else {
        const char *colon = memchr(v, ':', n);
        if (colon)
            hlen = (size_t)(colon - v);
    }
    if (hlen == 0 || hlen >= size)
        return "empty or too long";
    memcpy(out, v, hlen);
    out[hlen] = '\0';
    if (memchr(out, '\0', hlen))
        return "a NUL byte";
    return NULL;
}

static enum sniff_status host_of_field(struct sniff *s, const char *v, size_t n)
{
    if (host_of_authority(v, n, s->name, sizeof(s->name)))
        return fail(s, R_BAD_REQUEST, "the Host field is empty, too long or has a NUL byte");
    s->have_name = true;
    return SNIFF_DONE;
}

/* The request target: a path ("/..."), "*", or an absolute URL, whose host a server
 * takes over the Host field's (RFC 9112 3.2.2): then that name is the one to check
 * too (target_name). Any other scheme is refused: this is plain HTTP. */
static enum sniff_status target_host(struct sniff *s, const char *t, size_t n)
{
    if (n == 0 || t[0] == '/' || (n == 1 && t[0] == '*'))
        return SNIFF_DONE;
    if (n <= 7 || strncasecmp(t, "http://", 7) != 0)
        return fail(s, R_BAD_REQUEST,
                    "the request target is neither a path nor an http:// URL (RFC 9112 3.2)");
    const char *a = t + 7, *e = a;
    while (e < t + n && *e != '/' && *e != '?' && *e != '#')
        e++;
    if (memchr(a, '@', (size_t)(e - a)))
        return fail(s, R_BAD_REQUEST, "the request target's URL has userinfo (user@host)");
    if (host_of_authority(a, (size_t)(e - a), s->target_name, sizeof(s->target_name)))
        return fail(s, R_BAD_REQUEST,
                    "the request target's host is empty, too long or has a NUL byte");
    s->have_target_name = true;
    return SNIFF_DONE;
}

static enum sniff_status feed_http(struct sniff *s, const uint8_t *buf, size_t len)
{
    enum req_status st = req_feed(&s->rp, (const char *)buf, len);
    if (st == REQ_MORE)
        return SNIFF_MORE;
    if (st == REQ_ERROR)
        return fail(s, s->rp.error, s->rp.detail);
    if (req_is_connect(&s->rp, (const char *)buf))
        return fail(s, R_PROTOCOL, "CONNECT is for the proxy's own address, not for a destination");
    if (s->rp.host_fields != 1)
        return fail(s, R_BAD_REQUEST, "an HTTP request needs exactly one Host field");
    if (target_host(s, (const char *)buf + s->rp.target.off, s->rp.target.len) != SNIFF_DONE)
        return SNIFF_ERROR;
    return host_of_field(s, (const char *)buf + s->rp.host.off, s->rp.host.len);
}

enum sniff_status sniff_feed(struct sniff *s, const uint8_t *buf, size_t len)
{
    if (len == 0)
        return SNIFF_MORE;
    if (s->proto == SNIFF_UNKNOWN) {
        if (buf[0] == TLS_HANDSHAKE)
            s->proto = SNIFF_TLS;
        else if (buf[0] >= 'A' && buf[0] <= 'Z')
            s->proto = SNIFF_HTTP;
        else
            return fail(s, R_PROTOCOL, "neither a TLS ClientHello nor an HTTP/1 request");
    }
    return s->proto == SNIFF_TLS ? feed_tls(s, buf, len) : feed_http(s, buf, len);
}
