#include "ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room to receive (and close) a few more descriptors than any message carries. */
#define CTL_RECV_FDS (CTL_MAX_FDS + 4)

int ctl_sendv(int sock, json_t *msg, const int *fds, size_t nfds)
{
    if (nfds > CTL_MAX_FDS) {
        errno = EINVAL;
        return -1;
    }
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    size_t len = strlen(text);
    if (len > CTL_MAX_MSG) {
        explicit_bzero(text, len);
        free(text);
        errno = EMSGSIZE;
        return -1;
    }
    struct iovec iov = {.iov_base = text, .iov_len = len};
    union {
        char buf[CMSG_SPACE(CTL_MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        memset(&control, 0, sizeof(control));
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    int saved = errno;
    /* A message may carry a secret's value (the hub's "secret" and "tls"). */
    explicit_bzero(text, len);
    free(text);
    errno = saved;
    return n < 0 ? -1 : 0;
}

int ctl_send(int sock, json_t *msg, int fd)
{
    return ctl_sendv(sock, msg, &fd, fd >= 0 ? 1 : 0);
}

/* Keeps the first max passed descriptors (in order) and closes every other one. */
static size_t take_fds(struct msghdr *mh, int *keep, size_t max)
{
    size_t kept = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (kept < max)
                keep[kept++] = fd;
            else
                close(fd);
        }
    }
    return kept;
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

int ctl_recvv(int sock, json_t **msg, int *fds, size_t maxfds, size_t *nfds)
{
    *msg = NULL;
    *nfds = 0;
    if (maxfds > CTL_MAX_FDS)
        maxfds = CTL_MAX_FDS;
    char *buf = malloc(CTL_MAX_MSG + 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    struct iovec iov = {.iov_base = buf, .iov_len = CTL_MAX_MSG + 1};
    union {
        char buf[CMSG_SPACE(CTL_RECV_FDS * sizeof(int))];
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
    size_t passed = take_fds(&mh, fds, maxfds);
    if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n > CTL_MAX_MSG) {
        close_all(fds, passed);
        explicit_bzero(buf, (size_t)n);
        free(buf);
        errno = EMSGSIZE;
        return -1;
    }
    json_t *root = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
    /* The text may hold a secret's value: the parsed copy is the receiver's to wipe. */
    explicit_bzero(buf, (size_t)n);
    free(buf);
    if (!json_is_object(root)) {
        json_decref(root);
        close_all(fds, passed);
        errno = EBADMSG;
        return -1;
    }
    *msg = root;
    *nfds = passed;
    return 1;
}

int ctl_recv(int sock, json_t **msg, int *fd)
{
    size_t n;
    *fd = -1;
    int rc = ctl_recvv(sock, msg, fd, 1, &n);
    if (rc <= 0 || n == 0)
        *fd = -1;
    return rc;
}
