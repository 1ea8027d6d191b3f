/* A cgroup per jail: what rlimits cannot bound. RLIMIT_AS counts a process's mappings,
 * not the System V shared memory it detached, the memfd it wrote without mapping, the
 * tmpfs it filled, nor the processes it left spinning; a cgroup counts all of it and
 * ends with the jail.
 *
 *   caller   cgroup_prepare: the parent in each hierarchy, with every controller asked
 *            for (cgroup_base.c, once per process). Errors are the user's to fix.
 *   monitor  cgroup_create: mkdir NAME under the parent, writes the limits;
 *            cgroup_attach: moves init into it right after the clone, before init does
 *            anything (so everything the jail starts is inside); on v1 init moves
 *            itself instead (cgroup_enter, below), and attach only closes the files;
 *            cgroup_remove: once the jail is gone, reads what happened (OOM kills,
 *            refused forks, peaks) and removes the directories.
 *
 * v2 (unified): memory.max, memory.swap.max 0, memory.oom.group 1 (an OOM kill takes
 * every process of the jail and no other), pids.max, cpu.max. v1: memory.limit_in_bytes
 * and memory.memsw.limit_in_bytes (swap off where swap accounting exists), pids.max,
 * cpu.cfs_quota_us; v1 has no oom.group: the memcg OOM killer picks one process of the
 * jail at a time, and only processes of the jail.
 *
 * Where: under the base of each hierarchy that cgroup_base.c finds once per process
 * (the caller's delegated cgroup, made an inner node on v2, a scope from systemd, or a
 * configured parent).
 *
 * Why init moves itself on v1: moving another process (a pid written to cgroup.procs)
 * takes the kernel's global cgroup_threadgroup_rwsem for writing, and its first writer
 * after a quiet moment waits for an RCU grace period, 6 to 17 ms here: more than half
 * of what a jail adds to a node server's start. A thread that writes "0" to a v1
 * "tasks" file moves only itself, which the kernel does without that lock (60 us). The
 * monitor opens the files as host root before the clone, since the kernel checks the
 * opener's credentials, and init, single-threaded, writes "0" before anything else.
 * v2 has no such file outside threaded subtrees: there init is cloned straight into its
 * cgroup (clone3 with CLONE_INTO_CGROUP, Linux 5.7), and moved by the monitor only
 * where the kernel refuses that.
 *
 * Names are unique per jail ("nsjail-lite-MONITORPID-RANDOM") so that jails of several
 * hubs and tests share a parent; a monitor killed outright leaves an empty directory,
 * which the next jail under the same parent removes once its monitor pid is gone
 * (cgroup_sweep: the monitor does it while init builds the jail's root, off the start's
 * critical path, where a directory read and a kill(0) per sibling added to every
 * start). */
#include "internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_PREFIX "nsjail-lite-"
#define CPU_PERIOD_US 100000ULL
#define MIB (1024ULL * 1024ULL)

/* ---- caller ---- */

int cgroup_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    struct cgroup_plan *cg = &p->cg;
    const struct jail_limits *l = &cfg->limits;
    for (int k = 0; k < CG_N; k++)
        cg->tasks_fd[k] = -1;
    cg->dir_fd = -1;
    cg->memory_mb = l->memory_mb;
    cg->pids = l->pids;
    cg->cpu_percent = l->cpu_percent;
    const bool want[CG_N] = {l->memory_mb > 0, l->pids > 0, l->cpu_percent > 0};
    if (!cfg->namespaces || (!want[0] && !want[1] && !want[2]))
        return 0;
    if (l->memory_mb > (1ULL << 30) || l->pids > (1ULL << 22) || l->cpu_percent > 100000) {
        jail_err_set(err, 125, "cgroup: a limit is out of range (memory_mb, pids, cpu_percent)");
        return -1;
    }
    if (cgroup_base_get(cfg->cgroup_parent, want, &cg->version, cg->parent, err) < 0)
        return -1;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = (uint32_t)now_mono_ns() ^ (uint32_t)getpid();
    cg->rnd = rnd;
    cgroup_pool_plan(cfg, cg);
    for (int k = 0; k < CG_N; k++)
        if (cg->parent[k])
            cg->dir[k] = xcalloc(1, strlen(cg->parent[k]) + 64);
    plan_debug(p, "cgroup v%d under %s", cg->version,
               cg->parent[CG_MEMORY] ? cg->parent[CG_MEMORY]
               : cg->parent[CG_PIDS] ? cg->parent[CG_PIDS]
                                     : cg->parent[CG_CPU]);
    return 0;
}

