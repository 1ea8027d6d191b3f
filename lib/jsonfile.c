#include "jsonfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool jf_fail(struct jf_ctx *c, const char *where, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *sep = (where && *where && key && *key) ? "." : "";
    snprintf(c->err, c->errlen, "%s: %s%s%s%s%s", c->file, where ? where : "", sep, key ? key : "",
             ((where && *where) || (key && *key)) ? ": " : "", msg);
    return false;
}

json_t *jf_parse(struct jf_ctx *c, const char *text, size_t len)
{
    json_error_t e;
    json_t *root =
        json_loadb(text, len, JSON_REJECT_DUPLICATES | (c->any_value ? JSON_DECODE_ANY : 0), &e);
    if (!root)
        snprintf(c->err, c->errlen, "%s:%d:%d: invalid JSON: %s", c->file, e.line, e.column,
                 e.text);
    return root;
}

json_t *jf_load(struct jf_ctx *c, size_t max_bytes)
{
    int fd = open(c->file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(c->err, c->errlen, "%s: %s", c->file, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(c->err, c->errlen, "%s: not a regular file", c->file);
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        snprintf(c->err, c->errlen, "%s: file is %lld bytes, more than the %zu allowed", c->file,
                 (long long)st.st_size, max_bytes);
        close(fd);
        return NULL;
    }
    char *buf = xmalloc((size_t)st.st_size + 1);
    ssize_t n = read_full(fd, buf, (size_t)st.st_size);
    int saved = errno;
    close(fd);
    if (n < 0) {
        snprintf(c->err, c->errlen, "%s: %s", c->file, strerror(saved));
        free(buf);
        return NULL;
    }
    json_t *root = jf_parse(c, buf, (size_t)n);
    free(buf);
    return root;
}

bool jf_object(struct jf_ctx *c, const json_t *obj, const char *where, const char *const allowed[])
{
    if (!json_is_object(obj))
        return jf_fail(c, where, NULL, "must be a JSON object");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        bool known = false;
        for (size_t i = 0; allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0)
                known = true;
        if (!known)
            return jf_fail(c, where, key, "unknown key");
    }
    return true;
}

static json_t *jf_field(struct jf_ctx *c, const json_t *obj, const char *where, const char *key,
                        bool required, bool *ok)
{
    json_t *v = json_object_get(obj, key);
    *ok = v || !required;
    if (!v && required)
        jf_fail(c, where, key, "is required");
    return v;
}

bool jf_string(struct jf_ctx *c, const json_t *obj, const char *where, const char *key,
               bool required, size_t max_len, const char **out)
{
    bool ok;
    json_t *v = jf_field(c, obj, where, key, required, &ok);
    if (!v)
        return ok;
    if (!json_is_string(v))
        return jf_fail(c, where, key, "must be a string");
    size_t len = json_string_length(v);
    if (len == 0 || len > max_len)
        return jf_fail(c, where, key, "must be 1 to %zu bytes long", max_len);
    if (memchr(json_string_value(v), '\0', len))
        return jf_fail(c, where, key, "must not contain NUL");
    *out = json_string_value(v);
    return true;
}

bool jf_int(struct jf_ctx *c, const json_t *obj, const char *where, const char *key, bool required,
            int64_t min, int64_t max, int64_t *out)
{
    bool ok;
    json_t *v = jf_field(c, obj, where, key, required, &ok);
    if (!v)
        return ok;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return jf_fail(c, where, key, "must be an integer from %lld to %lld", (long long)min,
                       (long long)max);
    *out = json_integer_value(v);
    return true;
}

bool jf_bool(struct jf_ctx *c, const json_t *obj, const char *where, const char *key, bool required,
             bool *out)
{
    bool ok;
    json_t *v = jf_field(c, obj, where, key, required, &ok);
    if (!v)
        return ok;
    if (!json_is_boolean(v))
        return jf_fail(c, where, key, "must be true or false");
    *out = json_is_true(v);
    return true;
}

bool jf_strings(struct jf_ctx *c, const json_t *obj, const char *where, const char *key,
                bool required, size_t max_items, size_t max_len, char ***out, size_t *count)
{
    bool ok;
    json_t *v = jf_field(c, obj, where, key, required, &ok);
    if (!v)
        return ok;
    if (!json_is_array(v) || json_array_size(v) > max_items)
        return jf_fail(c, where, key, "must be an array of at most %zu strings", max_items);
    size_t n = json_array_size(v);
    char **list = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        size_t len = json_string_length(item);
        if (!json_is_string(item) || len == 0 || len > max_len ||
            memchr(json_string_value(item), '\0', len)) {
            jf_strv_free(list);
            return jf_fail(c, where, key, "item %zu must be a string of 1 to %zu bytes", i,
                           max_len);
        }
        list[i] = xstrdup(json_string_value(item));
    }
    *out = list;
    if (count)
        *count = n;
    return true;
}

void jf_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}
