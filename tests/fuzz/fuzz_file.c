/* fuzz_write_file(): the loaders' inputs go through a real file, as in production. */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];
static char path[PATH_MAX];

static void remove_dir(void)
{
    if (path[0])
        unlink(path);
    if (dir[0])
        rmdir(dir);
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/isolate-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            fuzz_fail("mkdtemp %s: %s", dir, strerror(errno));
        atexit(remove_dir);
    }
    if (path[0])
        unlink(path);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        fuzz_fail("open %s: %s", path, strerror(errno));
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fuzz_fail("write %s: %s", path, strerror(errno));
        off += (size_t)n;
    }
    close(fd);
    return path;
}
