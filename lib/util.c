#include "util.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        fatalx("out of memory allocating %zu bytes", n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        fatalx("out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        fatalx("out of memory reallocating %zu bytes", n);
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = xmalloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0)
        fatalx("out of memory formatting a string");
    return out;
}

int err_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

bool str_copy(char *dst, const char *src, size_t size)
{
    if (size == 0)
        return false;
    size_t len = strnlen(src, size);
    if (len >= size) {
        memcpy(dst, src, size - 1);
        dst[size - 1] = '\0';
        return false;
    }
    memcpy(dst, src, len + 1);
    return true;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t now_mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

uint64_t now_real_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

void format_iso8601(uint64_t real_ns, char *buf, size_t size)
{
    /* Records come many per second (two per proxy tunnel): the date and time are
     * formatted once per second per thread, the microseconds by hand. */
    static _Thread_local time_t cached_secs = -1;
    static _Thread_local char base[24];
    time_t secs = (time_t)(real_ns / 1000000000ull);
    if (secs != cached_secs) {
        struct tm tm;
        gmtime_r(&secs, &tm);
        if (strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
            base[0] = '\0';
        cached_secs = secs;
    }
    size_t n = strlen(base);
    unsigned us = (unsigned)((real_ns / 1000u) % 1000000u);
    if (size < n + 9) { /* no room for the whole stamp: an empty one, never a cut one */
        if (size)
            buf[0] = '\0';
        return;
    }
    memcpy(buf, base, n);
    buf[n] = '.';
    for (int i = 6; i >= 1; i--) {
        buf[n + (size_t)i] = (char)('0' + us % 10);
        us /= 10;
    }
    buf[n + 7] = 'Z';
    buf[n + 8] = '\0';
}

int set_cloexec(int fd, bool on)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0)
        return -1;
    flags = on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
    return fcntl(fd, F_SETFD, flags);
}

int set_nonblock(int fd, bool on)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -1;
    flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
    return fcntl(fd, F_SETFL, flags);
}

bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

int hex_digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void hex_encode(const unsigned char *raw, size_t n, char *out)
{
    static const char digit[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digit[raw[i] >> 4];
        out[2 * i + 1] = digit[raw[i] & 15];
    }
    out[2 * n] = '\0';
}

bool parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s)
        return false;
    bool neg = (*s == '-');
    uint64_t mag;
    if (!parse_u64(neg ? s + 1 : s, 0, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX,
                   &mag))
        return false;
    int64_t v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int mkdir_p(const char *path, mode_t mode)
{
    char buf[4096];
    if (!str_copy(buf, path, sizeof(buf))) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

int mkdir_parents(const char *path, mode_t mode)
{
    char *copy = xstrdup(path);
    char *parent = dirname(copy);
    int rc = strcmp(parent, ".") == 0 || strcmp(parent, "/") == 0 ? 0 : mkdir_p(parent, 0711);
    free(copy);
    if (rc == 0 && mkdir(path, mode) < 0 && errno != EEXIST)
        rc = -1;
    return rc;
}

int close_fds_except(const int *keep, size_t n)
{
    int sorted[64];
    if (n > ARRAY_LEN(sorted)) {
        errno = E2BIG;
        return -1;
    }
    /* Insertion sort: qsort() is not async-signal-safe, and n is tiny. */
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && sorted[j - 1] > keep[i]; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = keep[i];
    }
    unsigned first = 3;
    for (size_t i = 0; i < n; i++) {
        if (sorted[i] < (int)first)
            continue;
        if ((unsigned)sorted[i] > first &&
            syscall(SYS_close_range, first, (unsigned)sorted[i] - 1, 0) < 0)
            return -1;
        first = (unsigned)sorted[i] + 1;
    }
    return (int)syscall(SYS_close_range, first, ~0U, 0);
}

bool name_chars_valid(const char *s, size_t n, size_t max, const char *punct)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || (s[i] != '\0' && strchr(punct, s[i]))))
            return false;
    return true;
}

bool user_id_valid(const char *s)
{
    return s[0] != '-' && name_chars_valid(s, strlen(s), 64, "_-");
}

bool host_pattern_valid(const char *s)
{
    if (strncmp(s, "*.", 2) == 0)
        s += 2;
    size_t n = strlen(s);
    if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-' || s[n - 1] == '.' || !strchr(s, '.') ||
        strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
              s[i] == '.'))
            return false;
    return true;
}

char **strv_dup(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **copy = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        copy[i] = xstrdup(v[i]);
    return copy;
}
