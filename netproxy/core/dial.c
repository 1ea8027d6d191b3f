#include "dial.h"

#include "netaddr.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

int dial_start(const struct sockaddr *sa, int *out)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -1;
    int one = 1;
    /* Small TLS records must not wait for Nagle: the latency target is microseconds. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, sa, sockaddr_len(sa)) == 0) {
        *out = fd;
        return 0;
    }
    if (errno == EINPROGRESS) {
        /* On loopback and in-host networks the handshake has usually completed by
         * now: one poll() saves a trip through the event loop. */
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, 0) == 1) {
            int err = (p.revents & (POLLERR | POLLHUP)) ? dial_finish(fd) : 0;
            if (err == 0) {
                *out = fd;
                return 0;
            }
            close(fd);
            errno = err;
            return -1;
        }
        *out = fd;
        return 1;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

int dial_finish(int fd)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return errno;
    return err;
}
