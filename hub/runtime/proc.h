/* Starting a spoke's process in each isolation mode, and following it until it is
 * reaped.
 *
 *   none       posix_spawn (vfork + exec): a plain child in its own session, nothing
 *              restricted, the host network, SPOKE_DATA the host directory.
 *   process    nsjail-lite with namespaces=false: the same seccomp preset and rlimits
 *              as namespace mode, no_new_privs, no namespaces, host network, host
 *              data directory.
 *   namespace  nsjail-lite with user/mnt/pid/ipc/uts/net namespaces, a distinct host
 *              uid, the data directory bind-mounted at /data, and a veth to the
 *              gateway namespace (or loopback only for a spoke without network).
 *
 * In every mode the spoke's stdin and stdout are its end of the hub's socketpair, its
 * stderr a pipe the hub copies into <run_dir>/spokes/<user>/<app>.log (capped), and
 * its environment the one spoke_env_build() made. */
#ifndef HUB_PROC_H
#define HUB_PROC_H

#include "internal.h"
#include "net/net.h"

struct spawn_spec {
    enum isolation mode;
    const struct manifest *m;
    const char *spoke_id;
    const char *user;
    char *const *envp;
    int sock;               /* the spoke's end: stdin and stdout */
    const char *data_dir;   /* host path */
    uint32_t host_id;       /* namespace mode: the stable host id of data_dir, 0: none */
    int host_id_lock;       /* its lock, held by the caller (proc_host_id_lock) */
    uint64_t data_tmpfs_mb; /* namespace mode: /data is a tmpfs of this size instead */
    const char *log_path;
    const struct veth_addrs *veth; /* namespace mode with network, else NULL */
    const char *veth_ifname;       /* the host side's name in the gateway */
    int gateway_fd;
    const struct hub_ca *trust; /* namespace mode: the hub's CA and bundle bound in */
    const char *held_loader;    /* namespace mode: a held node's loader (held.h), or NULL */
};

/* The started process, registered with the hub; NULL with err and the env(1)-style
 * code (125 setup failed, 126 not executable, 127 not found) on failure. A jail is
 * returned while its setup is still under way (p->starting): a failure found then
 * reaches the owner through spoke_proc_start_failed(). */
struct proc *proc_spawn(struct hub *h, const struct spawn_spec *s, int *code, char *err,
                        size_t errlen);
/* Takes the host-wide lock of a stable host id without waiting (nsjail-lite's, which
 * the jail then keeps): a descriptor, -2 while another jail holds it, -1 with err. */
int proc_host_id_lock(uint32_t id, char *err, size_t errlen);
/* Refuses a host id range that overlaps /etc/subuid or /etc/subgid (namespace mode,
 * checked once at start): -1 with err. */
int proc_check_host_ids(const struct hub_config *cfg, char *err, size_t errlen);
/* Reaps through SIGCHLD events when pidfds are not available. */
void proc_watch_sigchld(struct hub *h);
/* SIGKILL to every process of the spoke; reaping and the exit record follow. */
void proc_kill(struct proc *p, const char *reason);
/* Detaches p from its spoke: a later exit is audited but concerns nobody. */
void proc_disown(struct proc *p);
/* At hub shutdown: waits up to grace_ms for the processes to end by themselves, then
 * kills and reaps the rest synchronously. */
void proc_reap_all(struct hub *h, uint64_t grace_ms);
/* Writes a line of the hub's into the spoke's log (under the same cap as its
 * stderr): what the spoke wrote on stdout that was not a frame, already neutralised. */
void proc_log_line(struct proc *p, const char *line);
/* Resolves a manifest command to an executable path. */
char *proc_resolve_command(const char *cmd, const char *bin_dir);

/* Set by spoke.c: the spoke that owns a proc learns of its exit. */
void spoke_proc_exited(struct spoke *sp, int exit_code, const char *reason);
/* ... and that its jail's setup failed (after proc_spawn() returned it): why, with
 * the env(1)-style code. The proc is no longer the spoke's; it is reaped as usual. */
void spoke_proc_start_failed(struct spoke *sp, int code, const char *why);

#endif
