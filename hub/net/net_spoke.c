#include "net_spoke.h"

#include "config/config.h"
#include "log.h"
#include "net.h"
#include "net_gateway.h"
#include "net_proxy.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int net_spoke_register(struct proxy_sup *proxy, struct gateway *gw, const struct net_spoke *s,
                       int listen_fd, const struct spoke_secrets *sec, char *err, size_t errlen)
{
    char listen[40], dns_listen[40];
    snprintf(listen, sizeof(listen), "%s:%u", s->host_ip, s->proxy_port);
    snprintf(dns_listen, sizeof(dns_listen), "%s:53", s->host_ip);
    int dns_fd = -1;
    if (gateway_egress(gw)) {
        dns_fd = gateway_dns_socket(gw, s->host_ip, err, errlen);
        if (dns_fd < 0)
            return -1;
    }
    struct proxy_spoke ps = {.key = s->key,
                             .user = s->user,
                             .allow = s->m->allow,
                             .ports = s->m->ports,
                             .n_ports = s->m->n_ports,
                             .tcp = s->m->tcp,
                             .listen = listen,
                             .fd = listen_fd,
                             .dns_listen = dns_fd >= 0 ? dns_listen : NULL,
                             .dns_fd = dns_fd,
                             .sec = sec};
    int rc = proxy_add_spoke(proxy, &ps);
    if (rc < 0)
        snprintf(err, errlen, "netproxy is not available: %s", strerror(errno));
    if (dns_fd >= 0)
        close(dns_fd); /* netproxy's entry keeps a copy, for its restarts */
    return rc;
}

char **net_spoke_loopback_grants(const struct manifest *m)
{
    char **out = NULL;
    size_t n = 0;
    for (size_t i = 0; i < m->n_tcp; i++) {
        if (!manifest_tcp_loopback(m->tcp[i]))
            continue;
        out = xrealloc(out, (n + 2) * sizeof(char *));
        out[n++] = xstrdup(m->tcp[i]);
        out[n] = NULL;
    }
    return out;
}

void net_spoke_forwards(struct proxy_sup *proxy, const char *key, const char *name, int sink)
{
    for (;;) {
        char text[64];
        struct iovec iov = {.iov_base = text, .iov_len = sizeof(text) - 1};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } cbuf;
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cbuf.buf,
                            .msg_controllen = sizeof(cbuf)};
        ssize_t n = recvmsg(sink, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n <= 0)
            break;
        text[n] = '\0';
        int fd = -1;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
            cm->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        if (fd < 0)
            continue;
        if (!key || !key[0] || !proxy || proxy_forward(proxy, key, text, fd) < 0)
            log_warnx("spoke %s: cannot forward its loopback listener %s", name ? name : "?",
                      text);
        else
            log_debug("spoke %s: its %s goes to netproxy", name, text);
    }
    close(sink);
}
