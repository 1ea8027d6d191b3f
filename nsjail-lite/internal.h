/* What jail_start() prepares before its first fork, and the small protocol between the
 * processes of a jail. Not part of the library contract (that is jail.h).
 *
 * The processes of one jail:
 *
 *   caller (hub)             jail_start() prepares a jail_plan, then forks:
 *     monitor   (monitor.c)  caller's namespaces; holds the host-id lock, writes the
 *        |                   id maps, creates the veth, enforces the wall time and
 *        |                   reports the status; exits like the program did
 *        +-- init (init.c)   pid 1 of fresh user/mnt/pid/ipc/uts/net namespaces: builds
 *              |             the root, network and hostname, reaps, and takes the
 *              |             namespace down when the program ends
 *              +-- program (exec.c) fds, rlimits, caps, no_new_privs, seccomp, execve
 *
 * Without namespaces the monitor forks the program directly (no init). The command
 * line (jail_exec) is its own monitor: one process fewer on the start-up path.
 *
 * Everything that can fail for a reason the user must fix (paths, addresses, ids,
 * the seccomp filter) is checked and built in the caller, so the forked processes
 * only issue syscalls over data that already exists. */
#ifndef NSJAIL_LITE_INTERNAL_H
#define NSJAIL_LITE_INTERNAL_H

#include "jail.h"
#include "netaddr.h"

#include <linux/filter.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

/* One step of building the jail's root, in the order init performs them (parents
 * before children). Paths are relative to the new root, without a leading '/'. */
enum mnt_kind {
    MNT_BIND,    /* src (host) -> dst; cloned before the root is built */
    MNT_SYMLINK, /* dst -> src (the link text), for merged-/usr symlinks like /bin */
    MNT_TMPFS,   /* size_mb, mode */
    MNT_PROC,    /* fresh proc of the new pid namespace, /proc/sys & co read-only */
    MNT_DEV,     /* tmpfs with null, zero, full, random, urandom bound from the host */
    MNT_FILE,    /* a generated file (src is its content) */
};

struct mnt_op {
    enum mnt_kind kind;
    char *src;
    char *dst;
    bool dir;      /* MNT_BIND: the source is a directory */
    bool writable; /* MNT_BIND */
    bool recursive; /* MNT_BIND: with the mounts below the source (asked for) */
    bool handed;    /* MNT_BIND: the source is handed to the jail's host id (chown) */
    uint64_t size_mb;
    unsigned mode;
    unsigned depth;
    int fd; /* MNT_BIND: the detached clone of src (monitor or init), else -1 */
};

/* /dev/null, zero, full, random, urandom: bound into the jail's minimal /dev. */
#define MNT_DEV_NODES 5

struct rlimit_set {
    int resource;
    const char *name;
    struct rlimit rl;
};

#define JAIL_MAX_RLIMITS 6
#define NET_MAX_LOOPBACK 16

/* The jail's cgroup (cgroup.c): one directory per hierarchy used (v1), or the same
 * directory for every controller (v2). */
enum cgroup_ctl { CG_MEMORY, CG_PIDS, CG_CPU, CG_N };

struct cgroup_plan {
    int version; /* 0: no cgroup; 1 or 2 */
    uint64_t memory_mb, pids, cpu_percent;
    char *parent[CG_N]; /* host paths; NULL for a controller not used */
    char *dir[CG_N];    /* the jail's own, filled in by the monitor ("" once removed) */
    uint32_t rnd;       /* makes the name unique with the monitor's pid */
    /* v1: the jail's "tasks" files, opened by the monitor (as host root) for init to
     * move itself with (cgroup_enter); -1 when not open. */
    int tasks_fd[CG_N];
    /* v2: the jail's directory, for clone3(CLONE_INTO_CGROUP); -1 when not open. */
    int dir_fd;
    /* The pool (cgroup_pool.c): ready slots kept per key, a hash of the base and of
     * every limit value written; 0 = no pool. */
    int pool_size;
    char pool_key[17];
    char *pool_dir;       /* its token directory, /run/nsjail-lite/cgpool/KEY */
    char pool_token[64];  /* the claimed slot's token ("ID.taken.PID"), "" if none */
    bool removal_pending; /* read, not removed: pools_after_exit does it after exit */
};

/* What the cgroup saw, read by the monitor before it removes it. */
struct cgroup_end {
    uint64_t oom_kills;    /* processes of the jail the OOM killer ended */
    uint64_t pids_refused; /* forks refused at pids.max */
    uint64_t memory_peak;  /* bytes */
    uint64_t pids_peak;
};

struct jail_plan {
    bool namespaces;
    bool verbose;
    uint64_t t0_ns; /* when jail_start began, for the -v trace */
    pid_t caller_pid;

