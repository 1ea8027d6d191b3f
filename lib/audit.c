#include "audit.h"
#include "jsonline.h"
#include "log.h"
#include "redact.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct audit {
    char *path;
    char *service;
    int fd;
    bool is_stdout;
    mode_t mode; /* of a file it creates */
    uint64_t written;
    uint64_t failed;
    uint64_t outage;         /* failures since the last record written */
    const char *say_outages; /* the consequence to say; NULL: the caller warns itself */
    bool torn; /* a record was cut short and is still in the file: end its line first */
    /* Writers on several threads (netproxy --workers) share one stream: each line goes
     * out whole under the lock, and a cut one is taken back before the next. */
    pthread_mutex_t lock;
    void *chain; /* lib/auditchain.h, or NULL */
    const struct audit_chain_ops *chain_ops;
};

static int audit_open_fd(const char *path, mode_t mode)
{
    /* Read access too, for a hash chain to find the file's last record; a file the
     * writer may only write still takes records. */
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0 && errno == EACCES)
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, mode);
    /* A private log (the transcript) stays private also when the file was there
     * before, made with a wider mode by someone else. */
    if (fd >= 0 && mode == 0600 && fchmod(fd, mode) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

struct audit *audit_open(const char *path, const char *service_name, char *err, size_t errlen)
{
    return audit_open_mode(path, service_name, 0640, err, errlen);
}

struct audit *audit_open_mode(const char *path, const char *service_name, mode_t mode, char *err,
                              size_t errlen)
{
    bool is_stdout = strcmp(path, "-") == 0;
    int fd = is_stdout ? STDOUT_FILENO : audit_open_fd(path, mode);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open audit log %s: %s", path, strerror(errno));
        return NULL;
    }
    struct audit *a = xcalloc(1, sizeof(*a));
    a->path = xstrdup(path);
    a->service = xstrdup(service_name);
    a->fd = fd;
    a->is_stdout = is_stdout;
    a->mode = mode;
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

/* The new descriptor replaces the old; a chain links the new file to the old first. */
static void audit_swap_fd(struct audit *a, int fd)
{
    pthread_mutex_lock(&a->lock); /* writers on other threads finish their line first */
    if (a->chain)
        a->chain_ops->rotate(a->chain, a, fd);
    close(a->fd);
    a->fd = fd;
    a->torn = false;
    pthread_mutex_unlock(&a->lock);
}

int audit_reopen(struct audit *a)
{
    if (a->is_stdout)
        return 0;
    int fd = audit_open_fd(a->path, a->mode);
    if (fd < 0)
        return -1;
    audit_swap_fd(a, fd);
    return 0;
}

void audit_reopen_fd(struct audit *a, int fd)
{
    if (a->is_stdout) {
        close(fd);
        return;
    }
    audit_swap_fd(a, fd);
}

void audit_close(struct audit *a)
{
    if (!a)
        return;
    if (a->chain) {
        pthread_mutex_lock(&a->lock);
        a->chain_ops->tick(a->chain, a, true); /* the last checkpoint: this writer ends */
        pthread_mutex_unlock(&a->lock);
        a->chain_ops->free(a->chain);
    }
    if (a->say_outages && a->outage)
        log_warnx("audit log %s: the last %llu records could not be written", a->path,
                  (unsigned long long)a->outage);
    if (!a->is_stdout)
        close(a->fd);
    free(a->path);
    free(a->service);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

const char *audit_path(const struct audit *a)
{
    return a->path;
}

const char *audit_service(const struct audit *a)
{
    return a->service;
}

uint64_t audit_written(const struct audit *a)
{
    return a->written;
}

uint64_t audit_failed(const struct audit *a)
{
    return a->failed;
}

uint64_t audit_outage(const struct audit *a)
{
    return a->outage;
}

void audit_say_outages(struct audit *a, const char *consequence)
{
    a->say_outages = consequence;
}

/* A record was not written (errno err): counted, and the outage's start said once. */
static int audit_lost(struct audit *a, int err)
{
    a->failed++;
    if (a->outage++ == 0 && a->say_outages)
        log_warnx("audit log %s cannot be written (%s): %s; said once, not per record", a->path,
                  strerror(err), a->say_outages);
    errno = err;
    return -1;
}

/* A full disk (ENOSPC) or RLIMIT_FSIZE lets write(2) store part of a line before it
 * fails. That part would make the log malformed and glue the next record onto it, so
 * cut it off again: the file's last `partial` bytes are ours (the descriptor appends).
 * Where that is impossible (a pipe, stdout), the next record starts on a new line. */
static void audit_untear(struct audit *a, size_t partial)
{
    struct stat st;
    if (fstat(a->fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= partial &&
        ftruncate(a->fd, st.st_size - (off_t)partial) == 0)
        return;
    a->torn = true;
}

void audit_attach_chain(struct audit *a, void *chain, const struct audit_chain_ops *ops)
{
    pthread_mutex_lock(&a->lock);
    a->chain = chain;
    a->chain_ops = ops;
    pthread_mutex_unlock(&a->lock);
}

int audit_fd_locked(const struct audit *a)
{
    return a->fd;
}

void audit_tick(struct audit *a)
{
    pthread_mutex_lock(&a->lock);
    if (a->chain)
        a->chain_ops->tick(a->chain, a, false);
    pthread_mutex_unlock(&a->lock);
}

/* The line (newline included) goes out in one write(2) where the kernel takes it whole;
 * called with the lock held. */
int audit_put_locked(struct audit *a, const char *line, size_t len, bool counted)
{
    /* After a cut record that could not be removed, a newline first, so that the
     * broken line cannot swallow this record too. */
    if (a->torn) {
        if (write_all(a->fd, "\n", 1) < 0)
            return audit_lost(a, errno);
        a->torn = false;
    }
    size_t done = 0;
    int saved = EIO;
    while (done < len) {
        ssize_t n = write(a->fd, line + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                saved = errno;
            break;
        }
        done += (size_t)n;
    }
    if (done < len) {
        if (done > 0)
            audit_untear(a, done);
        return audit_lost(a, saved);
    }
    if (!counted)
        return 0;
    a->written++;
    if (a->outage) {
        if (a->say_outages)
            log_warnx("audit log %s is written again; %llu records could not be written", a->path,
                      (unsigned long long)a->outage);
        a->outage = 0;
    }
    return 0;
}

int audit_write_line(struct audit *a, const char *line, size_t len)
{
    /* A secret the process holds never reaches a log (lib/redact.h). */
    size_t rlen = 0;
    char *redacted = len ? redact_copy(line, len, &rlen) : NULL;
    if (redacted) {
        line = redacted;
        len = rlen;
    }
    pthread_mutex_lock(&a->lock);
    int rc = !len       ? audit_lost(a, EOVERFLOW)
             : a->chain ? a->chain_ops->write(a->chain, a, line, len)
                        : audit_put_locked(a, line, len, true);
    int saved = errno;
    pthread_mutex_unlock(&a->lock);
    free(redacted);
    errno = saved;
    return rc;
}

int audit_write(struct audit *a, json_t *rec)
{
    char ts[40];
    format_iso8601(now_real_ns(), ts, sizeof(ts));
    json_object_set_new(rec, "@timestamp", json_string(ts));
    audit_set_str(rec, "ecs.version", AUDIT_ECS_VERSION);
    audit_set_str(rec, "service.name", a->service);

    /* Straight into a buffer of this thread (jl_json_line: half what json_dumps
     * costs, and nothing to allocate); a record too large or too odd for it goes
     * through jansson's own dumper, which says the same bytes. */
    size_t fast;
    const char *here = jl_json_line_here(rec, &fast);
    if (here) {
        json_decref(rec);
        return audit_write_line(a, here, fast);
    }
    char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    if (!line) {
        pthread_mutex_lock(&a->lock);
        int rc = audit_lost(a, ENOMEM);
        pthread_mutex_unlock(&a->lock);
        errno = ENOMEM;
        return rc;
    }
    size_t len = strlen(line);
    line[len] = '\n'; /* json_dumps' terminator becomes the line end */
    int rc = audit_write_line(a, line, len + 1);
    int saved = errno;
    free(line);
    errno = saved;
    return rc;
}

void audit_set(json_t *rec, const char *path, json_t *value)
{
    if (!value)
        return;
    json_t *obj = rec;
    const char *p = path;
    const char *dot;
    while ((dot = strchr(p, '.')) != NULL) {
        char key[64];
        size_t n = (size_t)(dot - p);
        if (n >= sizeof(key))
            n = sizeof(key) - 1;
        memcpy(key, p, n);
        key[n] = '\0';
        json_t *child = json_object_get(obj, key);
        if (!json_is_object(child)) {
            child = json_object();
            json_object_set_new(obj, key, child);
        }
        obj = child;
        p = dot + 1;
    }
    json_object_set_new(obj, p, value);
}

void audit_set_str(json_t *rec, const char *path, const char *s)
{
    if (s)
        audit_set(rec, path, audit_string(s, strlen(s), AUDIT_STR_CAP));
}

void audit_set_int(json_t *rec, const char *path, int64_t v)
{
    audit_set(rec, path, json_integer(v));
}

json_t *audit_string(const char *s, size_t len, size_t cap)
{
    static const char marker[] = "...[truncated]";
    static const char replacement[] = "\xef\xbf\xbd";
    size_t out_cap = cap < 32 ? 32 : cap;
    /* The common case, a string of ASCII without NUL that fits: nothing to replace or
     * cut, and nothing jansson needs to check again. */
    const unsigned char *u = (const unsigned char *)s;
    if (len <= out_cap) {
        size_t i = 0;
        while (i < len && (unsigned char)(u[i] - 1u) < 0x7fu)
            i++;
        if (i == len) {
            json_t *js = json_stringn_nocheck(s, len);
            return js ? js : json_string("");
        }
    }
    /* Each input byte becomes at most 3 output bytes (U+FFFD): size the buffer for the
     * input rather than for the cap, so that short strings stay small allocations. */
    size_t need = len <= out_cap / 3 ? 3 * len : out_cap;
    char *out = xmalloc(need + sizeof(marker));
    size_t o = 0;
    bool truncated = false;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_valid_len(u + i, len - i);
        const char *src = n ? s + i : replacement;
        size_t take = n ? n : 3;
        if (o + take > out_cap) {
            truncated = true;
            break;
        }
        /* NUL would end the C string jansson copies; escape it visibly instead. */
        if (n == 1 && s[i] == '\0') {
            src = replacement;
            take = 3;
            if (o + take > out_cap) {
                truncated = true;
                break;
            }
        }
        memcpy(out + o, src, take);
        o += take;
        i += n ? n : 1;
    }
    if (truncated) {
        memcpy(out + o, marker, sizeof(marker) - 1);
        o += sizeof(marker) - 1;
    }
    json_t *js = json_stringn(out, o);
    free(out);
    return js ? js : json_string("");
}

void audit_new_id(char out[33])
{
    /* Fresh randomness for every id, fetched a page at a time (one getrandom(2) per 256
     * ids instead of one per id); per thread, so that workers need no lock. */
    static _Thread_local unsigned char pool[4096];
    static _Thread_local size_t pool_left;
    if (pool_left < 16) {
        size_t got = 0;
        while (got < sizeof(pool)) {
            ssize_t n = getrandom(pool + got, sizeof(pool) - got, 0);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                /* getrandom cannot fail after boot on Linux >= 3.17 with these flags. */
                abort();
            }
            got += (size_t)n;
        }
        pool_left = sizeof(pool);
    }
    unsigned char *raw = pool + sizeof(pool) - pool_left;
    hex_encode(raw, 16, out);
    pool_left -= 16;
}
