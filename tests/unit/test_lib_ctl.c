/* lib/ctl: control messages with a descriptor attached, and hostile senders. */
#include "ctl.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "seqpacket pair");
    int devnull = open("/dev/null", O_RDONLY);
    json_t *msg = json_pack("{s:s,s:s}", "op", "add", "spoke", "a");
    CHECK(ctl_send(sv[0], msg, devnull) == 0, "send with fd");
    json_decref(msg);
    json_t *got;
    int fd;
    CHECK(ctl_recv(sv[1], &got, &fd) == 1 && fd >= 0, "receive with fd");
    CHECK_STR(json_string_value(json_object_get(got, "op")), "add", "message intact");
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "received fd is close-on-exec");
    close(fd);
    json_decref(got);

    CHECK(send(sv[0], "[1]", 3, 0) == 3, "send a non-object");
    CHECK(ctl_recv(sv[1], &got, &fd) == -1 && errno == EBADMSG, "non-object refused");
    CHECK(send(sv[0], "{bad", 4, 0) == 4, "send broken JSON");
    CHECK(ctl_recv(sv[1], &got, &fd) == -1 && errno == EBADMSG, "broken JSON refused");

    size_t big = CTL_MAX_MSG + 100;
    char *buf = malloc(big);
    memset(buf, ' ', big);
    buf[0] = '{';
    buf[big - 1] = '}';
    int sndbuf = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    CHECK(send(sv[0], buf, big, 0) == (ssize_t)big, "send an oversized message");
    CHECK(ctl_recv(sv[1], &got, &fd) == -1 && errno == EMSGSIZE, "oversized message refused");
    free(buf);
    close(sv[0]);
    CHECK(ctl_recv(sv[1], &got, &fd) == 0, "peer close reported");
    close(sv[1]);
    close(devnull);
    return test_done();
}
