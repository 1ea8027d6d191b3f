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
 * no_new_privs and seccomp preset, and nothing else.
 *
 * jail_start() returns once the program has been exec'd, or fails with a message and
 * the env(1)-style code that a launcher would exit with (125 setup failed, 126 not
 * executable, 127 not found). The returned handle's pid is a child of the caller:
 * waitpid() it, poll its pidfd, or call jail_poll()/jail_wait(), which reap it and
 * fill a jail_status. Killing that pid takes the whole jail down. */
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
    char *src;
    char *dst;
    bool writable;
};

struct jail_tmpfs {
    char *dst;
    uint64_t size_mb;
};

struct jail_limits {
    uint64_t as_mb;    /* RLIMIT_AS */
    uint64_t cpu_s;    /* RLIMIT_CPU */
    uint64_t fsize_mb; /* RLIMIT_FSIZE */
    uint64_t nofile;   /* RLIMIT_NOFILE */
    uint64_t nproc;    /* RLIMIT_NPROC */
    uint64_t wall_s;   /* whole-jail wall-clock limit; 0 = none */
};

struct jail_config {
    bool namespaces; /* false: rlimits + no_new_privs + seccomp only */

    /* identity (namespaces only): the uid/gid inside, and the range of unprivileged
     * host ids from which each concurrent jail gets a distinct one */
    uid_t inside_uid;
    gid_t inside_gid;
    uint32_t host_id_base;
    uint32_t host_id_count;
    char *hostname;

    /* filesystem (namespaces only): the system binds come from the profile */
    struct jail_bind *binds;
    size_t n_binds;
    struct jail_tmpfs *tmpfs;
    size_t n_tmpfs;
    uint64_t tmp_size_mb; /* the /tmp tmpfs */
    char *cwd;            /* inside the jail; default "/" */

    /* environment: NULL-terminated "NAME=VALUE" list; a minimal PATH is added when
     * none is given. Nothing else of the caller's environment is passed. */
    char **env;

    enum jail_net net;
    char *veth_host_cidr;  /* "169.254.64.1/30" (JAIL_NET_VETH) */
    char *veth_spoke_cidr; /* "169.254.64.2/30" */
    int veth_host_netns_fd; /* netns for the host side; -1 = the caller's own */

    struct jail_limits limits;

    char *seccomp_preset;       /* "c", later "python", "node" */
    char **seccomp_extra_allow; /* NULL-terminated syscall names added by a profile */
    enum jail_seccomp_action seccomp_action;

    /* descriptors: the program's stdin/stdout/stderr (-1 = the caller's own), and
     * extra descriptors to keep open (everything else is closed) */
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    int *keep_fds;
    size_t n_keep_fds;

    bool verbose; /* print each setup step on stderr */
};

struct jail_status {
    int exit_code; /* the program's status, or 128+signal, or 125/126/127 */
    int term_signal; /* 0, or the signal that ended the program */
    /* "" when not known, else "seccomp", "rlimit-cpu", "rlimit-fsize", "wall-time",
     * "killed" (jail_kill) */
    char reason[32];
};

struct jail_error {
    int exit_code; /* 125, 126 or 127 */
    char message[JAIL_ERR_MAX];
};

struct jail;

/* Defaults: the values of config/profiles/spoke.json without reading it. */
void jail_config_init(struct jail_config *cfg);
/* Loads a JSON profile over cfg; errors name the file and the key. */
int jail_config_load_profile(struct jail_config *cfg, const char *path, char *err,
                             size_t errlen);
void jail_config_free(struct jail_config *cfg);

struct jail *jail_start(const struct jail_config *cfg, char *const argv[],
                        struct jail_error *err);
pid_t jail_pid(const struct jail *j);
/* 1 and *st filled when the jail has ended (reaped), 0 while it runs, -1 on error. */
int jail_poll(struct jail *j, struct jail_status *st);
/* Blocks until the jail ends. */
int jail_wait(struct jail *j, struct jail_status *st);
/* Ends every process of the jail (SIGKILL); the status reason becomes "killed". */
int jail_kill(struct jail *j);
void jail_free(struct jail *j);

/* The status line of --status-fd: {"exit_code":N,"signal":N|null,"reason":"..."}. */
int jail_status_format(const struct jail_status *st, char *buf, size_t size);

#endif
