/* Identity: the monitor maps the jail's one inside uid/gid to its host id (setgroups
 * denied first, then gid_map, then uid_map, while init waits); init then switches to
 * that id. The caller can hand bind-rw sources to the host id beforehand. */
#include "internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_proc_file(pid_t pid, const char *file, const char *text, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int user_write_maps(const struct jail_plan *p, pid_t pid, char *err, size_t errlen)
{
    char map[64];
    /* setgroups must be denied before an unprivileged gid_map is accepted, and denying
     * it keeps the jail from dropping a group that guards a file (negative ACLs). */
    if (write_proc_file(pid, "setgroups", "deny", err, errlen) < 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->inside_gid, (unsigned)p->host_gid);
    if (write_proc_file(pid, "gid_map", map, err, errlen) < 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->inside_uid, (unsigned)p->host_uid);
    if (write_proc_file(pid, "uid_map", map, err, errlen) < 0)
        return -1;
    plan_debug(p, "mapped inside uid %u gid %u to host uid %u gid %u, setgroups denied",
               (unsigned)p->inside_uid, (unsigned)p->inside_gid, (unsigned)p->host_uid,
               (unsigned)p->host_gid);
    return 0;
}

int user_enter(const struct jail_plan *p, char *err, size_t errlen)
{
    /* Host root (our kuid until now) is not mapped in the new user namespace, so the
     * switch keeps the capabilities we hold in it (they are dropped before exec); it
     * must come first because files can only be created by a mapped fsuid. */
    if (setresgid(p->inside_gid, p->inside_gid, p->inside_gid) < 0) {
        snprintf(err, errlen, "setresgid %u: %s", (unsigned)p->inside_gid, strerror(errno));
        return -1;
    }
    if (setresuid(p->inside_uid, p->inside_uid, p->inside_uid) < 0) {
        snprintf(err, errlen, "setresuid %u: %s", (unsigned)p->inside_uid, strerror(errno));
        return -1;
    }
    /* init is a copy of the caller's memory (the hub's secrets): never readable. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
        snprintf(err, errlen, "PR_SET_DUMPABLE: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Walks with descriptors only (openat with O_NOFOLLOW), so a symlink planted by an
 * earlier run can never redirect the chown outside the tree. */
static int chown_walk(int dirfd, dev_t dev, uid_t uid, gid_t gid, unsigned depth, const char *top,
                      struct jail_error *err)
{
    if (depth > 64) {
        jail_err_set(err, 125, "%s: more than 64 directory levels", top);
        return -1;
    }
    if (fchown(dirfd, uid, gid) < 0) {
        jail_err_set(err, 125, "chown %s: %s", top, strerror(errno));
        return -1;
    }
    int copy = dup(dirfd);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    if (!d) {
        if (copy >= 0)
            close(copy);
        jail_err_set(err, 125, "reading %s: %s", top, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            jail_err_set(err, 125, "stat %s/%s: %s", top, e->d_name, strerror(errno));
            rc = -1;
        } else if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                jail_err_set(err, 125, "open %s/%s: %s", top, e->d_name, strerror(errno));
                rc = -1;
            } else {
                rc = chown_walk(sub, dev, uid, gid, depth + 1, top, err);
                close(sub);
            }
        } else if (!S_ISDIR(st.st_mode) &&
                   fchownat(dirfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
            jail_err_set(err, 125, "chown %s/%s: %s", top, e->d_name, strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0 && errno) {
        jail_err_set(err, 125, "reading %s: %s", top, strerror(errno));
        rc = -1;
    }
    closedir(d);
    return rc;
}

int user_chown_tree(const char *path, uid_t uid, gid_t gid, struct jail_error *err)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        jail_err_set(err, 125, "chown %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = chown_walk(fd, st.st_dev, uid, gid, 0, path, err);
    close(fd);
    return rc;
}
