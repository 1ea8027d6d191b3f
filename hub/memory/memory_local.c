/* --memory none: lists and hashes in the hub process, with the same semantics as the
 * Redis back end; nothing survives the process. */
#include "memory_impl.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct slot {
    char *key;
    char **items; /* list: oldest first */
    size_t n_items;
    char **fields; /* hash */
    char **values;
    size_t n_fields;
};

struct local {
    struct slot *slots;
    size_t n;
};

static struct slot *find(struct memory *m, const char *key, bool create)
{
    struct local *l = m->impl;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->slots[i].key, key) == 0)
            return &l->slots[i];
    if (!create)
        return NULL;
    l->slots = xrealloc(l->slots, (l->n + 1) * sizeof(*l->slots));
    struct slot *s = &l->slots[l->n++];
    memset(s, 0, sizeof(*s));
    s->key = xstrdup(key);
    return s;
}

static char **dup_strv(char *const *v, size_t n)
{
    char **out = xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(v[i]);
    return out;
}

static int local_list_append(struct memory *m, const char *key, const char *entry, size_t max,
                             char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, true);
    s->items = xrealloc(s->items, (s->n_items + 1) * sizeof(*s->items));
    s->items[s->n_items++] = xstrdup(entry);
    if (s->n_items > max) {
        size_t drop = s->n_items - max;
        for (size_t i = 0; i < drop; i++)
            free(s->items[i]);
        memmove(s->items, s->items + drop, max * sizeof(*s->items));
        s->n_items = max;
    }
    return 0;
}

static int local_list_last(struct memory *m, const char *key, size_t n, char ***items,
                           size_t *count, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, false);
    size_t have = s ? s->n_items : 0;
    size_t take = n < have ? n : have;
    *items = dup_strv(s ? s->items + (have - take) : NULL, take);
    *count = take;
    return 0;
}

static void clear_slot(struct slot *s)
{
    memory_strv_free(s->items, s->n_items);
    memory_strv_free(s->fields, s->n_fields);
    memory_strv_free(s->values, s->n_fields);
    s->items = s->fields = s->values = NULL;
    s->n_items = s->n_fields = 0;
}

static int local_del(struct memory *m, const char *key, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, false);
    if (s)
        clear_slot(s);
    return 0;
}

static int local_hash_set(struct memory *m, const char *key, const char *field, const char *value,
                          char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, true);
    for (size_t i = 0; i < s->n_fields; i++)
        if (strcmp(s->fields[i], field) == 0) {
            free(s->values[i]);
            s->values[i] = xstrdup(value);
            return 0;
        }
    s->fields = xrealloc(s->fields, (s->n_fields + 1) * sizeof(*s->fields));
    s->values = xrealloc(s->values, (s->n_fields + 1) * sizeof(*s->values));
    s->fields[s->n_fields] = xstrdup(field);
    s->values[s->n_fields++] = xstrdup(value);
    return 0;
}

static int local_hash_get(struct memory *m, const char *key, const char *field, char **value,
                          char *err, size_t errlen)
{
    (void)err, (void)errlen;
    *value = NULL;
    struct slot *s = find(m, key, false);
    for (size_t i = 0; s && i < s->n_fields; i++)
        if (strcmp(s->fields[i], field) == 0)
            *value = xstrdup(s->values[i]);
    return 0;
}

static int local_hash_all(struct memory *m, const char *key, char ***fields, char ***values,
                          size_t *count, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, false);
    size_t n = s ? s->n_fields : 0;
    *fields = dup_strv(s ? s->fields : NULL, n);
    *values = dup_strv(s ? s->values : NULL, n);
    *count = n;
    return 0;
}

static int local_hash_setnx(struct memory *m, const char *key, const char *field, const char *value,
                            char *err, size_t errlen)
{
    char *old = NULL;
    if (m->ops->hash_get(m, key, field, &old, err, errlen) < 0)
        return -1;
    if (old) {
        free(old);
        return 0;
    }
    return m->ops->hash_set(m, key, field, value, err, errlen) < 0 ? -1 : 1;
}

static int local_hash_del(struct memory *m, const char *key, const char *field, char *err,
                          size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, false);
    for (size_t i = 0; s && i < s->n_fields; i++)
        if (strcmp(s->fields[i], field) == 0) {
            free(s->fields[i]);
            free(s->values[i]);
            s->fields[i] = s->fields[s->n_fields - 1];
            s->values[i] = s->values[s->n_fields - 1];
            s->n_fields--;
            return 1;
        }
    return 0;
}

static void local_destroy(struct memory *m)
{
    struct local *l = m->impl;
    for (size_t i = 0; i < l->n; i++) {
        clear_slot(&l->slots[i]);
        free(l->slots[i].key);
    }
    free(l->slots);
    free(l);
}

static const struct memory_ops local_ops = {
    .kind = "none",
    .persistent = false,
    .list_append = local_list_append,
    .list_last = local_list_last,
    .del = local_del,
    .hash_set = local_hash_set,
    .hash_get = local_hash_get,
    .hash_all = local_hash_all,
    .hash_setnx = local_hash_setnx,
    .hash_del = local_hash_del,
    .destroy = local_destroy,
};

struct memory *memory_local_open(const struct memory_config *cfg)
{
    struct memory *m = xcalloc(1, sizeof(*m));
    m->ops = &local_ops;
    m->impl = xcalloc(1, sizeof(struct local));
    m->cfg = *cfg;
    m->cfg.redis = NULL;
    m->cfg.password_env = NULL;
    m->cfg.username = NULL;
    m->describe = xstrdup("in-process (--memory none): nothing is kept after the hub exits");
    return m;
}
