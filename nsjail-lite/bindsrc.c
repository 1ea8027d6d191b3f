/* A bind source opened as a path only someone trusted can change (mnt.c clones it).
 *
 * A source is a host path, and a path is as safe as the least protected directory
 * along it: who may write a directory may replace the next component with a symlink
 * (a directory owned by nobody, swapped for a link to /, gave a jail the host's root
 * and /proc at its next start). So the path is walked one component at a time, each
 * opened with openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH) relative to the one
 * before, so the kernel follows nothing on its own (where openat2 is refused, by a
 * seccomp filter or an old kernel, openat(O_NOFOLLOW) of the one component, which
 * resolves the same), and:
 *
 *   - every directory passed through must be owned by root or the caller, and writable
 *     by no one else (group write only for group root; a sticky directory, as /tmp, is
 *     fine for an entry owned by root or the caller, which no one else may rename);
 *   - a symlink is followed only when it is owned by root or the caller (its directory
 *     having passed the same check), at most 32 of them; its target is walked the same
 *     way;
 *   - the final component's own owner does not matter (it cannot rename itself);
 *   - the jail's own host id counts as trusted for a source nsjail-lite hands to it
 *     (a /data it chowns, which may sit in a sticky /tmp): only jails run as that id,
 *     and they do not see the host's paths.
 *
 * The caller then clones the tree from the descriptor (open_tree AT_EMPTY_PATH), so
 * nothing is looked up by name again. Without owner checks (init cloning for a caller
 * that lacks CAP_SYS_ADMIN sees the host's owners as the overflow id), no symlink is
 * followed at all. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_LINKS 32

struct walk {
    const char *src;
    bool check;
    uid_t caller, jail; /* jail: the jail's host id for a source handed to it, else -1 */
    char *err;
    size_t errlen;
};

static bool trusted(const struct walk *w, uid_t uid)
{
    return uid == 0 || uid == w->caller || uid == w->jail;
}

/* Whether the directory d keeps others from replacing its entry e. */
static bool protects(const struct walk *w, const struct stat *d, const struct stat *e)
{
    if (!trusted(w, d->st_uid))
        return false;
    bool others = (d->st_mode & S_IWOTH) || ((d->st_mode & S_IWGRP) && d->st_gid != 0);
    return !others || ((d->st_mode & S_ISVTX) && trusted(w, e->st_uid));
}

/* Whether openat2() can be called at all. A seccomp filter may refuse it whole with
 * ENOSYS (systemd's RestrictSUIDSGID=, systemd-nspawn, older container runtimes) or with
 * the EPERM of a default action, and kernels before 5.6 lack it: every jail start then
 * failed "bind /usr: Function not implemented". Asked once per process by opening "/",
 * which nothing but a refused call can fail with either error. */
static bool openat2_usable(void)
{
    static int usable = -1;
    int known = __atomic_load_n(&usable, __ATOMIC_RELAXED);
    if (known >= 0)
        return known;
    int saved = errno;
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC};
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));
    known = !(fd < 0 && (errno == ENOSYS || errno == EPERM));
    if (fd >= 0)
        close(fd);
    errno = saved;
    __atomic_store_n(&usable, known, __ATOMIC_RELAXED);
    return known;
}

/* The entry name (one component: no slash, never "." or "..", see normalise()) of the
 * directory dir, itself if it is a symlink. openat2 says so to the kernel; where it is
 * refused, openat(O_NOFOLLOW) on a single component resolves exactly the same: there is
 * no earlier component to follow, ".." to climb or link to jump through, and O_PATH |
 * O_NOFOLLOW opens a trailing symlink (a magic one included) as itself, as
 * RESOLVE_NO_SYMLINKS does. */
static int open_entry(int dir, const char *name)
{
    if (!openat2_usable())
        return openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                           .resolve =
                               RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH};
    return (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));
}

