/* Host ids for jails: each concurrent jail runs as a distinct unprivileged host
 * uid/gid from a configured range, so that no two spokes share file ownership,
 * signal rights or an RLIMIT_NPROC count. An id is taken by flock'ing its lock file
 * under LOCK_DIR; the lock lives on the open file description, which the monitor
 * keeps until every process of the jail is gone, and the kernel drops it when the
 * monitor dies, so a crash never leaks an id. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_DIR "/run/nsjail-lite"

/* The lock directory decides who may hold which id: it must be root's and not
 * writable by anyone else, or another user could hold ids hostage or plant links. */
static int open_lock_dir(struct jail_error *err)
{
    if (mkdir(LOCK_DIR, 0755) < 0 && errno != EEXIST) {
        jail_err_set(err, 125, "creating %s: %s", LOCK_DIR, strerror(errno));
        return -1;
    }
    int dfd = open(LOCK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (dfd < 0 || fstat(dfd, &st) < 0) {
        jail_err_set(err, 125, "opening %s: %s", LOCK_DIR, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        jail_err_set(err, 125, "%s must be owned by root and writable only by root", LOCK_DIR);
        close(dfd);
        return -1;
    }
    return dfd;
}

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
    int dfd = open_lock_dir(err);
    if (dfd < 0)
        return -1;
    /* Lowest free id first: few lock files, and the same ids across runs. */
    for (uint32_t i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof(name), "id-%u.lock", base + i);
        int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            jail_err_set(err, 125, "%s/%s: %s", LOCK_DIR, name, strerror(errno));
            close(dfd);
            return -1;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            close(dfd);
            *id = base + i;
            *lock_fd = fd;
            return 0;
        }
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK) {
            jail_err_set(err, 125, "flock %s/%s: %s", LOCK_DIR, name, strerror(e));
            close(dfd);
            return -1;
        }
    }
    close(dfd);
    jail_err_set(err, 125, "all %u host ids from %u are in use by other jails", count, base);
    return -1;
}
