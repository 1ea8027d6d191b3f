#include "connect.h"

#include <string.h>

enum {
    S_METHOD,
    S_TARGET,
    S_VERSION,
    S_REQ_LF,
    S_FIELD_START,
    S_FIELD_NAME,
    S_FIELD_VALUE,
    S_FIELD_LF,
    S_END_LF,
    S_DONE,
    S_ERROR,
};

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A field-value byte: VCHAR, obs-text, SP or HTAB. NUL, other controls and DEL are not. */
static bool is_field_byte(unsigned char c)
{
    return c == ' ' || c == '\t' || (c > 0x20 && c != 0x7f);
}

static enum req_status fail(struct req_parser *p, enum reason r, const char *detail)
{
    p->state = S_ERROR;
    p->error = r;
    p->detail = detail;
    return REQ_ERROR;
}

void req_init(struct req_parser *p, const struct req_limits *lim)
{
    memset(p, 0, sizeof(*p));
    p->lim = *lim;
    p->state = S_METHOD;
}

static bool span_equals_ci(const char *buf, struct req_span s, const char *lit)
{
    size_t n = strlen(lit);
    if (s.len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = buf[s.off + i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return false;
    }
    return true;
}

/* "HTTP/1.1" and "HTTP/1.0" are served; "HTTP/d.d" otherwise is 505; the rest 400. */
static enum req_status check_version(struct req_parser *p, const char *buf)
{
    const char *v = buf + p->version.off;
    if (p->version.len == 8 && memcmp(v, "HTTP/", 5) == 0 && v[6] == '.' && v[5] >= '0' &&
        v[5] <= '9' && v[7] >= '0' && v[7] <= '9') {
        if (v[5] == '1' && (v[7] == '0' || v[7] == '1')) {
            p->version_minor = v[7] - '0';
            return REQ_MORE;
        }
        return fail(p, R_VERSION, "only HTTP/1.0 and HTTP/1.1 are served");
    }
    return fail(p, R_BAD_REQUEST, "malformed HTTP version");
}

/* Trims optional whitespace around a field value and remembers the ones we log. */
static void end_field(struct req_parser *p, const char *buf)
{
    struct req_span v = p->field_value;
    while (v.len && (buf[v.off] == ' ' || buf[v.off] == '\t')) {
        v.off++;
        v.len--;
    }
    while (v.len && (buf[v.off + v.len - 1] == ' ' || buf[v.off + v.len - 1] == '\t'))
        v.len--;
    if (span_equals_ci(buf, p->field_name, "user-agent"))
        p->user_agent = v;
    if (span_equals_ci(buf, p->field_name, "host")) {
        p->host = v;
        p->host_fields++;
    }
}

enum req_status req_feed(struct req_parser *p, const char *buf, size_t len)
{
    if (p->state == S_DONE)
        return REQ_DONE;
    if (p->state == S_ERROR)
        return REQ_ERROR;
    for (; p->pos < len; p->pos++) {
        unsigned char c = (unsigned char)buf[p->pos];
        bool in_line = p->state <= S_REQ_LF;
        if (in_line) {
            if (++p->line_len > p->lim.max_line)
                return fail(p, R_LINE_TOO_LONG, "request line too long");
        } else if (++p->hdr_bytes > p->lim.max_header_bytes) {
            return fail(p, R_HEADERS_TOO_LARGE, "header section too large");
        }
        switch (p->state) {
        case S_METHOD:
            if (is_tchar(c)) {
                p->method.len++;
            } else if (c == ' ' && p->method.len > 0) {
                p->target.off = p->pos + 1;
                p->state = S_TARGET;
            } else if (c == '\n') {
                return fail(p, R_BAD_REQUEST, "bare LF in request line");
            } else {
                return fail(p, R_BAD_REQUEST, "malformed request method");
            }
            break;
        case S_TARGET:
            if (c == ' ' && p->target.len > 0) {
                p->version.off = p->pos + 1;
                p->state = S_VERSION;
            } else if (c > 0x20 && c != 0x7f) {
                p->target.len++;
            } else if (c == '\n') {
                return fail(p, R_BAD_REQUEST, "bare LF in request line");
            } else if (c == 0) {
                return fail(p, R_BAD_REQUEST, "NUL in request target");
            } else {
                return fail(p, R_BAD_REQUEST, "whitespace or control character in request target");
            }
            break;
        case S_VERSION:
            if (c == '\r') {
                p->state = S_REQ_LF;
            } else if (c == '\n') {
                return fail(p, R_BAD_REQUEST, "bare LF in request line");
            } else if (c == ' ') {
                return fail(p, R_BAD_REQUEST, "extra space in request line");
            } else if (c <= 0x20 || c >= 0x7f || ++p->version.len > 8) {
                return fail(p, R_BAD_REQUEST, "malformed HTTP version");
            }
            break;
        case S_REQ_LF:
            if (c != '\n')
                return fail(p, R_BAD_REQUEST, "CR without LF in request line");
            if (check_version(p, buf) == REQ_ERROR)
                return REQ_ERROR;
            p->line_done = true;
            p->state = S_FIELD_START;
            break;
        case S_FIELD_START:
            if (c == '\r') {
                p->state = S_END_LF;
            } else if (c == '\n') {
                return fail(p, R_BAD_REQUEST, "bare LF in header section");
            } else if (c == ' ' || c == '\t') {
                return fail(p, R_BAD_REQUEST, "obsolete header line folding");
            } else if (is_tchar(c)) {
                if (++p->headers > p->lim.max_headers)
                    return fail(p, R_HEADERS_TOO_LARGE, "too many header fields");
                p->field_name.off = p->pos;
                p->field_name.len = 1;
                p->state = S_FIELD_NAME;
            } else {
                return fail(p, R_BAD_REQUEST, "malformed header field name");
            }
            break;
        case S_FIELD_NAME:
            if (is_tchar(c)) {
                p->field_name.len++;
            } else if (c == ':') {
                p->field_value.off = p->pos + 1;
                p->field_value.len = 0;
                p->state = S_FIELD_VALUE;
            } else if (c == ' ' || c == '\t') {
                return fail(p, R_BAD_REQUEST, "whitespace before colon in header field");
            } else {
                return fail(p, R_BAD_REQUEST, "malformed header field name");
            }
            break;
        case S_FIELD_VALUE:
            if (c == '\r') {
                p->state = S_FIELD_LF;
            } else if (c == '\n') {
                return fail(p, R_BAD_REQUEST, "bare LF in header field");
            } else if (c == 0) {
                return fail(p, R_BAD_REQUEST, "NUL in header field");
            } else if (!is_field_byte(c)) {
                return fail(p, R_BAD_REQUEST, "control character in header field");
            } else {
                p->field_value.len++;
            }
            break;
        case S_FIELD_LF:
            if (c != '\n')
                return fail(p, R_BAD_REQUEST, "CR without LF in header field");
            end_field(p, buf);
            p->state = S_FIELD_START;
            break;
        case S_END_LF:
            if (c != '\n')
                return fail(p, R_BAD_REQUEST, "CR without LF at end of header");
            p->state = S_DONE;
            p->pos++;
            return REQ_DONE;
        }
    }
    return REQ_MORE;
}

bool req_is_connect(const struct req_parser *p, const char *buf)
{
    return p->method.len == 7 && memcmp(buf + p->method.off, "CONNECT", 7) == 0;
}

/* Characters a host may have before canonicalisation: letters, digits, '-', '.', '_'
 * and UTF-8 (IDN, converted to punycode later). Everything else in a name is refused. */
static bool is_host_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c >= 0x80;
}

