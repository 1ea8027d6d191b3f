#include "spoke_secrets.h"
#include "log.h"
#include "manifest.h"
#include "redact.h"
#include "secret.h"
#include "standin.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void env_push(struct spoke_secrets *s, size_t *n, const char *var, const char *value)
{
    s->env = xrealloc(s->env, (*n + 2) * sizeof(char *));
    s->env[(*n)++] = xasprintf("%s=%s", var, value);
    s->env[*n] = NULL;
}

static struct secret_binding *find_binding(struct spoke_secrets *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->b[i].meta.name, name) == 0)
            return &s->b[i];
    return NULL;
}

int spoke_secrets_resolve(struct secret_store *st, const struct manifest *m, bool egress,
                          struct spoke_secrets *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    size_t n_env = 0;
    out->env = xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < m->n_secret_env; i++) {
        const char *var = m->secret_env[i].var, *name = m->secret_env[i].secret;
        /* The same secret under two variables: one stand-in. */
        struct secret_binding *have = find_binding(out, name);
        if (have) {
            env_push(out, &n_env, var, have->standin);
            continue;
        }
        struct secret_meta meta;
        char *value = NULL;
        size_t len = 0;
        char why[512];
        int rc = secret_store_get(st, name, &meta, &value, &len, why, sizeof(why));
        if (rc <= 0) {
            if (rc == 0)
                snprintf(err, errlen,
                         "secret %s (env %s of spoke %s) is not in the store %s: add it with "
                         "`hub secrets set %s`",
                         name, var, m->name, secret_store_dir(st), name);
            else
                snprintf(err, errlen, "secret %s (env %s of spoke %s): %s", name, var, m->name,
                         why);
            spoke_secrets_free(out);
            return -1;
        }
        redact_add(value, len, name);
        bool host_mode = meta.hosts && meta.hosts[0];
        if (!host_mode || !egress) {
            if (host_mode)
                log_warnx("spoke %s: secret %s is given to its environment as it is: putting it "
                          "into requests at the egress needs netproxy (namespace isolation and "
                          "a network allowlist)",
                          m->name, name);
            env_push(out, &n_env, var, value);
            out->b = xrealloc(out->b, (out->n + 1) * sizeof(*out->b));
            /* Kept (without a stand-in) only so that the value stays registered for
             * redaction while the spoke runs. */
            out->b[out->n++] =
                (struct secret_binding){.meta = meta, .standin = NULL, .value = value, .len = len};
            continue;
        }
        char *standin = standin_make(value, len, why, sizeof(why));
        if (!standin) {
            snprintf(err, errlen, "secret %s (env %s of spoke %s): no stand-in: %s", name, var,
                     m->name, why);
            redact_remove(value, len);
            secret_free(value);
            secret_meta_clear(&meta);
            spoke_secrets_free(out);
            return -1;
        }
        env_push(out, &n_env, var, standin);
        out->b = xrealloc(out->b, (out->n + 1) * sizeof(*out->b));
        out->b[out->n++] =
            (struct secret_binding){.meta = meta, .standin = standin, .value = value, .len = len};
    }
    return 0;
}

bool spoke_secrets_injected(const struct spoke_secrets *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->b[i].standin)
            return true;
    return false;
}

void spoke_secrets_known(struct secret_store *st, const struct manifest_set *ms,
                         struct spoke_secrets *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; ms && i < ms->n; i++)
        for (size_t k = 0; k < ms->v[i]->n_secret_env; k++) {
            const char *name = ms->v[i]->secret_env[k].secret;
            if (find_binding(out, name))
                continue;
            struct secret_meta meta;
            char *value = NULL, why[512];
            size_t len = 0;
            if (secret_store_get(st, name, &meta, &value, &len, why, sizeof(why)) <= 0)
                continue; /* said when a spoke that needs it starts */
            redact_add(value, len, name);
            out->b = xrealloc(out->b, (out->n + 1) * sizeof(*out->b));
            out->b[out->n++] = (struct secret_binding){.meta = meta, .value = value, .len = len};
        }
}

void secret_binding_clear(struct secret_binding *b)
{
    if (b->value) {
        redact_remove(b->value, b->len);
        secret_free(b->value);
    }
    free(b->standin);
    secret_meta_clear(&b->meta);
    memset(b, 0, sizeof(*b));
}

void secret_binding_copy(struct secret_binding *dst, const struct secret_binding *src)
{
    secret_meta_copy(&dst->meta, &src->meta);
    dst->standin = src->standin ? xstrdup(src->standin) : NULL;
    dst->value = secret_alloc(src->len + 1);
    memcpy(dst->value, src->value, src->len);
    dst->len = src->len;
    redact_add(dst->value, dst->len, dst->meta.name);
}

void secret_binding_rotate(struct secret_binding *b, const struct secret_meta *meta,
                           const char *value, size_t len)
{
    char *standin = b->standin;
    b->standin = NULL;
    secret_binding_clear(b);
    secret_meta_copy(&b->meta, meta);
    b->standin = standin;
    b->value = secret_alloc(len + 1);
    memcpy(b->value, value, len);
    b->len = len;
    redact_add(b->value, b->len, b->meta.name);
}

void spoke_secrets_free(struct spoke_secrets *s)
{
    for (char **e = s->env; e && *e; e++) {
        explicit_bzero(*e, strlen(*e));
        free(*e);
    }
    free(s->env);
    for (size_t i = 0; i < s->n; i++)
        secret_binding_clear(&s->b[i]);
    free(s->b);
    memset(s, 0, sizeof(*s));
}

json_t *secret_binding_json(const struct secret_binding *b)
{
    json_t *hosts = json_array();
    for (char **h = b->meta.hosts; h && *h; h++)
        json_array_append_new(hosts, json_string(*h));
    json_t *o = json_pack("{s:s,s:s,s:s%,s:o}", "name", b->meta.name, "standin", b->standin,
                          "value", b->value, b->len, "hosts", hosts);
    if (b->meta.header)
        json_object_set_new(o, "header", json_string(b->meta.header));
    if (b->meta.query)
        json_object_set_new(o, "query", json_string(b->meta.query));
    return o;
}

void secret_json_wipe(json_t *msg)
{
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_array(msg)) {
        json_array_foreach(msg, i, v) secret_json_wipe(v);
        return;
    }
    json_object_foreach(msg, k, v)
    {
        if (json_is_string(v) && (strcmp(k, "value") == 0 || strcmp(k, "ca_key") == 0))
            explicit_bzero((char *)json_string_value(v), json_string_length(v));
        else if (json_is_object(v) || json_is_array(v))
            secret_json_wipe(v);
    }
}
