/* The jail's network. Every jail gets a fresh network namespace; --net none leaves it
 * with loopback only. --net veth adds one veth pair:
 *
 *   monitor (libnl): creates the pair in one RTM_NEWLINK, the host side in the
 *     caller's netns or in veth_host_netns_fd, the peer ("eth0") directly inside the
 *     jail's netns (IFLA_NET_NS_PID), never moved there later; both ends down. It
 *     turns IPv6 address generation off on the host side (no link-local address),
 *     gives it its address and brings it up.
 *   init (before pivot_root, syscalls only): disables IPv6 on eth0 (so there is no
 *     IPv6 path to the host side's services), gives it its address, brings it and
 *     loopback up. The address's prefix route to the host side is the only route: no
 *     default route, no DNS, unless veth_gateway makes the host side the jail's
 *     gateway: then a default route goes through it (and mnt.c writes resolv.conf).
 *
 * Loopback listeners (loopback_listen): the monitor enters init's network namespace
 * after the veth and makes each listening socket there, on 127.0.0.1 or ::1 (with
 * IP_FREEBIND: init has not brought lo up yet), then hands it to the caller over
 * loopback_sink. They belong to the caller from then on: the program can connect to
 * them but never holds them.
 *
 * The host side is deleted by the kernel with the jail's netns, asynchronously: the
 * teardown costs the jail nothing.
 *
 * Addresses are IPv4, must share one prefix, and may never be (or cover)
 * 169.254.169.254, the cloud metadata address. */
#include "internal.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/veth.h>
#include <net/route.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define JAIL_IFNAME "eth0"

static bool parse_v4(const char *s, const char *what, struct cidr *out, struct jail_error *err)
{
    if (!s || !ifaddr_parse(s, out)) {
        jail_err_set(err, 125, "--net veth: %s address '%s' is not ADDRESS/PREFIX", what,
                     s ? s : "");
        return false;
    }
    if (out->family != AF_INET) {
        jail_err_set(err, 125, "--net veth: %s address %s: only IPv4 is supported", what, s);
        return false;
    }
    if (out->prefix < 8 || out->prefix > 30) {
        jail_err_set(err, 125, "--net veth: %s address %s: the prefix must be /8 to /30", what, s);
        return false;
    }
    return true;
}

static bool covers_metadata(const struct cidr *c)
{
    struct cidr metadata;
    cidr_parse("169.254.169.254/32", &metadata);
    return cidr_overlaps(c, &metadata);
}

static void sockaddr_of(const struct cidr *c, struct sockaddr_in *sin)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    memcpy(&sin->sin_addr, c->addr, 4);
}

/* The loopback listeners: loopback addresses only, at most NET_MAX_LOOPBACK, and a sink. */
static int prepare_loopback(const struct jail_config *cfg, struct jail_plan *p,
                            struct jail_error *err)
{
    p->lo_sink = -1;
    size_t n = 0;
    for (char **a = cfg->loopback_listen; a && *a; a++) {
        socklen_t len;
        struct sockaddr_storage *ss = &p->lo_listen[n];
        if (n == NET_MAX_LOOPBACK) {
            jail_err_set(err, 125, "at most %d loopback listeners", NET_MAX_LOOPBACK);
            return -1;
        }
        if (!cfg->namespaces || !sockaddr_parse_hostport(*a, ss, &len) ||
            addr_classify((struct sockaddr *)ss) != ADDR_LOOPBACK ||
            sockaddr_port((struct sockaddr *)ss) == 0) {
            jail_err_set(err, 125,
                         "loopback listener '%s': expected 127.x.y.z:PORT or [::1]:PORT (and "
                         "namespaces)",
                         *a);
            return -1;
        }
        n++;
    }
    if (n && cfg->loopback_sink < 0) {
        jail_err_set(err, 125, "loopback listeners need a sink to send them to");
        return -1;
    }
    p->n_lo_listen = n;
    p->lo_sink = n ? cfg->loopback_sink : -1;
    return 0;
}