    /* identity */
    uid_t inside_uid;
    gid_t inside_gid;
    uid_t host_uid;
    gid_t host_gid;
    int lock_fd; /* flock'ed while the host id is in use */
    char *hostname;
    /* bind sources handed to host_uid/gid by the monitor before it clones init */
    char **chown_paths;
    size_t n_chown;

    /* filesystem */
    struct mnt_op *ops;
    size_t n_ops;
    int root_fd;                /* init: the new root while it is being built */
    int dev_fds[MNT_DEV_NODES]; /* detached clones of the /dev nodes, else -1 */
    /* The caller holds CAP_SYS_ADMIN on the host: the monitor clones the bind
     * sources, which the jail's own host id may not be able to reach. */
    bool clone_privileged;
    char *cwd;

    /* program */
    char **argv;
    char **envp;
    char **candidates; /* full paths execve() tries in turn (PATH search) */
    size_t n_candidates;

    /* network */
    enum jail_net net;
    struct cidr veth_host;  /* address and prefix */
    struct cidr veth_spoke; /* address and prefix */
    char veth_ifname[IF_NAMESIZE];
    int veth_netns_fd;
    bool veth_gateway;
    struct sockaddr_storage lo_listen[NET_MAX_LOOPBACK];
    size_t n_lo_listen;
    int lo_sink; /* the caller's: the monitor sends the loopback listeners there */
    bool netns_pool; /* --net none, as root: a network namespace from netns_pool.c */

    /* limits */
    struct rlimit_set rlimits[JAIL_MAX_RLIMITS];
    size_t n_rlimits;
    uint64_t cpu_s;
    uint64_t wall_s;
    struct cgroup_plan cg;

    /* seccomp: the BPF program, compiled in the caller */
    struct sock_fprog seccomp;
    int cap_last;

    /* descriptors */
    int stdio[3];
    int *keep_fds;
    size_t n_keep_fds;
};

/* Records on the pipes between the processes (each written with one write(2) of at
 * most PIPE_BUF bytes, so a record is never torn). */
enum rec_type {
    REC_STARTED = 1, /* monitor -> caller: the program was exec'd */
    REC_ERROR,       /* setup or exec failed: exit_code, message */
    REC_EXIT,        /* the program ended: exit_code, term_signal, reason (to the caller)
                        or wstatus, cpu_ns (init -> monitor) */
};

struct jail_rec {
    uint32_t type;
    int32_t exit_code;
    int32_t term_signal;
    int32_t wstatus;
    uint64_t cpu_ns;
    char reason[32];
    char message[JAIL_ERR_MAX];
};

/* channel.c */
int rec_send(int fd, const struct jail_rec *r);
/* 1 with a record, 0 at end of file, -1 on error (errno; EAGAIN when non-blocking). */
int rec_recv(int fd, struct jail_rec *r);
/* Reports a failure on fd (if >= 0) and ends the calling (forked) process. */
_Noreturn void child_fail(int fd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, with ": strerror(errno)" appended. */
_Noreturn void child_fail_errno(int fd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void jail_err_set(struct jail_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The -v trace: one line per setup step on stderr. */
void plan_debug(const struct jail_plan *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* fork()-like clone(2) without glibc's wrapper: used only by single-threaded
 * processes (monitor, init), whose children make syscalls and exec or _exit. */
pid_t raw_clone(unsigned long flags);
/* The same through clone3(2) with CLONE_INTO_CGROUP: the child starts in the cgroup v2
 * directory cgroup_fd (Linux >= 5.7; -1 with errno otherwise). */
pid_t raw_clone_into_cgroup(unsigned long flags, int cgroup_fd);
/* User plus system time of a reaped child (and its reaped descendants). */
uint64_t rusage_cpu_ns(const struct rusage *ru);

/* user.c */
int user_write_maps(const struct jail_plan *p, pid_t pid, char *err, size_t errlen);
int user_enter(const struct jail_plan *p, char *err, size_t errlen);
int user_chown_tree(const char *path, uid_t uid, gid_t gid, struct jail_error *err);

/* uidpool.c */
int uidpool_acquire(uint32_t base, uint32_t count, uint32_t *id, int *lock_fd,
                    struct jail_error *err);
/* Takes the lock of one given id (jail_config.host_id); fails when it is held. */
int uidpool_take(uint32_t id, int *lock_fd, struct jail_error *err);

/* mnt.c */
int mnt_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err);
/* One more step of the plan (mnt.c), for rootfs.c. */
struct mnt_op *mnt_op_add(struct jail_plan *p, enum mnt_kind kind, const char *rel);
/* rootfs.c: the image's entries of cfg->rootfs, around the steps already planned. */
int rootfs_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err);
/* Monitor: clones the bind sources and /dev nodes into detached trees that init
 * inherits (nothing when !clone_privileged); mnt_close_sources drops its copies
 * once init exists. */
int mnt_open_sources(struct jail_plan *p, char *err, size_t errlen);
void mnt_close_sources(struct jail_plan *p);
int mnt_build(struct jail_plan *p, char *err, size_t errlen);
int mnt_pivot(struct jail_plan *p, char *err, size_t errlen);
void mnt_plan_free(struct jail_plan *p);

/* net.c */
int net_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err);
int net_create_veth(const struct jail_plan *p, pid_t init_pid, char *err, size_t errlen);
/* Monitor, after the veth: the loopback listeners in init's network namespace, each
 * sent to the caller's sink (the monitor stays in that namespace afterwards). */
int net_listen_loopback(const struct jail_plan *p, pid_t init_pid, char *err, size_t errlen);
int net_setup_inside(const struct jail_plan *p, char *err, size_t errlen);

/* rlimit.c */
int rlimit_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err);
int rlimit_apply(const struct jail_plan *p, char *err, size_t errlen);

