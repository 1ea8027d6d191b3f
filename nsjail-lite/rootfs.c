/* A directory as the jail's root instead of the host's system binds (jail_config.rootfs,
 * profile key "rootfs", --rootfs DIR): the hub's container images.
 *
 * The root stays nsjail-lite's own tmpfs, so that /proc, /dev, /tmp, /data, the
 * generated /etc/passwd & co and any other bind still get their mount points without
 * writing to the image. The image is shown on it entry by entry, read-only, nosuid and
 * nodev like any bind (mnt.c): each top-level directory or file is a bind of its own,
 * each symlink is recreated with the same text (resolved inside the jail, never
 * followed here on the host: an image's "/lib -> /" or "etc -> /etc" is its own
 * business); an entry that another step of the plan replaces (/tmp, /proc, /dev, /data)
 * is left out, and a directory with another step below it (/etc, for the generated
 * /etc/passwd) is shown one level deeper the same way. Devices, FIFOs and sockets are
 * left out. Bounded: at most ROOTFS_MAX_OPS entries and ROOTFS_MAX_DEPTH levels. */
#include "internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOTFS_MAX_OPS 4096
#define ROOTFS_MAX_DEPTH 8

/* How the ops made before the image's relate to rel: 2 one of them is rel itself (the
 * entry is replaced), 1 one is below it (show the directory one level deeper), 0 none. */
static int taken(const struct jail_plan *p, size_t n_before, const char *rel)
{
    size_t n = strlen(rel);
    int r = 0;
    for (size_t i = 0; i < n_before; i++) {
        const char *d = p->ops[i].dst;
        if (strncmp(d, rel, n) != 0)
            continue;
        if (d[n] == '\0')
            return 2;
        if (d[n] == '/')
            r = 1;
    }
    return r;
}

struct walk {
    const struct jail_config *cfg;
    struct jail_plan *p;
    size_t n_before;
    size_t n_added;
    struct jail_error *err;
};

static int show_dir(struct walk *w, int dfd, const char *host_dir, const char *rel, unsigned depth);

static int show_entry(struct walk *w, int dfd, const char *host_dir, const char *name,
                      const char *rel, unsigned depth)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        jail_err_set(w->err, 125, "rootfs %s/%s: %s", host_dir, name, strerror(errno));
        return -1;
    }
    int t = taken(w->p, w->n_before, rel);
    if (t == 2)
        return 0;
    if (++w->n_added > ROOTFS_MAX_OPS) {
        jail_err_set(w->err, 125, "rootfs %s: more than %d entries to show", w->cfg->rootfs,
                     ROOTFS_MAX_OPS);
        return -1;
    }
    char *src = xasprintf("%s/%s", host_dir, name);
    int rc = 0;
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
        if (n < 0) {
            jail_err_set(w->err, 125, "rootfs %s: readlink: %s", src, strerror(errno));
            rc = -1;
        } else if (t == 0) {
            target[n] = '\0';
            struct mnt_op *op = mnt_op_add(w->p, MNT_SYMLINK, rel);
            op->src = xstrdup(target);
        }
        /* A link with another step below it cannot hold that step: left out. */
    } else if (S_ISDIR(st.st_mode) && t == 1) {
        if (depth >= ROOTFS_MAX_DEPTH) {
            jail_err_set(w->err, 125, "rootfs %s: nested deeper than %d", src, ROOTFS_MAX_DEPTH);
            rc = -1;
        } else {
            int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                jail_err_set(w->err, 125, "rootfs %s: %s", src, strerror(errno));
                rc = -1;
            } else {
                rc = show_dir(w, sub, src, rel, depth + 1);
            }
        }
    } else if ((S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) && t == 0) {
        struct mnt_op *op = mnt_op_add(w->p, MNT_BIND, rel);
        op->src = xstrdup(src);
        op->dir = S_ISDIR(st.st_mode);
    }
    free(src);
    return rc;
}

/* Shows the entries of dfd (closed here) at rel ("" for the root). */
static int show_dir(struct walk *w, int dfd, const char *host_dir, const char *rel, unsigned depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        jail_err_set(w->err, 125, "rootfs %s: %s", host_dir, strerror(errno));
        close(dfd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    errno = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *sub = rel[0] ? xasprintf("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
        rc = show_entry(w, dirfd(d), host_dir, e->d_name, sub, depth);
        free(sub);
    }
    closedir(d);
    return rc;
}

int rootfs_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    if (!cfg->rootfs)
        return 0;
    /* Opened as a real directory, not through a final symlink. */
    int fd = open(cfg->rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        jail_err_set(err, 125, "rootfs %s: %s", cfg->rootfs, strerror(errno));
        return -1;
    }
    struct walk w = {.cfg = cfg, .p = p, .n_before = p->n_ops, .err = err};
    /* "proc", "dev" and "tmp" are made by the plan itself (mnt_prepare added them). */
    int rc = show_dir(&w, fd, cfg->rootfs, "", 1);
    if (rc == 0)
        plan_debug(p, "rootfs %s: %zu entries shown read-only", cfg->rootfs, w.n_added);
    return rc;
}
