/* Loading JSON configuration (profiles, manifests, hub.json) with errors that name
 * the file and the field: "config/spokes/x.json: limits.cpu_s: must be an integer
 * from 1 to 86400". Unknown keys are errors, so a typo never silently becomes a
 * default. */
#ifndef ISOLATE_JSONFILE_H
#define ISOLATE_JSONFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JF_DEFAULT_MAX_BYTES (1024 * 1024)

struct jf_ctx {
    const char *file; /* named in every message */
    char *err;
    size_t errlen;
    bool any_value; /* jf_load/jf_parse take any JSON value, not only an object or array */
};

/* Reads and parses a file of at most max_bytes; NULL and a message on failure. */
json_t *jf_load(struct jf_ctx *c, size_t max_bytes);
/* Parses JSON text that did not come from a file (file still names its origin). */
json_t *jf_parse(struct jf_ctx *c, const char *text, size_t len);

/* Sets the error "FILE: WHERE.KEY: message" and returns false. */
bool jf_fail(struct jf_ctx *c, const char *where, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* obj must be an object holding only keys from allowed (NULL-terminated). */
bool jf_object(struct jf_ctx *c, const json_t *obj, const char *where, const char *const allowed[]);

/* Each getter leaves *out untouched when the key is absent and not required. */
bool jf_string(struct jf_ctx *c, const json_t *obj, const char *where, const char *key,
               bool required, size_t max_len, const char **out);
bool jf_int(struct jf_ctx *c, const json_t *obj, const char *where, const char *key, bool required,
            int64_t min, int64_t max, int64_t *out);
bool jf_bool(struct jf_ctx *c, const json_t *obj, const char *where, const char *key, bool required,
             bool *out);
/* An array of strings, each 1..max_len bytes; *out is NULL-terminated, free with
 * jf_strv_free(). */
bool jf_strings(struct jf_ctx *c, const json_t *obj, const char *where, const char *key,
                bool required, size_t max_items, size_t max_len, char ***out, size_t *count);
void jf_strv_free(char **v);

#endif
