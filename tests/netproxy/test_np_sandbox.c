/* netproxy's seccomp filter, from the attacker's side: code running inside the
 * sandboxed proxy tries what an exploit would (run a program, read a file, reach a
 * local daemon over a unix socket, sniff with a packet socket, open a listener, map
 * executable memory) and fails for the right reason. Each attempt also runs without
 * the filter, as a control, where it succeeds. */
#include "tests/unit/test.h"

#include "netproxy/control/control.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Each attempt returns 0 when the operation worked, else errno. */
static int try_exec(void)
{
    char *argv[] = {"/bin/true", NULL};
    char *envp[] = {NULL};
    execve("/bin/true", argv, envp);
    return errno;
}

static int try_open(void)
{
    int fd = open("/etc/passwd", O_RDONLY);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

static int try_create(void)
{
    int fd = open("/tmp/npx-sandbox-probe", O_WRONLY | O_CREAT, 0600);
    if (fd < 0)
        return errno;
    close(fd);
    unlink("/tmp/npx-sandbox-probe");
    return 0;
}

static int try_socket(int family, int type, int proto)
{
    int fd = socket(family, type, proto);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

static int try_unix(void)
{
    return try_socket(AF_UNIX, SOCK_STREAM, 0);
}

static int try_packet(void)
{
    return try_socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
}

static int try_netlink(void)
{
    return try_socket(AF_NETLINK, SOCK_RAW, 0);
}

static int try_inet(void)
{
    return try_socket(AF_INET, SOCK_STREAM, 0);
}

static int try_bind(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return errno;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = bind(fd, (struct sockaddr *)&in, sizeof(in));
    int e = rc < 0 ? errno : 0;
    close(fd);
    return e;
}

static int try_mmap_exec(void)
{
    void *p =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return errno;
    munmap(p, 4096);
    return 0;
}

static int try_mprotect_exec(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return errno;
    int rc = mprotect(p, 4096, PROT_READ | PROT_EXEC);
    int e = rc < 0 ? errno : 0;
    munmap(p, 4096);
    return e;
}

static int try_fork(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    return 0;
}

static int try_setuid(void)
{
    return setuid(0) < 0 ? errno : 0;
}

static int try_ptrace(void)
{
    return ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 ? errno : 0;
}

static int try_splice(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return errno;
    char buf[4];
    if (getrandom(buf, sizeof(buf), 0) != sizeof(buf))
        return errno;
    close(p[0]);
    close(p[1]);
    return 0;
}

/* Runs fn in a child, with or without the filter. Returns its result, or 1000+signal
 * when it was killed. */
static int run(int (*fn)(void), bool sandboxed)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char err[256];
        if (sandboxed && sandbox_apply(err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", err);
            _exit(250);
        }
        int r = fn();
        _exit(r > 249 ? 249 : r);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        return 1000 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("ok - sandbox tests # SKIP need root for the controls\n");
        return 0;
    }
    static const struct {
        const char *what;
        int (*fn)(void);
        int want; /* inside the sandbox */
    } cases[] = {
        {"execve a program", try_exec, 1000 + SIGSYS},
        {"open /etc/passwd", try_open, EPERM},
        {"create a file in /tmp", try_create, EPERM},
        {"unix socket (local daemons)", try_unix, EPERM},
        {"packet socket (sniffing)", try_packet, EPERM},
        {"netlink socket (routes, interfaces)", try_netlink, EPERM},
        {"bind a listener", try_bind, EPERM},
        {"mmap executable memory", try_mmap_exec, EPERM},
        {"mprotect memory to executable", try_mprotect_exec, EPERM},
        {"fork a process", try_fork, EPERM},
        {"setuid(0)", try_setuid, EPERM},
        {"ptrace", try_ptrace, 1000 + SIGSYS},
    };
#if defined(__SANITIZE_ADDRESS__)
    /* The SAN=1 build lets LeakSanitizer clone, ptrace, open /proc and map memory. */
    static const char *const san_relaxed[] = {
        "fork a process",         "ptrace",
        "open /etc/passwd",       "create a file in /tmp",
        "mmap executable memory", "mprotect memory to executable"};
#endif
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
#if defined(__SANITIZE_ADDRESS__)
        bool relaxed = false;
        for (size_t j = 0; j < sizeof(san_relaxed) / sizeof(san_relaxed[0]); j++)
            relaxed = relaxed || strcmp(san_relaxed[j], cases[i].what) == 0;
        if (relaxed) {
            printf("ok - %s # SKIP relaxed in the sanitizer build\n", cases[i].what);
            continue;
        }
#endif
        int control = run(cases[i].fn, false);
        CHECK(control == 0, "control: %s works without the filter (got %d)", cases[i].what,
              control);
        int got = run(cases[i].fn, true);
        CHECK(got == cases[i].want, "sandboxed: %s fails with %s (got %d)", cases[i].what,
              cases[i].want >= 1000 ? "SIGSYS" : "EPERM", got);
    }
    CHECK(run(try_inet, true) == 0, "sandboxed: an inet socket still works (the proxy dials)");
    CHECK(run(try_splice, true) == 0, "sandboxed: pipes and getrandom still work (relay, ids)");
    return test_done();
}
