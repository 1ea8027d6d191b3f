/* lib/rmtree: removal by descriptors only. A directory chain far longer than PATH_MAX
 * (what a repl session built to make path-based cleanup give up) is removed; symlinks
 * are removed and never followed out of the tree; a file system mounted inside is not
 * entered (root only); it never holds more than a few descriptors. */
#include "rmtree.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[] = "/tmp/isolate-test_lib_rmtree.XXXXXX";

/* A chain of depth directories named by a 100-byte name, with a file at each level
 * and at the bottom; its length in bytes. */
static size_t make_chain(const char *top, int depth)
{
    char name[101];
    memset(name, 'd', 100);
    name[100] = '\0';
    int fd = open(top, O_RDONLY | O_DIRECTORY);
    size_t len = strlen(top);
    for (int i = 0; i < depth && fd >= 0; i++) {
        int f = openat(fd, "file", O_WRONLY | O_CREAT, 0600);
        if (f >= 0) {
            if (write(f, "x", 1) != 1)
                break;
            close(f);
        }
        if (mkdirat(fd, name, 0700) < 0)
            break;
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY);
        close(fd);
        fd = next;
        len += 101;
    }
    if (fd >= 0) {
        int f = openat(fd, "bottom", O_WRONLY | O_CREAT, 0600);
        if (f >= 0)
            close(f);
        close(fd);
    }
    return len;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int main(void)
{
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    char top[256], outside[256], path[512];

    /* A chain of 300 levels (30 KB of path): more than PATH_MAX (4096) seven times. */
    snprintf(top, sizeof(top), "%s/chain", base);
    mkdir(top, 0700);
    size_t len = make_chain(top, 300);
    CHECK(len > 7 * PATH_MAX, "a chain of %zu bytes of path was built", len);
    /* With 16 descriptors a tree 300 deep must still go: no descriptor per level. */
    struct rlimit old, low = {.rlim_cur = 16, .rlim_max = 0};
    getrlimit(RLIMIT_NOFILE, &old);
    low.rlim_max = old.rlim_max;
    setrlimit(RLIMIT_NOFILE, &low);
    int rc = rmtree(top);
    int e = errno;
    setrlimit(RLIMIT_NOFILE, &old);
    CHECK(rc == 0, "rmtree removes it (errno %d)", rc ? e : 0);
    CHECK(!exists(top), "... and it is gone");

    /* Symlinks inside point out of the tree: removed, never followed. */
    snprintf(outside, sizeof(outside), "%s/outside", base);
    mkdir(outside, 0700);
    snprintf(path, sizeof(path), "%s/keep", outside);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    snprintf(top, sizeof(top), "%s/links", base);
    mkdir(top, 0700);
    snprintf(path, sizeof(path), "%s/to-dir", top);
    CHECK(symlink(outside, path) == 0, "a symlink to a directory outside");
    snprintf(path, sizeof(path), "%s/to-file", top);
    char target[512];
    snprintf(target, sizeof(target), "%s/keep", outside);
    CHECK(symlink(target, path) == 0, "a symlink to a file outside");
    CHECK(rmtree(top) == 0 && !exists(top), "the tree with the links is removed");
    CHECK(exists(target), "... and what the links pointed to is untouched");

    /* A plain file and a missing path. */
    snprintf(path, sizeof(path), "%s/plain", base);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    CHECK(rmtree(path) == 0 && !exists(path), "a plain file is unlinked");
    CHECK(rmtree(path) == 0, "a path that is not there is already gone (0)");

    /* A file system mounted inside is never entered (root only). */
    if (geteuid() == 0) {
        snprintf(top, sizeof(top), "%s/mounted", base);
        mkdir(top, 0700);
        snprintf(path, sizeof(path), "%s/mnt", top);
        mkdir(path, 0700);
        if (mount("tmpfs", path, "tmpfs", 0, "size=1m") == 0) {
            char inner[1024];
            snprintf(inner, sizeof(inner), "%s/inner", path);
            close(open(inner, O_WRONLY | O_CREAT, 0600));
            errno = 0;
            CHECK(rmtree(top) < 0 && errno == EXDEV, "a mount inside the tree stops it (EXDEV)");
            CHECK(exists(inner), "... and what is on that file system is untouched");
            umount2(path, MNT_DETACH);
            CHECK(rmtree(top) == 0 && !exists(top), "once unmounted, the tree goes (a retry)");
        } else {
            printf("ok - a mount inside # SKIP mount: %s\n", strerror(errno));
        }
    }
    snprintf(path, sizeof(path), "%s/keep", outside);
    unlink(path);
    rmdir(outside);
    rmdir(base);
    return test_done();
}
