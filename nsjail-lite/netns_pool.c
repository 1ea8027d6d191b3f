/* Network namespaces made ahead for jails without a network of their own (--net
 * none). The kernel's setup of a new network namespace (loopback, the IPv4 and IPv6
 * tables, their sysctls) was about 0.3 ms of a 3.3 ms /bin/true jail here, paid inside
 * clone() at every start; made ahead, a start opens one instead.
 *
 * The pool is /run/nsjail-lite/netns/MNT (root's, 0700; MNT the mount namespace's
 * inode: its mounts are seen in that namespace only, so a launcher in another one, a
 * systemd unit's, has a pool of its own; /run/nsjail-lite/netns is a private mount of
 * itself, so that nothing mounted in it propagates). Per network namespace, ID.ns is
 * the namespace (an nsfs bind mount, as `ip netns add` keeps one) and a token names its
 * state, as the cgroup pool's do: ID.prep.PID (being made by PID), ID.ready,
 * ID.taken.PID. The pool of a mount namespace whose directory has not changed for
 * NETNS_IDLE_S (no claim, no refill: a unit stopped, or idle) is removed by the next
 * refill in another; removing a mount point detaches it in its own namespace.
 *
 * Claim (the monitor, before it clones init): rename ID.ready to ID.taken.PID, open
 * ID.ns, unmount and remove it and the token, and check what was opened: a network
 * namespace, not the monitor's own. Anything else (a planted file, the host's
 * namespace bound there) is dropped and the next token tried; with none, the jail gets
 * a namespace of its own from clone() as before. The descriptor is then the only hold
 * on the namespace: the monitor enters it, clones init without CLONE_NEWNET, and goes
 * back to its own. A namespace is used once.
 *
 * It belongs to the host's user namespace, not the jail's: nothing in the jail ever
 * holds CAP_NET_ADMIN over it (a namespace init makes is its own user namespace's).
 * Loopback is brought up when it is made; init finds it up and leaves it.
 *
 * The refill runs in the pool helper after a jail (cgroup_pool.c), under an flock of
 * the directory: tokens of processes that are gone are swept, then namespaces are
 * made up to NETNS_POOL_SIZE: token, empty ID.ns, unshare(CLONE_NEWNET), loopback up,
 * /proc/self/ns/net bound onto ID.ns, the token renamed ready. */
#include "internal.h"
#include "netif.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define NETNS_ROOT "/run/nsjail-lite/netns"
#define NETNS_POOL_SIZE 4
#define NETNS_IDLE_S 600
#define POOL_DIR_MAX (sizeof(NETNS_ROOT) + 24)

/* This mount namespace's pool directory. */
static int pool_dir(char *buf, size_t size)
{
    struct stat st;
    if (stat("/proc/self/ns/mnt", &st) < 0)
        return -1;
    snprintf(buf, size, NETNS_ROOT "/%llu", (unsigned long long)st.st_ino);
    return 0;
}

/* ns: "ID.ns" for token's ID. */
static void ns_name(uint32_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%08x.ns", (unsigned)id);
}

/* Unmounts and removes ID.ns and the token (any state). */
static void drop_entry(const char *dir, int dfd, uint32_t id, const char *token)
{
    char ns[32], path[POOL_DIR_MAX + 32];
    ns_name(id, ns, sizeof(ns));
    snprintf(path, sizeof(path), "%s/%s", dir, ns);
    (void)umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
    (void)unlinkat(dfd, ns, 0);
    (void)unlinkat(dfd, token, 0);
}

/* A network namespace, and not the one this process is in. */
static bool fresh_netns(int fd)
{
    struct stat got, own;
    return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET && fstat(fd, &got) == 0 &&
           stat("/proc/self/ns/net", &own) == 0 &&
           !(got.st_dev == own.st_dev && got.st_ino == own.st_ino);
}

int netns_pool_claim(const struct jail_plan *p)
{
    char dir[POOL_DIR_MAX];
    int dfd = pool_dir(dir, sizeof(dir)) == 0
                  ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                  : -1;
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        plan_debug(p, "network namespace pool: none yet: clone makes one");
        return -1;
    }
    int fd = -1;
    struct dirent *e;
    while (fd < 0 && (e = readdir(d))) {
        uint32_t id;
        enum slot_state state;
        pid_t owner;
        if (!pool_parse_token(e->d_name, &id, &state, &owner) || state != SLOT_READY)
            continue;
        char taken[48], ns[32];
        snprintf(taken, sizeof(taken), "%08x.taken.%d", (unsigned)id, (int)getpid());
        if (renameat(dirfd(d), e->d_name, dirfd(d), taken) < 0)
            continue; /* ENOENT: a concurrent start had it first */
        ns_name(id, ns, sizeof(ns));
        fd = openat(dirfd(d), ns, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        drop_entry(dir, dirfd(d), id, taken);
        if (fd >= 0 && !fresh_netns(fd)) {
            plan_debug(p, "network namespace pool: %.8s is not a fresh network namespace: "
                          "dropped", taken);
            close(fd);
            fd = -1;
        } else if (fd >= 0) {
            plan_debug(p, "network namespace pool: claimed %.8s", taken);
        }
    }
    closedir(d);
    if (fd < 0)
        plan_debug(p, "network namespace pool: no ready namespace: clone makes one");
    return fd;
}

