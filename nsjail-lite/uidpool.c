/* Host ids for jails: each concurrent jail runs as a distinct unprivileged host
 * uid/gid from a configured range, so that no two spokes share file ownership,
 * signal rights or an RLIMIT_NPROC count. An id is taken by flock'ing its lock file
 * under LOCK_DIR (lib/hostlock.h); the monitor keeps the lock until every process of
 * the jail is gone, and the kernel drops it when the monitor dies, so a crash never
 * leaks an id. A caller may also ask for one given id (the hub keeps one per user and
 * app): the same lock file, so that id is never also handed out from a range while it
 * runs. Also the check of a range against /etc/subuid and /etc/subgid. */
#include "hostlock.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_DIR "/run/nsjail-lite"

int uidpool_acquire(uint32_t base, uint32_t count, uint32_t *id, int *lock_fd,
                    struct jail_error *err)
{
    if (base < 65536 || count == 0 || (uint64_t)base + count > INT32_MAX) {
        jail_err_set(err, 125,
                     "host id range %u+%u is invalid: the base must be at least 65536 and "
                     "base + count below 2^31",
                     base, count);
        return -1;
    }
    char msg[JAIL_ERR_MAX];
    int dfd = hostlock_dir_open(LOCK_DIR, msg, sizeof(msg));
    if (dfd < 0) {
        jail_err_set(err, 125, "%s", msg);
        return -1;
    }
    /* Lowest free id first: few lock files, and the same ids across runs. Every hub
     * and launcher of the host searches the same files, so a range may be shared. */
    for (uint32_t i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof(name), "id-%u.lock", base + i);
        int fd = hostlock_try(dfd, LOCK_DIR, name, msg, sizeof(msg));
        if (fd == -2)
            continue;
        close(dfd);
        if (fd < 0) {
            jail_err_set(err, 125, "%s", msg);
            return -1;
        }
        *id = base + i;
        *lock_fd = fd;
        return 0;
    }
    close(dfd);
    jail_err_set(err, 125, "all %u host ids from %u are in use by other jails", count, base);
    return -1;
}

int jail_host_id_lock(uint32_t id, char *err, size_t errlen)
{
    if (id < 65536 || id > INT32_MAX - 1) {
        snprintf(err, errlen, "host id %u is invalid: at least 65536 and below 2^31", id);
        return -1;
    }
    int dfd = hostlock_dir_open(LOCK_DIR, err, errlen);
    if (dfd < 0)
        return -1;
    char name[32];
    snprintf(name, sizeof(name), "id-%u.lock", id);
    int fd = hostlock_try(dfd, LOCK_DIR, name, err, errlen);
    close(dfd);
    return fd;
}

int uidpool_take(uint32_t id, int *lock_fd, struct jail_error *err)
{
    char msg[JAIL_ERR_MAX];
    int fd = jail_host_id_lock(id, msg, sizeof(msg));
    if (fd == -2)
        jail_err_set(err, 125, "host id %u is in use by another jail", id);
    else if (fd < 0)
        jail_err_set(err, 125, "%s", msg);
    if (fd < 0)
        return -1;
    *lock_fd = fd;
    return 0;
}

/* One subordinate-id file (subuid(5): "NAME_OR_ID:START:COUNT" per line): the first
 * range that overlaps [base, base + count), said in err. 1 on overlap, 0 none (or no
 * such file), -1 unreadable. Lines are bounded; what does not parse is skipped, as
 * shadow-utils does. */
static int subid_overlap(const char *path, uint32_t base, uint32_t count, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "reading %s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int found = 0;
    unsigned lineno = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            /* An over-long line: skip the rest of it. */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c1 || !c2 || line[0] == '#')
            continue;
        char *end;
        errno = 0;
        unsigned long long start = strtoull(c1 + 1, &end, 10);
        if (errno || end != c2 || end == c1 + 1)
            continue;
        unsigned long long n = strtoull(c2 + 1, &end, 10);
        if (errno || end == c2 + 1 || (*end && *end != '\n'))
            continue;
        if (n && start < (uint64_t)base + count && (uint64_t)base < start + n) {
            *c1 = '\0';
            snprintf(err, errlen,
                     "the host id range %u-%u overlaps %s line %u (%.64s: %llu-%llu), ids "
                     "the system gave a user for its own containers: a jail would share "
                     "them; choose another host_id_base (see the README: host ids)",
                     base, base + count - 1, path, lineno, line, start, start + n - 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

int jail_host_ids_check_files(uint32_t base, uint32_t count, const char *subuid, const char *subgid,
                              char *err, size_t errlen)
{
    const char *files[] = {subuid, subgid};
    for (size_t i = 0; i < 2; i++) {
        int rc = files[i] ? subid_overlap(files[i], base, count, err, errlen) : 0;
        if (rc != 0)
            return -1;
    }
    return 0;
}

int jail_host_ids_check(uint32_t base, uint32_t count, char *err, size_t errlen)
{
    return jail_host_ids_check_files(base, count, "/etc/subuid", "/etc/subgid", err, errlen);
}
