/* The library entry points (jail.h): jail_start_async() prepares everything in the
 * caller and forks the monitor; jail_start() also waits until the program was exec'd;
 * the others follow the start, watch, reap and end a jail. */
#include "internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_KEEP_FDS 32

/* Where the monitor's report pipe stands: its first record says how the setup went. */
enum jail_phase {
    PHASE_STARTING, /* no record yet */
    PHASE_RUNNING,  /* REC_STARTED: the program was exec'd */
    PHASE_FAILED,   /* REC_ERROR, or the monitor died before either */
};

struct jail {
    pid_t pid;
    int fd; /* the monitor's report pipe, non-blocking */
    enum jail_phase phase;
    struct jail_error start_err; /* PHASE_FAILED: what failed, with 125/126/127 */
    uid_t host_uid;
    gid_t host_gid;
    char ifname[IF_NAMESIZE];
    bool killed;
    bool done;
    struct jail_status status;
};

static void plan_free(struct jail_plan *p)
{
    mnt_plan_free(p);
    cgroup_plan_free(p);
    if (p->envp) {
        for (char **e = p->envp; *e; e++)
            free(*e);
        free(p->envp);
    }
    for (char **a = p->argv; a && *a; a++)
        free(*a);
    free(p->argv);
    for (size_t i = 0; i < p->n_chown; i++)
        free(p->chown_paths[i]);
    free(p->chown_paths);
    for (size_t i = 0; i < p->n_candidates; i++)
        free(p->candidates[i]);
    free(p->candidates);
    free(p->seccomp.filter);
    free(p->keep_fds);
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    memset(p, 0, sizeof(*p));
    p->lock_fd = -1;
}

static int check_fds(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    const int stdio[3] = {cfg->stdin_fd, cfg->stdout_fd, cfg->stderr_fd};
    for (int i = 0; i < 3; i++) {
        p->stdio[i] = stdio[i];
        if (stdio[i] >= 0 && fcntl(stdio[i], F_GETFD) < 0) {
            jail_err_set(err, 125, "descriptor %d for the program's fd %d is not open", stdio[i],
                         i);
            return -1;
        }
    }
    if (cfg->n_keep_fds > MAX_KEEP_FDS) {
        jail_err_set(err, 125, "at most %d descriptors can be kept", MAX_KEEP_FDS);
        return -1;
    }
    p->keep_fds = xcalloc(cfg->n_keep_fds + 1, sizeof(int));
    for (size_t i = 0; i < cfg->n_keep_fds; i++) {
        int fd = cfg->keep_fds[i];
        if (fd < 3 || fcntl(fd, F_GETFD) < 0) {
            jail_err_set(err, 125, "descriptor %d to keep is %s", fd,
                         fd < 3 ? "one of 0-2 (use the stdio fields)" : "not open");
            return -1;
        }
        p->keep_fds[p->n_keep_fds++] = fd;
    }
    return 0;
}

static int prepare(const struct jail_config *cfg, char *const argv[], struct jail_plan *p,
                   struct jail_error *err)
{
    memset(p, 0, sizeof(*p));
    p->lock_fd = -1;
    p->veth_netns_fd = -1;
    p->lo_sink = -1;
    p->namespaces = cfg->namespaces;
    p->verbose = cfg->verbose;
    p->t0_ns = now_mono_ns();
    p->caller_pid = getpid();
    p->inside_uid = cfg->inside_uid;
    p->inside_gid = cfg->inside_gid;
    p->host_uid = getuid();
    p->host_gid = getgid();
    p->hostname = cfg->hostname;
    p->cwd = cfg->cwd;
    p->cap_last = caps_last_cap();
    for (size_t i = 0; i < MNT_DEV_NODES; i++)
        p->dev_fds[i] = -1;
    p->clone_privileged = cfg->namespaces && caps_have(CAP_SYS_ADMIN);

