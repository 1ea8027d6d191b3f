/* nsjail-lite as a library: the hub links this to start spokes without an extra exec,
 * and build/nsjail-lite is a thin command line over the same calls.
 *
 * CONTRACT: the hub codes against these declarations. Extend freely; change a
 * signature only together with every caller.
 *
 * A jail runs one program. With namespaces it gets fresh user, mount, pid, ipc, uts
 * and network namespaces, a tmpfs root with read-only system binds, rlimits, no
 * capabilities, no_new_privs and a seccomp allowlist (the last step before exec).
 * Without namespaces (the hub's "process" isolation mode) it gets the same rlimits,
 * no_new_privs and seccomp preset (network sockets allowed: direct network), and
 * nothing else: no namespaces, no mounts, no identity change.
 *
 * jail_start() returns once the program has been exec'd, or fails with a message and
 * the env(1)-style code that a launcher would exit with (125 setup failed, 126 not
 * executable, 127 not found). The returned handle's pid is a child of the caller:
 * waitpid() it, poll its pidfd, or call jail_poll()/jail_wait(), which reap it and
 * fill a jail_status. Killing that pid takes the whole jail down.
 *
 * jail_start_async() is the same start without the wait for the exec (the clone,
 * namespaces, veth, mounts, pivot_root and seccomp take milliseconds, which an event
 * loop should not spend blocked): it returns once the monitor is forked, after the
 * same checks and preparation in the caller (errors found there are returned at
 * once, as by jail_start()). The jail is then "starting": jail_fd() becomes readable
 * when the program has been exec'd or the setup failed, and jail_start_result() says
 * which, with the same code and message jail_start() would have returned. A failed
 * setup leaves a monitor that exits with that code: reap it as any jail (its status
 * is jail_status_of_error()'s). jail_kill() of a starting jail takes effect when the
 * setup step under way returns (the monitor takes its signals only then), so nothing
 * is left behind, and the program, if it was exec'd, is killed at once.
 *
 * How it works (details in internal.h): the pid is a small "monitor" process forked
 * from the caller. It holds the jail's host-id lock, enforces the wall time, and exits
 * the way the program did (same exit code, or killed by the same signal), after
 * writing the status with its reason on a pipe that jail_poll()/jail_wait() read.
 * Killing the monitor kills the jail (parent-death signal on the jail's pid 1, whose
 * exit ends the pid namespace). Without namespaces the program leads its own process
 * group and the monitor is its subreaper: when the program ends, the monitor ends the
 * group and every process the program started that left it (setsid, a double fork)
 * before it reports the exit.
 *
 * Calling it from a long-running, multi-threaded process (the hub):
 * - the profile, paths, addresses and strings are checked and the seccomp program is
 *   ready before any fork (the presets are compiled at build time, profile additions
 *   in the caller); the forked processes only make syscalls, except the monitor,
 *   which uses libnl for the veth (the library never calls libnl in the caller, so no
 *   libnl lock can be held by another thread at fork time);
 * - every descriptor of the caller is closed in the monitor right after the fork,
 *   except the program's stdio and keep_fds, which are closed there once the jail
 *   holds them: the monitor never keeps another spoke's socket open;
 * - signal handlers and the signal mask of the caller are reset in the jail;
 * - the monitor ends the jail and exits when the THREAD that called jail_start() dies
 *   (PR_SET_PDEATHSIG, SIGTERM): call it from a thread that lives as long as its jails
 *   (the hub's main thread);
 * - a SIGCHLD handler that reaps every child may reap the monitor: then pass the
 *   wait status to jail_reaped() instead of calling jail_poll()/jail_wait().
 * jail_start() is thread-safe; a jail handle is used by one thread at a time.
 *
 * With a veth, the host side and its address exist before the program is exec'd (from
 * inside jail_start() on; after jail_start_async() once jail_start_result() says 1):
 * bind a proxy's listening socket to that address with IP_FREEBIND before starting
 * the jail, so the spoke's first connect cannot race it. When the jail ends, the kernel deletes
 * the host side with the jail's netns, asynchronously (it may linger for some
 * milliseconds after jail_wait() returns): hand out /30s round-robin rather than
 * reusing the one just freed. The jail's pid 1 is a copy of the caller's memory; it
 * is made non-dumpable (unreadable to the jail) and zeroes its copy of the caller's
 * command line and environment. */