/* cgroup.c: prepare in the caller; create, attach (init's pid, before it starts
 * anything) and remove in the monitor. remove fills *end (may be NULL) first. Init
 * is not moved by anyone where that can be helped: on v2 it is cloned into the
 * cgroup (cgroup_clone_fd), on v1 it moves itself first thing (cgroup_enter); attach
 * then only closes the monitor's descriptors (born_inside: clone3 placed it). */
int cgroup_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err);
int cgroup_create(struct jail_plan *p, char *err, size_t errlen);
/* v2: the directory to clone init into, or -1 (v1, no cgroup). */
int cgroup_clone_fd(const struct jail_plan *p);
int cgroup_attach(struct jail_plan *p, pid_t pid, bool born_inside, char *err, size_t errlen);
/* Reads what end asks for (CG_END_*; -v reads everything), then removes the cgroup
 * (with a pool: marks it for pools_after_exit). end may be NULL. */
#define CG_END_OOM_KILLS 1u    /* can decide the reason: the jail died of SIGKILL */
#define CG_END_PIDS_REFUSED 2u /* can decide the reason: the program failed */
void cgroup_remove(struct jail_plan *p, struct cgroup_end *end, unsigned want);
/* In the monitor, while init sets up: removes the empty cgroups of monitors killed
 * outright under the jail's parents. */
void cgroup_sweep(const struct jail_plan *p);
void cgroup_sweep_stale(const struct cgroup_plan *cg);
/* In init, before anything else: v1, moves init into its cgroup; closes init's copies
 * of the monitor's cgroup descriptors. */
int cgroup_enter(struct jail_plan *p, char *err, size_t errlen);
/* In init, once it is in its cgroup: a cgroup namespace rooted there. */
int cgroup_unshare_ns(const struct jail_plan *p, char *err, size_t errlen);
void cgroup_plan_free(struct jail_plan *p);
/* cgroup.c, for the pool: the limits written to the directories in cg->dir. */
int cgroup_set_limits(const struct cgroup_plan *cg, char *err, size_t errlen);
bool cgroup_same_dir_before(const struct cgroup_plan *cg, int k);
/* Removes cg's directories (retrying while its last processes leave); -1 if one
 * stays. */
int cgroup_rmdirs(const struct cgroup_plan *cg);

/* cgroup_pool.c: in the caller, the key and the token directory; in the monitor, a
 * claim of a ready slot (fills cg->dir; false: none, make one); in the helper after
 * exit (pool_helper.c), the jail's cgroup removed, stale slots reclaimed, the refill. */
/* A pool's token file names a slot's state (cgroup_pool.c, netns_pool.c):
 * "ID.ready", "ID.prep.PID" (being made by PID), "ID.taken.PID" (ID: 8 hex digits). */
enum slot_state { SLOT_READY, SLOT_PREP, SLOT_TAKEN };
bool pool_parse_token(const char *name, uint32_t *id, enum slot_state *state, pid_t *pid);
void cgroup_pool_plan(const struct jail_config *cfg, struct cgroup_plan *cg);
bool cgroup_pool_claim(struct jail_plan *p);
void cgroup_pool_drop_claim(struct cgroup_plan *cg);
void cgroup_pool_recycle(struct cgroup_plan *cg);

/* netns_pool.c: network namespaces made ahead for --net none. In the monitor, a
 * claimed one (a descriptor, used once; -1: none ready, clone makes one); in the
 * helper after exit, the refill. */
int netns_pool_claim(const struct jail_plan *p);
void netns_pool_refill(void);

/* pool_helper.c: in the monitor once the status is out, the detached helper that
 * recycles the jail's pooled cgroup and refills the pools (nothing to do: returns). */
void pools_after_exit(struct jail_plan *p);

