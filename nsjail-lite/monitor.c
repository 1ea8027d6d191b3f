/* The monitor: the process jail_start() forks and returns as the jail's pid. It stays
 * in the caller's namespaces, keeps the host-id lock, does the privileged half of
 * the setup (id maps, veth), enforces the wall time, and reports how the program
 * ended, with the reason, before exiting the same way (same code, or killed by the
 * same signal), so a caller that only waitpid()s still sees the program's status.
 *
 * With jail_exec() (the command line) the launcher itself is the monitor: it reports
 * errors on stderr and the status line on status_fd, and exits with the launcher's
 * codes (128+N for a signal) instead of dying of the signal. */
#include "internal.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JAIL_NS_FLAGS                                                                              \
    (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)

struct monitor {
    struct jail_plan *p;
    int report_fd; /* library mode: the caller's pipe; -1 for jail_exec */
    int status_fd; /* jail_exec: --status-fd, or -1 */
    pid_t child;   /* init, or the program without namespaces */
    bool group;    /* without namespaces: the program leads its own process group */
};

static void write_status_line(struct monitor *m, const struct jail_status *st)
{
    if (m->status_fd >= 0 && jail_status_write(m->status_fd, st) < 0)
        log_warn("writing the status line");
}

/* A child of the monitor keeps neither of its pipes to the caller: only the monitor
 * reports, and the caller sees their end when the monitor ends. */
static void close_monitor_pipes(const struct monitor *m)
{
    if (m->report_fd >= 0)
        close(m->report_fd);
    if (m->status_fd >= 0)
        close(m->status_fd);
}

