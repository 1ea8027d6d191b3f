#include "net_gateway.h"
#include "log.h"
#include "net_egress.h"
#include "netif.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <unistd.h>

#define NETNS_RUN_DIR "/run/netns"

struct gateway {
    int fd;
    char *name;  /* published under /run/netns, or NULL */
    bool egress; /* transparent egress is on (net_egress.h) */
};

/* Runs inside the new namespace: loopback up, and ARP/forwarding settings that keep
 * each veth to itself. A missing sysctl is reported: the isolation claim depends on it. */
static int gateway_setup_inside(char *err, size_t errlen)
{
    static const struct {
        const char *path, *value;
    } sysctls[] = {
        {"/proc/sys/net/ipv4/ip_forward", "0"},
        {"/proc/sys/net/ipv4/conf/all/arp_ignore", "1"},
        {"/proc/sys/net/ipv4/conf/default/arp_ignore", "1"},
        {"/proc/sys/net/ipv4/conf/all/arp_announce", "2"},
        {"/proc/sys/net/ipv4/conf/default/arp_announce", "2"},
        {"/proc/sys/net/ipv4/conf/all/rp_filter", "1"},
        {"/proc/sys/net/ipv4/conf/default/rp_filter", "1"},
    };
    for (size_t i = 0; i < ARRAY_LEN(sysctls); i++) {
        int fd = open(sysctls[i].path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write_all(fd, sysctls[i].value, 1) < 0) {
            snprintf(err, errlen, "gateway namespace: %s: %s", sysctls[i].path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        close(fd);
    }
    int rc = netif_up("lo");
    if (rc < 0)
        snprintf(err, errlen, "gateway namespace: bringing lo up: %s", strerror(errno));
    return rc;
}

/* The interfaces of the namespace ns_fd other than loopback, or -1. Runs in the calling
 * thread, which it returns to its own namespace (gateway_new's pattern). */
static int foreign_interfaces(int ns_fd, char *names, size_t len)
{
    int orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig < 0 || setns(ns_fd, CLONE_NEWNET) < 0) {
        if (orig >= 0)
            close(orig);
        return -1;
    }
    struct if_nameindex *ifs = if_nameindex();
    if (setns(orig, CLONE_NEWNET) < 0)
        fatal("returning from a stale gateway network namespace");
    close(orig);
    if (!ifs)
        return -1;
    int n = 0;
    names[0] = '\0';
    for (struct if_nameindex *i = ifs; i->if_index; i++) {
        if (strcmp(i->if_name, "lo") == 0)
            continue;
        size_t used = strlen(names);
        snprintf(names + used, len - used, "%s%s", n ? " " : "", i->if_name);
        n++;
    }
    if_freenameindex(ifs);
    return n;
}

/* Names tried after NAME when a running hub holds it: NAME-2 ... NAME-<this>. */
#define GATEWAY_NAMES 64
/* remove_stale()/publish(): the name is held by a running hub (try the next one). */
#define IN_USE (-2)

/* /run/netns/NAME exists. A running hub holds an exclusive flock on its gateway
 * namespace (see gateway_new); one that nobody holds and that has nothing but loopback
 * in it was left by a hub that ended without gateway_free() (kill -9, a crash): it is
 * removed, so that the hub can start again. An empty file with no namespace mounted
 * on it is the same kind of leftover. Anything else is refused with the reason. */
static int remove_stale(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (sf.f_type == NSFS_MAGIC) {
        char names[256];
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            snprintf(err, errlen, "%s: the gateway namespace is in use by a running hub", path);
            close(fd);
            return IN_USE;
        }
        int n = foreign_interfaces(fd, names, sizeof(names));
        if (n != 0) {
            if (n < 0)
                snprintf(err, errlen, "%s exists and cannot be inspected: %s", path,
                         strerror(errno));
            else
                snprintf(err, errlen,
                         "%s exists and holds interfaces (%s): not a gateway left by a hub; "
                         "remove it with `ip netns del` if it is stale",
                         path, names);
            close(fd);
            return -1;
        }
    }
    close(fd);
    log_warnx("removing the gateway namespace %s that a hub which did not shut down left", path);
    if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT) {
        snprintf(err, errlen, "unmounting the stale %s: %s", path, strerror(errno));
        return -1;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "removing the stale %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int publish(const char *name, char *err, size_t errlen)
{
    if (mkdir_p(NETNS_RUN_DIR, 0755) < 0) {
        snprintf(err, errlen, "%s: %s", NETNS_RUN_DIR, strerror(errno));
        return -1;
    }
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, name);
    int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0 && errno == EEXIST) {
        int rc = remove_stale(path, err, errlen);
        if (rc < 0)
            return rc;
        fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        /* Another hub published it between our removal and our create. */
        if (fd < 0 && errno == EEXIST) {
            snprintf(err, errlen, "%s: taken by another hub meanwhile", path);
            return IN_USE;
        }
    }
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    close(fd);
    if (mount("/proc/thread-self/ns/net", path, "none", MS_BIND, NULL) < 0) {
        snprintf(err, errlen, "bind-mounting the gateway namespace on %s: %s", path,
                 strerror(errno));
        unlink(path);
        return -1;
    }
    return 0;
}

