#include "jsonline.h"

#include <stdlib.h>
#include <string.h>

#define JL_STR_CAP 1024

static void put(struct jline *j, const char *s, size_t n)
{
    if (j->overflow || n > j->cap - j->len) {
        j->overflow = true;
        return;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
}

static void putc1(struct jline *j, char c)
{
    if (j->overflow || j->len == j->cap) {
        j->overflow = true;
        return;
    }
    j->buf[j->len++] = c;
}

void jl_begin(struct jline *j, char *buf, size_t cap)
{
    j->buf = buf;
    j->cap = cap;
    j->len = 0;
    j->overflow = false;
    j->depth = 0;
    j->need_comma[0] = false;
    putc1(j, '{');
}

/* Keys are the program's own ECS names: no escaping needed. */
static void key(struct jline *j, const char *k)
{
    if (j->need_comma[j->depth])
        putc1(j, ',');
    j->need_comma[j->depth] = true;
    putc1(j, '"');
    put(j, k, strlen(k));
    put(j, "\":", 2);
}

void jl_open(struct jline *j, const char *k)
{
    key(j, k);
    putc1(j, '{');
    if (j->depth + 1 >= JL_MAX_DEPTH) {
        j->overflow = true;
        return;
    }
    j->need_comma[++j->depth] = false;
}

void jl_close(struct jline *j)
{
    putc1(j, '}');
    if (j->depth > 0)
        j->depth--;
}

size_t utf8_valid_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* One byte of a valid sequence, escaped as jansson's dumper escapes it. */
static void put_escaped(struct jline *j, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    switch (c) {
    case '"':
        put(j, "\\\"", 2);
        return;
    case '\\':
        put(j, "\\\\", 2);
        return;
    case '\b':
        put(j, "\\b", 2);
        return;
    case '\f':
        put(j, "\\f", 2);
        return;
    case '\n':
        put(j, "\\n", 2);
        return;
    case '\r':
        put(j, "\\r", 2);
        return;
    case '\t':
        put(j, "\\t", 2);
        return;
    default:
        if (c < 0x20) {
            char seq[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(j, seq, sizeof(seq));
        } else {
            putc1(j, (char)c);
        }
    }
}

/* 1 for printable ASCII but the two characters JSON escapes (" and \\). */
static const unsigned char plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

void jl_strn(struct jline *j, const char *k, const char *s, size_t len, size_t cap)
{
    static const char marker[] = "...[truncated]";
    static const char replacement[] = "\xef\xbf\xbd";
    size_t out_cap = cap < 32 ? 32 : cap;
    key(j, k);
    putc1(j, '"');
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0; /* sanitised bytes so far, before escaping: what the cap counts */
    for (size_t i = 0; i < len;) {
        /* The common case, a run of printable ASCII that needs no escaping, in one copy. */
        size_t run = 0, room = out_cap - o, avail = len - i;
        size_t lim = room < avail ? room : avail;
        while (run < lim && plain[u[i + run]])
            run++;
        if (run) {
            put(j, s + i, run);
            o += run;
            i += run;
            continue;
        }
        size_t n = utf8_valid_len(u + i, len - i);
        /* NUL would end the C string the records once were built from: U+FFFD too. */
        bool replace = n == 0 || (n == 1 && u[i] == '\0');
        size_t take = replace ? 3 : n;
        if (o + take > out_cap) {
            put(j, marker, sizeof(marker) - 1);
            break;
        }
        if (replace)
            put(j, replacement, 3);
        else if (n == 1)
            put_escaped(j, u[i]);
        else
            put(j, s + i, n);
        o += take;
        i += n ? n : 1;
    }
    putc1(j, '"');
}

void jl_str(struct jline *j, const char *k, const char *s)
{
    jl_strn(j, k, s, strlen(s), JL_STR_CAP);
}

static void put_int(struct jline *j, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[sizeof(tmp) - 1 - n++] = '-';
    put(j, tmp + sizeof(tmp) - n, n);
}

void jl_int(struct jline *j, const char *k, int64_t v)
{
    key(j, k);
    put_int(j, v);
}

void jl_bool(struct jline *j, const char *k, bool v)
{
    key(j, k);
    if (v)
        put(j, "true", 4);
    else
        put(j, "false", 5);
}

static void put_str_value(struct jline *j, const char *s)
{
    putc1(j, '"');
    for (const unsigned char *u = (const unsigned char *)s; *u; u++)
        put_escaped(j, *u);
    putc1(j, '"');
}

void jl_strs(struct jline *j, const char *k, const char *a, const char *b)
{
    key(j, k);
    putc1(j, '[');
    put_str_value(j, a);
    if (b) {
        putc1(j, ',');
        put_str_value(j, b);
    }
    putc1(j, ']');
}

/* A string as jansson dumps it: valid UTF-8 kept, the JSON escapes of put_escaped(),
 * NUL included (as \u0000); invalid UTF-8 ends the line (jl_end() returns 0). */
static void put_json_string(struct jline *j, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    putc1(j, '"');
    for (size_t i = 0; i < len && !j->overflow;) {
        size_t run = 0;
        while (i + run < len && plain[u[i + run]])
            run++;
        if (run) {
            put(j, s + i, run);
            i += run;
            continue;
        }
        size_t n = utf8_valid_len(u + i, len - i);
        if (n == 0)
            j->overflow = true;
        else if (n == 1)
            put_escaped(j, u[i]);
        else
            put(j, s + i, n);
        i += n ? n : 1;
    }
    putc1(j, '"');
}

static void put_json(struct jline *j, const json_t *v, int depth);

/* An object's members, in their order. Keys go by length: jansson's may hold a NUL,
 * and it dumps them whole. */
static void put_members(struct jline *j, const json_t *obj, int depth)
{
    json_t *o = (json_t *)obj;
    bool first = true;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        if (!first)
            putc1(j, ',');
        first = false;
        put_json_string(j, json_object_iter_key(it), json_object_iter_key_len(it));
        putc1(j, ':');
        put_json(j, json_object_iter_value(it), depth + 1);
    }
}

static void put_json(struct jline *j, const json_t *v, int depth)
{
    if (depth > JL_JSON_MAX_DEPTH) {
        j->overflow = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        putc1(j, '{');
        put_members(j, v, depth);
        putc1(j, '}');
        return;
    case JSON_ARRAY:
        putc1(j, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                putc1(j, ',');
            put_json(j, json_array_get(v, i), depth + 1);
        }
        putc1(j, ']');
        return;
    case JSON_STRING:
        put_json_string(j, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER:
        put_int(j, (int64_t)json_integer_value(v));
        return;
    case JSON_REAL: {
        /* Rare in records; jansson's own digits (%.17g and its fix-ups). */
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text)
            put(j, text, strlen(text));
        else
            j->overflow = true;
        free(text);
        return;
    }
    case JSON_TRUE:
        put(j, "true", 4);
        return;
    case JSON_FALSE:
        put(j, "false", 5);
        return;
    case JSON_NULL:
        put(j, "null", 4);
        return;
    }
}

size_t jl_end(struct jline *j)
{
    put(j, "}\n", 2);
    if (j->overflow || j->depth != 0)
        return 0;
    return j->len;
}

size_t jl_json_line(const json_t *obj, char *buf, size_t cap)
{
    if (!json_is_object(obj))
        return 0;
    struct jline j;
    jl_begin(&j, buf, cap);
    put_members(&j, obj, 0);
    return jl_end(&j);
}

const char *jl_json_line_here(const json_t *obj, size_t *len)
{
    static _Thread_local char buf[JL_THREAD_LINE];
    *len = jl_json_line(obj, buf, sizeof(buf));
    return *len ? buf : NULL;
}