#ifndef NSJAIL_LITE_JAIL_H
#define NSJAIL_LITE_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JAIL_ERR_MAX 512

enum jail_net {
    JAIL_NET_NONE, /* new netns with loopback only */
    JAIL_NET_VETH, /* new netns with one veth to the host side */
};

enum jail_seccomp_action {
    JAIL_SECCOMP_ERRNO, /* denied syscalls fail with EPERM (the default) */
    JAIL_SECCOMP_KILL,  /* denied syscalls kill the process (status reason "seccomp") */
};

struct jail_bind {
    char *src; /* host path */
    char *dst; /* path inside the jail; NULL = same as src */
    bool writable;
    bool optional; /* skip silently when src does not exist (profile system binds) */
    bool recursive; /* with the mounts below src too (default: src's own mount only) */
    /* Before the jail starts, change the owner of src and of everything below it (no
     * symlink is followed, no other file system is entered) to the jail's host
     * uid/gid, so the program can use files that an earlier run (with another host
     * id) left. This is how the hub gives a spoke its private /data. The monitor does
     * it, so a large tree does not hold up jail_start_async(); an error is a setup
     * error (125). */
    bool chown;
};

struct jail_tmpfs {
    char *dst;
    uint64_t size_mb;
};

#define JAIL_CGROUP_POOL_DEFAULT 4
#define JAIL_CGROUP_POOL_MAX 64

struct jail_limits {
    uint64_t as_mb;    /* RLIMIT_AS */
    uint64_t cpu_s;    /* RLIMIT_CPU */
    uint64_t fsize_mb; /* RLIMIT_FSIZE */
    uint64_t nofile;   /* RLIMIT_NOFILE */
    uint64_t nproc;    /* RLIMIT_NPROC (counts every process of the jail's host uid) */
    uint64_t wall_s;   /* whole-jail wall-clock limit; 0 = none */
    /* For the other limits 0 keeps the caller's limit. A limit above the caller's
     * hard limit is lowered to it. RLIMIT_CORE is always 0. */

    /* The jail's own cgroup (namespaces only; cgroup.c): 0 = no such limit, and with
     * all three 0 no cgroup is made. memory_mb bounds everything charged to the jail,
     * shared memory and tmpfs included, with swap off; the jail's own processes are
     * OOM-killed at the limit (reason "memory"). pids bounds its processes and
     * threads; cpu_percent its CPU time, in percent of one CPU. */
    uint64_t memory_mb;
    uint64_t pids;
    uint64_t cpu_percent;
};

struct jail_config {
    bool namespaces; /* false: rlimits + no_new_privs + seccomp only */

    /* identity (namespaces only): the uid/gid inside, and the range of unprivileged
     * host ids from which each concurrent jail gets a distinct one: the lowest free id
     * of [host_id_base, host_id_base + host_id_count), held with an flock on
     * /run/nsjail-lite/id-N.lock for as long as the jail runs; the host gid is the
     * same number. The locks are host-wide: any number of callers (several hubs, the
     * launcher) may share one range, each jail gets an id none of them holds, and
     * jail_host_uid() says which. host_id_base must be at least 65536. The default
     * range, 2000000000 + 65536, lies above what Debian's useradd hands out as
     * subordinate ids (SUB_UID_MAX 600100000) and systemd's container range (up to
     * 1879048191), and below 2^31 (see jail_host_ids_check()). */
    uid_t inside_uid;
    gid_t inside_gid;
    uint32_t host_id_base;
    uint32_t host_id_count;
    /* A fixed host id instead of one from the range (0: from the range), for a caller
     * that keeps one id per owner of persistent data (the hub: one per user and app, so
     * that the data directory keeps its owner). Its lock is the same host-wide lock
     * file as the range's; host_id_lock_fd is that lock taken already by the caller
     * with jail_host_id_lock() (the jail keeps a duplicate of it), or -1 for the jail
     * to take it, which fails when another jail holds it. */
    uint32_t host_id;
    int host_id_lock_fd;
    char *hostname;