/* The directory a private mount of itself, as `ip netns` makes /run/netns: an nsfs
 * mount made in it then stays in this mount namespace. */
static int private_root(void)
{
    if (mkdir_p(NETNS_ROOT, 0700) < 0)
        return -1;
    if (mount(NULL, NETNS_ROOT, NULL, MS_PRIVATE | MS_REC, NULL) == 0)
        return 0;
    if (errno != EINVAL) /* EINVAL: not a mount point yet */
        return -1;
    if (mount(NETNS_ROOT, NETNS_ROOT, NULL, MS_BIND | MS_REC, NULL) < 0)
        return -1;
    return mount(NULL, NETNS_ROOT, NULL, MS_PRIVATE | MS_REC, NULL);
}

/* Token first (prep), the mount point, a new namespace with loopback up bound onto it,
 * then the token's rename to ready. Leaves this process in the new namespace. */
static int make_one(const char *dir, int dfd)
{
    uint32_t id = 0;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
        id = (uint32_t)now_mono_ns() ^ (uint32_t)getpid();
    char prep[48], ready[32], ns[32], path[POOL_DIR_MAX + 32];
    snprintf(prep, sizeof(prep), "%08x.prep.%d", (unsigned)id, (int)getpid());
    snprintf(ready, sizeof(ready), "%08x.ready", (unsigned)id);
    ns_name(id, ns, sizeof(ns));
    snprintf(path, sizeof(path), "%s/%s", dir, ns);
    int fd = openat(dfd, prep, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    close(fd);
    fd = openat(dfd, ns, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = -1;
    if (fd >= 0) {
        close(fd);
        if (unshare(CLONE_NEWNET) == 0 && netif_up("lo") == 0 &&
            mount("/proc/self/ns/net", path, NULL, MS_BIND, NULL) == 0)
            rc = renameat(dfd, prep, dfd, ready);
    }
    if (rc < 0)
        drop_entry(dir, dfd, id, prep);
    return rc;
}

/* Every entry of a directory with tokens: unmounted (in this namespace, if it is one
 * here) and removed; then the directory. */
static void drain(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        uint32_t id;
        enum slot_state state;
        pid_t owner;
        if (pool_parse_token(e->d_name, &id, &state, &owner))
            drop_entry(dir, dirfd(d), id, e->d_name);
    }
    closedir(d);
    (void)rmdir(dir);
}

/* The pools of other mount namespaces that nobody has touched for NETNS_IDLE_S. */
static void expire_idle(const char *own)
{
    DIR *root = opendir(NETNS_ROOT);
    if (!root)
        return;
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(root))) {
        char dir[POOL_DIR_MAX];
        struct stat st;
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || strlen(e->d_name) > 20)
            continue;
        snprintf(dir, sizeof(dir), NETNS_ROOT "/%s", e->d_name);
        if (strcmp(dir, own) != 0 && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
            now - st.st_mtime > NETNS_IDLE_S)
            drain(dir);
    }
    closedir(root);
}

void netns_pool_refill(void)
{
    char dir[POOL_DIR_MAX];
    if (private_root() < 0 || pool_dir(dir, sizeof(dir)) < 0 ||
        (mkdir(dir, 0700) < 0 && errno != EEXIST))
        return;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    /* One refiller at a time; the others leave it to that one. */
    if (flock(dfd, LOCK_EX | LOCK_NB) < 0) {
        close(dfd);
        return;
    }
    int ready = 0;
    int sfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset */
    DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
    if (!d && sfd >= 0)
        close(sfd);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        uint32_t id;
        enum slot_state state;
        pid_t owner;
        if (!pool_parse_token(e->d_name, &id, &state, &owner))
            continue;
        if (state == SLOT_READY) {
            /* Not an nsfs mount here: left by a dead mount namespace that had this
             * one's inode (the kernel reuses them), never claimable. */
            char ns[32];
            struct statfs sf;
            ns_name(id, ns, sizeof(ns));
            int fd = openat(dfd, ns, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            bool live = fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type == NSFS_MAGIC;
            if (fd >= 0)
                close(fd);
            if (live)
                ready++;
            else
                drop_entry(dir, dfd, id, e->d_name);
        } else if (kill(owner, 0) < 0 && errno == ESRCH)
            drop_entry(dir, dfd, id, e->d_name); /* its maker or claimer is gone */
    }
    if (d)
        closedir(d);
    while (ready < NETNS_POOL_SIZE && make_one(dir, dfd) == 0)
        ready++;
    close(dfd);
    expire_idle(dir);
}
