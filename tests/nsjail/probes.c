/* Escape probes shared by tests/nsjail/hostile and tests/matrix/escape_spoke: the
 * outcome reporting, the child process each probe runs in, and the probes of kernel
 * interfaces that both programs try. See probes.h. */
#include "probes.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int pipe_fd = -1; /* the probe's pipe to probe_run, in the probe's child */

int probe_pipe_fd(void)
{
    return pipe_fd;
}

void probe_run(probe_fn fn, void *ud, unsigned timeout_s, char *out, size_t outlen)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(out, outlen, "error:pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        pipe_fd = p[1];
        alarm(timeout_s); /* a hung probe ends as signal:SIGALRM */
        fn(ud);
        probe_report("error:the probe returned without an outcome");
    }
    close(p[1]);
    char buf[PROBE_OUT_MAX] = "";
    ssize_t n = c < 0 ? -1 : read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    int st = 0;
    if (c > 0)
        waitpid(c, &st, 0);
    if (n > 0) {
        buf[n] = '\0';
        snprintf(out, outlen, "%s", buf);
    } else if (c > 0 && WIFSIGNALED(st)) {
        const char *sig = sigabbrev_np(WTERMSIG(st));
        snprintf(out, outlen, "signal:SIG%s", sig ? sig : "?");
    } else if (c < 0) {
        snprintf(out, outlen, "error:fork: %s", strerror(errno));
    } else {
        snprintf(out, outlen, "error:no outcome (status %d)", st);
    }
}

void probe_report(const char *fmt, ...)
{
    char buf[PROBE_OUT_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(pipe_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
    _exit(0);
}

_Noreturn void probe_report_errno(void)
{
    const char *name = strerrorname_np(errno);
    probe_report("errno:%s", name ? name : "unknown");
}

_Noreturn void probe_outcome(long rc)
{
    if (rc < 0)
        probe_report_errno();
    probe_report("ok");
}

int probe_connect_tcp(const char *addr, int port, int timeout_ms)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(s);
            errno = e;
            return -1;
        }
        struct pollfd p = {.fd = s, .events = POLLOUT};
        if (poll(&p, 1, timeout_ms) != 1) {
            close(s);
            errno = ETIMEDOUT;
            return -1;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            close(s);
            errno = err;
            return -1;
        }
    }
    return s;
}

int probe_connect_unix(const char *name)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    socklen_t len;
    if (name[0] == '@') {
        size_t n = strlen(name + 1);
        memcpy(sun.sun_path + 1, name + 1, n);
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    } else {
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", name);
        len = sizeof(sun);
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    if (connect(s, (struct sockaddr *)&sun, len) < 0) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}

_Noreturn void probe_open_ro(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    probe_report("ok:opened %s", path);
}

/* Opened for writing, never written: a success is reported without any effect. */
_Noreturn void probe_open_wr(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    probe_report("ok:opened %s for writing", path);
}

bool probe_status_field(const char *key, char *value, size_t size)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t klen = strlen(key);
    bool found = false;
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *v = line + klen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(value, size, "%.*s", (int)strcspn(v, "\n"), v);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

_Noreturn void probe_caps(void)
{
    static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        char v[64];
        if (!probe_status_field(sets[i], v, sizeof(v)))
            probe_report("errno:ENOENT:no %s in /proc/self/status", sets[i]);
        if (strtoull(v, NULL, 16) != 0)
            probe_report("ok:%s=%s", sets[i], v);
    }
    probe_report("blocked:every capability set is empty");
}

_Noreturn void probe_dev_disk(void)
{
    static const char *const disks[] = {"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda",
                                        "/dev/loop0"};
    int first = 0;
    for (size_t i = 0; i < sizeof(disks) / sizeof(disks[0]); i++) {
        int fd = open(disks[i], O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            probe_report("ok:opened %s", disks[i]);
        if (!first)
            first = errno;
        if (errno != ENOENT)
            first = errno; /* the most telling reason */
    }
    errno = first;
    probe_report_errno();
}

_Noreturn void probe_unshare_user(void)
{
    probe_outcome(unshare(CLONE_NEWUSER));
}

_Noreturn void probe_setns(void)
{
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    probe_outcome(setns(fd, CLONE_NEWNET));
}

_Noreturn void probe_bpf(void)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    probe_outcome(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
}

_Noreturn void probe_finit_module(void)
{
    long rc = syscall(SYS_finit_module, -1, "", 0);
    if (rc < 0 && errno == EBADF)
        probe_report("ok:permitted (the kernel went on to check the descriptor: EBADF)");
    probe_outcome(rc);
}

_Noreturn void probe_perf_event_open(void)
{
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof(pe));
    pe.size = sizeof(pe);
    pe.type = PERF_TYPE_SOFTWARE;
    pe.config = PERF_COUNT_SW_CPU_CLOCK;
    pe.disabled = 1;
    pe.exclude_kernel = 1;
    probe_outcome(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
}

_Noreturn void probe_keyctl(void)
{
    probe_outcome(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}