    /* Host programs the jail may run (NULL-terminated absolute paths): each is bound
     * read-only at its own path with its interpreter and the shared libraries it loads
     * (nsjail-lite/elfdeps.h: read from its ELF headers, never run), those already under
     * a bind left out; and the seccomp preset becomes its "+exec" variant, which allows
     * creating processes (fork, vfork, clone without namespace flags, execve, wait) and
     * what an ordinary C program needs. Children stay in the jail's cgroup and under its
     * pids limit and RLIMIT_NPROC. */
    char **programs;

    /* filesystem (namespaces only): the system binds come from the profile */
    struct jail_bind *binds;
    size_t n_binds;
    struct jail_tmpfs *tmpfs;
    size_t n_tmpfs;
    uint64_t tmp_size_mb; /* the /tmp tmpfs */
    char *cwd;            /* inside the jail; default "/" */
    /* A directory to use as the jail's root instead of the host's system binds (a
     * container image's root): set it with jail_config_set_rootfs(), which drops the
     * binds present then (the profile's); its entries are shown read-only, nosuid and
     * nodev, symlinks recreated, never followed on the host (rootfs.c). NULL: none. */
    char *rootfs;

    /* environment: NULL-terminated "NAME=VALUE" list; a minimal PATH is added when
     * none is given. Nothing else of the caller's environment is passed. */
    char **env;

    enum jail_net net;
    char *veth_host_cidr;   /* "169.254.64.1/30" (JAIL_NET_VETH) */
    char *veth_spoke_cidr;  /* "169.254.64.2/30" */
    int veth_host_netns_fd; /* netns for the host side; -1 = the caller's own */
    /* Name of the host side; NULL = "vnj" + the monitor's pid (jail_host_ifname()). */
    char *veth_host_ifname;
    /* The host side is the jail's gateway and resolver: a default route through it,
     * /etc/resolv.conf naming it and /etc/nsswitch.conf asking the hosts file first
     * (the hub's transparent egress, where the gateway takes every connection). Without
     * it the veth's prefix is the only route and there is no DNS. */
    bool veth_gateway;
    /* Listening TCP sockets on the jail's own loopback, "127.0.0.1:6390" or
     * "[::1]:6390" (NULL-terminated; at most 16): the monitor makes them in the jail's
     * network namespace before the program starts and sends each to loopback_sink (a
     * unix socket of the caller's, kept open in the monitor only) in one message whose
     * text is the address, with the socket attached by SCM_RIGHTS, in order. For a
     * proxy that carries them out (the hub's raw TCP grants to the host's loopback):
     * the program's first connect waits in their backlog, never races them. */
    char **loopback_listen;
    int loopback_sink;

    struct jail_limits limits;
    /* Where the jail's cgroup goes: a cgroup path as /proc/self/cgroup writes it (e.g.
     * "/system.slice/isolategpt.service/jails"), delegated to the caller and free of
     * processes; NULL = a base found once per process: on v2 the caller's delegated
     * cgroup (its processes moved into its "nsjail-lite.leaf"), or a transient scope
     * from systemd where the caller's cgroup is systemd's ("/nsjail-lite" under the
     * root for a caller there); see cgroup_base.c. */
    char *cgroup_parent;
    /* Cgroups prepared ahead, per limit set and base (cgroup_pool.c): how many empty,
     * limited cgroups to keep ready, so a start claims one instead of making it, and
     * the removal and the refill happen after the jail has ended, in a detached
     * helper. 0 = the default (JAIL_CGROUP_POOL_DEFAULT), < 0 = no pool: the cgroup
     * is made at start and removed before the status is reported. */
    int cgroup_pool;
    /* --net none jails as root take a network namespace made ahead (netns_pool.c)
     * instead of one made in clone(). 0 = yes (the default), < 0 = no. */
    int netns_pool;

