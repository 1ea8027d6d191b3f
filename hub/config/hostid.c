#include "hostid.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A line is "ID KEY\n"; keys are a user id, '/', an app name and an instance. */
#define LINE_MAX_BYTES 256

bool hostid_stable(const struct hub_config *cfg)
{
    return cfg->host_id_count >= 2;
}

void hostid_pool(const struct hub_config *cfg, uint32_t *base, uint32_t *count)
{
    *base = cfg->host_id_base;
    *count = hostid_stable(cfg) ? cfg->host_id_count / 2 : cfg->host_id_count;
}

static bool key_ok(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > LINE_MAX_BYTES - 16 || key[0] == '/' || key[0] == '.')
        return false;
    for (const char *p = key; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return false;
    return true;
}

/* The registry's whole text (NUL-terminated), read from fd at offset 0. */
static char *read_all(int fd, size_t max, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, errlen, "must be a regular file owned by root and writable only by it");
        return NULL;
    }
    if ((size_t)st.st_size > max) {
        snprintf(err, errlen, "larger than the range could ever fill (%lld bytes)",
                 (long long)st.st_size);
        return NULL;
    }
    char *buf = xmalloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    return buf;
}

int hostid_lookup(const struct hub_config *cfg, const char *key, uint32_t *id, char *err,
                  size_t errlen)
{
    if (!key_ok(key)) {
        snprintf(err, errlen, "stable host id: %.80s is not a data directory name", key);
        return -1;
    }
    uint32_t lo = cfg->host_id_base + cfg->host_id_count / 2;
    uint32_t n = cfg->host_id_count - cfg->host_id_count / 2;
    char *path = xasprintf("%s/" HOSTID_REGISTRY, cfg->data_root);
    int rc = -1;
    char *text = NULL;
    unsigned char *used = NULL;
    int fd = -1;
    if (mkdir_p(cfg->data_root, 0711) < 0) {
        snprintf(err, errlen, "data root %s: %s", cfg->data_root, strerror(errno));
        goto out;
    }
    fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    char why[160];
    text = read_all(fd, (size_t)n * LINE_MAX_BYTES, why, sizeof(why));
    if (!text) {
        snprintf(err, errlen, "%s: %s", path, why);
        goto out;
    }
    used = xcalloc(n, 1);
    size_t klen = strlen(key);
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        char *end;
        errno = 0;
        unsigned long v = strtoul(line, &end, 10);
        if (errno || end == line || *end != ' ')
            continue; /* not ours: skipped, as a torn last line after a crash */
        const char *k = end + 1;
        size_t len = (size_t)(next - k) - (next[-1] == '\n' ? 1 : 0);
        bool in_range = v >= lo && v - lo < n;
        if (in_range)
            used[v - lo] = 1;
        if (in_range && len == klen && memcmp(k, key, klen) == 0) {
            *id = (uint32_t)v;
            rc = 0;
            goto out;
        }
    }
    /* Lowest free first: the same ids on every host that registers in the same order. */
    for (uint32_t i = 0; i < n; i++) {
        if (used[i])
            continue;
        char line[LINE_MAX_BYTES];
        size_t tlen = strlen(text);
        bool torn = tlen > 0 && text[tlen - 1] != '\n'; /* a crash mid-line: end it first */
        int len = snprintf(line, sizeof(line), "%s%u %s\n", torn ? "\n" : "", lo + i, key);
        if (write(fd, line, (size_t)len) != len || fsync(fd) < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
            goto out;
        }
        *id = lo + i;
        rc = 0;
        goto out;
    }
    snprintf(err, errlen,
             "every stable host id (%u from %u, half of network.host_id_count) is taken in %s: "
             "raise host_id_count",
             n, lo, path);
out:
    if (fd >= 0)
        close(fd);
    free(used);
    free(text);
    free(path);
    return rc;
}
