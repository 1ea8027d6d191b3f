#include "spoke_secrets.h"
#include "secrets/secrets.h"
#include "log.h"
#include "config/config.h"
#include "redact.h"
#include "secret.h"
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

/* Whether host (a secret's host, "*.d" for any name under d) is within allow entry d:
 * the same name or a name under it, as netproxy's allowlist matches. */
static bool host_within(const char *host, const char *d)
{
    if (strncmp(host, "*.", 2) == 0)
        host += 2;
    size_t hl = strlen(host), dl = strlen(d);
    return strcmp(host, d) == 0 ||
           (hl > dl && host[hl - dl - 1] == '.' && strcmp(host + hl - dl, d) == 0);
}

bool secret_hosts_reachable(const struct secret_meta *m, char *const *allow, bool netproxy,
                            char *err, size_t errlen)
{
    if (!allow || !allow[0]) {
        snprintf(err, errlen, "the spoke has no network (no allowlist)");
        return false;
    }
    for (char **h = m->hosts; h && *h; h++) {
        bool covered = false;
        for (char *const *d = allow; *d && !covered; d++)
            covered = host_within(*h, *d);
        if (!covered) {
            snprintf(err, errlen, "its allowlist does not cover %s", *h);
            return false;
        }
    }
    if (!netproxy) {
        snprintf(err, errlen, "this isolation mode has no netproxy to put it into requests");
        return false;
    }
    return true;
}

int spoke_secrets_resolve(struct secret_store *st, const struct manifest *m, bool netproxy,
                          struct spoke_secrets *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    size_t n_env = 0;
    out->env = xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < m->n_secret_env; i++) {
        const char *var = m->secret_env[i].var, *name = m->secret_env[i].secret;
        bool plain = m->secret_env[i].plain;
        /* The same secret under two variables: one stand-in, unless one of them asks
         * for the value (then resolved on its own, below). */
        struct secret_binding *have = find_binding(out, name);
        if (have && !plain && have->standin) {
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
        bool host_mode = meta.hosts && meta.hosts[0];
        /* Fail closed: a secret scoped to hosts is never handed out as it is because
         * the spoke happens to lack netproxy; only a manifest that names it plain. */
        if (host_mode && !plain &&
            !secret_hosts_reachable(&meta, m->allow, netproxy, why, sizeof(why))) {
            snprintf(err, errlen,
                     "secret %s (env %s of spoke %s) is put into requests to %s by netproxy, "
                     "but %s: refused rather than handing the spoke the value. Let it reach "
                     "them (namespace isolation, `hub spokes add --allow` of their domains), "
                     "or hand it the value on purpose with --secret-plain %s=%s",
                     name, var, m->name, meta.hosts[0], why, var, name);
            secret_free(value);
            secret_meta_clear(&meta);
            spoke_secrets_free(out);
            return -1;
        }
        redact_add(value, len, name);
        if (!host_mode || plain) {
            env_push(out, &n_env, var, value);
            out->b = xrealloc(out->b, (out->n + 1) * sizeof(*out->b));
            /* Kept (without a stand-in) so that the value stays registered for
             * redaction while the spoke runs, and a plain one is audited. */
            out->b[out->n++] = (struct secret_binding){.meta = meta,
                                                       .standin = NULL,
                                                       .value = value,
                                                       .len = len,
                                                       .plain = host_mode && plain};
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
    /* netproxy's contract: no "header" puts the value into any header the stand-in is
     * in; only a secret set with `--header any` is given out that way. */
    const char *header = b->meta.header ? b->meta.header : keylike_header(b->value);
    if (strcmp(header, SECRET_HEADER_ANY) != 0)
        json_object_set_new(o, "header", json_string(header));
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
