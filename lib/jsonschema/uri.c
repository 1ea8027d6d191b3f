/* RFC 3986 reference resolution, enough for "$id" and "$ref": no normalisation beyond
 * dot segments, since a schema's identifiers are compared as the document spells them. */
#include "uri.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct part {
    const char *p;
    size_t len;
    bool set;
};

struct uri {
    struct part scheme, authority, path, query, fragment;
};

static void parse(const char *s, struct uri *u)
{
    memset(u, 0, sizeof(*u));
    const char *p = s;
    /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
        const char *q = p + 1;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
               *q == '+' || *q == '-' || *q == '.')
            q++;
        if (*q == ':') {
            u->scheme = (struct part){p, (size_t)(q - p), true};
            p = q + 1;
        }
    }
    if (p[0] == '/' && p[1] == '/') {
        p += 2;
        size_t n = strcspn(p, "/?#");
        u->authority = (struct part){p, n, true};
        p += n;
    }
    size_t n = strcspn(p, "?#");
    u->path = (struct part){p, n, true};
    p += n;
    if (*p == '?') {
        p++;
        n = strcspn(p, "#");
        u->query = (struct part){p, n, true};
        p += n;
    }
    if (*p == '#')
        u->fragment = (struct part){p + 1, strlen(p + 1), true};
}

/* RFC 3986 5.2.4, in place on a NUL-terminated buffer. */
static void remove_dot_segments(char *path)
{
    char *in = path, *out = path;
    while (*in) {
        if (strncmp(in, "../", 3) == 0)
            in += 3;
        else if (strncmp(in, "./", 2) == 0)
            in += 2;
        else if (strncmp(in, "/./", 3) == 0)
            in += 2;
        else if (strcmp(in, "/.") == 0)
            in[1] = '\0';
        else if (strncmp(in, "/../", 4) == 0 || strcmp(in, "/..") == 0) {
            in += 3;
            if (*in == '\0') {
                in--;
                *in = '/';
            }
            while (out > path && *--out != '/')
                ;
        } else if (strcmp(in, ".") == 0 || strcmp(in, "..") == 0)
            in += strlen(in);
        else {
            do
                *out++ = *in++;
            while (*in && *in != '/');
        }
    }
    *out = '\0';
}

static char *dup_part(struct part p)
{
    return xstrndup(p.set ? p.p : "", p.set ? p.len : 0);
}

char *schema_uri_resolve(const char *base, const char *ref)
{
    struct uri b, r;
    parse(base, &b);
    parse(ref, &r);
    struct part scheme, authority, query;
    char *path;
    if (r.scheme.set) {
        scheme = r.scheme;
        authority = r.authority;
        path = dup_part(r.path);
        query = r.query;
    } else {
        scheme = b.scheme;
        if (r.authority.set) {
            authority = r.authority;
            path = dup_part(r.path);
            query = r.query;
        } else {
            authority = b.authority;
            if (r.path.len == 0) {
                path = dup_part(b.path);
                query = r.query.set ? r.query : b.query;
            } else {
                query = r.query;
                if (r.path.p[0] == '/')
                    path = dup_part(r.path);
                else if (b.authority.set && b.path.len == 0)
                    path = xasprintf("/%.*s", (int)r.path.len, r.path.p);
                else {
                    size_t keep = b.path.len;
                    while (keep > 0 && b.path.p[keep - 1] != '/')
                        keep--;
                    path = xasprintf("%.*s%.*s", (int)keep, b.path.p, (int)r.path.len, r.path.p);
                }
            }
        }
    }
    remove_dot_segments(path);
    if (!authority.set)
        authority.p = "";
    if (!query.set)
        query.p = "";
    if (!scheme.set)
        scheme.p = "";
    struct part frag = r.fragment.set ? r.fragment : (struct part){"", 0, false};
    char *out = xasprintf("%.*s%s%s%.*s%s%s%.*s%s%.*s", (int)scheme.len, scheme.p,
                          scheme.set ? ":" : "", authority.set ? "//" : "", (int)authority.len,
                          authority.p, path, query.set ? "?" : "", (int)query.len, query.p,
                          frag.set ? "#" : "", (int)frag.len, frag.p);
    free(path);
    return out;
}

char *schema_uri_split(const char *uri, const char **frag)
{
    const char *h = strchr(uri, '#');
    *frag = h ? h + 1 : "";
    return xstrndup(uri, h ? (size_t)(h - uri) : strlen(uri));
}

char *schema_uri_decode(const char *s, size_t *len)
{
    size_t n = strlen(s), o = 0;
    char *out = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = hex_digit_value(s[i + 1]); /* NUL-terminated: s[i + 2] is read only after a digit */
        int lo = hi >= 0 ? hex_digit_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    *len = o;
    return out;
}
