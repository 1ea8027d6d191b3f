/* --memory none: lists and hashes in the hub process, with the same semantics as the
 * Redis back end; nothing survives the process. With a file ("file:PATH", hub serve
 * without Redis) the hashes (grants, first-seen) are also kept there, so that an
 * "always" answered through one stdio session holds at the next: a JSON object
 * {"hashes": {KEY: {FIELD: VALUE}}}, root's, 0600, read again whenever another process
 * changed it and rewritten whole (temporary file, rename) under an flock on PATH.lock,
 * so that hubs sharing it lose none of each other's writes. Lists stay in the process. */
#include "memory_impl.h"

#include "jsonfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCAL_FILE_MAX (16 * 1024 * 1024)

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
    char *path; /* NULL: nothing persists */
    int lock_fd;
    struct stat seen; /* the file as last read or written */
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

static int mem_del(struct memory *m, const char *key, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct slot *s = find(m, key, false);
    if (s)
        clear_slot(s);
    return 0;
}

static int mem_hash_set(struct memory *m, const char *key, const char *field, const char *value,
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

static int mem_hash_get(struct memory *m, const char *key, const char *field, char **value,
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

static int mem_hash_all(struct memory *m, const char *key, char ***fields, char ***values,
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

static int mem_hash_setnx(struct memory *m, const char *key, const char *field, const char *value,
                          char *err, size_t errlen)
{
    char *old = NULL;
    if (mem_hash_get(m, key, field, &old, err, errlen) < 0)
        return -1;
    if (old) {
        free(old);
        return 0;
    }
    return mem_hash_set(m, key, field, value, err, errlen) < 0 ? -1 : 1;
}

static int mem_hash_del(struct memory *m, const char *key, const char *field, char *err,
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
    free(l->path);
    if (l->lock_fd >= 0)
        close(l->lock_fd);
    free(l);
}

/* ---- the file ---- */

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Replaces every hash with the file's (a missing file: none). */
static int file_read(struct memory *m, char *err, size_t errlen)
{
    struct local *l = m->impl;
    int fd = open(l->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s: %s", l->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (same_file(&st, &l->seen)) {
        close(fd);
        return 0; /* nobody changed it since */
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
        st.st_size > LOCAL_FILE_MAX) {
        snprintf(err, errlen, "%s: must be a regular file of at most 16 MiB, the hub's, mode 0600",
                 l->path);
        close(fd);
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
    close(fd);
    json_t *hashes = json_object_get(root, "hashes");
    if (!json_is_object(hashes)) {
        snprintf(err, errlen, "%s: not a store of this hub (%s)", l->path,
                 root ? "no \"hashes\" object" : je.text);
        json_decref(root);
        return -1;
    }
    for (size_t i = 0; i < l->n; i++) {
        memory_strv_free(l->slots[i].fields, l->slots[i].n_fields);
        memory_strv_free(l->slots[i].values, l->slots[i].n_fields);
        l->slots[i].fields = l->slots[i].values = NULL;
        l->slots[i].n_fields = 0;
    }
    const char *key, *field;
    json_t *h, *v;
    json_object_foreach(hashes, key, h)
    {
        json_object_foreach(h, field, v)
        {
            if (json_is_string(v))
                mem_hash_set(m, key, field, json_string_value(v), err, errlen);
        }
    }
    json_decref(root);
    l->seen = st;
    return 0;
}

static int file_write(struct memory *m, char *err, size_t errlen)
{
    struct local *l = m->impl;
    json_t *hashes = json_object();
    for (size_t i = 0; i < l->n; i++) {
        if (l->slots[i].n_fields == 0)
            continue;
        json_t *h = json_object();
        for (size_t j = 0; j < l->slots[i].n_fields; j++)
            json_object_set_new(h, l->slots[i].fields[j], json_string(l->slots[i].values[j]));
        json_object_set_new(hashes, l->slots[i].key, h);
    }
    json_t *root = json_pack("{s:o}", "hashes", hashes);
    char *tmp = xasprintf("%s.tmp", l->path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = fd < 0 ? -1 : json_dumpfd(root, fd, JSON_COMPACT);
    if (rc == 0 && (fsync(fd) < 0 || rename(tmp, l->path) < 0))
        rc = -1;
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", l->path, strerror(errno ? errno : EIO));
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    else
        stat(l->path, &l->seen);
    free(tmp);
    json_decref(root);
    return rc;
}

/* Around a hash operation: the file's latest state in, under its lock. */
static int file_begin(struct memory *m, char *err, size_t errlen)
{
    struct local *l = m->impl;
    if (!l->path)
        return 0;
    if (flock(l->lock_fd, LOCK_EX) < 0) {
        snprintf(err, errlen, "%s.lock: %s", l->path, strerror(errno));
        return -1;
    }
    if (file_read(m, err, errlen) < 0) {
        flock(l->lock_fd, LOCK_UN);
        return -1;
    }
    return 0;
}

/* rc: the operation's; a change (rc > 0 or write) is written out before the unlock. */
static int file_end(struct memory *m, int rc, bool write, char *err, size_t errlen)
{
    struct local *l = m->impl;
    if (!l->path)
        return rc;
    if (rc >= 0 && write && file_write(m, err, errlen) < 0)
        rc = -1;
    flock(l->lock_fd, LOCK_UN);
    return rc;
}

static int local_hash_set(struct memory *m, const char *key, const char *field, const char *value,
                          char *err, size_t errlen)
{
    if (file_begin(m, err, errlen) < 0)
        return -1;
    return file_end(m, mem_hash_set(m, key, field, value, err, errlen), true, err, errlen);
}

static int local_hash_get(struct memory *m, const char *key, const char *field, char **value,
                          char *err, size_t errlen)
{
    *value = NULL;
    if (file_begin(m, err, errlen) < 0)
        return -1;
    return file_end(m, mem_hash_get(m, key, field, value, err, errlen), false, err, errlen);
}

static int local_hash_all(struct memory *m, const char *key, char ***fields, char ***values,
                          size_t *count, char *err, size_t errlen)
{
    if (file_begin(m, err, errlen) < 0)
        return -1;
    return file_end(m, mem_hash_all(m, key, fields, values, count, err, errlen), false, err,
                    errlen);
}

static int local_hash_setnx(struct memory *m, const char *key, const char *field, const char *value,
                            char *err, size_t errlen)
{
    if (file_begin(m, err, errlen) < 0)
        return -1;
    int rc = mem_hash_setnx(m, key, field, value, err, errlen);
    return file_end(m, rc, rc > 0, err, errlen);
}

static int local_hash_del(struct memory *m, const char *key, const char *field, char *err,
                          size_t errlen)
{
    if (file_begin(m, err, errlen) < 0)
        return -1;
    int rc = mem_hash_del(m, key, field, err, errlen);
    return file_end(m, rc, rc > 0, err, errlen);
}

static int local_del(struct memory *m, const char *key, char *err, size_t errlen)
{
    if (file_begin(m, err, errlen) < 0)
        return -1;
    return file_end(m, mem_del(m, key, err, errlen), true, err, errlen);
}

static const struct memory_ops local_ops = {
    .kind = "none",
    .persistent = false,
    .list_append = local_list_append,
    .list_last = local_list_last,
    .del = mem_del,
    .hash_set = mem_hash_set,
    .hash_get = mem_hash_get,
    .hash_all = mem_hash_all,
    .hash_setnx = mem_hash_setnx,
    .hash_del = mem_hash_del,
    .destroy = local_destroy,
};

static const struct memory_ops file_ops = {
    .kind = "file",
    .persistent = true,
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

struct memory *memory_local_open(const struct memory_config *cfg, const char *path, char *err,
                                 size_t errlen)
{
    struct memory *m = xcalloc(1, sizeof(*m));
    m->ops = path ? &file_ops : &local_ops;
    struct local *l = xcalloc(1, sizeof(struct local));
    l->lock_fd = -1;
    m->impl = l;
    if (path) {
        l->path = xstrdup(path);
        char *lock = xasprintf("%s.lock", path);
        l->lock_fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        free(lock);
        if (l->lock_fd < 0 || file_begin(m, err, errlen) < 0) {
            if (l->lock_fd < 0)
                snprintf(err, errlen, "%s.lock: %s", path, strerror(errno));
            local_destroy(m);
            free(m);
            return NULL;
        }
        file_end(m, 0, false, err, errlen);
    }
    m->cfg = *cfg;
    m->cfg.redis = NULL;
    m->cfg.password_env = NULL;
    m->cfg.username = NULL;
    m->describe = path ? xasprintf("the file %s (hashes only)", path)
                       : xstrdup("in-process (--memory none): nothing is kept after the hub exits");
    return m;
}