int net_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    p->net = cfg->namespaces ? cfg->net : JAIL_NET_NONE;
    p->veth_netns_fd = -1;
    /* Only root makes and mounts the pool's namespaces (clone_privileged: set before). */
    p->netns_pool = cfg->namespaces && p->net == JAIL_NET_NONE && cfg->netns_pool >= 0 &&
                    p->clone_privileged;
    if (prepare_loopback(cfg, p, err) < 0)
        return -1;
    if (p->net != JAIL_NET_VETH)
        return 0;
    if (!parse_v4(cfg->veth_host_cidr, "host", &p->veth_host, err) ||
        !parse_v4(cfg->veth_spoke_cidr, "spoke", &p->veth_spoke, err))
        return -1;
    struct sockaddr_in h, s;
    sockaddr_of(&p->veth_host, &h);
    sockaddr_of(&p->veth_spoke, &s);
    /* The whole prefix becomes reachable from the jail, so it must not contain the
     * metadata address either. */
    if (covers_metadata(&p->veth_host) || covers_metadata(&p->veth_spoke)) {
        jail_err_set(err, 125,
                     "--net veth: %s,%s covers 169.254.169.254 (cloud metadata), which a jail "
                     "may never reach",
                     cfg->veth_host_cidr, cfg->veth_spoke_cidr);
        return -1;
    }
    struct cidr host_net = p->veth_host;
    if (p->veth_host.prefix != p->veth_spoke.prefix || !cidr_contains(&host_net, (void *)&s) ||
        memcmp(p->veth_host.addr, p->veth_spoke.addr, 4) == 0) {
        jail_err_set(err, 125,
                     "--net veth: %s and %s must be two different addresses of the same prefix",
                     cfg->veth_host_cidr, cfg->veth_spoke_cidr);
        return -1;
    }
    uint32_t a = ntohl(s.sin_addr.s_addr), mask = ~0u << (32 - p->veth_spoke.prefix);
    uint32_t ha = ntohl(h.sin_addr.s_addr);
    if ((a & ~mask) == 0 || (a & ~mask) == ~mask || (ha & ~mask) == 0 || (ha & ~mask) == ~mask) {
        jail_err_set(err, 125,
                     "--net veth: %s,%s: neither address may be the network or broadcast "
                     "address of its prefix",
                     cfg->veth_host_cidr, cfg->veth_spoke_cidr);
        return -1;
    }
    if (cfg->veth_host_ifname) {
        size_t len = strlen(cfg->veth_host_ifname);
        if (len == 0 || len >= IF_NAMESIZE || strpbrk(cfg->veth_host_ifname, "/: \t\n") ||
            strcmp(cfg->veth_host_ifname, ".") == 0 || strcmp(cfg->veth_host_ifname, "..") == 0) {
            jail_err_set(err, 125, "veth host interface name '%s' is invalid",
                         cfg->veth_host_ifname);
            return -1;
        }
        str_copy(p->veth_ifname, cfg->veth_host_ifname, sizeof(p->veth_ifname));
    }
    p->veth_gateway = cfg->veth_gateway;
    if (cfg->veth_host_netns_fd >= 0) {
        int type = ioctl(cfg->veth_host_netns_fd, NS_GET_NSTYPE);
        if (type != CLONE_NEWNET) {
            jail_err_set(err, 125, "--veth-host-netns: descriptor %d is not a network namespace",
                         cfg->veth_host_netns_fd);
            return -1;
        }
        p->veth_netns_fd = cfg->veth_host_netns_fd;
    }
    return 0;
}

/* ---- monitor side ---- */

#define NLFAIL(what, rc)                                                                           \
    do {                                                                                           \
        snprintf(err, errlen, "%s: %s", what, nl_geterror(rc));                                    \
        goto out;                                                                                  \
    } while (0)

