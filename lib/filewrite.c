#include "filewrite.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_write_atomic(const char *path, const char *a, size_t al, const char *b, size_t bl,
                      mode_t mode, char *err, size_t errlen)
{
    char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    /* A file left by a process of the same pid that died: never written through. */
    (void)unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    int rc = -1;
    if (fd < 0 || write_all(fd, a, al) < 0 || (b && write_all(fd, b, bl) < 0) ||
        fchmod(fd, mode) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "writing %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "renaming %s to %s: %s", tmp, path, strerror(errno));
        goto out;
    }
    char *dir = xstrdup(path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}