    if (cfg->namespaces) {
        if (cfg->inside_uid == 0 || cfg->inside_gid == 0 || cfg->inside_uid > 65533 ||
            cfg->inside_gid > 65533) {
            jail_err_set(err, 125, "the uid/gid inside the jail must be 1 to 65533");
            return -1;
        }
        if (cfg->hostname && (strlen(cfg->hostname) == 0 || strlen(cfg->hostname) > 64)) {
            jail_err_set(err, 125, "hostname must be 1 to 64 bytes");
            return -1;
        }
        if (cfg->cwd && cfg->cwd[0] != '/') {
            jail_err_set(err, 125, "the working directory must be an absolute path");
            return -1;
        }
    }
    if (!cfg->namespaces && cfg->net == JAIL_NET_VETH) {
        jail_err_set(err, 125, "--net veth needs namespaces (it cannot go with --no-namespaces)");
        return -1;
    }
    /* Privilege first: a caller who lacks it learns that before anything exists. */
    if (caps_check_caller(cfg, err) < 0 || exec_prepare(cfg, argv, p, err) < 0 ||
        check_fds(cfg, p, err) < 0 || net_prepare(cfg, p, err) < 0 ||
        rlimit_prepare(cfg, p, err) < 0 || cgroup_prepare(cfg, p, err) < 0 ||
        seccomp_prepare(cfg, &p->seccomp, err) < 0 || mnt_prepare(cfg, p, err) < 0)
        return -1;
    plan_debug(p, "plan ready: %zu mount steps, seccomp filter of %u instructions", p->n_ops,
               (unsigned)p->seccomp.len);

    if (cfg->namespaces) {
        uint32_t id = cfg->host_id;
        if (id && cfg->host_id_lock_fd >= 0) {
            p->lock_fd = fcntl(cfg->host_id_lock_fd, F_DUPFD_CLOEXEC, 3);
            if (p->lock_fd < 0) {
                jail_err_set(err, 125, "the lock of host id %u: %s", id, strerror(errno));
                return -1;
            }
        } else if (id ? uidpool_take(id, &p->lock_fd, err) < 0
                      : uidpool_acquire(cfg->host_id_base, cfg->host_id_count, &id, &p->lock_fd,
                                        err) < 0)
            return -1;
        p->host_uid = id;
        p->host_gid = id;
        plan_debug(p, "host uid/gid %u", id);
        /* Walked by the monitor (a large tree would hold up the caller). */
        p->chown_paths = xcalloc(cfg->n_binds + 1, sizeof(char *));
        for (size_t i = 0; i < cfg->n_binds; i++) {
            const struct jail_bind *b = &cfg->binds[i];
            if (b->chown && b->writable)
                p->chown_paths[p->n_chown++] = xstrdup(b->src);
        }
    }
    return 0;
}

struct jail *jail_start_async(const struct jail_config *cfg, char *const argv[],
                              struct jail_error *err)
{
    struct jail_error local;
    if (!err)
        err = &local;
    memset(err, 0, sizeof(*err));
    struct jail_plan plan;
    if (prepare(cfg, argv, &plan, err) < 0) {
        plan_free(&plan);
        return NULL;
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) {
        jail_err_set(err, 125, "pipe: %s", strerror(errno));
        plan_free(&plan);
        return NULL;
    }
    /* Block every signal around the fork so that none of the caller's handlers runs
     * in the monitor before it resets them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        monitor_main(&plan, report[1], -1);
    }
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    uid_t host_uid = plan.host_uid;
    gid_t host_gid = plan.host_gid;
    bool veth = plan.net == JAIL_NET_VETH;
    char ifname[IF_NAMESIZE];
    str_copy(ifname, plan.veth_ifname, sizeof(ifname));
    plan_free(&plan); /* also closes our copy of the lock: the monitor holds it now */
    if (pid < 0) {
        close(report[0]);
        jail_err_set(err, 125, "fork: %s", strerror(fork_errno));
        return NULL;
    }
    set_nonblock(report[0], true);
    struct jail *j = xcalloc(1, sizeof(*j));
    j->pid = pid;
    j->fd = report[0];
    j->phase = PHASE_STARTING;
    j->host_uid = host_uid;
    j->host_gid = host_gid;
    if (veth) {
        if (ifname[0])
            str_copy(j->ifname, ifname, sizeof(j->ifname));
        else
            snprintf(j->ifname, sizeof(j->ifname), "vnj%d", (int)pid);
    }
    return j;
}

