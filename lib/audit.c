#include "audit.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
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
    uint64_t written;
    uint64_t failed;
    uint64_t outage;         /* failures since the last record written */
    const char *say_outages; /* the consequence to say; NULL: the caller warns itself */
    bool torn; /* a record was cut short and is still in the file: end its line first */
};

static int audit_open_fd(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

struct audit *audit_open(const char *path, const char *service_name, char *err, size_t errlen)
{
    bool is_stdout = strcmp(path, "-") == 0;
    int fd = is_stdout ? STDOUT_FILENO : audit_open_fd(path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open audit log %s: %s", path, strerror(errno));
        return NULL;
    }
    struct audit *a = xcalloc(1, sizeof(*a));
    a->path = xstrdup(path);
    a->service = xstrdup(service_name);
    a->fd = fd;
    a->is_stdout = is_stdout;
    return a;
}

int audit_reopen(struct audit *a)
{
    if (a->is_stdout)
        return 0;
    int fd = audit_open_fd(a->path);
    if (fd < 0)
        return -1;
    close(a->fd);
    a->fd = fd;
    a->torn = false;
    return 0;
}

void audit_reopen_fd(struct audit *a, int fd)
{
    if (a->is_stdout) {
        close(fd);
        return;
    }
    close(a->fd);
    a->fd = fd;
    a->torn = false;
}

void audit_close(struct audit *a)
{
    if (!a)
        return;
    if (a->say_outages && a->outage)
        log_warnx("audit log %s: the last %llu records could not be written", a->path,
                  (unsigned long long)a->outage);
    if (!a->is_stdout)
        close(a->fd);
    free(a->path);
    free(a->service);
    free(a);
}

const char *audit_path(const struct audit *a)
{
    return a->path;
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

int audit_write(struct audit *a, json_t *rec)
{
    char ts[40];
    format_iso8601(now_real_ns(), ts, sizeof(ts));
    json_object_set_new(rec, "@timestamp", json_string(ts));
    audit_set_str(rec, "ecs.version", AUDIT_ECS_VERSION);
    audit_set_str(rec, "service.name", a->service);

    char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    if (!line)
        return audit_lost(a, ENOMEM);
    size_t len = strlen(line);
    line[len] = '\n'; /* json_dumps' terminator becomes the line end */
    /* After a cut record that could not be removed, a newline first, so that the
     * broken line cannot swallow this record too. */
    if (a->torn) {
        if (write_all(a->fd, "\n", 1) < 0) {
            int saved = errno;
            free(line);
            return audit_lost(a, saved);
        }
        a->torn = false;
    }
    size_t done = 0;
    int saved = EIO;
    while (done < len + 1) {
        ssize_t n = write(a->fd, line + done, len + 1 - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                saved = errno;
            break;
        }
        done += (size_t)n;
    }
    free(line);
    if (done < len + 1) {
        if (done > 0)
            audit_untear(a, done);
        return audit_lost(a, saved);
    }
    a->written++;
    if (a->outage) {
        if (a->say_outages)
            log_warnx("audit log %s is written again; %llu records could not be written", a->path,
                      (unsigned long long)a->outage);
        a->outage = 0;
    }
    return 0;
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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
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

json_t *audit_string(const char *s, size_t len, size_t cap)
{
    static const char marker[] = "...[truncated]";
    static const char replacement[] = "\xef\xbf\xbd";
    size_t out_cap = cap < 32 ? 32 : cap;
    /* Each input byte becomes at most 3 output bytes (U+FFFD): size the buffer for the
     * input rather than for the cap, so that short strings stay small allocations. */
    size_t need = len <= out_cap / 3 ? 3 * len : out_cap;
    char *out = xmalloc(need + sizeof(marker));
    size_t o = 0;
    bool truncated = false;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(u + i, len - i);
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
    unsigned char raw[16];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* getrandom cannot fail after boot on Linux >= 3.17 with these flags. */
            abort();
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[32] = '\0';
}
