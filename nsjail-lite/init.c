/* init: pid 1 of the jail's namespaces. It waits for the monitor to write its id maps,
 * builds the jail (identity, mounts, hostname, the network once the monitor has made
 * the veth, then pivot_root), starts the program, reaps every orphan, and when the program ends
 * reports its status and exits, which makes the kernel kill whatever is left in the
 * pid namespace. Setup errors go to exec_fd (the monitor relays them). */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* init is a copy of the caller, and anyone in the jail may read its /proc/1/cmdline
 * and the name in /proc/1/status: zero the caller's command line and environment in
 * this private copy of the memory, and call the process what it is. */
static void scrub_identity(void)
{
    prctl(PR_SET_NAME, "nsjail-init", 0, 0, 0);
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[2048];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    /* Fields after the command name (which may contain anything) start at field 3;
     * arg_start..env_end are fields 48 to 51. */
    char *p = strrchr(buf, ')');
    unsigned long long v[52] = {0};
    for (int field = 3; p && field <= 51; field++) {
        p = strchr(p + 1, ' ');
        if (p)
            v[field] = strtoull(p + 1, NULL, 10);
    }
    if (v[48] && v[49] > v[48] && v[49] - v[48] < (1u << 20))
        memset((void *)(uintptr_t)v[48], 0, v[49] - v[48]);
    if (v[50] && v[51] > v[50] && v[51] - v[50] < (1u << 20))
        memset((void *)(uintptr_t)v[50], 0, v[51] - v[50]);
}

/* Waits for the monitor's next go-ahead; end of file means it died or gave up. */
static void wait_for(int sync_fd, char expect)
{
    char c;
    ssize_t n;
    do {
        n = read(sync_fd, &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1 || c != expect)
        _exit(125);
}

void init_main(struct jail_plan *p, int sync_fd, int exec_fd, int status_fd)
{
    char why[JAIL_ERR_MAX];

    /* The jail dies with its monitor. getppid() is 0 in a new pid namespace, so the
     * check that the parent is still alive is the read below: it returns end of file
     * if the monitor is gone. */
    if (cgroup_enter(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        child_fail_errno(exec_fd, 125, "PR_SET_PDEATHSIG");
    scrub_identity();
    wait_for(sync_fd, 'M');

    /* Still host root in the new ipc namespace: the last moment its sysctls are ours. */
    if (ipc_limit_shm(p, why, sizeof(why)) < 0 || cgroup_unshare_ns(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    if (user_enter(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    /* Changing the uid cleared the death signal: arm it again. A monitor that died
     * in between is noticed at the next read of the sync pipe. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        child_fail_errno(exec_fd, 125, "PR_SET_PDEATHSIG");
    if (mnt_build(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    if (p->hostname && sethostname(p->hostname, strlen(p->hostname)) < 0)
        child_fail_errno(exec_fd, 125, "sethostname %s", p->hostname);

    /* The network is configured while the host's /proc is still mounted: eth0's IPv6
     * switch lives under /proc/sys, which is read-only in the new root. */
    wait_for(sync_fd, 'N');
    /* The death signal armed again above misses a monitor that died before: 'N' may
     * have been written just before it did (killed while the jail is starting). The
     * monitor holds the other end of the sync pipe until the program has exec'd, so
     * end of file now means it is gone, and from here on the signal covers it. */
    struct pollfd alive = {.fd = sync_fd, .events = POLLIN};
    if (poll(&alive, 1, 0) != 0)
        _exit(125);
    close(sync_fd);
    if (net_setup_inside(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    if (mnt_pivot(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);

    /* A new session: the jail has no controlling terminal, so it gets no job-control
     * signals from the caller's terminal and cannot TIOCSTI into it. */
    if (setsid() < 0)
        child_fail_errno(exec_fd, 125, "setsid");

    /* vfork: init is suspended until the program has exec'd (or failed), and its
     * address space (a copy of the caller's) is not copied once more. The child only
     * makes syscalls on its own stack frames and never returns. */
    pid_t program = vfork();
    if (program < 0)
        child_fail_errno(exec_fd, 125, "fork");
    if (program == 0) {
        close(status_fd);
        exec_program(p, exec_fd);
    }
    close(exec_fd);
    /* Only the status pipe is left; a leftover copy of anything else would keep the
     * caller's descriptors (the spoke's socket) open after the program has gone. */
    close_fds_except(&status_fd, 1);
    for (int fd = 0; fd < 3; fd++)
        close(fd);

    struct jail_rec rec;
    memset(&rec, 0, sizeof(rec));
    rec.type = REC_EXIT;
    for (;;) {
        int st;
        struct rusage ru;
        pid_t w = wait4(-1, &st, 0, &ru);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            _exit(125); /* ECHILD: cannot happen while the program runs */
        }
        if (w == program) {
            rec.wstatus = st;
            rec.cpu_ns = rusage_cpu_ns(&ru);
            break;
        }
    }
    (void)rec_send(status_fd, &rec);
    _exit(0);
}