/* path without "." and "..", and one slash between components, into out. */
static void normalise(const char *path, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (const char *c = path; *c;) {
        while (*c == '/')
            c++;
        const char *end = strchr(c, '/');
        size_t clen = end ? (size_t)(end - c) : strlen(c);
        if (clen == 0 || (clen == 1 && c[0] == '.')) {
        } else if (clen == 2 && c[0] == '.' && c[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
        } else if (n + 1 + clen < len) {
            out[n++] = '/';
            memcpy(out + n, c, clen);
            n += clen;
        }
        out[n] = '\0';
        c += clen;
    }
    if (n == 0)
        snprintf(out, len, "/");
}

/* Says why (msg) and closes the walk's descriptors: -1 with errno e (the caller explains
 * EACCES and EPERM as a directory it could not search: a refusal of the walk's own says
 * so with another). */
static int fail_with(const struct walk *w, int e, int fd1, int fd2, const char *msg)
{
    snprintf(w->err, w->errlen, "bind %s: %s", w->src, msg);
    if (fd1 >= 0)
        close(fd1);
    if (fd2 >= 0)
        close(fd2);
    errno = e;
    return -1;
}

/* The same with the errno of the call that failed. */
static int fail(const struct walk *w, int fd1, int fd2, const char *msg)
{
    return fail_with(w, errno, fd1, fd2, msg);
}

int bindsrc_open(const char *src, bool check_owners, uid_t caller, uid_t jail, char *err,
                 size_t errlen)
{
    struct walk w = {.src = src,
                     .check = check_owners,
                     .caller = caller,
                     .jail = jail,
                     .err = err,
                     .errlen = errlen};
    char path[PATH_MAX], walked[PATH_MAX];
    normalise(src, path, sizeof(path));
    for (int links = 0;; links++) {
        int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat ds;
        if (dir < 0 || fstat(dir, &ds) < 0)
            return fail(&w, dir, -1, strerror(errno));
        snprintf(walked, sizeof(walked), "/");
        const char *c = path + 1;
        bool restarted = false;
        while (*c && !restarted) {
            const char *end = strchr(c, '/');
            size_t clen = end ? (size_t)(end - c) : strlen(c);
            char name[NAME_MAX + 1];
            if (clen > NAME_MAX)
                return fail_with(&w, ENAMETOOLONG, dir, -1, "a component is longer than NAME_MAX");
            memcpy(name, c, clen);
            name[clen] = '\0';
            c += clen + (end ? 1 : 0);
            int fd = open_entry(dir, name);
            struct stat es;
            char msg[PATH_MAX + 200];
            if (fd < 0 || fstat(fd, &es) < 0) {
                snprintf(msg, sizeof(msg), "%s%s%s: %s", walked, walked[1] ? "/" : "", name,
                         strerror(errno));
                return fail(&w, dir, fd, msg);
            }
            if (w.check && !protects(&w, &ds, &es)) {
                snprintf(msg, sizeof(msg),
                         "%s (owner uid %u, mode %04o) lets another user replace what is in "
                         "it; bind a path that only root or the caller can change",
                         walked, (unsigned)ds.st_uid, (unsigned)(ds.st_mode & 07777));
                return fail_with(&w, EINVAL, dir, fd, msg);
            }
            size_t wl = strlen(walked);
            snprintf(walked + wl, sizeof(walked) - wl, "%s%s", wl > 1 ? "/" : "", name);
            if (S_ISLNK(es.st_mode)) {
                if (!w.check || !trusted(&w, es.st_uid)) {
                    snprintf(msg, sizeof(msg),
                             "%s is a symlink (owned by uid %u): bind the path it points to",
                             walked, (unsigned)es.st_uid);
                    return fail_with(&w, ELOOP, dir, fd, msg);
                }
                if (links >= MAX_LINKS)
                    return fail_with(&w, ELOOP, dir, fd, "more than 32 symlinks");
                char target[PATH_MAX];
                ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
                if (n < 0) {
                    snprintf(msg, sizeof(msg), "readlink %s: %s", walked, strerror(errno));
                    return fail(&w, dir, fd, msg);
                }
                target[n] = '\0';
                /* The rest of the path after the link's target; relative targets from
                 * the link's directory, which has no symlinks in it by now. */
                char next[PATH_MAX * 2 + 4];
                char *slash = strrchr(walked, '/');
                size_t plen = slash ? (size_t)(slash - walked) : 0;
                snprintf(next, sizeof(next), "%.*s/%s/%s", target[0] == '/' ? 0 : (int)plen, walked,
                         target, c);
                normalise(next, path, sizeof(path));
                close(fd);
                close(dir);
                restarted = true;
                continue;
            }
            if (*c && !S_ISDIR(es.st_mode)) {
                snprintf(msg, sizeof(msg), "%s is not a directory", walked);
                return fail_with(&w, ENOTDIR, dir, fd, msg);
            }
            close(dir);
            dir = fd;
            ds = es;
        }
        if (!restarted)
            return dir;
    }
}
