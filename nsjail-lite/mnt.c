/* The jail's file system. The caller turns the binds and tmpfs of the config into a
 * list of steps (mnt_prepare: every source checked, every path validated); init
 * performs them (mnt_setup) in its new mount namespace:
 *
 *   1. make every mount private, so nothing propagates back to the host;
 *   2. each bind source is opened as a path only root or the caller could have made
 *      (bindsrc.c: no directory others may write, no symlink of theirs), cloned from
 *      that descriptor into a detached mount tree (open_tree; the mounts below it only
 *      when the bind asks) and made read-only/nosuid/nodev before it is ever visible. The monitor
 * does this (mnt_open_sources), in the host's namespaces and with the caller's privilege, before it
 * clones init: the jail's own unprivileged host id could not even traverse a source under a private
 * directory (Debian's /root is 0700). init only attaches the trees it inherits, which the kernel
 * allows for detached trees in any mount namespace init may mount in. A caller without
 *      CAP_SYS_ADMIN leaves the clones to init, as its own user;
 *   3. mount a tmpfs on STAGING and build the new root there: mount points, the
 *      merged-/usr symlinks, /tmp and other tmpfs, a fresh /proc (with /proc/sys,
 *      /proc/sysrq-trigger, /proc/irq and /proc/bus read-only), a minimal /dev and
 *      the generated /etc/passwd, /etc/group and /etc/hosts;
 *   4. (mnt_pivot, once init has configured the network through the host's /proc)
 *      pivot_root into it, detach the old root, and make the root itself read-only.
 *
 * Every path inside the new root is walked component by component with O_NOFOLLOW,
 * so a symlink inside a writable bind (left by an earlier run) cannot redirect a
 * mount point. */
#include "elfdeps.h"
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Where init builds the new root, in its private mount namespace. Bind sources are
 * cloned before this is mounted over, so binding host paths under /tmp still works. */
#define STAGING "/tmp"

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom"};
#define N_DEV_NODES (sizeof(dev_nodes) / sizeof(dev_nodes[0]))
_Static_assert(N_DEV_NODES == MNT_DEV_NODES, "MNT_DEV_NODES counts dev_nodes");
static const char *const proc_readonly[] = {"sys", "sysrq-trigger", "irq", "bus"};

/* ---- caller side ---- */

/* Absolute, no empty, "." or ".." component, not "/". Returns the path without its
 * leading '/', or NULL. */
static const char *check_dst(const char *dst)
{
    if (!dst || dst[0] != '/' || strlen(dst) >= PATH_MAX)
        return NULL;
    const char *rel = dst + 1;
    if (*rel == '\0')
        return NULL;
    const char *c = rel;
    while (*c) {
        const char *end = strchr(c, '/');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
            return NULL;
        c += len;
        if (*c == '/')
            c++;
        if (end && *c == '\0')
            return NULL; /* trailing slash */
    }
    return rel;
}

static unsigned depth_of(const char *rel)
{
    unsigned d = 1;
    for (const char *c = rel; *c; c++)
        d += *c == '/';
    return d;
}