void cgroup_plan_free(struct jail_plan *p)
{
    for (int k = 0; k < CG_N; k++) {
        free(p->cg.parent[k]);
        free(p->cg.dir[k]);
        p->cg.parent[k] = p->cg.dir[k] = NULL;
    }
    free(p->cg.pool_dir);
    p->cg.pool_dir = NULL;
    p->cg.version = 0;
}

/* ---- monitor: syscalls over the paths prepared above ---- */

/* The number after "key " in a flat-keyed file (memory.events, pids.events,
 * memory.oom_control), or the file's only number when key is NULL; 0 if absent. */
static uint64_t read_value(const char *dir, const char *file, const char *key)
{
    char path[PATH_MAX], buf[2048];
    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *at = buf;
    if (key) {
        size_t kl = strlen(key);
        at = NULL;
        for (const char *line = buf; line && *line;
             line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
                at = line + kl + 1;
                break;
            }
        }
        if (!at)
            return 0;
    }
    return strtoull(at, NULL, 10);
}

bool cgroup_same_dir_before(const struct cgroup_plan *cg, int k)
{
    for (int i = 0; i < k; i++)
        if (cg->dir[i] && strcmp(cg->dir[i], cg->dir[k]) == 0)
            return true;
    return false;
}

/* Removes the empty directories that monitors killed outright left under parent. */
static void sweep_stale(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, NAME_PREFIX, strlen(NAME_PREFIX)) != 0)
            continue;
        long pid = strtol(e->d_name + strlen(NAME_PREFIX), NULL, 10);
        if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH))
            (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR); /* EBUSY while in use */
    }
    closedir(d);
}

int cgroup_set_limits(const struct cgroup_plan *cg, char *err, size_t errlen)
{
    char v[64];
    const char *dir, *file = NULL;
#define SET(F, ...)                                                                                \
    do {                                                                                           \
        file = (F);                                                                                \
        snprintf(v, sizeof(v), __VA_ARGS__);                                                       \
        if (cgroup_write(dir, file, v) < 0)                                                        \
            goto fail;                                                                             \
    } while (0)
    if ((dir = cg->dir[CG_MEMORY])) {
        uint64_t bytes = cg->memory_mb * MIB;
        if (cg->version == 2) {
            SET("memory.max", "%" PRIu64, bytes);
            /* No swap: what the limit stops must not go to disk instead. Absent
             * without swap accounting, which also means nothing to swap to. */
            if (cgroup_write(dir, "memory.swap.max", "0") < 0 && errno != ENOENT)
                goto fail_swap;
            SET("memory.oom.group", "1");
        } else {
            SET("memory.limit_in_bytes", "%" PRIu64, bytes);
            if (cgroup_write(dir, "memory.memsw.limit_in_bytes", v) < 0 && errno != ENOENT)
                goto fail_swap;
            (void)cgroup_write(dir, "memory.swappiness", "0");
        }
    }
    if ((dir = cg->dir[CG_PIDS]))
        SET("pids.max", "%" PRIu64, cg->pids);
    if ((dir = cg->dir[CG_CPU])) {
        uint64_t quota = cg->cpu_percent * CPU_PERIOD_US / 100;
        if (quota < 1000)
            quota = 1000; /* the kernel's minimum quota is 1 ms */
        if (cg->version == 2) {
            SET("cpu.max", "%" PRIu64 " %llu", quota, CPU_PERIOD_US);
        } else {
            SET("cpu.cfs_period_us", "%llu", CPU_PERIOD_US);
            SET("cpu.cfs_quota_us", "%" PRIu64, quota);
        }
    }
#undef SET
    return 0;
fail_swap:
    file = cg->version == 2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes";
fail:
    snprintf(err, errlen, "cgroup: writing %s/%s: %s", dir, file, strerror(errno));
    return -1;
}

/* What init is placed with: v1, the "tasks" file of each of the jail's directories,
 * for cgroup_enter; v2, the jail's directory, for clone3. */
