#include "gateway.h"
#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#define NETNS_RUN_DIR "/run/netns"

struct gateway {
    int fd;
    char *name; /* published under /run/netns, or NULL */
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
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(err, errlen, "gateway namespace: socket: %s", strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    str_copy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name));
    int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP;
        rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    if (rc < 0)
        snprintf(err, errlen, "gateway namespace: bringing lo up: %s", strerror(errno));
    close(s);
    return rc;
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
    if (rc == 0 && name)
        rc = publish(name, err, errlen);
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
    struct gateway *g = xcalloc(1, sizeof(*g));
    g->fd = gw;
    g->name = name ? xstrdup(name) : NULL;
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

int gateway_netns_fd(const struct gateway *g)
{
    return g->fd;
}

int gateway_listen(struct gateway *g, const char *ip, uint16_t port, char *err, size_t errlen)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1) {
        snprintf(err, errlen, "bad listen address %s", ip);
        errno = EINVAL;
        return -1;
    }
    int orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig < 0 || setns(g->fd, CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "entering the gateway namespace: %s", strerror(errno));
        if (orig >= 0)
            close(orig);
        return -1;
    }
    int one = 1;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int saved = 0;
    if (s < 0 || setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) < 0 ||
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(s, 128) < 0) {
        saved = errno;
        snprintf(err, errlen, "listening on %s:%u in the gateway namespace: %s", ip, port,
                 strerror(saved));
        if (s >= 0)
            close(s);
        s = -1;
    }
    if (setns(orig, CLONE_NEWNET) < 0)
        fatal("returning from the gateway network namespace");
    close(orig);
    if (s < 0)
        errno = saved;
    return s;
}