struct gateway *gateway_new(const char *name, char *err, size_t errlen)
{
    int orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig < 0) {
        snprintf(err, errlen, "opening our network namespace: %s", strerror(errno));
        return NULL;
    }
    if (unshare(CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "creating the gateway network namespace: %s%s", strerror(errno),
                 errno == EPERM ? " (namespace mode needs root or CAP_SYS_ADMIN)" : "");
        close(orig);
        return NULL;
    }
    int gw = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int rc = gw < 0 ? -1 : gateway_setup_inside(err, errlen);
    if (gw < 0)
        snprintf(err, errlen, "opening the gateway namespace: %s", strerror(errno));
    /* Held for the hub's life, released by the kernel however it ends: what tells a
     * later hub that a published name is a leftover (remove_stale). A fresh
     * namespace, so nobody else can hold it. */
    if (gw >= 0 && flock(gw, LOCK_EX | LOCK_NB) < 0)
        log_warn("locking the gateway namespace");
    /* The name is a host-wide resource: with several hubs of one configuration the
     * first takes NAME, the others NAME-2, NAME-3, ... (each held by its hub's lock). */
    char *taken = NULL;
    int dir_lock = -1;
    if (rc == 0 && name) {
        /* Hubs publish one at a time: otherwise one could take another's fresh, not
         * yet mounted file for a leftover and remove it. */
        if (mkdir_p(NETNS_RUN_DIR, 0755) == 0)
            dir_lock = open(NETNS_RUN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_lock >= 0)
            while (flock(dir_lock, LOCK_EX) < 0 && errno == EINTR)
                ;
        rc = IN_USE;
        for (int i = 1; i <= GATEWAY_NAMES && rc == IN_USE; i++) {
            taken = i == 1 ? xstrdup(name) : xasprintf("%s-%d", name, i);
            rc = publish(taken, err, errlen);
            if (rc != 0) {
                free(taken);
                taken = NULL;
            }
        }
        if (rc == IN_USE) {
            snprintf(err, errlen,
                     "the gateway namespace names %s and %s-2 to %s-%d are all in use by "
                     "running hubs",
                     name, name, name, GATEWAY_NAMES);
            rc = -1;
        }
    }
    if (dir_lock >= 0)
        close(dir_lock);
    /* Back to where we came from whatever happened: the rest of the hub (and libcurl
     * for the agent) must never run inside the gateway. */
    if (setns(orig, CLONE_NEWNET) < 0)
        fatal("returning from the gateway network namespace");
    close(orig);
    if (rc < 0) {
        if (gw >= 0)
            close(gw);
        return NULL;
    }
    if (taken && strcmp(taken, name) != 0)
        log_info("gateway namespace %s is in use by another hub: this hub's is %s", name, taken);
    struct gateway *g = xcalloc(1, sizeof(*g));
    g->fd = gw;
    g->name = taken;
    return g;
}

void gateway_free(struct gateway *g)
{
    if (!g)
        return;
    if (g->name) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, g->name);
        umount2(path, MNT_DETACH);
        unlink(path);
        free(g->name);
    }
    close(g->fd);
    free(g);
}

const char *gateway_name(const struct gateway *g)
{
    return g->name;
}

int gateway_netns_fd(const struct gateway *g)
{
    return g->fd;
}

bool gateway_egress(const struct gateway *g)
{
    return g->egress;
}

/* Moves the calling thread into the gateway namespace: the descriptor of its own to
 * come back to with leave(), or -1 and why. */
static int enter(const struct gateway *g, char *err, size_t errlen)
{
    int orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig < 0 || setns(g->fd, CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "entering the gateway namespace: %s", strerror(errno));
        if (orig >= 0)
            close(orig);
        return -1;
    }
    return orig;
}

static void leave(int orig)
{
    if (setns(orig, CLONE_NEWNET) < 0)
        fatal("returning from the gateway network namespace");
    close(orig);
}

int gateway_enable_egress(struct gateway *g, uint16_t proxy_port, char *err, size_t errlen)
{
    if (g->egress)
        return 0;
    int orig = enter(g, err, errlen);
    if (orig < 0)
        return -1;
    int rc = egress_install(proxy_port, err, errlen);
    leave(orig);
    g->egress = rc == 0;
    return rc;
}

/* A socket of type bound to ip:port in the gateway namespace: IP_FREEBIND, so that it
 * can exist before the veth address does, and with transparent egress IP_TRANSPARENT,
 * so that tproxy may hand it connections and datagrams for any destination. */
static int gateway_socket(struct gateway *g, int type, const char *ip, uint16_t port, char *err,
                          size_t errlen)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1) {
        snprintf(err, errlen, "bad listen address %s", ip);
        errno = EINVAL;
        return -1;
    }
    int orig = enter(g, err, errlen);
    if (orig < 0)
        return -1;
    int one = 1;
    int s = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int saved = 0;
    if (s < 0 || setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) < 0 ||
        (g->egress && setsockopt(s, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one)) < 0) ||
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
        (type == SOCK_STREAM && listen(s, 128) < 0)) {
        saved = errno;
        snprintf(err, errlen, "%s on %s:%u in the gateway namespace: %s",
                 type == SOCK_STREAM ? "listening" : "binding", ip, port, strerror(saved));
        if (s >= 0)
            close(s);
        s = -1;
    }
    leave(orig);
    if (s < 0)
        errno = saved;
    return s;
}

int gateway_listen(struct gateway *g, const char *ip, uint16_t port, char *err, size_t errlen)
{
    return gateway_socket(g, SOCK_STREAM, ip, port, err, errlen);
}

int gateway_dns_socket(struct gateway *g, const char *ip, char *err, size_t errlen)
{
    return gateway_socket(g, SOCK_DGRAM, ip, 53, err, errlen);
}