    char *seccomp_preset;       /* "c", "python", "node" (or NAME+exec, see programs) */
    char **seccomp_extra_allow; /* NULL-terminated syscall names added by a profile */
    enum jail_seccomp_action seccomp_action;

    /* descriptors: the program's stdin/stdout/stderr (-1 = the caller's own), and
     * extra descriptors to keep open at the same numbers (everything else is closed;
     * keep_fds must be >= 3) */
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    int *keep_fds;
    size_t n_keep_fds;

    bool verbose; /* print each setup step on stderr */
};

struct jail_status {
    int exit_code;   /* the program's status, or 128+signal, or 125/126/127 */
    int term_signal; /* 0, or the signal that ended the program */
    /* "" when not known, else "seccomp", "rlimit-cpu", "rlimit-fsize", "wall-time",
     * "memory" (OOM-killed at the cgroup's memory limit), "pids" (failed after the
     * cgroup refused it a process), "killed" (jail_kill, or the monitor was killed) */
    char reason[32];
};

struct jail_error {
    int exit_code; /* 125, 126 or 127 */
    char message[JAIL_ERR_MAX];
};

struct jail;

/* Defaults: the values of config/profiles/spoke.json without reading it. Every string
 * and array in a jail_config is heap-allocated and owned by it (jail_config_free). */
void jail_config_init(struct jail_config *cfg);
/* cfg->rootfs = dir (absolute), dropping the binds cfg has now: 0, or -1. */
int jail_config_set_rootfs(struct jail_config *cfg, const char *dir);
/* Loads a JSON profile over cfg; errors name the file and the key. */
int jail_config_load_profile(struct jail_config *cfg, const char *path, char *err, size_t errlen);
/* Loads a seccomp policy file ({"preset":..., "allow":[...], "action":...}, the
 * "seccomp" object of a profile) over cfg. */
int jail_config_load_seccomp(struct jail_config *cfg, const char *path, char *err, size_t errlen);
/* Appenders that copy their arguments (dst NULL = src). */
void jail_config_add_bind(struct jail_config *cfg, const char *src, const char *dst, bool writable);
void jail_config_add_tmpfs(struct jail_config *cfg, const char *dst, uint64_t size_mb);
/* "NAME=VALUE"; replaces an earlier NAME. */
void jail_config_set_env(struct jail_config *cfg, const char *name_value);
void jail_config_free(struct jail_config *cfg);

/* A cgroup of its own, named name, for a process the caller started outside any jail
 * (the hub's netproxy): under the jails' base cgroup (cgroup_base.c), memory limited
 * to memory_mb with no swap, pid moved into it (a cgroup of that name already there
 * is reused: a restarted process goes where its predecessor was; siblings "PREFIX.PID"
 * of the same PREFIX whose PID is gone are removed first). Its host directory
 * (malloc'd), or NULL and why. */
char *jail_cgroup_process(const char *name, pid_t pid, uint64_t memory_mb, char *err,
                          size_t errlen);
/* How many of its processes the OOM killer ended so far. */
uint64_t jail_cgroup_oom_kills(const char *dir);
/* Removes it once its processes are gone (waits up to a second for the last to
 * leave). 0, or -1 with errno. */
int jail_cgroup_remove(const char *dir);

struct jail *jail_start(const struct jail_config *cfg, char *const argv[], struct jail_error *err);
/* The start without the wait for the exec (see above); NULL with *err when the checks
 * or the preparation in the caller failed. */
struct jail *jail_start_async(const struct jail_config *cfg, char *const argv[],
                              struct jail_error *err);
