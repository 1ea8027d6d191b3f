/* The listening sockets of hub serve (the MCP endpoint, the metrics), bound here so
 * that the address is parsed strictly and classified: beyond loopback needs TLS or an
 * explicit --insecure-http (serve_http.c). */
#include "netaddr.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int serve_listen_socket(const char *hostport, bool beyond_loopback_ok, bool *loopback, char *err,
                        size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (!sockaddr_parse_hostport(hostport, &ss, &len)) {
        snprintf(err, errlen, "expected ADDR:PORT or [ADDR]:PORT with a numeric address");
        return -1;
    }
    bool lo = addr_classify((struct sockaddr *)&ss) == ADDR_LOOPBACK;
    if (loopback)
        *loopback = lo;
    if (!lo && !beyond_loopback_ok) {
        snprintf(err, errlen, "not a loopback address");
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 512) < 0) {
        snprintf(err, errlen, "cannot listen: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}
