#include "creds.h"

#include "jsonfile.h"
#include "redact.h"
#include "secret.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > CRED_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return false;
    return true;
}

/* Printable ASCII: what may go into a header line. */
static bool header_safe(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return false;
    return n > 0;
}

void cred_clear(struct cred *c)
{
    if (c->value) {
        redact_remove(c->value, c->value_len);
        secret_free(c->value);
    }
    free(c->standin);
    jf_strv_free(c->hosts);
    free(c->header);
    free(c->query);
    memset(c, 0, sizeof(*c));
}

bool cred_parse(json_t *obj, struct cred *out, char *err, size_t errlen)
{
    static const char *const keys[] = {"name",   "standin", "value", "hosts",
                                       "header", "query",   NULL};
    struct jf_ctx jc = {.file = "secret", .err = err, .errlen = errlen};
    const char *name = NULL, *standin = NULL, *header = NULL, *query = NULL;
    memset(out, 0, sizeof(*out));
    json_t *value = json_object_get(obj, "value");
    bool ok = jf_object(&jc, obj, "", keys) &&
              jf_string(&jc, obj, "", "name", true, CRED_NAME_MAX, &name) &&
              jf_string(&jc, obj, "", "standin", true, CRED_VALUE_MAX, &standin) &&
              jf_strings(&jc, obj, "", "hosts", true, CRED_MAX_HOSTS, 253, &out->hosts, NULL) &&
              jf_string(&jc, obj, "", "header", false, 64, &header) &&
              jf_string(&jc, obj, "", "query", false, 64, &query);
    if (ok && (!json_is_string(value) || json_string_length(value) > CRED_VALUE_MAX ||
               !header_safe(json_string_value(value), json_string_length(value))))
        ok =
            jf_fail(&jc, "", "value", "must be 1 to %d printable ASCII characters", CRED_VALUE_MAX);
    if (ok && !name_ok(name))
        ok = jf_fail(&jc, "", "name", "must be 1 to 64 of A-Z a-z 0-9 _ . -");
    /* A stand-in short enough to turn up by chance would make ordinary requests look
     * like a credential sent astray. */
    if (ok && (strlen(standin) < 16 || !header_safe(standin, strlen(standin))))
        ok = jf_fail(&jc, "", "standin", "must be 16 or more printable ASCII characters");
    if (ok && !out->hosts[0])
        ok = jf_fail(&jc, "", "hosts", "must name at least one host");
    for (char **h = out->hosts; ok && *h; h++)
        if (!host_pattern_valid(*h))
            ok = jf_fail(&jc, "", "hosts", "\"%.80s\" is not a lower-case host name", *h);
    if (ok) {
        str_copy(out->name, name, sizeof(out->name));
        out->standin = xstrdup(standin);
        out->standin_len = strlen(standin);
        out->value_len = json_string_length(value);
        out->value = secret_alloc(out->value_len + 1);
        memcpy(out->value, json_string_value(value), out->value_len);
        redact_add(out->value, out->value_len, out->name);
        out->header = header ? xstrdup(header) : NULL;
        out->query = query ? xstrdup(query) : NULL;
    }
    /* The message's copy of the value is wiped, whatever happened. */
    if (json_is_string(value))
        explicit_bzero((char *)json_string_value(value), json_string_length(value));
    if (!ok)
        cred_clear(out);
    return ok;
}

static struct cred_set *set_new(size_t n)
{
    struct cred_set *s = xcalloc(1, sizeof(*s));
    s->refs = 1;
    s->v = xcalloc(n ? n : 1, sizeof(*s->v));
    return s;
}

static void set_longest(struct cred_set *s)
{
    s->longest_standin = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].standin_len > s->longest_standin)
            s->longest_standin = s->v[i].standin_len;
}