/* cgroup_base.c: the parents of the jails' cgroups. */
extern const char *const cgroup_ctl_names[CG_N]; /* "memory", "pids", "cpu" */
/* The version (1, 2) and, for each controller wanted, the host directory under which
 * a jail's cgroup goes (dirs[k] allocated; NULL where not wanted), with the
 * controllers on: found once per process and parent (NULL: our own cgroup), checked
 * at each call. Thread-safe. */
int cgroup_base_get(const char *cfg_parent, const bool want[CG_N], int *version, char *dirs[CG_N],
                    struct jail_error *err);
/* The v2 steps, uncached, for tests: a base (our own cgroup, made an inner node with
 * our processes in its leaf; our scope from systemd; /nsjail-lite under the root; or
 * the configured parent) with the controllers ctls (NULL-terminated names) on. */
struct cgroup_v2_base {
    char *dir;       /* host path */
    bool managed;    /* its processes are ours to move into its leaf */
    bool under_root; /* /nsjail-lite under the real root: the root enables too */
};
int cgroup_v2_base(const char *mnt, const char *mnt_root, const char *cfg_parent,
                   const char *const ctls[], struct cgroup_v2_base *b, char *err, size_t errlen);
int cgroup_v2_prepare(const struct cgroup_v2_base *b, const char *mnt, const char *const ctls[],
                      char *err, size_t errlen);
int cgroup_v2_enable(const char *dir, const char *const ctls[], bool managed, char *err,
                     size_t errlen);
char *cgroup_read_text(const char *path, size_t *len);
int cgroup_write(const char *dir, const char *file, const char *text);
bool cgroup_file_has_word(const char *dir, const char *file, const char *word);

/* cgroup_scope.c: asks systemd (over D-Bus, libsystemd loaded on demand) for a
 * transient scope with Delegate=yes holding this process; name gets its unit name. */
int cgroup_scope_delegate_self(char *name, size_t namelen, char *err, size_t errlen);

/* ipc.c: in init, before it leaves host root: the System V shm limits of the jail's
 * ipc namespace, from the memory limit. */
int ipc_limit_shm(const struct jail_plan *p, char *err, size_t errlen);

/* caps.c */
int caps_check_caller(const struct jail_config *cfg, struct jail_error *err);
int caps_last_cap(void);
bool caps_have(int cap);
int caps_drop_all(int cap_last, char *err, size_t errlen);

/* seccomp.c */
enum inet_policy {
    INET_NONE,   /* AF_UNIX only */
    INET_STREAM, /* + TCP over IPv4/IPv6 (a veth to the proxy) */
    INET_ANY,    /* + UDP (direct network, for DNS) */
};
bool seccomp_preset_known(const char *name);
int seccomp_compile(const char *preset, char *const *extra, bool kill, enum inet_policy inet,
                    struct sock_fprog *out, struct jail_error *err);
/* "c|KILL|INET[,extra...]": what identifies a compiled program. */
char *seccomp_key(const char *preset, char *const *extra, bool kill, enum inet_policy inet);

/* seccomp_builtin.c, generated at build time by seccomp_gen.c: every preset without
 * additions, for each action and network policy. */
struct seccomp_builtin {
    const char *key;
    const struct sock_filter *filter;
    unsigned short len;
};
extern const struct seccomp_builtin seccomp_builtins[];
extern const size_t seccomp_builtins_len;
/* The names of the presets, NULL-terminated (for the generator). */
extern const char *const seccomp_preset_names[];
const char *seccomp_preset_list(void);
/* Profile additions must be real syscall names that the preset may allow. */
bool seccomp_check_extra(char *const *names, char *why, size_t whylen);
int seccomp_prepare(const struct jail_config *cfg, struct sock_fprog *out, struct jail_error *err);
int seccomp_apply(const struct sock_fprog *prog);

/* exec.c */
int exec_prepare(const struct jail_config *cfg, char *const argv[], struct jail_plan *p,
                 struct jail_error *err);
_Noreturn void exec_program(const struct jail_plan *p, int exec_fd);

/* init.c */
_Noreturn void init_main(struct jail_plan *p, int sync_fd, int exec_fd, int status_fd);

/* monitor.c: report_fd >= 0 for a forked monitor (library mode); -1 when the caller
 * itself is the monitor (jail_exec), which then reports on stderr and status_fd. */
_Noreturn void monitor_main(struct jail_plan *p, int report_fd, int status_fd);

/* bindsrc.c: the bind source src as an O_PATH descriptor, opened one component at a
 * time so that no directory along it that another user could write, and no symlink
 * that is not root's or the caller's (or jail's, the host id a source is handed to;
 * (uid_t)-1 for none), is passed (check_owners; without, no symlink at all). -1 and
 * "bind SRC: why" in err. */
int bindsrc_open(const char *src, bool check_owners, uid_t caller, uid_t jail, char *err,
                 size_t errlen);

#endif