static bool reserved(const char *rel)
{
    static const char *const names[] = {"proc", "dev"};
    for (size_t i = 0; i < ARRAY_LEN(names); i++) {
        size_t n = strlen(names[i]);
        if (strncmp(rel, names[i], n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
            return true;
    }
    return false;
}

static struct mnt_op *op_add(struct jail_plan *p, enum mnt_kind kind, const char *rel)
{
    p->ops = xrealloc(p->ops, (p->n_ops + 1) * sizeof(*p->ops));
    struct mnt_op *op = &p->ops[p->n_ops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->dst = xstrdup(rel);
    op->depth = depth_of(rel);
    op->fd = -1;
    return op;
}

struct mnt_op *mnt_op_add(struct jail_plan *p, enum mnt_kind kind, const char *rel)
{
    return op_add(p, kind, rel);
}

static int add_bind(const struct jail_bind *b, struct jail_plan *p, struct jail_error *err)
{
    if (!b->src || b->src[0] != '/') {
        jail_err_set(err, 125, "bind %s: the source must be an absolute path",
                     b->src ? b->src : "(null)");
        return -1;
    }
    const char *dst = b->dst ? b->dst : b->src;
    const char *rel = check_dst(dst);
    if (!rel) {
        jail_err_set(err, 125,
                     "bind %s: '%s' is not a valid destination (absolute, no '.' "
                     "or '..', not '/')",
                     b->src, dst);
        return -1;
    }
    if (reserved(rel)) {
        jail_err_set(err, 125, "bind %s: %s is managed by nsjail-lite", b->src, dst);
        return -1;
    }
    struct stat st;
    if (lstat(b->src, &st) < 0) {
        if (errno == ENOENT && b->optional)
            return 0;
        jail_err_set(err, 125, "bind %s: %s", b->src, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode) && strcmp(dst, b->src) == 0) {
        /* Merged /usr: /bin -> usr/bin. The same link inside resolves into the
         * bound /usr; a bind would duplicate the tree instead. */
        char target[PATH_MAX];
        ssize_t n = readlink(b->src, target, sizeof(target) - 1);
        if (n < 0) {
            jail_err_set(err, 125, "bind %s: readlink: %s", b->src, strerror(errno));
            return -1;
        }
        target[n] = '\0';
        struct mnt_op *op = op_add(p, MNT_SYMLINK, rel);
        op->src = xstrdup(target);
        return 0;
    }
    if (stat(b->src, &st) < 0) {
        if (errno == ENOENT && b->optional)
            return 0;
        jail_err_set(err, 125, "bind %s: %s", b->src, strerror(errno));
        return -1;
    }
    struct mnt_op *op = op_add(p, MNT_BIND, rel);
    op->src = xstrdup(b->src);
    op->dir = S_ISDIR(st.st_mode);
    op->writable = b->writable;
    op->recursive = b->recursive;
    op->handed = b->chown && b->writable;
    return 0;
}

/* Whether a bind of the config already shows path at the same place (it or a directory
 * above it, bound at its own path). */
static bool shown_by_binds(const struct jail_config *cfg, const char *path)
{
    for (size_t i = 0; i < cfg->n_binds; i++) {
        const struct jail_bind *b = &cfg->binds[i];
        size_t n = strlen(b->src);
        if ((!b->dst || strcmp(b->dst, b->src) == 0) && strncmp(path, b->src, n) == 0 &&
            (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

/* The host programs of cfg->programs, their interpreters and libraries (elfdeps.h),
 * read-only at their own paths, except what the binds already show. */
static int add_programs(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    char **paths = NULL;
    size_t n = 0;
    int rc = 0;
    for (char **prog = cfg->programs; rc == 0 && prog && *prog; prog++)
        rc = elfdeps_resolve(*prog, &paths, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (shown_by_binds(cfg, paths[i]))
            continue;
        /* The file itself at the path the loader asks for (libz.so.1 is a link to
         * libz.so.1.2.13, /lib64's loader a link into /lib): no link to follow inside. */
        char *real = realpath(paths[i], NULL);
        if (!real) {
            jail_err_set(err, 125, "program file %s: %s", paths[i], strerror(errno));
            rc = -1;
            break;
        }
        struct jail_bind b = {.src = real, .dst = paths[i]};
        rc = add_bind(&b, p, err);
        free(real);
        if (rc == 0)
            plan_debug(p, "program file %s bound read-only", paths[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    return rc;
}

/* On a merged-/usr host /bin, /sbin, /lib and /lib64 are links into /usr, and programs
 * run /bin/sh whatever PATH says: a jail given programs gets the same links (into
 * its own /usr, which shows only what is bound), unless its binds put something there. */
static void add_merged_usr_links(const struct jail_config *cfg, struct jail_plan *p)
{
    static const char *const dirs[] = {"bin", "sbin", "lib", "lib64"};
    if (!cfg->programs || !cfg->programs[0])
        return;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char host[16], want[16], target[32];
        snprintf(host, sizeof(host), "/%s", dirs[i]);
        snprintf(want, sizeof(want), "usr/%s", dirs[i]);
        ssize_t n = readlink(host, target, sizeof(target) - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        if (strcmp(target[0] == '/' ? target + 1 : target, want) != 0)
            continue;
        bool taken = false;
        size_t len = strlen(dirs[i]);
        for (size_t j = 0; j < p->n_ops && !taken; j++)
            taken = strncmp(p->ops[j].dst, dirs[i], len) == 0 &&
                    (p->ops[j].dst[len] == '\0' || p->ops[j].dst[len] == '/');
        if (taken)
            continue;
        struct mnt_op *op = op_add(p, MNT_SYMLINK, dirs[i]);
        op->src = xstrdup(want);
        plan_debug(p, "/%s -> %s (merged /usr, as on the host)", dirs[i], want);
    }
}

static int add_tmpfs(struct jail_plan *p, const char *dst, uint64_t size_mb, unsigned mode,
                     struct jail_error *err)
{
    const char *rel = check_dst(dst);
    if (!rel || reserved(rel)) {
        jail_err_set(err, 125, "tmpfs %s: not a valid destination", dst);
        return -1;
    }
    if (size_mb == 0 || size_mb > 65536) {
        jail_err_set(err, 125, "tmpfs %s: size must be 1 to 65536 MiB", dst);
        return -1;
    }
    struct mnt_op *op = op_add(p, MNT_TMPFS, rel);
    op->size_mb = size_mb;
    op->mode = mode;
    return 0;
}

static void add_file(struct jail_plan *p, const char *rel, char *content)
{
    struct mnt_op *op = op_add(p, MNT_FILE, rel);
    op->src = content;
    op->mode = 0644;
}

static int cmp_depth(const void *a, const void *b)
{
    const struct mnt_op *x = a, *y = b;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return 0;
}

int mnt_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    if (!cfg->namespaces)
        return 0;
    for (size_t i = 0; i < cfg->n_binds; i++)
        if (add_bind(&cfg->binds[i], p, err) < 0)
            return -1;
    if (add_programs(cfg, p, err) < 0)
        return -1;
    add_merged_usr_links(cfg, p);
    if (add_tmpfs(p, "/tmp", cfg->tmp_size_mb, 01777, err) < 0)
        return -1;
    for (size_t i = 0; i < cfg->n_tmpfs; i++)
        if (add_tmpfs(p, cfg->tmpfs[i].dst, cfg->tmpfs[i].size_mb, 0755, err) < 0)
            return -1;
    op_add(p, MNT_PROC, "proc");
    op_add(p, MNT_DEV, "dev");
    add_file(p, "etc/passwd",
             xasprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                       "spoke:x:%u:%u:spoke:/tmp:/usr/sbin/nologin\n"
                       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                       (unsigned)cfg->inside_uid, (unsigned)cfg->inside_gid));
    add_file(p, "etc/group",
             xasprintf("root:x:0:\nspoke:x:%u:\nnogroup:x:65534:\n", (unsigned)cfg->inside_gid));
    add_file(p, "etc/hosts",
             xasprintf("127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t%s\n",
                       cfg->hostname ? cfg->hostname : "spoke"));
    /* A jail whose gateway is its resolver (net.c): names go to it, after the hosts
     * file. net_prepare checked the address. */
    if (cfg->net == JAIL_NET_VETH && cfg->veth_gateway && cfg->veth_host_cidr) {
        size_t n = strcspn(cfg->veth_host_cidr, "/");
        add_file(p, "etc/resolv.conf",
                 xasprintf("nameserver %.*s\noptions edns0\n", (int)n, cfg->veth_host_cidr));
        add_file(p, "etc/nsswitch.conf", xstrdup("hosts: files dns\n"));
    }
    /* An image's root around everything above (rootfs.c). */
    if (rootfs_prepare(cfg, p, err) < 0)
        return -1;
    /* qsort is not stable: order by depth, keeping the given order within a depth
     * through the index tie-break below. */
    for (size_t i = 0; i < p->n_ops; i++)
        p->ops[i].depth = p->ops[i].depth * 4096 + (unsigned)i;
    qsort(p->ops, p->n_ops, sizeof(*p->ops), cmp_depth);
    return 0;
}

void mnt_plan_free(struct jail_plan *p)
{
    for (size_t i = 0; i < p->n_ops; i++) {
        free(p->ops[i].src);
        free(p->ops[i].dst);
    }
    free(p->ops);
    p->ops = NULL;
    p->n_ops = 0;
}

/* ---- init side: syscalls only ---- */

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

/* Opens the parent directory of rel below rootfd, creating missing directories, never
 * following a symlink; *base points at the last component inside buf. */
static int open_parent(int rootfd, const char *rel, char *buf, size_t buflen, char **base)
{
    if (!str_copy(buf, rel, buflen)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    char *comp = buf;
    char *slash;
    while (dfd >= 0 && (slash = strchr(comp, '/')) != NULL) {
        *slash = '\0';
        if (mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST) {
            close(dfd);
            return -1;
        }
        int next = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        dfd = next;
        comp = slash + 1;
    }
    *base = comp;
    return dfd;
}

static int mountpoint(int rootfd, const char *rel, bool dir, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    char *base;
    int parent = open_parent(rootfd, rel, buf, sizeof(buf), &base);
    if (parent < 0)
        FAIL("mount point /%s: %s", rel, strerror(errno));
    int fd;
    if (dir) {
        if (mkdirat(parent, base, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            close(parent);
            FAIL("mount point /%s: %s", rel, strerror(e));
        }
        fd = openat(parent, base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
        if (mknodat(parent, base, S_IFREG | 0644, 0) < 0 && errno != EEXIST) {
            int e = errno;
            close(parent);
            FAIL("mount point /%s: %s", rel, strerror(e));
        }
        fd = openat(parent, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode))) {
            close(fd);
            fd = -1;
            errno = ENOTDIR;
        }
    }
    int e = errno;
    close(parent);
    if (fd < 0)
        FAIL("mount point /%s: %s", rel, strerror(e));
    return fd;
}

static int attach(int mnt_fd, int target_fd, const char *what, char *err, size_t errlen)
{
    if (move_mount(mnt_fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
        0)
        FAIL("mounting %s: %s", what, strerror(errno));
    return 0;
}

static int set_attr(int fd, const char *path, unsigned flags, uint64_t set, const char *what,
                    char *err, size_t errlen)
{
    struct mount_attr attr = {.attr_set = set};
    if (mount_setattr(fd, path, flags, &attr, sizeof(attr)) < 0)
        FAIL("setting the flags of %s: %s", what, strerror(errno));
    return 0;
}

/* Why a source cannot be cloned: the first component of its path that the same
 * lookup fails on (the one that blocks it), with that directory's owner and mode. */
static void explain_source(const char *src, int e, unsigned host_uid, char *err, size_t errlen)
{
    char prefix[PATH_MAX];
    size_t len = strlen(src);
    if (len >= sizeof(prefix) || (e != EACCES && e != EPERM)) {
        snprintf(err, errlen, "bind %s: %s", src, strerror(e));
        return;
    }
    for (size_t i = 1; i <= len; i++) {
        if (src[i] != '/' && src[i] != '\0')
            continue;
        memcpy(prefix, src, i);
        prefix[i] = '\0';
        int fd = open(prefix, O_PATH | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
            continue;
        }
        /* The parent of the component that failed is the directory it could not
         * search. */
        char parent[PATH_MAX];
        memcpy(parent, src, i);
        parent[i] = '\0';
        char *slash = strrchr(parent, '/');
        if (slash == parent)
            slash[1] = '\0';
        else if (slash)
            *slash = '\0';
        struct stat st;
        if (stat(parent, &st) == 0)
            snprintf(err, errlen,
                     "bind %s: %s: host uid %u cannot search %s (mode %04o); bind a path "
                     "outside it, or give nsjail-lite CAP_SYS_ADMIN so that it opens the "
                     "sources itself",
                     src, strerror(e), host_uid, parent, (unsigned)(st.st_mode & 07777));
        else
            snprintf(err, errlen, "bind %s: %s (at %s)", src, strerror(e), prefix);
        return;
    }
    snprintf(err, errlen, "bind %s: %s", src, strerror(e));
}

/* A detached clone of a host path with its flags already set: the path opened as only
 * root or the caller could have made it (bindsrc.c), the tree cloned from that
 * descriptor, the mounts below it only when asked. */
static int clone_tree(const struct jail_plan *p, const char *src, bool recursive, bool handed,
                      uint64_t attrs, char *err, size_t errlen)
{
    /* In the monitor, the host's owners are what they are; init (a caller without
     * CAP_SYS_ADMIN) sees them as the overflow id and follows no symlink instead. */
    int at = bindsrc_open(src, p->clone_privileged, geteuid(), handed ? p->host_uid : (uid_t)-1,
                          err, errlen);
    if (at < 0) {
        /* Who looked it up: the caller's host uid (the monitor), or the jail's (init). */
        if (errno == EACCES || errno == EPERM)
            explain_source(src, errno, p->clone_privileged ? (unsigned)geteuid() : p->host_uid, err,
                           errlen);
        return -1;
    }
    unsigned rec = recursive ? AT_RECURSIVE : 0;
    int fd = open_tree(at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec);
    int e = errno;
    close(at);
    if (fd < 0) {
        explain_source(src, e, p->clone_privileged ? (unsigned)geteuid() : p->host_uid, err,
                       errlen);
        return -1;
    }
    if (set_attr(fd, "", AT_EMPTY_PATH | rec, attrs, src, err, errlen) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A new, detached file system (tmpfs or proc). */
static int new_fs(const char *type, const char *size, const char *inodes, const char *mode,
                  unsigned attrs, char *err, size_t errlen)
{
    int fs = fsopen(type, FSOPEN_CLOEXEC);
    if (fs < 0)
        FAIL("fsopen %s: %s", type, strerror(errno));
    if ((size && fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0) ||
        (inodes && fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) < 0) ||
        (mode && fsconfig(fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0) ||
        fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        int e = errno;
        close(fs);
        FAIL("creating a %s: %s", type, strerror(e));
    }
    int m = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
    int e = errno;
    close(fs);
    if (m < 0)
        FAIL("fsmount %s: %s", type, strerror(e));
    return m;
}

static int do_proc(int rootfd, const struct mnt_op *op, char *err, size_t errlen)
{
    int target = mountpoint(rootfd, op->dst, true, err, errlen);
    if (target < 0)
        return -1;
    int m = new_fs("proc", NULL, NULL, NULL,
                   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err, errlen);
    int rc = m < 0 ? -1 : attach(m, target, "/proc", err, errlen);
    close(target);
    for (size_t i = 0; rc == 0 && i < ARRAY_LEN(proc_readonly); i++) {
        /* Bind each over itself, read-only: the kernel files there act on the host
         * or on all namespaces. */
        int c = open_tree(m, proc_readonly[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (c < 0) {
            if (errno == ENOENT)
                continue;
            snprintf(err, errlen, "bind /proc/%s: %s", proc_readonly[i], strerror(errno));
            rc = -1;
            break;
        }
        rc = set_attr(c, "", AT_EMPTY_PATH,
                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                      proc_readonly[i], err, errlen);
        if (rc == 0 && move_mount(c, "", m, proc_readonly[i], MOVE_MOUNT_F_EMPTY_PATH) < 0) {
            snprintf(err, errlen, "bind /proc/%s: %s", proc_readonly[i], strerror(errno));
            rc = -1;
        }
        close(c);
    }
    if (m >= 0)
        close(m);
    return rc;
}

static int do_dev(int rootfd, const struct mnt_op *op, const int *node_fds, char *err,
                  size_t errlen)
{
    int target = mountpoint(rootfd, op->dst, true, err, errlen);
    if (target < 0)
        return -1;
    int m =
        new_fs("tmpfs", "64k", "64", "0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err, errlen);
    int rc = m < 0 ? -1 : attach(m, target, "/dev", err, errlen);
    close(target);
    for (size_t i = 0; rc == 0 && i < N_DEV_NODES; i++) {
        int f = openat(m, dev_nodes[i], O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f < 0 || move_mount(node_fds[i], "", m, dev_nodes[i], MOVE_MOUNT_F_EMPTY_PATH) < 0) {
            snprintf(err, errlen, "/dev/%s: %s", dev_nodes[i], strerror(errno));
            rc = -1;
        }
        if (f >= 0)
            close(f);
    }
    static const char *const links[][2] = {{"/proc/self/fd", "fd"},
                                           {"/proc/self/fd/0", "stdin"},
                                           {"/proc/self/fd/1", "stdout"},
                                           {"/proc/self/fd/2", "stderr"}};
    for (size_t i = 0; rc == 0 && i < ARRAY_LEN(links); i++) {
        if (symlinkat(links[i][0], m, links[i][1]) < 0) {
            snprintf(err, errlen, "/dev/%s: %s", links[i][1], strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0)
        rc = set_attr(m, "", AT_EMPTY_PATH,
                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "/dev", err,
                      errlen);
    if (m >= 0)
        close(m);
    return rc;
}

static int do_tmpfs(int rootfd, const struct mnt_op *op, char *err, size_t errlen)
{
    char size[32], inodes[32], mode[8];
    snprintf(size, sizeof(size), "%llum", (unsigned long long)op->size_mb);
    /* A byte limit alone would let a spoke pin kernel memory with empty files. */
    snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)op->size_mb * 256 + 1024);
    snprintf(mode, sizeof(mode), "%o", op->mode);
    int target = mountpoint(rootfd, op->dst, true, err, errlen);
    if (target < 0)
        return -1;
    int m = new_fs("tmpfs", size, inodes, mode, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err, errlen);
    int rc = m < 0 ? -1 : attach(m, target, op->dst, err, errlen);
    close(target);
    if (m >= 0)
        close(m);
    return rc;
}

static int do_symlink(int rootfd, const struct mnt_op *op, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    char *base;
    int parent = open_parent(rootfd, op->dst, buf, sizeof(buf), &base);
    if (parent < 0 || symlinkat(op->src, parent, base) < 0) {
        int e = errno;
        if (parent >= 0)
            close(parent);
        FAIL("symlink /%s -> %s: %s", op->dst, op->src, strerror(e));
    }
    close(parent);
    return 0;
}

static int do_file(int rootfd, const struct mnt_op *op, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    char *base;
    int parent = open_parent(rootfd, op->dst, buf, sizeof(buf), &base);
    int fd = parent < 0 ? -1
                        : openat(parent, base, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
                                 op->mode);
    int e = errno;
    if (parent >= 0)
        close(parent);
    if (fd < 0)
        FAIL("creating /%s: %s", op->dst, strerror(e));
    if (write_all(fd, op->src, strlen(op->src)) < 0) {
        e = errno;
        close(fd);
        FAIL("writing /%s: %s", op->dst, strerror(e));
    }
    close(fd);
    return 0;
}

static int do_bind(int rootfd, const struct mnt_op *op, char *err, size_t errlen)
{
    int target = mountpoint(rootfd, op->dst, op->dir, err, errlen);
    if (target < 0)
        return -1;
    int rc = attach(op->fd, target, op->src, err, errlen);
    close(target);
    return rc;
}

/* Clones what is not cloned yet: everything when init runs it itself, nothing when
 * the monitor already has (mnt_open_sources). */
static int clone_sources(struct jail_plan *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n_ops; i++) {
        struct mnt_op *op = &p->ops[i];
        if (op->kind != MNT_BIND || op->fd >= 0)
            continue;
        uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        if (!op->writable)
            attrs |= MOUNT_ATTR_RDONLY;
        op->fd = clone_tree(p, op->src, op->recursive, op->handed, attrs, err, errlen);
        if (op->fd < 0)
            return -1;
    }
    for (size_t i = 0; i < N_DEV_NODES; i++) {
        if (p->dev_fds[i] >= 0)
            continue;
        char path[32];
        snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
        p->dev_fds[i] =
            clone_tree(p, path, false, false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err, errlen);
        if (p->dev_fds[i] < 0)
            return -1;
    }
    return 0;
}

int mnt_open_sources(struct jail_plan *p, char *err, size_t errlen)
{
    /* Without CAP_SYS_ADMIN on the host, open_tree(OPEN_TREE_CLONE) is refused here;
     * init, root of its own namespaces, then clones the sources itself. */
    if (!p->clone_privileged)
        return 0;
    return clone_sources(p, err, errlen);
}

void mnt_close_sources(struct jail_plan *p)
{
    for (size_t i = 0; i < p->n_ops; i++)
        if (p->ops[i].kind == MNT_BIND && p->ops[i].fd >= 0) {
            close(p->ops[i].fd);
            p->ops[i].fd = -1;
        }
    for (size_t i = 0; i < N_DEV_NODES; i++)
        if (p->dev_fds[i] >= 0) {
            close(p->dev_fds[i]);
            p->dev_fds[i] = -1;
        }
}

int mnt_build(struct jail_plan *p, char *err, size_t errlen)
{
    /* Nothing we mount may propagate to the host's mount namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        FAIL("making / private: %s", strerror(errno));
    if (clone_sources(p, err, errlen) < 0)
        return -1;
    if (!p->clone_privileged)
        plan_debug(p, "cloned the bind sources (read-only/nosuid/nodev as requested)");

    if (mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=1024") <
        0)
        FAIL("mounting the new root on %s: %s", STAGING, strerror(errno));
    int rootfd = open(STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        FAIL("opening the new root: %s", strerror(errno));

    int rc = 0;
    for (size_t i = 0; rc == 0 && i < p->n_ops; i++) {
        const struct mnt_op *op = &p->ops[i];
        const char *what = "mounted";
        switch (op->kind) {
        case MNT_BIND:
            rc = do_bind(rootfd, op, err, errlen);
            break;
        case MNT_SYMLINK:
            rc = do_symlink(rootfd, op, err, errlen);
            what = "linked";
            break;
        case MNT_TMPFS:
            rc = do_tmpfs(rootfd, op, err, errlen);
            break;
        case MNT_PROC:
            rc = do_proc(rootfd, op, err, errlen);
            break;
        case MNT_DEV:
            rc = do_dev(rootfd, op, p->dev_fds, err, errlen);
            break;
        case MNT_FILE:
            rc = do_file(rootfd, op, err, errlen);
            what = "wrote";
            break;
        }
        if (rc == 0)
            plan_debug(p, "%s /%s", what, op->dst);
    }
    if (rc < 0) {
        close(rootfd);
        return -1;
    }
    p->root_fd = rootfd;
    return 0;
}

int mnt_pivot(struct jail_plan *p, char *err, size_t errlen)
{
    if (fchdir(p->root_fd) < 0)
        FAIL("entering the new root: %s", strerror(errno));
    close(p->root_fd);
    p->root_fd = -1;
    /* pivot_root(".", ".") stacks the old root on top of the new one; detaching "."
     * then removes the old root from this namespace entirely. */
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        FAIL("pivot_root: %s", strerror(errno));
    if (umount2(".", MNT_DETACH) < 0)
        FAIL("detaching the old root: %s", strerror(errno));
    if (chdir("/") < 0)
        FAIL("chdir /: %s", strerror(errno));
    if (set_attr(AT_FDCWD, "/", 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "/",
                 err, errlen) < 0)
        return -1;
    plan_debug(p, "pivoted into the new root, old root detached, / read-only");
    return 0;
}