/* How the start went: 1 the program was exec'd (always, for a jail from jail_start()),
 * 0 still starting (ask again when jail_fd() is readable), -1 the setup failed, *err
 * filled with the code (125, 126, 127) and the message. Never blocks. */
int jail_start_result(struct jail *j, struct jail_error *err);
/* The launcher's way (build/nsjail-lite): the calling process itself becomes the
 * monitor, so no extra process is forked. It never returns: it exits with the
 * program's status (128+N if the program died of signal N; 137 for wall time or
 * SIGINT/SIGTERM/SIGHUP, which end the jail), after writing the status line to
 * status_fd if >= 0. Setup errors are printed on stderr and exit 125, 126 or 127.
 * For single-threaded callers only (it resets signal handlers and closes every
 * other descriptor). */
_Noreturn void jail_exec(const struct jail_config *cfg, char *const argv[], int status_fd);
pid_t jail_pid(const struct jail *j);
/* The host uid and gid the jail runs as (namespaces), or the caller's (without). */
uid_t jail_host_uid(const struct jail *j);
gid_t jail_host_gid(const struct jail *j);
/* The host side of the veth ("" without one). */
const char *jail_host_ifname(const struct jail *j);
/* A descriptor that becomes readable when the jail has ended (for poll/libevent);
 * then call jail_poll(). While a jail_start_async() jail is starting, it becomes
 * readable first when the start is decided: then call jail_start_result() (jail_poll()
 * also takes that record off it). Owned by the handle. */
int jail_fd(const struct jail *j);
/* 1 and *st filled when the jail has ended (reaped), 0 while it runs, -1 on error. */
int jail_poll(struct jail *j, struct jail_status *st);
/* Blocks until the jail ends. */
int jail_wait(struct jail *j, struct jail_status *st);
/* For callers that reaped jail_pid() themselves: fills *st from that wait status and
 * the monitor's report. Returns 1. */
int jail_reaped(struct jail *j, int wstatus, struct jail_status *st);
/* Ends every process of the jail (SIGKILL); the status reason becomes "killed". */
int jail_kill(struct jail *j);
/* Kills and reaps the jail if it still runs, then frees the handle. The kill is a
 * SIGKILL to the monitor: without namespaces, what the program started in its group
 * may survive it (only the program has a death signal), so end a running jail with
 * jail_kill() and jail_wait() first. */
void jail_free(struct jail *j);

/* Takes the host-wide lock of host id id without waiting: a descriptor that holds it
 * (close it to release; jail_config.host_id_lock_fd hands it to a jail), -2 when
 * another jail holds it, -1 with err on any other failure. */
int jail_host_id_lock(uint32_t id, char *err, size_t errlen);

/* Refuses a host id range that overlaps a range /etc/subuid or /etc/subgid gives a
 * user (rootless containers of that user would share ids with the jails): -1 and a
 * message naming the file, line and range; 0 when nothing overlaps or the files do not
 * exist. Callers run it once at start (build/nsjail-lite, the hub); the _files form
 * takes other paths (tests; NULL skips one). */
int jail_host_ids_check(uint32_t base, uint32_t count, char *err, size_t errlen);
int jail_host_ids_check_files(uint32_t base, uint32_t count, const char *subuid, const char *subgid,
                              char *err, size_t errlen);

/* Writes the compiled seccomp program for cfg (an array of struct sock_filter, the
 * format bwrap --seccomp reads) to fd: for inspection, and for the benchmark's
 * bubblewrap anchor. */
int jail_seccomp_export(const struct jail_config *cfg, int fd, struct jail_error *err);

/* The status line of --status-fd: {"exit_code":N,"signal":N|null,"reason":"..."}. */
int jail_status_format(const struct jail_status *st, char *buf, size_t size);
/* The same line with its newline, written to fd: 0, or -1 with errno. */
int jail_status_write(int fd, const struct jail_status *st);
/* The status of a launcher failure: exit_code 125, 126 or 127, reason "setup",
 * "not-executable" or "not-found". */
void jail_status_of_error(int exit_code, struct jail_status *st);

#endif
