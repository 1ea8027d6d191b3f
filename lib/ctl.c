#include "ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CTL_MAX_FDS 4 /* room to receive (and close) a few more than we accept */

int ctl_send(int sock, json_t *msg, int fd)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    size_t len = strlen(text);
    if (len > CTL_MAX_MSG) {
        free(text);
        errno = EMSGSIZE;
        return -1;
    }
    struct iovec iov = {.iov_base = text, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&control, 0, sizeof(control));
        mh.msg_control = control.buf;
        mh.msg_controllen = sizeof(control.buf);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    free(text);
    return n < 0 ? -1 : 0;
}

/* Takes the first passed descriptor and closes every other one. */
static int take_fds(struct msghdr *mh)
{
    int keep = -1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (keep < 0)
                keep = fd;
            else
                close(fd);
        }
    }
    return keep;
}

int ctl_recv(int sock, json_t **msg, int *fd)
{
    *msg = NULL;
    *fd = -1;
    char *buf = malloc(CTL_MAX_MSG + 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    struct iovec iov = {.iov_base = buf, .iov_len = CTL_MAX_MSG + 1};
    union {
        char buf[CMSG_SPACE(CTL_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr mh = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = control.buf,
        .msg_controllen = sizeof(control.buf),
    };
    ssize_t n;
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        free(buf);
        return n == 0 ? 0 : -1;
    }
    int passed = take_fds(&mh);
    if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n > CTL_MAX_MSG) {
        if (passed >= 0)
            close(passed);
        free(buf);
        errno = EMSGSIZE;
        return -1;
    }
    json_t *root = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    if (!json_is_object(root)) {
        json_decref(root);
        if (passed >= 0)
            close(passed);
        errno = EBADMSG;
        return -1;
    }
    *msg = root;
    *fd = passed;
    return 1;
}
