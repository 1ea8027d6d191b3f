#include "proc.h"
#include "config/config.h"
#include "held.h"
#include "log.h"
#include "net/net.h"
#include "pidfd.h"
#include "spoke_env.h"
#include "util.h"

#ifdef HUB_HAVE_JAIL
#include "nsjail-lite/jail.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOG_READ_CHUNK 65536

char *proc_resolve_command(const char *cmd, const char *bin_dir)
{
    if (cmd[0] == '/')
        return xstrdup(cmd);
    if (strchr(cmd, '/'))
        return xasprintf("%s/%s", bin_dir, cmd);
    static const char *const dirs[] = {NULL, "/usr/local/bin", "/usr/bin", "/bin"};
    for (size_t i = 0; i < ARRAY_LEN(dirs); i++) {
        char *path = xasprintf("%s/%s", dirs[i] ? dirs[i] : bin_dir, cmd);
        if (access(path, F_OK) == 0)
            return path;
        free(path);
    }
    return xasprintf("%s/%s", bin_dir, cmd); /* reported as not found at spawn */
}

/* ---- the spoke's stderr, copied into its log file with a cap ---- */

/* A secret the hub handed out never reaches the log (lib/redact.h). */
static int log_write(void *ud, const char *buf, size_t len)
{
    struct proc *p = ud;
    return write_all(p->log_fd, buf, len);
}

/* Appends to the spoke's log, up to its cap (then a note, once). */
static void log_append(struct proc *p, const char *buf, size_t n)
{
    size_t cap = p->hub->cfg->spoke_log_max;
    if (p->log_capped || p->log_fd < 0)
        return; /* dropped: a flood costs the spoke, not the hub's disk */
    size_t take = n;
    if (p->log_bytes + take > cap) {
        take = cap > p->log_bytes ? cap - p->log_bytes : 0;
        p->log_capped = true;
    }
    if (take && redact_stream_feed(&p->log_redact, buf, take, log_write, p) == 0)
        p->log_bytes += take;
    if (p->log_capped) {
        static const char note[] = "\n[hub: log cap reached; further output dropped]\n";
        (void)redact_stream_flush(&p->log_redact, log_write, p);
        write_all(p->log_fd, note, sizeof(note) - 1);
    }
}

static void log_drain(struct proc *p)
{
    char buf[LOG_READ_CHUNK];
    ssize_t n = read(p->err_fd, buf, sizeof(buf));
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            event_del(p->ev_err);
        }
        return;
    }
    log_append(p, buf, (size_t)n);
}

void proc_log_line(struct proc *p, const char *line)
{
    if (p->ev_err)
        log_drain(p); /* what it wrote on stderr before comes first */
    log_append(p, line, strlen(line));
    log_append(p, "\n", 1);
}

static void on_stderr(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    log_drain(arg);
}

/* The spoke's log, appended to by each start of the spoke (and by every hub of the
 * configuration): its cap holds for the file, not for one start. A file at its cap is
 * renamed to PATH.1 (replacing the one before) and a new one begun, so a spoke's logs
 * take at most twice the cap. *size: what the file holds already. */