struct cred_set *cred_set_parse(json_t *arr, char *err, size_t errlen)
{
    if (arr && (!json_is_array(arr) || json_array_size(arr) > CRED_MAX_PER_SPOKE)) {
        snprintf(err, errlen, "secrets: must be an array of at most %d bindings",
                 CRED_MAX_PER_SPOKE);
        return NULL;
    }
    size_t n = arr ? json_array_size(arr) : 0;
    struct cred_set *s = set_new(n);
    for (size_t i = 0; i < n; i++) {
        char why[300];
        if (!cred_parse(json_array_get(arr, i), &s->v[s->n], why, sizeof(why))) {
            snprintf(err, errlen, "secrets[%zu]: %s", i, why);
            for (size_t k = i + 1; k < n; k++) { /* wipe the values not parsed */
                json_t *v = json_object_get(json_array_get(arr, k), "value");
                if (json_is_string(v))
                    explicit_bzero((char *)json_string_value(v), json_string_length(v));
            }
            cred_set_unref(s);
            return NULL;
        }
        for (size_t k = 0; k < s->n; k++)
            if (strcmp(s->v[k].name, s->v[s->n].name) == 0 ||
                strcmp(s->v[k].standin, s->v[s->n].standin) == 0) {
                snprintf(err, errlen, "secrets[%zu]: a second binding named %s (or its stand-in)",
                         i, s->v[s->n].name);
                s->n++;
                cred_set_unref(s);
                return NULL;
            }
        s->n++;
    }
    set_longest(s);
    return s;
}

static void cred_copy(struct cred *dst, const struct cred *src)
{
    memset(dst, 0, sizeof(*dst));
    memcpy(dst->name, src->name, sizeof(dst->name));
    dst->standin = xstrdup(src->standin);
    dst->standin_len = src->standin_len;
    dst->value = secret_alloc(src->value_len + 1);
    memcpy(dst->value, src->value, src->value_len);
    dst->value_len = src->value_len;
    redact_add(dst->value, dst->value_len, dst->name);
    dst->hosts = strv_dup(src->hosts);
    dst->header = src->header ? xstrdup(src->header) : NULL;
    dst->query = src->query ? xstrdup(src->query) : NULL;
}

struct cred_set *cred_set_with(const struct cred_set *s, struct cred *cred)
{
    size_t n = s ? s->n : 0;
    struct cred_set *out = set_new(n + 1);
    bool replaced = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s->v[i].name, cred->name) == 0) {
            out->v[out->n++] = *cred;
            replaced = true;
        } else {
            cred_copy(&out->v[out->n++], &s->v[i]);
        }
    }
    if (!replaced) {
        if (n == CRED_MAX_PER_SPOKE) {
            cred_set_unref(out);
            cred_clear(cred);
            return NULL;
        }
        out->v[out->n++] = *cred;
    }
    memset(cred, 0, sizeof(*cred));
    set_longest(out);
    return out;
}

struct cred_set *cred_set_ref(struct cred_set *s)
{
    if (s)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void cred_set_unref(struct cred_set *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (size_t i = 0; i < s->n; i++)
        cred_clear(&s->v[i]);
    free(s->v);
    free(s);
}

bool cred_for_host(const struct cred *c, const char *host)
{
    for (char **h = c->hosts; *h; h++) {
        if (strncmp(*h, "*.", 2) != 0) {
            if (strcasecmp(*h, host) == 0)
                return true;
            continue;
        }
        size_t hl = strlen(host), dl = strlen(*h + 1);
        if (hl > dl && strcasecmp(host + hl - dl, *h + 1) == 0)
            return true;
    }
    return false;
}

bool cred_set_for_host(const struct cred_set *s, const char *host)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (cred_for_host(&s->v[i], host))
            return true;
    return false;
}

const struct cred *cred_set_find(const struct cred_set *s, const char *buf, size_t len,
                                 bool (*want)(const struct cred *, void *), void *ud, size_t *at)
{
    const struct cred *best = NULL;
    for (size_t i = 0; s && i < s->n; i++) {
        const struct cred *c = &s->v[i];
        if (c->standin_len > len || (want && !want(c, ud)))
            continue;
        const char *p = memmem(buf, len, c->standin, c->standin_len);
        if (p && (!best || (size_t)(p - buf) < *at)) {
            best = c;
            *at = (size_t)(p - buf);
        }
    }
    return best;
}
