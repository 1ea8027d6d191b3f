#include "firstseen.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Open addressing, at most half full. */
#define SLOTS (2 * FIRSTSEEN_MAX)

static struct {
    pthread_mutex_t lock;
    int fd; /* -1: no store */
    char **slot;
    size_t n;
    bool said_full;
} fs = {PTHREAD_MUTEX_INITIALIZER, -1, NULL, 0, false};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* 1 added, 0 there already, -1 full. */
static int set_add(const char *key)
{
    size_t i = (size_t)(fnv1a(key) % SLOTS);
    while (fs.slot[i]) {
        if (strcmp(fs.slot[i], key) == 0)
            return 0;
        i = (i + 1) % SLOTS;
    }
    if (fs.n >= FIRSTSEEN_MAX)
        return -1;
    fs.slot[i] = xstrdup(key);
    fs.n++;
    return 1;
}

static bool field_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > FIRSTSEEN_FIELD_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

int np_firstseen_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "first-seen store %s: %s", path, strerror(errno));
        return -1;
    }
    fs.slot = xcalloc(SLOTS, sizeof(*fs.slot));
    FILE *f = fdopen(dup(fd), "r");
    char line[3 * (FIRSTSEEN_FIELD_MAX + 1) + 2];
    size_t bad = 0;
    while (f && fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n') {
            bad++; /* too long, or cut short: skipped, the triple counts as new again */
            int ch;
            while (n == sizeof(line) - 1 && (ch = fgetc(f)) != EOF && ch != '\n')
                ;
            continue;
        }
        line[n - 1] = '\0';
        if (set_add(line) < 0)
            break;
    }
    if (f)
        fclose(f);
    if (bad)
        log_warnx("first-seen store %s: %zu lines skipped", path, bad);
    fs.fd = fd;
    return 0;
}

int np_firstseen_mark(const char *user, const char *app, const char *domain)
{
    if (fs.fd < 0 || !field_ok(user) || !field_ok(app) || !field_ok(domain) || strchr(user, '\t') ||
        strchr(app, '\t') || strchr(domain, '\t'))
        return -1;
    char key[3 * (FIRSTSEEN_FIELD_MAX + 1)];
    snprintf(key, sizeof(key), "%s\t%s\t%s", user, app, domain);
    pthread_mutex_lock(&fs.lock);
    int r = set_add(key);
    if (r < 0 && !fs.said_full) {
        fs.said_full = true;
        log_warnx("first-seen store full (%d triples): records carry no first_seen from now",
                  FIRSTSEEN_MAX);
    }
    if (r == 1) {
        size_t n = strlen(key);
        key[n] = '\n';
        /* Remembered in memory even when the file is not written: said, and the record
         * still true (the next netproxy would only say "first" once more). */
        if (write_all(fs.fd, key, n + 1) < 0)
            log_warn("first-seen store: cannot append");
    }
    pthread_mutex_unlock(&fs.lock);
    return r;
}

void np_firstseen_close(void)
{
    if (fs.fd < 0)
        return;
    for (size_t i = 0; i < SLOTS; i++)
        free(fs.slot[i]);
    free(fs.slot);
    fs.slot = NULL;
    close(fs.fd);
    fs.fd = -1;
    fs.n = 0;
}