static int open_log(const char *path, const char *spoke_id, const char *app, size_t cap,
                    size_t *size)
{
    char *copy = xstrdup(path);
    mkdir_parents(dirname(copy), 0700);
    free(copy);
    *size = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
    struct stat st = {0};
    if (fd >= 0 && flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= cap) {
        /* Under the lock, and only if the name is still this file: another hub may have
         * rotated it meanwhile. */
        struct stat now;
        char *old = xasprintf("%s.1", path);
        if (stat(path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
            (void)rename(path, old);
        free(old);
        close(fd);
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0 || fstat(fd, &st) < 0)
            st.st_size = 0;
    } else if (fd >= 0) {
        flock(fd, LOCK_UN);
    }
    if (fd >= 0) {
        *size = (size_t)st.st_size;
        char ts[40], line[200];
        format_iso8601(now_real_ns(), ts, sizeof(ts));
        int n = snprintf(line, sizeof(line), "--- %s: spoke %s (%s) started\n", ts, app, spoke_id);
        write_all(fd, line, (size_t)n);
    }
    return fd;
}

/* ---- exit ---- */

static void proc_free(struct proc *p)
{
    struct hub *h = p->hub;
    LIST_REMOVE(p, link);
    h->n_procs--;
    if (p->ev_exit)
        event_free(p->ev_exit);
    if (p->ev_err) {
        event_del(p->ev_err);
        /* Whatever the spoke wrote last is still useful in its log. */
        for (int i = 0; i < 16 && !p->log_capped; i++) {
            size_t before = p->log_bytes;
            log_drain(p);
            if (p->log_bytes == before)
                break;
        }
        event_free(p->ev_err);
    }
    if (p->err_fd >= 0)
        close(p->err_fd);
    if (p->log_fd >= 0) {
        (void)redact_stream_flush(&p->log_redact, log_write, p);
        close(p->log_fd);
    }
    free(p->log_redact.held);
    spoke_secrets_free(&p->secrets);
    if (p->pidfd >= 0)
        close(p->pidfd);
    if (p->veth_slot >= 0)
        slots_put(h->veth_slots, p->veth_slot);
    if (p->veth_lock >= 0)
        close(p->veth_lock);
    if (p->lo_sink >= 0)
        close(p->lo_sink);
#ifdef HUB_HAVE_JAIL
    if (p->jail)
        jail_free(p->jail);
#endif
    free(p->app);
    free(p->user);
    free(p);
}

#ifdef HUB_HAVE_JAIL
/* Follows a starting jail: once its setup has ended, a failure goes to the owner now
 * (the monitor's exit, with the same code, is reaped later like any other). */
static void check_start(struct proc *p)
{
    struct jail_error je;
    int rc = jail_start_result(p->jail, &je);
    if (rc == 0)
        return;
    p->starting = false;
    if (rc > 0) {
        if (p->lo_sink >= 0)
            net_spoke_forwards(p->hub->proxy, p->owner ? p->owner->proxy_key : NULL,
                               p->owner ? p->owner->m->name : NULL, p->lo_sink);
        p->lo_sink = -1;
        return;
    }
    p->start_failed = true;
    struct spoke *owner = p->owner;
    p->owner = NULL;
    if (owner)
        spoke_proc_start_failed(owner, je.exit_code, je.message);
}
#endif

/* Reaps p: 1 and the status when it has ended, 0 while it runs. */
static int proc_reap(struct proc *p, bool block, int *code, char *reason, size_t rlen)
{
    reason[0] = '\0';
#ifdef HUB_HAVE_JAIL
    if (p->jail) {
        struct jail_status st;
        /* Both take a start record off the descriptor first: check_start() reads
         * what it said. */
        int rc = block ? jail_wait(p->jail, &st) : jail_poll(p->jail, &st);
        if (p->starting)
            check_start(p);
        if (rc <= 0)
            return rc < 0 ? 1 : 0;
        *code = st.exit_code;
        str_copy(reason, st.reason, rlen);
        if (!reason[0] && st.term_signal)
            snprintf(reason, rlen, "signal %d", st.term_signal);
        return 1;
    }
#endif
    int status;
    pid_t r;
    do {
        r = waitpid(p->pid, &status, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return 0;
    if (r < 0) {
        *code = -1;
        str_copy(reason, "lost", rlen);
        return 1;
    }
    if (WIFSIGNALED(status)) {
        *code = 128 + WTERMSIG(status);
        snprintf(reason, rlen, "signal %d", WTERMSIG(status));
    } else {
        *code = WEXITSTATUS(status);
    }
    return 1;
}

static void proc_finish(struct proc *p, int code, const char *reason)
{
    /* Our own SIGKILL shows as "signal 9": say that the hub ended it. */
    if (p->killed && (!reason[0] || strcmp(reason, "signal 9") == 0))
        reason = "killed";
    /* A jail whose setup failed never ran the program: the spoke's "spoke-start"
     * failure record tells it, as when the setup failed inside proc_spawn(). */
    if (!p->start_failed) {
        json_t *rec = haudit_new("spoke-exit", code == 0 && !p->killed ? "success" : "failure");
        audit_set_str(rec, "isolate.spoke.id", p->spoke_id);
        audit_set_str(rec, "isolate.app", p->app);
        audit_set_str(rec, "isolate.user", p->user);
        audit_set_str(rec, "isolate.mode", isolation_name(p->mode));
        audit_set_int(rec, "process.pid", p->pid);
        audit_set_int(rec, "process.exit_code", code);
        audit_set_str(rec, "event.reason", reason[0] ? reason : "exited");
        if (p->killed && p->kill_reason)
            audit_set_str(rec, "isolate.kill_reason", p->kill_reason);
        audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - p->t_start));
        haudit_note(p->hub, rec);
    }
    struct spoke *owner = p->owner;
    p->owner = NULL;
    if (owner)
        spoke_proc_exited(owner, code, reason);
    proc_free(p);
}

static void on_exit_ev(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proc *p = arg;
    if (!p->jail) {
        /* In none mode the spoke's session may hold children that outlive it (a fork
         * bomb's): the group is ended once the leader has exited but before it is
         * reaped, while the group's id is still certainly ours. */
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
            return; /* still running (a SIGCHLD for another child) */
        kill(-p->pid, SIGKILL);
    }
    int code;
    char reason[40];
    if (proc_reap(p, false, &code, reason, sizeof(reason)) == 0)
        return; /* spurious wake-up */
    proc_finish(p, code, reason);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    struct hub *h = arg;
    struct proc *p, *next;
    for (p = LIST_FIRST(&h->procs); p; p = next) {
        next = LIST_NEXT(p, link);
        if (!p->ev_exit)
            on_exit_ev(-1, 0, p);
    }
}

void proc_watch_sigchld(struct hub *h)
{
    if (h->ev_sigchld)
        return;
    h->ev_sigchld = evsignal_new(h->base, SIGCHLD, on_sigchld, h);
    event_add(h->ev_sigchld, NULL);
}

void proc_kill(struct proc *p, const char *reason)
{
    if (!p->killed) {
        p->killed = true;
        p->kill_reason = reason;
    }
#ifdef HUB_HAVE_JAIL
    if (p->jail) {
        jail_kill(p->jail);
        return;
    }
#endif
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
}

void proc_disown(struct proc *p)
{
    p->owner = NULL;
}

void proc_reap_all(struct hub *h, uint64_t grace_ms)
{
    /* Spokes whose connection was closed get a moment to exit by themselves. */
    uint64_t until = now_mono_ns() + grace_ms * 1000000ULL;
    while (!LIST_EMPTY(&h->procs) && now_mono_ns() < until) {
        struct pollfd pfds[64];
        nfds_t n = 0;
        struct proc *p;
        LIST_FOREACH(p, &h->procs, link)
        {
            if (n == 64)
                break;
            pfds[n++] =
                (struct pollfd){.fd = p->ev_exit ? event_get_fd(p->ev_exit) : -1, .events = POLLIN};
        }
        poll(pfds, n, 10);
        struct proc *next;
        for (p = LIST_FIRST(&h->procs); p; p = next) {
            next = LIST_NEXT(p, link);
            if (!p->jail) {
                /* Peek without reaping: the group is ended while its id is still ours. */
                siginfo_t si = {0};
                if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
                    si.si_pid == 0)
                    continue;
                kill(-p->pid, SIGKILL);
            }
            int code;
            char reason[40];
            if (proc_reap(p, false, &code, reason, sizeof(reason)) == 1)
                proc_finish(p, code, reason);
        }
    }
    while (!LIST_EMPTY(&h->procs)) {
        struct proc *p = LIST_FIRST(&h->procs);
        proc_kill(p, "hub shutdown");
        int code;
        char reason[40];
        proc_reap(p, true, &code, reason, sizeof(reason));
        proc_finish(p, code, reason);
    }
}