static _Noreturn void report_error(struct monitor *m, int code, const char *msg)
{
    if (m->report_fd >= 0) {
        struct jail_rec r;
        memset(&r, 0, sizeof(r));
        r.type = REC_ERROR;
        r.exit_code = code;
        str_copy(r.message, msg, sizeof(r.message));
        (void)rec_send(m->report_fd, &r);
    } else {
        log_warnx("%s", msg);
        struct jail_status st;
        jail_status_of_error(code, &st);
        write_status_line(m, &st);
    }
    if (m->child > 0) {
        kill(m->group ? -m->child : m->child, SIGKILL);
        while (waitpid(m->child, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    cgroup_remove(m->p, NULL, 0);
    _exit(code);
}

/* Fresh dispositions: the caller's handlers mean nothing here, and SIG_IGN would be
 * inherited by the program across execve. */
static void reset_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &sa, NULL);
}

/* After the caller's descriptors are gone, 0-2 must be open, or a pipe created now
 * could land there and be clobbered when the program's stdio is set up. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) < 0) {
            int n = open("/dev/null", O_RDWR);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
    }
}

static void close_caller_fds(const struct jail_plan *p, int report_fd, int status_fd)
{
    int keep[64];
    size_t n = 0;
    if (report_fd >= 0)
        keep[n++] = report_fd;
    if (status_fd >= 0)
        keep[n++] = status_fd;
    if (p->lock_fd >= 0)
        keep[n++] = p->lock_fd;
    if (p->veth_netns_fd >= 0)
        keep[n++] = p->veth_netns_fd;
    if (p->lo_sink >= 0)
        keep[n++] = p->lo_sink;
    for (int i = 0; i < 3; i++)
        if (p->stdio[i] >= 3)
            keep[n++] = p->stdio[i];
    for (size_t i = 0; i < p->n_keep_fds && n < ARRAY_LEN(keep); i++)
        keep[n++] = p->keep_fds[i];
    close_fds_except(keep, n);
}

/* Closes what only the jail needs once it holds its own copies. */
static void close_jail_fds(const struct jail_plan *p)
{
    for (int i = 0; i < 3; i++)
        if (p->stdio[i] >= 3)
            close(p->stdio[i]);
    for (size_t i = 0; i < p->n_keep_fds; i++)
        close(p->keep_fds[i]);
}

/* A step of the monitor failed while init was building: if init failed first (the
 * likely cause), its message is the one worth reporting. */
static _Noreturn void setup_failed(struct monitor *m, int exec_fd, const char *why)
{
    struct jail_rec r;
    set_nonblock(exec_fd, true);
    if (rec_recv(exec_fd, &r) == 1 && r.type == REC_ERROR)
        report_error(m, r.exit_code, r.message);
    report_error(m, 125, why);
}

/* Relays the exec result: end of file once the program was exec'd, or the error of
 * whichever stage failed. */
static void await_exec(struct monitor *m, int exec_fd)
{
    struct jail_rec r;
    int rc = rec_recv(exec_fd, &r);
    close(exec_fd);
    if (rc == 1 && r.type == REC_ERROR)
        report_error(m, r.exit_code, r.message);
    if (rc != 0)
        report_error(m, 125, "the jail's setup ended without a result");
    memset(&r, 0, sizeof(r));
    r.type = REC_STARTED;
    if (m->report_fd >= 0 && rec_send(m->report_fd, &r) < 0)
        report_error(m, 125, "the caller went away");
    plan_debug(m->p, "program started");
}

static const char *reason_for(const struct jail_plan *p, int wstatus, uint64_t cpu_ns)
{
    if (!WIFSIGNALED(wstatus))
        return "";
    switch (WTERMSIG(wstatus)) {
    case SIGSYS:
        return "seccomp";
    case SIGXCPU:
        return "rlimit-cpu";
    case SIGXFSZ:
        return "rlimit-fsize";
    case SIGKILL:
        /* The hard CPU limit ends a program that caught SIGXCPU with SIGKILL. */
        if (p->cpu_s && cpu_ns >= p->cpu_s * 1000000000ULL)
            return "rlimit-cpu";
        return "";
    default:
        return "";
    }
}

/* Waits for the child, ending the jail at the wall time or when asked to (SIGTERM,
 * SIGINT, SIGHUP: jail_kill and the launcher's own signals). Returns the reason the
 * monitor ended it ("" if it ended by itself) and fills *wstatus and *cpu_ns. */
static const char *wait_loop(struct monitor *m, int *wstatus, uint64_t *cpu_ns)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    const uint64_t deadline = m->p->wall_s ? now_mono_ns() + m->p->wall_s * 1000000000ULL : 0;
    const char *reason = "";
    for (;;) {
        struct rusage ru;
        pid_t w = wait4(m->child, wstatus, WNOHANG, &ru);
        if (w == m->child) {
            *cpu_ns = rusage_cpu_ns(&ru);
            return reason;
        }
        if (w < 0 && errno != EINTR) {
            *wstatus = 0;
            *cpu_ns = 0;
            return reason;
        }
        struct timespec ts, *timeout = NULL;
        if (deadline && !*reason) {
            uint64_t now = now_mono_ns();
            uint64_t left = deadline > now ? deadline - now : 0;
            ts.tv_sec = (time_t)(left / 1000000000ULL);
            ts.tv_nsec = (long)(left % 1000000000ULL);
            timeout = &ts;
        }
        siginfo_t info;
        int sig = sigtimedwait(&set, &info, timeout);
        if (sig < 0 && errno == EAGAIN && !*reason) {
            reason = "wall-time";
            plan_debug(m->p, "wall time of %llus reached: killing the jail",
                       (unsigned long long)m->p->wall_s);
        } else if (sig > 0 && sig != SIGCHLD && !*reason) {
            reason = "killed";
            plan_debug(m->p, "signal %d: killing the jail", sig);
        } else {
            continue;
        }
        /* SIGKILL to init ends the pid namespace; without one, to the group. */
        kill(m->group ? -m->child : m->child, SIGKILL);
    }
}

/* SIGKILL to every child of the monitor: /proc/self/task/TID/children, or, on a kernel
 * without it, a scan of /proc. Returns how many were signalled. */
