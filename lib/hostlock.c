#include "hostlock.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int hostlock_dir_open(const char *dir, char *err, size_t errlen)
{
    if (mkdir_p(dir, 0755) < 0) {
        snprintf(err, errlen, "creating %s: %s", dir, strerror(errno));
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (dfd < 0 || fstat(dfd, &st) < 0) {
        snprintf(err, errlen, "opening %s: %s", dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, errlen, "%s must be owned by root and writable only by root", dir);
        close(dfd);
        return -1;
    }
    return dfd;
}

int hostlock_try(int dfd, const char *dir, const char *name, char *err, size_t errlen)
{
    int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s/%s: %s", dir, name, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
        return -2;
    snprintf(err, errlen, "flock %s/%s: %s", dir, name, strerror(e));
    return -1;
}