/* ---- spawning ---- */

/* How the child of spawn_plain() failed, written on the report pipe before _exit. */
struct spawn_failure {
    int in_exec; /* 0: setting up (chdir, parent gone), 1: execve */
    int err;
};

_Noreturn static void spawn_child_fail(int report, int in_exec, int err)
{
    struct spawn_failure f = {in_exec, err};
    ssize_t n = write(report, &f, sizeof(f));
    (void)n;
    _exit(127);
}

/* The vfork child of spawn_plain(): it shares the hub's memory until it execs, so it
 * makes plain syscalls only, writes nothing but its own stack, and never returns. */
_Noreturn static void spawn_child(const struct spawn_spec *s, const char *path, char *const *argv,
                                  int err_w, int report, pid_t hub_pid)
{
    /* Its own session and process group, so that ending the spoke ends everything it
     * started and a terminal's ^C reaches only the hub. */
    setsid();
    /* A hub killed with SIGKILL cannot end its spokes: the kernel does it for the
     * spoke itself (its own children are not covered: mode none restricts nothing). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != hub_pid)
        spawn_child_fail(report, 0, ESRCH);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(s->sock, 0) < 0 || dup2(s->sock, 1) < 0 || dup2(err_w, 2) < 0)
        spawn_child_fail(report, 0, errno);
    if (close_fds_except(&report, 1) < 0 || chdir(s->data_dir) < 0)
        spawn_child_fail(report, 0, errno);
    execve(path, argv, s->envp);
    spawn_child_fail(report, 1, errno);
}

/* Mode none: a plain child. Our own vfork() rather than posix_spawn(), for the
 * parent-death signal; vfork (like posix_spawn) copies no page tables, which fork()
 * does at 2-3 ms per spoke here. Signals stay blocked until the child has reset its
 * handlers, so no hub handler runs on the shared memory. A close-on-exec pipe tells
 * whether the exec happened. */
static pid_t spawn_plain(const struct spawn_spec *s, const char *path, char *const *argv, int err_w,
                         int *code, char *err, size_t errlen)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0) {
        *code = 125;
        snprintf(err, errlen, "starting %s: pipe: %s", path, strerror(errno));
        return -1;
    }
    pid_t hub_pid = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = vfork();
    if (pid == 0)
        spawn_child(s, path, argv, err_w, report[1], hub_pid);
    int vfork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    if (pid < 0) {
        *code = 125;
        snprintf(err, errlen, "starting %s: vfork: %s", path, strerror(vfork_errno));
        close(report[0]);
        return -1;
    }
    struct spawn_failure f;
    ssize_t n;
    do
        n = read(report[0], &f, sizeof(f));
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == 0)
        return pid; /* the pipe closed on exec */
    waitpid(pid, NULL, 0);
    if (n != (ssize_t)sizeof(f)) {
        *code = 125;
        snprintf(err, errlen, "starting %s: the child failed before it could say why", path);
        return -1;
    }
    *code = !f.in_exec                              ? 125
            : f.err == ENOENT                       ? 127
            : (f.err == EACCES || f.err == ENOEXEC) ? 126
                                                    : 125;
    snprintf(err, errlen, "starting %s: %s", path, strerror(f.err));
    return -1;
}