static int kill_children(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    int n = 0;
    FILE *f = fopen(path, "re");
    if (f) {
        long pid;
        while (fscanf(f, "%ld", &pid) == 1)
            if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                n++;
        fclose(f);
        return n;
    }
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char stat_path[300], buf[512];
        long pid = strtol(e->d_name, NULL, 10);
        if (pid <= 0)
            continue;
        snprintf(stat_path, sizeof(stat_path), "/proc/%ld/stat", pid);
        int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
        const char *rp = strrchr(buf, ')');
        char state;
        long ppid;
        if (rp && sscanf(rp + 1, " %c %ld", &state, &ppid) == 2 && ppid == (long)getpid() &&
            kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* Without a pid namespace a program can start processes outside its process group
 * (setsid and a double fork, as a daemon does), which kill(-group) misses. The monitor
 * is their subreaper (run_plain): once their parents are gone they are its children,
 * and here it ends them, level by level (a process killed hands its children to the
 * monitor before the monitor can reap it), until it has no child left. */
static void end_adopted(void)
{
    for (;;) {
        kill_children();
        pid_t w = waitpid(-1, NULL, 0);
        if (w < 0 && errno != EINTR)
            return; /* ECHILD: nothing left */
    }
}

static _Noreturn void finish(struct monitor *m, const char *reason, int wstatus, uint64_t cpu_ns,
                             int status_fd)
{
    struct jail_rec from_init;
    int program_status = wstatus;
    uint64_t program_cpu = cpu_ns;
    bool init_killed = false;
    if (status_fd >= 0) {
        /* init wrote the program's own status just before exiting; it is absent when
         * init was killed (wall time, jail_kill, the cgroup's OOM kill, or by someone
         * else). */
        set_nonblock(status_fd, true);
        if (rec_recv(status_fd, &from_init) == 1 && from_init.type == REC_EXIT) {
            program_status = from_init.wstatus;
            program_cpu = from_init.cpu_ns;
        } else {
            init_killed = WIFSIGNALED(wstatus);
        }
    }
    if (m->group) {
        kill(-m->child, SIGKILL); /* what the program left behind in its group */
        end_adopted();            /* and what left the group */
    }
    /* The jail is gone: its cgroup tells what the status alone cannot. */
    struct cgroup_end cg;
    bool sigkilled = init_killed ||
                     (WIFSIGNALED(program_status) && WTERMSIG(program_status) == SIGKILL);
    bool failed = !WIFEXITED(program_status) || WEXITSTATUS(program_status) != 0;
    cgroup_remove(m->p, &cg,
                  *reason ? 0
                          : (sigkilled ? CG_END_OOM_KILLS : 0) |
                                (failed ? CG_END_PIDS_REFUSED : 0));
    if (!*reason && cg.oom_kills && sigkilled)
        reason = "memory";
    else if (!*reason && init_killed)
        reason = "killed";

    struct jail_rec r;
    memset(&r, 0, sizeof(r));
    r.type = REC_EXIT;
    if (*reason) {
        r.exit_code = 128 + SIGKILL;
        r.term_signal = SIGKILL;
    } else if (WIFSIGNALED(program_status)) {
        r.term_signal = WTERMSIG(program_status);
        r.exit_code = 128 + r.term_signal;
        reason = reason_for(m->p, program_status, program_cpu);
    } else {
        r.exit_code = WEXITSTATUS(program_status);
    }
    /* A program that failed after the cgroup refused it a process. */
    if (!*reason && cg.pids_refused && r.exit_code != 0)
        reason = "pids";
    str_copy(r.reason, reason, sizeof(r.reason));
    plan_debug(m->p, "program ended: exit code %d%s%s", r.exit_code, *reason ? ", reason " : "",
               reason);
    if (m->report_fd < 0) {
        struct jail_status st = {.exit_code = r.exit_code, .term_signal = r.term_signal};
        str_copy(st.reason, reason, sizeof(st.reason));
        write_status_line(m, &st);
        pools_after_exit(m->p); /* after the status: nobody waits for it */
        _exit(r.exit_code & 0xff);
    }
    (void)rec_send(m->report_fd, &r);
    pools_after_exit(m->p);

    if (r.term_signal) {
        /* Die of the same signal (no core: RLIMIT_CORE is 0 here). */
        signal(r.term_signal, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, r.term_signal);
        kill(getpid(), r.term_signal);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
    }
    _exit(r.exit_code & 0xff);
}

/* The bind sources the jail gets as its own (the hub's /data), handed to its host id
 * before the jail exists: here rather than in the caller, whose event loop a large
 * tree would hold up. */
static void chown_binds(struct monitor *m)
{
    for (size_t i = 0; i < m->p->n_chown; i++) {
        struct jail_error e;
        if (user_chown_tree(m->p->chown_paths[i], m->p->host_uid, m->p->host_gid, &e) < 0)
            report_error(m, e.exit_code, e.message);
    }
}

static _Noreturn void run_namespaces(struct monitor *m)
{
    struct jail_plan *p = m->p;
    char why[JAIL_ERR_MAX];
    chown_binds(m);
    int sync_p[2], exec_p[2], status_p[2];
    if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(exec_p, O_CLOEXEC) < 0 ||
        pipe2(status_p, O_CLOEXEC) < 0) {
        snprintf(why, sizeof(why), "pipe: %s", strerror(errno));
        report_error(m, 125, why);
    }
    /* No supplementary groups: host root's groups would follow the jail as
     * unmapped ids that still grant access (setgroups is denied inside). */
    if (setgroups(0, NULL) < 0) {
        snprintf(why, sizeof(why), "setgroups: %s", strerror(errno));
        report_error(m, 125, why);
    }
    if (mnt_open_sources(p, why, sizeof(why)) < 0)
        report_error(m, 125, why);
    if (p->clone_privileged)
        plan_debug(p, "cloned the bind sources on the host side (read-only/nosuid/nodev as "
                      "requested)");
    if (cgroup_create(p, why, sizeof(why)) < 0)
        report_error(m, 125, why);
    /* A network namespace made ahead: the monitor enters it, init is cloned into it
     * (no CLONE_NEWNET), and the monitor goes back (netns_pool.c). */
    int flags = JAIL_NS_FLAGS;
    int pooled_net = p->netns_pool ? netns_pool_claim(p) : -1, own_net = -1;
    if (pooled_net >= 0) {
        own_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (own_net >= 0 && setns(pooled_net, CLONE_NEWNET) == 0) {
            flags &= ~CLONE_NEWNET;
        } else {
            plan_debug(p, "network namespace pool: cannot enter the claimed one (%s): clone "
                          "makes one", strerror(errno));
            if (own_net >= 0)
                close(own_net);
            close(pooled_net);
            pooled_net = own_net = -1;
        }
    }
    /* v2: born in its cgroup. Any refusal of clone3 (an older kernel, a seccomp filter
     * of our own caller's that knows only clone) falls back to clone and a move. */
    bool born_inside = false;
    pid_t pid = -1;
    if (cgroup_clone_fd(p) >= 0) {
        pid = raw_clone_into_cgroup(flags | SIGCHLD, cgroup_clone_fd(p));
        born_inside = pid >= 0;
    }
    if (pid < 0)
        pid = raw_clone(flags | SIGCHLD);
    int clone_errno = errno;
    if (pid == 0 && pooled_net >= 0) {
        close(own_net); /* init holds no way back to the host's network */
        close(pooled_net);
    }
    bool net_back_failed = false;
    if (pid != 0 && pooled_net >= 0) {
        net_back_failed = setns(own_net, CLONE_NEWNET) < 0;
        close(own_net);
        close(pooled_net);
    }
    if (pid < 0) {
        snprintf(why, sizeof(why), "creating the namespaces (clone): %s%s",
                 strerror(clone_errno),
                 clone_errno == ENOSPC  ? " (user.max_user_namespaces or a similar limit reached)"
                 : clone_errno == EPERM ? " (user namespaces disabled for this caller?)"
                                        : "");
        report_error(m, 125, why);
    }
    if (pid == 0) {
        close_monitor_pipes(m);
        if (p->lock_fd >= 0)
            close(p->lock_fd);
        if (p->veth_netns_fd >= 0)
            close(p->veth_netns_fd);
        if (p->lo_sink >= 0)
            close(p->lo_sink);
        close(sync_p[1]);
        close(exec_p[0]);
        close(status_p[0]);
        init_main(p, sync_p[0], exec_p[1], status_p[1]);
    }
    m->child = pid;
    if (net_back_failed)
        report_error(m, 125, "network namespace pool: cannot return to our own namespace");
    mnt_close_sources(p); /* init has its copies */
    close(sync_p[0]);
    close(exec_p[1]);
    close(status_p[1]);
    plan_debug(p, "cloned init (host pid %d) in new user/mnt/pid/ipc/uts/net namespaces", (int)pid);

    /* Before init's go-ahead: everything the jail starts is inside its cgroup. */
    if (cgroup_attach(p, pid, born_inside, why, sizeof(why)) < 0)
        report_error(m, 125, why);
    if (user_write_maps(p, pid, why, sizeof(why)) < 0)
        setup_failed(m, exec_p[0], why); /* init's own error first, if it failed */
    /* init builds its root while the monitor makes the veth (two cores, no wait). */
    if (write_all(sync_p[1], "M", 1) < 0)
        report_error(m, 125, "init died before its setup");
    if (p->net == JAIL_NET_VETH && net_create_veth(p, pid, why, sizeof(why)) < 0)
        setup_failed(m, exec_p[0], why);
    if (p->n_lo_listen && net_listen_loopback(p, pid, why, sizeof(why)) < 0)
        setup_failed(m, exec_p[0], why);
    if (write_all(sync_p[1], "N", 1) < 0)
        setup_failed(m, exec_p[0], "init died during its setup");
    close_jail_fds(p);
    cgroup_sweep(p); /* while init builds its root */

    await_exec(m, exec_p[0]);
    /* Held until now: init checks after its last go-ahead that the monitor is still
     * there (see init_main). */
    close(sync_p[1]);
    int wstatus;
    uint64_t cpu_ns;
    const char *reason = wait_loop(m, &wstatus, &cpu_ns);
    finish(m, reason, wstatus, cpu_ns, status_p[0]);
}

static _Noreturn void run_plain(struct monitor *m)
{
    struct jail_plan *p = m->p;
    char why[JAIL_ERR_MAX];
    int exec_p[2];
    if (pipe2(exec_p, O_CLOEXEC) < 0) {
        snprintf(why, sizeof(why), "pipe: %s", strerror(errno));
        report_error(m, 125, why);
    }
    pid_t me = getpid();
    /* What the program starts and then leaves (its orphans, also outside its group)
     * becomes the monitor's, to be ended with the program: see end_adopted(). */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        snprintf(why, sizeof(why), "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
        report_error(m, 125, why);
    }
    /* vfork, as in init: no copy of the caller's address space for a child that execs. */
    pid_t pid = vfork();
    if (pid < 0) {
        snprintf(why, sizeof(why), "fork: %s", strerror(errno));
        report_error(m, 125, why);
    }
    if (pid == 0) {
        close_monitor_pipes(m);
        close(exec_p[0]);
        /* Its own session and process group: no terminal to inject into, and one
         * kill(-pgid) ends the program with what it started. */
        if (setsid() < 0)
            child_fail_errno(exec_p[1], 125, "setsid");
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
            child_fail_errno(exec_p[1], 125, "PR_SET_PDEATHSIG");
        if (getppid() != me)
            _exit(125); /* the monitor died before the death signal was armed */
        exec_program(p, exec_p[1]);
    }
    m->child = pid;
    m->group = true;
    close(exec_p[1]);
    close_jail_fds(p);
    await_exec(m, exec_p[0]);
    int wstatus;
    uint64_t cpu_ns;
    const char *reason = wait_loop(m, &wstatus, &cpu_ns);
    finish(m, reason, wstatus, cpu_ns, -1);
}

void monitor_main(struct jail_plan *p, int report_fd, int status_fd)
{
    struct monitor m = {.p = p, .report_fd = report_fd, .status_fd = status_fd, .child = -1};
    const bool forked = report_fd >= 0;
    /* Every signal blocked (jail_start already did so around the fork): the monitor
     * takes SIGCHLD, SIGTERM, SIGINT and SIGHUP synchronously in wait_loop(). */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    reset_signals();
    /* A forked monitor ends the jail when the caller's thread dies. The death signal is
     * SIGTERM, not SIGKILL: blocked like every signal, it reaches wait_loop(), which
     * ends the jail as for jail_kill(). A monitor killed outright would leave what a
     * program without namespaces forked in its process group running (only the
     * program itself has a death signal), e.g. after a kill -9 of the hub. Checked
     * right after arming: the caller may already be gone. */
    if (forked && (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != p->caller_pid))
        _exit(125);
    close_caller_fds(p, report_fd, status_fd);
    ensure_std_fds();
    /* The monitor holds a copy of the caller's memory: never dumpable, no core. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct rlimit zero = {0, 0};
    setrlimit(RLIMIT_CORE, &zero);
    /* A forked monitor leaves the caller's process group: a Ctrl-C meant for the hub
     * must not kill its spokes. The launcher stays, and ends the jail on Ctrl-C. */
    if (forked) {
        setpgid(0, 0);
        prctl(PR_SET_NAME, "nsjail-monitor", 0, 0, 0);
    }
    plan_debug(p, forked ? "monitor started" : "launcher is the monitor");
    if (p->namespaces)
        run_namespaces(&m);
    run_plain(&m);
}
