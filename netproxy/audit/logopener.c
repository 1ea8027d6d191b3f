#include "logopener.h"

#include "ctl.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct logopener {
    int sock;
    pid_t pid;
};

/* The helper may receive, open, send and exit; nothing else. */
static void helper_sandbox(void)
{
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (!f)
        _exit(1);
    static const int allowed[] = {
        SCMP_SYS(recvmsg),    SCMP_SYS(recvfrom), SCMP_SYS(sendmsg),      SCMP_SYS(sendto),
        SCMP_SYS(openat),     SCMP_SYS(open),     SCMP_SYS(close),        SCMP_SYS(exit),
        SCMP_SYS(exit_group), SCMP_SYS(brk),      SCMP_SYS(mmap),         SCMP_SYS(munmap),
        SCMP_SYS(write),      SCMP_SYS(getpid),   SCMP_SYS(rt_sigreturn), SCMP_SYS(clock_gettime),
        SCMP_SYS(madvise),    SCMP_SYS(futex),    SCMP_SYS(getrandom),    SCMP_SYS(mprotect),
        SCMP_SYS(newfstatat), SCMP_SYS(fstat),    SCMP_SYS(lseek),        SCMP_SYS(rt_sigprocmask),
        SCMP_SYS(gettid),     SCMP_SYS(tgkill),
    };
    for (size_t i = 0; i < ARRAY_LEN(allowed); i++)
        if (seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0) < 0)
            _exit(1);
    if (seccomp_load(f) < 0)
        _exit(1);
    seccomp_release(f);
}

static _Noreturn void helper_main(int sock, const char *path, bool sandbox)
{
    /* Only the request socket and stderr stay open in here. */
    if (sock > 3)
        close_range(3, (unsigned)sock - 1, 0);
    close_range((unsigned)sock + 1, ~0U, 0);
    prctl(PR_SET_NAME, "netproxy-log", 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    char *p = strdup(path);
    if (!p)
        _exit(1);
    /* jansson seeds its hash function from /dev/urandom on first use: do it now. */
    json_object_seed(0);
    if (sandbox)
        helper_sandbox();
    for (;;) {
        char req[16];
        ssize_t n = recv(sock, req, sizeof(req), 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            free(p);
            _exit(0); /* the proxy is gone */
        }
        int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
        int err = fd < 0 ? errno : 0;
        json_t *reply =
            fd < 0 ? json_pack("{s:b,s:i}", "ok", 0, "errno", err) : json_pack("{s:b}", "ok", 1);
        if (!reply || ctl_send(sock, reply, fd) < 0)
            _exit(1);
        json_decref(reply);
        if (fd >= 0)
            close(fd);
    }
}

struct logopener *logopener_start(const char *path, bool sandbox, char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "log opener: socketpair: %s", strerror(errno));
        return NULL;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "log opener: fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }
    if (pid == 0) {
        close(sv[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent)
            _exit(0);
        signal(SIGHUP, SIG_IGN);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_IGN);
        helper_main(sv[1], path, sandbox);
    }
    close(sv[1]);
    struct logopener *o = xcalloc(1, sizeof(*o));
    o->sock = sv[0];
    o->pid = pid;
    return o;
}

int logopener_open(struct logopener *o)
{
    if (send(o->sock, "open", 4, MSG_NOSIGNAL) != 4)
        return -1;
    struct pollfd p = {.fd = o->sock, .events = POLLIN};
    int rc;
    do {
        rc = poll(&p, 1, 2000);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    if (rc < 0)
        return -1;
    json_t *reply;
    int fd;
    rc = ctl_recv(o->sock, &reply, &fd);
    if (rc <= 0) {
        if (rc == 0)
            errno = EPIPE;
        return -1;
    }
    bool ok = json_is_true(json_object_get(reply, "ok"));
    int e = (int)json_integer_value(json_object_get(reply, "errno"));
    json_decref(reply);
    if (!ok || fd < 0) {
        if (fd >= 0)
            close(fd);
        errno = e > 0 ? e : EIO;
        return -1;
    }
    return fd;
}

int logopener_fd(const struct logopener *o)
{
    return o->sock;
}

void logopener_stop(struct logopener *o)
{
    if (!o)
        return;
    close(o->sock); /* the helper sees EOF and exits */
    int status;
    while (waitpid(o->pid, &status, 0) < 0 && errno == EINTR)
        ;
    free(o);
}