#ifdef HUB_HAVE_JAIL
/* The profile a spoke runs under: its manifest's, else the one named for its runtime
 * beside hub.json's profile (profiles/node.json for "node"), else hub.json's. */
static char *profile_for(const struct hub *h, const struct manifest *m)
{
    if (m->profile)
        return xstrdup(m->profile);
    if (strcmp(m->runtime, "c") != 0) {
        char *copy = xstrdup(h->cfg->profile);
        char *path = xasprintf("%s/%s.json", dirname(copy), m->runtime);
        free(copy);
        if (access(path, R_OK) == 0)
            return path;
        free(path);
    }
    return xstrdup(h->cfg->profile);
}

/* True when a bind of the profile already puts path (or the directory holding it) at
 * the same place in the jail. */
static bool bound_already(const struct jail_config *jc, const char *path)
{
    for (size_t i = 0; i < jc->n_binds; i++) {
        const char *src = jc->binds[i].src, *dst = jc->binds[i].dst ? jc->binds[i].dst : src;
        size_t n = strlen(src);
        if (strcmp(src, dst) == 0 && strncmp(path, src, n) == 0 &&
            (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

/* process and namespace modes: nsjail-lite as a library. The profile gives the system
 * binds, rlimits and seccomp settings; the manifest's limits and runtime override it;
 * everything put into the jail_config is a copy it owns. */
static struct jail *spawn_jail(struct hub *h, const struct spawn_spec *s, const char *path,
                               char *const *cmd, int err_w, int *lo_sink, int *code, char *err,
                               size_t errlen)
{
    struct jail_config jc;
    jail_config_init(&jc);
    char *profile = profile_for(h, s->m);
    int loaded = jail_config_load_profile(&jc, profile, err, errlen);
    free(profile);
    if (loaded < 0) {
        jail_config_free(&jc);
        *code = 125;
        return NULL;
    }
    jc.namespaces = s->mode == ISO_NAMESPACE;
    /* A container image's profile (hub spokes add oci:): its root instead of the host's,
     * its program a path inside it, its WorkingDir (else /data) the directory. */
    bool image = jc.rootfs != NULL;
    char *image_cwd = image && jc.cwd && strcmp(jc.cwd, "/") != 0 ? xstrdup(jc.cwd) : NULL;
    if (image && !jc.namespaces) {
        snprintf(err, errlen, "spoke %s is a container image: it runs only in namespace isolation",
                 s->m->name);
        free(image_cwd);
        jail_config_free(&jc);
        *code = 125;
        return NULL;
    }
    const struct manifest_limits *l = &s->m->limits;
    if (l->cpu_s)
        jc.limits.cpu_s = l->cpu_s;
    if (l->as_mb)
        jc.limits.as_mb = l->as_mb;
    if (l->fsize_mb)
        jc.limits.fsize_mb = l->fsize_mb;
    if (l->nofile)
        jc.limits.nofile = l->nofile;
    if (l->nproc)
        jc.limits.nproc = l->nproc;
    if (l->wall_s)
        jc.limits.wall_s = l->wall_s;
    /* The jail's cgroup (namespace mode): a manifest that lowers as_mb below the
     * profile's memory limit lowers the memory of the whole jail with it, unless it
     * names memory_mb itself (a runtime that reserves a large address space, as V8
     * does, raises as_mb without needing that much memory). */
    if (l->memory_mb)
        jc.limits.memory_mb = l->memory_mb;
    else if (l->as_mb && (!jc.limits.memory_mb || l->as_mb < jc.limits.memory_mb))
        jc.limits.memory_mb = l->as_mb;
    if (l->pids)
        jc.limits.pids = l->pids;
    if (l->cpu_percent)
        jc.limits.cpu_percent = l->cpu_percent;
    free(jc.seccomp_preset);
    jc.seccomp_preset = xstrdup(s->m->runtime);
    /* Host programs: bound with what they load, and the preset's +exec variant. */
    if (s->m->n_exec) {
        jc.programs = xcalloc(s->m->n_exec + 1, sizeof(char *));
        for (size_t i = 0; i < s->m->n_exec; i++)
            jc.programs[i] = xstrdup(s->m->exec[i]);
    }
    jc.stdin_fd = s->sock;
    jc.stdout_fd = s->sock;
    jc.stderr_fd = err_w;
    jc.verbose = h->debug;
    for (char *const *e = s->envp; *e; e++)
        jail_config_set_env(&jc, *e);
    free(jc.cwd);
    if (jc.namespaces) {
        /* nsjail-lite takes a free id of the range, host-wide (its locks are shared
         * with every other hub and launcher on the host). */
        hostid_pool(h->cfg, &jc.host_id_base, &jc.host_id_count);
        if (s->host_id) {
            /* The (user, app)'s own id, whose lock the spoke took (hostid.h). */
            jc.host_id = s->host_id;
            jc.host_id_lock_fd = s->host_id_lock;
        }
        free(jc.hostname);
        jc.hostname = xstrdup(s->m->name);
        if (s->data_tmpfs_mb) {
            /* A scratch /data that ends with the jail (and counts in its memory). */
            jail_config_add_tmpfs(&jc, "/data", s->data_tmpfs_mb);
        } else {
            /* The private /data, handed to the jail's host uid by nsjail-lite. */
            jail_config_add_bind(&jc, s->data_dir, "/data", true);
            jc.binds[jc.n_binds - 1].chown = true;
        }
        /* The program itself, read-only at the same path, unless the profile has it
         * (the node profile binds /usr/bin/node alone, not the rest of /usr/bin). */
        char *real = realpath(path, NULL);
        char *host = manifest_host_path(s->m, path); /* in code the manifest binds */
        bool in_mount = strcmp(host, path) != 0;
        free(host);
        if (!image && !in_mount && !bound_already(&jc, path) && !(real && bound_already(&jc, real))) {
            char *copy = xstrdup(path);
            jail_config_add_bind(&jc, dirname(copy), NULL, false);
            free(copy);
        }
        free(real);
        /* The manifest's mounts: a server's code, read-only. */
        for (size_t i = 0; i < s->m->n_mounts; i++)
            jail_config_add_bind(&jc, s->m->mounts[i].src, s->m->mounts[i].dst, false);
        /* Injected secrets: the hub's CA, alone and with the system's, also where
         * programs look without being told (after the profile's /etc/ssl/certs). */
        if (s->trust) {
            jail_config_add_bind(&jc, s->trust->cert_path, HUBCA_JAIL_CERT, false);
            jail_config_add_bind(&jc, s->trust->bundle_path, HUBCA_JAIL_BUNDLE, false);
            jail_config_add_bind(&jc, s->trust->bundle_path, HUBCA_SYSTEM_BUNDLE, false);
        }
        if (s->held_loader)
            jail_config_add_bind(&jc, s->held_loader, HELD_NODE_JAIL_PATH, false);
        jc.cwd = image_cwd ? image_cwd : xstrdup("/data");
        image_cwd = NULL;
        if (s->veth) {
            jc.net = JAIL_NET_VETH;
            jc.veth_host_cidr = xstrdup(s->veth->host_cidr);
            jc.veth_spoke_cidr = xstrdup(s->veth->spoke_cidr);
            jc.veth_host_netns_fd = s->gateway_fd;
            jc.veth_host_ifname = xstrdup(s->veth_ifname);
            /* Transparent egress: the gateway takes every connection, names included. */
            jc.veth_gateway = gateway_egress(h->gw);
            /* Grants to the host's loopback: the jail listens at the same address, and
             * its monitor hands the listeners over (net_spoke_forwards). */
            jc.loopback_listen = net_spoke_loopback_grants(s->m);
            int sv[2];
            if (jc.loopback_listen && socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0) {
                snprintf(err, errlen, "socketpair: %s", strerror(errno));
                jail_config_free(&jc);
                *code = 125;
                return NULL;
            }
            if (jc.loopback_listen) {
                jc.loopback_sink = sv[1];
                *lo_sink = sv[0];
            }
        } else {
            jc.net = JAIL_NET_NONE;
        }
    } else {
        jc.cwd = xstrdup(s->data_dir);
    }
    size_t argc = 0;
    while (cmd[argc])
        argc++;
    char **argv = xcalloc(argc + 1, sizeof(char *));
    argv[0] = (char *)path;
    for (size_t i = 1; i < argc; i++)
        argv[i] = cmd[i];
    struct jail_error je;
    /* The loop goes on while the jail is set up: its outcome arrives on jail_fd(). */
    struct jail *j = jail_start_async(&jc, argv, &je);
    free(argv);
    if (jc.loopback_sink >= 0)
        close(jc.loopback_sink); /* the monitor has its own */
    jail_config_free(&jc);
    if (!j) {
        *code = je.exit_code;
        snprintf(err, errlen, "%s", je.message);
        if (*lo_sink >= 0)
            close(*lo_sink);
        *lo_sink = -1;
    }
    return j;
}
#endif

int proc_host_id_lock(uint32_t id, char *err, size_t errlen)
{
#ifdef HUB_HAVE_JAIL
    return jail_host_id_lock(id, err, errlen);
#else
    (void)id;
    snprintf(err, errlen, "this build has no nsjail-lite");
    return -1;
#endif
}

int proc_check_host_ids(const struct hub_config *cfg, char *err, size_t errlen)
{
#ifdef HUB_HAVE_JAIL
    return jail_host_ids_check(cfg->host_id_base, cfg->host_id_count, err, errlen);
#else
    (void)cfg;
    (void)err;
    (void)errlen;
    return 0;
#endif
}

struct proc *proc_spawn(struct hub *h, const struct spawn_spec *s, int *code, char *err,
                        size_t errlen)
{
    /* An image's command names a file of its root: on the host it would be another
     * program, or nothing. */
    if (s->m->image && s->mode != ISO_NAMESPACE) {
        *code = 125;
        snprintf(err, errlen,
                 "spoke %s is a container image: it runs only in namespace isolation, not %s",
                 s->m->name, isolation_name(s->mode));
        return NULL;
    }
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        *code = 125;
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return NULL;
    }
    /* Without a mount namespace the code is where the host has it: paths under a
     * mount bound elsewhere in the jail go back to their host path. */
    size_t argc = 0;
    while (s->m->command[argc])
        argc++;
    /* A held node: `node LOADER ENTRY ARGS...` (the manifest checked the form). */
    bool held = s->held_loader && s->mode == ISO_NAMESPACE;
    char **argv = xcalloc(argc + 2, sizeof(char *));
    for (size_t i = 0, k = 0; i < argc; i++) {
        argv[k++] = s->mode == ISO_NAMESPACE ? xstrdup(s->m->command[i])
                                             : manifest_host_path(s->m, s->m->command[i]);
        if (i == 0 && held)
            argv[k++] = xstrdup(HELD_NODE_JAIL_PATH);
    }
    argc += held;
    char *path = proc_resolve_command(argv[0], h->cfg->spoke_bin_dir);
    pid_t pid = -1;
    int lo_sink = -1;
    struct jail *jail = NULL;
    if (s->mode == ISO_NONE) {
        pid = spawn_plain(s, path, argv, errpipe[1], code, err, errlen);
    } else {
#ifdef HUB_HAVE_JAIL
        jail = spawn_jail(h, s, path, argv, errpipe[1], &lo_sink, code, err, errlen);
        if (jail)
            pid = jail_pid(jail);
#else
        *code = 125;
        snprintf(err, errlen,
                 "isolation mode %s needs nsjail-lite, which this build does not include",
                 isolation_name(s->mode));
#endif
    }
    free(path);
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
    close(errpipe[1]);
    if (pid < 0) {
        close(errpipe[0]);
        return NULL;
    }
    struct proc *p = xcalloc(1, sizeof(*p));
    p->hub = h;
    str_copy(p->spoke_id, s->spoke_id, sizeof(p->spoke_id));
    p->app = xstrdup(s->m->name);
    p->user = xstrdup(s->user);
    p->mode = s->mode;
    p->pid = pid;
    p->jail = jail;
    p->starting = jail != NULL;
    p->t_start = now_mono_ns();
    p->veth_slot = p->veth_lock = -1;
    p->lo_sink = lo_sink;
    p->err_fd = errpipe[0];
    set_nonblock(p->err_fd, true);
    p->log_fd =
        open_log(s->log_path, s->spoke_id, s->m->name, h->cfg->spoke_log_max, &p->log_bytes);
    if (p->log_fd < 0)
        log_warn("spoke log %s", s->log_path);
#ifdef HUB_HAVE_JAIL
    /* A jail's pid is its monitor; nsjail-lite's own descriptor says when its setup
     * ended (then how: check_start) and when the jail ended. */
    p->pidfd = jail ? -1 : hub_pidfd_open(pid);
    int exit_fd = jail ? jail_fd(jail) : p->pidfd;
#else
    p->pidfd = hub_pidfd_open(pid);
    int exit_fd = p->pidfd;
#endif
    if (exit_fd >= 0) {
        /* Persistent: nsjail-lite may report more than the exit on its descriptor. */
        p->ev_exit = event_new(h->base, exit_fd, EV_READ | EV_PERSIST, on_exit_ev, p);
        event_add(p->ev_exit, NULL);
    } else {
        /* No pidfd (a kernel before 5.3, or valgrind): SIGCHLD on the loop instead. */
        proc_watch_sigchld(h);
    }
    p->ev_err = event_new(h->base, p->err_fd, EV_READ | EV_PERSIST, on_stderr, p);
    event_add(p->ev_err, NULL);
    LIST_INSERT_HEAD(&h->procs, p, link);
    h->n_procs++;
    return p;
}