/* Takes the monitor's first record off the pipe while the jail is starting: waiting
 * for it, or not (then nothing changes until it is there). End of file or anything
 * else before it means the monitor died during the setup. */
static void read_start(struct jail *j, bool block)
{
    if (j->phase != PHASE_STARTING)
        return;
    struct jail_rec r;
    if (block)
        set_nonblock(j->fd, false);
    int rc = rec_recv(j->fd, &r);
    int e = errno;
    if (block)
        set_nonblock(j->fd, true);
    if (rc < 0 && e == EAGAIN)
        return;
    if (rc == 1 && r.type == REC_STARTED) {
        j->phase = PHASE_RUNNING;
        return;
    }
    j->phase = PHASE_FAILED;
    if (rc == 1 && r.type == REC_ERROR)
        jail_err_set(&j->start_err, r.exit_code, "%s", r.message);
    else
        jail_err_set(&j->start_err, 125, "the jail's monitor died during setup");
}

int jail_start_result(struct jail *j, struct jail_error *err)
{
    read_start(j, false);
    if (j->phase == PHASE_STARTING)
        return 0;
    if (j->phase == PHASE_RUNNING)
        return 1;
    if (err)
        *err = j->start_err;
    return -1;
}

struct jail *jail_start(const struct jail_config *cfg, char *const argv[], struct jail_error *err)
{
    struct jail *j = jail_start_async(cfg, argv, err);
    if (!j)
        return NULL;
    read_start(j, true);
    if (j->phase == PHASE_RUNNING)
        return j;
    if (err)
        *err = j->start_err;
    /* The monitor exits right after its report (with the same code). */
    while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    close(j->fd);
    free(j);
    return NULL;
}

void jail_status_of_error(int exit_code, struct jail_status *st)
{
    memset(st, 0, sizeof(*st));
    st->exit_code = exit_code;
    str_copy(st->reason,
             exit_code == 127   ? "not-found"
             : exit_code == 126 ? "not-executable"
                                : "setup",
             sizeof(st->reason));
}

void jail_exec(const struct jail_config *cfg, char *const argv[], int status_fd)
{
    struct jail_error err;
    memset(&err, 0, sizeof(err));
    struct jail_plan plan;
    if (prepare(cfg, argv, &plan, &err) < 0) {
        int code = err.exit_code ? err.exit_code : 125;
        log_warnx("%s", err.message);
        struct jail_status st;
        jail_status_of_error(code, &st);
        if (status_fd >= 0 && jail_status_write(status_fd, &st) < 0)
            log_warn("writing the status line");
        exit(code);
    }
    monitor_main(&plan, -1, status_fd);
}

pid_t jail_pid(const struct jail *j)
{
    return j->pid;
}

uid_t jail_host_uid(const struct jail *j)
{
    return j->host_uid;
}

gid_t jail_host_gid(const struct jail *j)
{
    return j->host_gid;
}

const char *jail_host_ifname(const struct jail *j)
{
    return j->ifname;
}

int jail_fd(const struct jail *j)
{
    return j->fd;
}