int net_create_veth(const struct jail_plan *p, pid_t init_pid, char *err, size_t errlen)
{
    char ifname[IF_NAMESIZE];
    if (p->veth_ifname[0])
        str_copy(ifname, p->veth_ifname, sizeof(ifname));
    else
        snprintf(ifname, sizeof(ifname), "vnj%d", (int)getpid());
    /* The monitor moves itself into the gateway netns: the host side is created there
     * and nothing else of the monitor needs the caller's netns afterwards. */
    if (p->veth_netns_fd >= 0 && setns(p->veth_netns_fd, CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "entering --veth-host-netns: %s", strerror(errno));
        return -1;
    }
    int ret = -1, rc;
    struct nl_sock *sk = nl_socket_alloc();
    struct rtnl_link *host = rtnl_link_veth_alloc();
    struct rtnl_link *change = NULL, *orig = NULL;
    struct rtnl_addr *addr = NULL;
    struct nl_addr *local = NULL;
    if (!sk || !host) {
        snprintf(err, errlen, "libnl: out of memory");
        goto out;
    }
    if ((rc = nl_connect(sk, NETLINK_ROUTE)) < 0)
        NLFAIL("netlink", rc);
    struct rtnl_link *peer = rtnl_link_veth_get_peer(host);
    rtnl_link_set_name(host, ifname);
    rtnl_link_set_name(peer, JAIL_IFNAME);
    rtnl_link_set_ns_pid(peer, init_pid);
    if ((rc = rtnl_link_add(sk, host, NLM_F_CREATE | NLM_F_EXCL)) < 0)
        NLFAIL("creating the veth pair", rc);
    plan_debug(p, "created veth %s (host side) and " JAIL_IFNAME " inside the jail's netns",
               ifname);

    unsigned ifindex = if_nametoindex(ifname);
    if (ifindex == 0) {
        snprintf(err, errlen, "veth %s: %s", ifname, strerror(errno));
        goto out;
    }
    /* The kernel refuses IPv6 settings in the creating request, so change them while
     * the link is still down, before a link-local address could exist. */
    change = rtnl_link_alloc();
    orig = rtnl_link_alloc();
    if (!change || !orig) {
        snprintf(err, errlen, "libnl: out of memory");
        goto out;
    }
    rtnl_link_set_ifindex(orig, (int)ifindex);
    if ((rc = rtnl_link_inet6_set_addr_gen_mode(change, IN6_ADDR_GEN_MODE_NONE)) < 0 ||
        (rc = rtnl_link_change(sk, orig, change, 0)) < 0)
        NLFAIL("veth: turning IPv6 address generation off", rc);
    addr = rtnl_addr_alloc();
    local = nl_addr_build(AF_INET, p->veth_host.addr, 4);
    if (!addr || !local) {
        snprintf(err, errlen, "libnl: out of memory");
        goto out;
    }
    nl_addr_set_prefixlen(local, (int)p->veth_host.prefix);
    rtnl_addr_set_ifindex(addr, (int)ifindex);
    if ((rc = rtnl_addr_set_local(addr, local)) < 0)
        NLFAIL("veth host address", rc);
    if ((rc = rtnl_addr_add(sk, addr, 0)) < 0)
        NLFAIL("setting the veth host address", rc);
    rtnl_link_put(change);
    change = rtnl_link_alloc();
    if (!change) {
        snprintf(err, errlen, "libnl: out of memory");
        goto out;
    }
    rtnl_link_set_flags(change, IFF_UP);
    if ((rc = rtnl_link_change(sk, orig, change, 0)) < 0)
        NLFAIL("bringing the veth host side up", rc);
    char text[64];
    cidr_format(&p->veth_host, text, sizeof(text));
    plan_debug(p, "veth %s: address %s, up", ifname, text);
    ret = 0;
out:
    if (local)
        nl_addr_put(local);
    if (addr)
        rtnl_addr_put(addr);
    if (host)
        rtnl_link_put(host);
    if (change)
        rtnl_link_put(change);
    if (orig)
        rtnl_link_put(orig);
    if (sk)
        nl_socket_free(sk);
    return ret;
}