static bool parse_port(const char *s, size_t len, uint16_t *out)
{
    if (len == 0 || len > 5 || s[0] == '0')
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

bool authority_parse(const char *t, size_t len, struct authority *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    if (memchr(t, '@', len)) {
        *why = "userinfo in CONNECT authority";
        return false;
    }
    if (memchr(t, '%', len)) {
        *why = "percent-encoding in CONNECT authority";
        return false;
    }
    if (memchr(t, '/', len) || memchr(t, '?', len) || memchr(t, '#', len)) {
        *why = "CONNECT target is not in authority form (host:port)";
        return false;
    }
    const char *port;
    size_t port_len;
    if (len > 0 && t[0] == '[') {
        const char *close = memchr(t, ']', len);
        if (!close || close + 1 >= t + len || close[1] != ':') {
            *why = "malformed bracketed address";
            return false;
        }
        out->host = t + 1;
        out->host_len = (size_t)(close - t - 1);
        out->bracketed = true;
        for (size_t i = 0; i < out->host_len; i++) {
            char c = out->host[i];
            bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            if (!hex && c != ':' && c != '.') {
                *why = "brackets around something that is not an IPv6 address";
                return false;
            }
        }
        port = close + 2;
        port_len = len - (size_t)(port - t);
    } else {
        const char *colon = NULL;
        for (size_t i = len; i > 0; i--)
            if (t[i - 1] == ':') {
                colon = t + i - 1;
                break;
            }
        if (!colon) {
            *why = "missing port in CONNECT authority";
            return false;
        }
        out->host = t;
        out->host_len = (size_t)(colon - t);
        if (memchr(out->host, ':', out->host_len)) {
            *why = "IPv6 address without brackets";
            return false;
        }
        port = colon + 1;
        port_len = len - out->host_len - 1;
        for (size_t i = 0; i < out->host_len; i++)
            if (!is_host_byte((unsigned char)out->host[i])) {
                *why = out->host[i] == '[' || out->host[i] == ']'
                           ? "brackets around something that is not an IPv6 address"
                           : "invalid character in host";
                return false;
            }
    }
    if (out->host_len == 0) {
        *why = "empty host";
        return false;
    }
    if (!parse_port(port, port_len, &out->port)) {
        *why = "bad port (must be 1-65535, digits only, no leading zero)";
        return false;
    }
    return true;
}

size_t target_redact(const char *t, size_t len, char *out, size_t size)
{
    static const char mark[] = "[redacted]@";
    if (size == 0)
        return 0;
    size_t o = 0;
    const char *at = NULL;
    for (size_t i = len; i > 0; i--)
        if (t[i - 1] == '@') {
            at = t + i - 1;
            break;
        }
    if (at) {
        size_t n = sizeof(mark) - 1 < size - 1 ? sizeof(mark) - 1 : size - 1;
        memcpy(out, mark, n);
        o = n;
        len -= (size_t)(at + 1 - t);
        t = at + 1;
    }
    size_t n = len < size - 1 - o ? len : size - 1 - o;
    memcpy(out + o, t, n);
    o += n;
    out[o] = '\0';
    return o;
}