/* The monitor's report when it has one, else what the wait status says. */
static int finish(struct jail *j, const int *wstatus, struct jail_status *st)
{
    struct jail_rec r;
    memset(&j->status, 0, sizeof(j->status));
    read_start(j, false); /* the monitor is gone: its records are all there */
    if (j->phase == PHASE_FAILED) {
        jail_status_of_error(j->start_err.exit_code, &j->status);
    } else if (rec_recv(j->fd, &r) == 1 && r.type == REC_EXIT) {
        j->status.exit_code = r.exit_code;
        j->status.term_signal = r.term_signal;
        str_copy(j->status.reason, r.reason, sizeof(j->status.reason));
    } else if (wstatus && WIFSIGNALED(*wstatus)) {
        j->status.term_signal = WTERMSIG(*wstatus);
        j->status.exit_code = 128 + j->status.term_signal;
        str_copy(j->status.reason, "killed", sizeof(j->status.reason));
    } else if (wstatus && WIFEXITED(*wstatus)) {
        j->status.exit_code = WEXITSTATUS(*wstatus);
    } else {
        /* Reaped by someone else and no report: all we know is that it is over. */
        j->status.exit_code = 128 + SIGKILL;
        j->status.term_signal = SIGKILL;
        str_copy(j->status.reason, "killed", sizeof(j->status.reason));
    }
    if (j->killed && !j->status.reason[0] && j->status.term_signal)
        str_copy(j->status.reason, "killed", sizeof(j->status.reason));
    j->done = true;
    if (st)
        *st = j->status;
    return 1;
}

int jail_poll(struct jail *j, struct jail_status *st)
{
    if (j->done) {
        if (st)
            *st = j->status;
        return 1;
    }
    /* The start record off the pipe first: the poll() below asks about the exit. */
    read_start(j, false);
    int ws;
    pid_t w = waitpid(j->pid, &ws, WNOHANG);
    if (w == j->pid)
        return finish(j, &ws, st);
    if (w == 0)
        return 0;
    if (errno != ECHILD)
        return -1;
    /* Someone else reaped it (or SIGCHLD is ignored): the pipe tells whether the
     * monitor is gone (a report or end of file) or still running (nothing yet). */
    struct pollfd pfd = {.fd = j->fd, .events = POLLIN};
    if (poll(&pfd, 1, 0) == 0)
        return 0;
    return finish(j, NULL, st);
}

int jail_wait(struct jail *j, struct jail_status *st)
{
    if (j->done)
        return jail_poll(j, st);
    int ws;
    pid_t w;
    do {
        w = waitpid(j->pid, &ws, 0);
    } while (w < 0 && errno == EINTR);
    if (w == j->pid)
        return finish(j, &ws, st);
    if (errno != ECHILD)
        return -1;
    /* Reaped elsewhere: wait for the pipe to reach end of file. */
    set_nonblock(j->fd, false);
    return finish(j, NULL, st);
}

int jail_reaped(struct jail *j, int wstatus, struct jail_status *st)
{
    if (j->done)
        return jail_poll(j, st);
    return finish(j, &wstatus, st);
}

int jail_kill(struct jail *j)
{
    if (j->done)
        return 0;
    j->killed = true;
    /* The monitor kills init (and with it the pid namespace), waits until every
     * process of the jail is gone, then reports "killed". */
    return kill(j->pid, SIGTERM);
}

void jail_free(struct jail *j)
{
    if (!j)
        return;
    if (!j->done) {
        kill(j->pid, SIGKILL);
        while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    close(j->fd);
    free(j);
}

int jail_status_format(const struct jail_status *st, char *buf, size_t size)
{
    char sig[16] = "null";
    if (st->term_signal)
        snprintf(sig, sizeof(sig), "%d", st->term_signal);
    /* reason comes from a fixed vocabulary, no escaping needed; refuse anything else */
    for (const char *c = st->reason; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || *c == '-'))
            return -1;
    int n = snprintf(buf, size, "{\"exit_code\":%d,\"signal\":%s,\"reason\":\"%s\"}", st->exit_code,
                     sig, st->reason);
    return (n < 0 || (size_t)n >= size) ? -1 : n;
}

int jail_status_write(int fd, const struct jail_status *st)
{
    char line[128];
    int n = jail_status_format(st, line, sizeof(line) - 1);
    if (n < 0) {
        errno = EINVAL;
        return -1;
    }
    line[n++] = '\n';
    return write_all(fd, line, (size_t)n);
}
