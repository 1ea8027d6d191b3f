#include "rmtree.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One directory on the way down: its identity, and its name in its parent. */
struct level {
    dev_t dev;
    ino_t ino;
    char *name;
};

static int open_dir_at(int at, const char *name)
{
    return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
}

/* Opens the directory name under dir as a stream positioned at its start: a fresh
 * descriptor each time, so that entries removed since the last scan are not seen. */
static DIR *scan_open(int dir)
{
    int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d)
        close(fd);
    return d;
}

/* In dir: removes every entry that is not a directory and returns 1 with the first
 * subdirectory's name in *sub (to descend into), or 0 when dir is empty; -1 on error.
 * A subdirectory on another device is an error (never entered). */
static int clear_files(int dir, dev_t dev, char **sub, struct stat *sub_st)
{
    DIR *d = scan_open(dir);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            rc = -1;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (st.st_dev != dev) {
                errno = EXDEV; /* a mount inside: never entered */
                rc = -1;
                break;
            }
            *sub = xstrdup(e->d_name);
            *sub_st = st;
            rc = 1;
            break;
        }
        if (unlinkat(dir, e->d_name, 0) < 0 && errno != ENOENT) {
            rc = -1;
            break;
        }
        errno = 0;
    }
    if (!e && errno && rc == 0)
        rc = -1;
    int saved = errno;
    closedir(d);
    errno = saved;
    return rc;
}

int rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
    int cur = open_dir_at(AT_FDCWD, path);
    if (cur < 0)
        return errno == ENOENT ? 0 : -1;
    struct stat cst;
    if (fstat(cur, &cst) < 0 || cst.st_dev != st.st_dev || cst.st_ino != st.st_ino) {
        close(cur);
        errno = EAGAIN; /* replaced between lstat and open */
        return -1;
    }
    const dev_t dev = st.st_dev;
    size_t depth = 0, cap = 64;
    struct level *stack = xcalloc(cap, sizeof(*stack));
    stack[0] = (struct level){.dev = st.st_dev, .ino = st.st_ino};
    int rc = -1;
    for (;;) {
        char *sub = NULL;
        struct stat sst;
        int found = clear_files(cur, dev, &sub, &sst);
        if (found < 0)
            break;
        if (found == 1) {
            /* Down one level: the directory must be the one just stat'ed. */
            int child = open_dir_at(cur, sub);
            struct stat chst;
            if (child < 0 || fstat(child, &chst) < 0 || chst.st_dev != sst.st_dev ||
                chst.st_ino != sst.st_ino) {
                if (child >= 0)
                    close(child);
                free(sub);
                if (errno == 0)
                    errno = EAGAIN;
                break;
            }
            if (++depth == cap) {
                cap *= 2;
                stack = xrealloc(stack, cap * sizeof(*stack));
            }
            stack[depth] = (struct level){.dev = chst.st_dev, .ino = chst.st_ino, .name = sub};
            close(cur);
            cur = child;
            continue;
        }
        /* cur is empty. */
        if (depth == 0) {
            close(cur);
            cur = -1;
            rc = rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
            break;
        }
        /* Up one level through "..", which must be the parent we came from. */
        int parent = open_dir_at(cur, "..");
        struct stat pst;
        if (parent < 0 || fstat(parent, &pst) < 0 || pst.st_dev != stack[depth - 1].dev ||
            pst.st_ino != stack[depth - 1].ino) {
            if (parent >= 0)
                close(parent);
            errno = EAGAIN; /* moved meanwhile: stop rather than leave the tree */
            break;
        }
        close(cur);
        cur = parent;
        if (unlinkat(cur, stack[depth].name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            break;
        free(stack[depth].name);
        stack[depth].name = NULL;
        depth--;
    }
    int saved = errno;
    if (cur >= 0)
        close(cur);
    for (size_t i = 1; i <= depth; i++)
        free(stack[i].name);
    free(stack);
    errno = saved;
    return rc;
}