int net_listen_loopback(const struct jail_plan *p, pid_t init_pid, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)init_pid);
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "entering the jail's network namespace: %s", strerror(errno));
        if (ns >= 0)
            close(ns);
        return -1;
    }
    close(ns);
    for (size_t i = 0; i < p->n_lo_listen; i++) {
        const struct sockaddr *sa = (const struct sockaddr *)&p->lo_listen[i];
        bool v6 = sa->sa_family == AF_INET6;
        char text[64], ip[INET6_ADDRSTRLEN];
        sockaddr_format_ip(sa, ip, sizeof(ip));
        snprintf(text, sizeof(text), v6 ? "[%s]:%u" : "%s:%u", ip, sockaddr_port(sa));
        int one = 1;
        int s = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0 ||
            (v6 ? setsockopt(s, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one))
                : setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one))) < 0 ||
            setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(s, sa, sockaddr_len(sa)) < 0 || listen(s, 128) < 0) {
            snprintf(err, errlen, "loopback listener %s: %s", text, strerror(errno));
            if (s >= 0)
                close(s);
            return -1;
        }
        struct iovec iov = {.iov_base = text, .iov_len = strlen(text)};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } cbuf;
        memset(&cbuf, 0, sizeof(cbuf));
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cbuf.buf,
                            .msg_controllen = sizeof(cbuf.buf)};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &s, sizeof(int));
        ssize_t n;
        do
            n = sendmsg(p->lo_sink, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        close(s);
        if (n < 0) {
            snprintf(err, errlen, "handing the loopback listener %s over: %s", text,
                     strerror(errno));
            return -1;
        }
        plan_debug(p, "listening on %s in the jail's namespace, handed to the caller", text);
    }
    close(p->lo_sink);
    return 0;
}

/* ---- init side: ioctls only ---- */

static int set_up(int sock, const char *name, char *err, size_t errlen)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    str_copy(ifr.ifr_name, name, sizeof(ifr.ifr_name));
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0) {
        snprintf(err, errlen, "%s: SIOCGIFFLAGS: %s", name, strerror(errno));
        return -1;
    }
    if (ifr.ifr_flags & IFF_UP)
        return 0;
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0) {
        snprintf(err, errlen, "bringing %s up: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

/* Through the host's /proc, which shows the sysctls of the opener's netns. Without
 * IPv6 in the kernel there is nothing to disable. */
static int disable_ipv6(const char *ifname, char *err, size_t errlen)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0 || write_all(fd, "1", 1) < 0) {
        snprintf(err, errlen, "disabling IPv6 on %s: %s", ifname, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* Everything through the host side: it takes each connection (the hub's gateway). */
static int add_default_route(int sock, const struct jail_plan *p, char *err, size_t errlen)
{
    struct rtentry rt;
    memset(&rt, 0, sizeof(rt));
    struct sockaddr_in any = {.sin_family = AF_INET}, gw;
    sockaddr_of(&p->veth_host, &gw);
    memcpy(&rt.rt_dst, &any, sizeof(any));
    memcpy(&rt.rt_genmask, &any, sizeof(any));
    memcpy(&rt.rt_gateway, &gw, sizeof(gw));
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    rt.rt_dev = (char *)JAIL_IFNAME;
    if (ioctl(sock, SIOCADDRT, &rt) < 0) {
        snprintf(err, errlen, "default route through the veth: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int net_setup_inside(const struct jail_plan *p, char *err, size_t errlen)
{
    if (p->net == JAIL_NET_VETH && disable_ipv6(JAIL_IFNAME, err, errlen) < 0)
        return -1;
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int rc = set_up(sock, "lo", err, errlen);
    if (rc == 0 && p->net == JAIL_NET_VETH) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        str_copy(ifr.ifr_name, JAIL_IFNAME, sizeof(ifr.ifr_name));
        struct sockaddr_in sin;
        sockaddr_of(&p->veth_spoke, &sin);
        memcpy(&ifr.ifr_addr, &sin, sizeof(sin));
        if (ioctl(sock, SIOCSIFADDR, &ifr) < 0) {
            snprintf(err, errlen, JAIL_IFNAME " address: %s", strerror(errno));
            rc = -1;
        }
        if (rc == 0) {
            sin.sin_addr.s_addr = htonl(~0u << (32 - p->veth_spoke.prefix));
            memcpy(&ifr.ifr_netmask, &sin, sizeof(sin));
            if (ioctl(sock, SIOCSIFNETMASK, &ifr) < 0) {
                snprintf(err, errlen, JAIL_IFNAME " netmask: %s", strerror(errno));
                rc = -1;
            }
        }
        if (rc == 0)
            rc = set_up(sock, JAIL_IFNAME, err, errlen);
        if (rc == 0 && p->veth_gateway)
            rc = add_default_route(sock, p, err, errlen);
    }
    close(sock);
    if (rc == 0)
        plan_debug(p, "network: lo up%s",
                   p->net == JAIL_NET_VETH ? ", " JAIL_IFNAME " addressed" : "");
    return rc;
}