static int open_placement_files(struct cgroup_plan *cg, char *err, size_t errlen)
{
    if (cg->version == 2) {
        const char *dir = cg->dir[CG_MEMORY] ? cg->dir[CG_MEMORY]
                          : cg->dir[CG_PIDS] ? cg->dir[CG_PIDS]
                                             : cg->dir[CG_CPU];
        cg->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cg->dir_fd < 0) {
            snprintf(err, errlen, "cgroup: open %s: %s", dir, strerror(errno));
            return -1;
        }
        return 0;
    }
    for (int k = 0; k < CG_N; k++) {
        if (!cg->dir[k] || cgroup_same_dir_before(cg, k))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/tasks", cg->dir[k]);
        cg->tasks_fd[k] = open(path, O_WRONLY | O_CLOEXEC);
        if (cg->tasks_fd[k] < 0) {
            snprintf(err, errlen, "cgroup: open %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static void close_placement_files(struct cgroup_plan *cg)
{
    for (int k = 0; k < CG_N; k++) {
        if (cg->tasks_fd[k] >= 0)
            close(cg->tasks_fd[k]);
        cg->tasks_fd[k] = -1;
    }
    if (cg->dir_fd >= 0)
        close(cg->dir_fd);
    cg->dir_fd = -1;
}

int cgroup_create(struct jail_plan *p, char *err, size_t errlen)
{
    struct cgroup_plan *cg = &p->cg;
    if (!cg->version)
        return 0;
    /* A slot of the pool: ready-made and limited, one rename of its token away. A slot
     * whose directories are gone (removed by hand) is dropped and one made here. */
    if (cg->pool_size > 0 && cgroup_pool_claim(p)) {
        if (open_placement_files(cg, err, errlen) == 0)
            return 0;
        plan_debug(p, "cgroup pool: the claimed slot is unusable (%s): making one", err);
        close_placement_files(cg);
        cgroup_pool_drop_claim(cg);
    }
    for (int k = 0; k < CG_N; k++) {
        if (!cg->parent[k])
            continue;
        snprintf(cg->dir[k], strlen(cg->parent[k]) + 64, "%s/" NAME_PREFIX "%d-%08x", cg->parent[k],
                 (int)getpid(), (unsigned)cg->rnd);
        if (cgroup_same_dir_before(cg, k))
            continue;
        if (mkdir(cg->dir[k], 0755) < 0) {
            snprintf(err, errlen, "cgroup: mkdir %s: %s", cg->dir[k], strerror(errno));
            cg->dir[k][0] = '\0';
            goto undo;
        }
    }
    if (cgroup_set_limits(cg, err, errlen) < 0 || open_placement_files(cg, err, errlen) < 0)
        goto undo;
    plan_debug(p, "cgroup %s: memory %" PRIu64 " MiB, pids %" PRIu64 ", cpu %" PRIu64 "%%",
               cg->dir[CG_MEMORY] ? cg->dir[CG_MEMORY]
               : cg->dir[CG_PIDS] ? cg->dir[CG_PIDS]
                                  : cg->dir[CG_CPU],
               cg->memory_mb, cg->pids, cg->cpu_percent);
    return 0;
undo:
    cgroup_remove(p, NULL, 0);
    return -1;
}

void cgroup_sweep(const struct jail_plan *p)
{
    /* With a pool its helper sweeps, after the jail (cgroup_pool.c). */
    if (p->cg.version && !p->cg.pool_size)
        cgroup_sweep_stale(&p->cg);
}

void cgroup_sweep_stale(const struct cgroup_plan *cg)
{
    for (int k = 0; k < CG_N; k++)
        if (cg->parent[k] && cg->dir[k] && !cgroup_same_dir_before(cg, k))
            sweep_stale(cg->parent[k]);
}

int cgroup_clone_fd(const struct jail_plan *p)
{
    return p->cg.version == 2 ? p->cg.dir_fd : -1;
}

int cgroup_attach(struct jail_plan *p, pid_t pid, bool born_inside, char *err, size_t errlen)
{
    struct cgroup_plan *cg = &p->cg;
    if (!cg->version)
        return 0;
    close_placement_files(cg); /* init has its copies (v1: cgroup_enter) */
    if (cg->version == 1 || born_inside) {
        plan_debug(p, "init (host pid %d) %s its cgroup", (int)pid,
                   born_inside ? "was cloned into" : "moves itself into");
        return 0;
    }
    char v[32];
    snprintf(v, sizeof(v), "%d", (int)pid);
    for (int k = 0; k < CG_N; k++) {
        if (!cg->dir[k] || cgroup_same_dir_before(cg, k))
            continue;
        if (cgroup_write(cg->dir[k], "cgroup.procs", v) < 0) {
            snprintf(err, errlen, "cgroup: moving the jail into %s: %s", cg->dir[k],
                     strerror(errno));
            return -1;
        }
    }
    plan_debug(p, "init (host pid %d) moved into its cgroup", (int)pid);
    return 0;
}

int cgroup_enter(struct jail_plan *p, char *err, size_t errlen)
{
    struct cgroup_plan *cg = &p->cg;
    if (!cg->version)
        return 0; /* no cgroup: the descriptors were never set up */
    for (int k = 0; k < CG_N; k++) {
        if (cg->tasks_fd[k] < 0)
            continue;
        /* "0": this thread, init's only one. */
        if (write(cg->tasks_fd[k], "0", 1) != 1) {
            snprintf(err, errlen, "cgroup: moving the jail into %s: %s", cg->dir[k],
                     strerror(errno));
            return -1;
        }
    }
    close_placement_files(cg);
    return 0;
}

int cgroup_unshare_ns(const struct jail_plan *p, char *err, size_t errlen)
{
    if (!p->cg.version)
        return 0;
    /* Rooted at the cgroup init was just moved into: the jail sees "/" there, not the
     * host's paths (the caller's cgroup, its session or container ids). */
    if (unshare(CLONE_NEWCGROUP) < 0) {
        snprintf(err, errlen, "unshare(CLONE_NEWCGROUP): %s", strerror(errno));
        return -1;
    }
    return 0;
}

void cgroup_remove(struct jail_plan *p, struct cgroup_end *end, unsigned want)
{
    struct cgroup_plan *cg = &p->cg;
    if (end)
        memset(end, 0, sizeof(*end));
    /* A counter that cannot change the status is not read: a clean exit reads nothing
     * (two opens on the start-to-status path of every jail). */
    if (p->verbose)
        want = CG_END_OOM_KILLS | CG_END_PIDS_REFUSED;
    if (!cg->version)
        return;
    close_placement_files(cg);
    const char *mem = cg->dir[CG_MEMORY], *pids = cg->dir[CG_PIDS];
    if (end && mem && mem[0] && (want & CG_END_OOM_KILLS)) {
        if (cg->version == 2) {
            end->oom_kills = read_value(mem, "memory.events", "oom_kill");
            if (p->verbose) /* the peaks are for -v only */
                end->memory_peak = read_value(mem, "memory.peak", NULL);
        } else {
            end->oom_kills = read_value(mem, "memory.oom_control", "oom_kill");
            if (p->verbose)
                end->memory_peak = read_value(mem, "memory.max_usage_in_bytes", NULL);
        }
    }
    if (end && pids && pids[0] && (want & CG_END_PIDS_REFUSED)) {
        end->pids_refused = read_value(pids, "pids.events", "max");
        if (p->verbose)
            end->pids_peak = read_value(pids, "pids.peak", NULL);
    }
    /* With a pool the directories go after the status is out (pools_after_exit). */
    if (end && cg->pool_size > 0) {
        cg->removal_pending = true;
        plan_debug(p,
                   "cgroup read: memory peak %" PRIu64 " KiB, %" PRIu64
                   " OOM kills, pids peak %" PRIu64 ", %" PRIu64
                   " forks refused; removed after exit",
                   end->memory_peak / 1024, end->oom_kills, end->pids_peak, end->pids_refused);
        return;
    }
    (void)cgroup_rmdirs(cg);
    if (cg->pool_token[0])
        cgroup_pool_drop_claim(cg);
    if (end)
        plan_debug(p,
                   "cgroup removed: memory peak %" PRIu64 " KiB, %" PRIu64
                   " OOM kills, pids peak %" PRIu64 ", %" PRIu64 " forks refused",
                   end->memory_peak / 1024, end->oom_kills, end->pids_peak, end->pids_refused);
    for (int k = 0; k < CG_N; k++)
        if (cg->dir[k])
            cg->dir[k][0] = '\0';
}

int cgroup_rmdirs(const struct cgroup_plan *cg)
{
    int rc = 0;
    for (int k = CG_N - 1; k >= 0; k--) {
        if (!cg->dir[k] || !cg->dir[k][0] || cgroup_same_dir_before(cg, k))
            continue;
        /* The last processes leave the cgroup as they exit, a moment after init has
         * been reaped: retry for up to a second. */
        int tries = 0;
        while (rmdir(cg->dir[k]) < 0 && errno == EBUSY && tries++ < 1000) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (tries > 1000 || (access(cg->dir[k], F_OK) == 0))
            rc = -1;
    }
    return rc;
}

