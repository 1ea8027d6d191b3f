/* A cgroup per jail: what rlimits cannot bound. RLIMIT_AS counts a process's mappings,
 * not the System V shared memory it detached, the memfd it wrote without mapping, the
 * tmpfs it filled, nor the processes it left spinning; a cgroup counts all of it and
 * ends with the jail.
 *
 *   caller   cgroup_prepare: finds the hierarchies (v2 first, else the v1 controllers)
 *            and the parent (the caller's own cgroup or a configured one), checks that
 *            each limit asked for has a controller there. Errors are the user's to fix.
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
 * Delegation: the jail's cgroup is made under the caller's own cgroup (from
 * /proc/self/cgroup) or a configured parent, never at the root of a hierarchy: a caller
 * at the root gets "/nsjail-lite" as the parent. v2's rule that a cgroup with processes
 * cannot hand controllers to its children: a configured parent must be free of
 * processes; the caller's own cgroup has its processes moved into a leaf beside the
 * jails ("nsjail-lite.leaf"), as a systemd unit with Delegate=yes is meant to.
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
 * which the next jail under the same parent removes once its monitor pid is gone. */
#include "internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#define LEAF_NAME "nsjail-lite.leaf" /* v2: where the caller's processes go (see below) */
#define CPU_PERIOD_US 100000ULL
#define MIB (1024ULL * 1024ULL)

static const char *const ctl_name[CG_N] = {"memory", "pids", "cpu"};

/* ---- caller: where the hierarchies are ---- */

/* /proc/self/mountinfo and /proc/self/cgroup, read once per jail: finding v2 and
 * then up to three v1 hierarchies read them four times each (0.3 ms a start). */
struct proc_texts {
    char *mountinfo, *cgroup;
    size_t mountinfo_len, cgroup_len;
};

/* A whole /proc file (its size is not known in advance), or NULL. */
static char *read_proc_text(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 8192, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap)
            buf = xrealloc(buf, cap *= 2);
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            close(fd);
            if (got < 0) {
                free(buf);
                return NULL;
            }
            *len = n;
            return buf;
        }
        n += (size_t)got;
    }
}

static void proc_texts_read(struct proc_texts *t)
{
    t->mountinfo = read_proc_text("/proc/self/mountinfo", &t->mountinfo_len);
    t->cgroup = read_proc_text("/proc/self/cgroup", &t->cgroup_len);
}

static void proc_texts_free(struct proc_texts *t)
{
    free(t->mountinfo);
    free(t->cgroup);
}

/* The mount point of the v2 hierarchy (want == NULL) or of the v1 hierarchy holding
 * controller want, with the mount's root, from /proc/self/mountinfo. */
static bool find_mount(const struct proc_texts *t, const char *want, char *mnt, size_t mntlen,
                       char *root, size_t rootlen)
{
    FILE *f =
        t->mountinfo && t->mountinfo_len ? fmemopen(t->mountinfo, t->mountinfo_len, "r") : NULL;
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
        char *save = NULL, *field[5] = {0};
        char *tok = strtok_r(line, " \n", &save);
        for (int i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " \n", &save))
            field[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " \n", &save);
        char *fstype = tok ? strtok_r(NULL, " \n", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
        char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
        if (!super || !field[4] || strchr(field[4], '\\') || strchr(field[3], '\\'))
            continue; /* escaped (unusual) paths are not ours to guess */
        if (!want) {
            found = strcmp(fstype, "cgroup2") == 0;
        } else if (strcmp(fstype, "cgroup") == 0) {
            char *s2 = NULL;
            for (char *o = strtok_r(super, ",", &s2); o && !found; o = strtok_r(NULL, ",", &s2))
                found = strcmp(o, want) == 0;
        }
        if (found && (!str_copy(mnt, field[4], mntlen) || !str_copy(root, field[3], rootlen)))
            found = false;
    }
    fclose(f);
    return found;
}

/* The caller's cgroup path in the v2 hierarchy (want == NULL) or in the v1 hierarchy
 * of controller want, from /proc/self/cgroup. */
static bool own_cgroup(const struct proc_texts *t, const char *want, char *path, size_t len)
{
    FILE *f = t->cgroup && t->cgroup_len ? fmemopen(t->cgroup, t->cgroup_len, "r") : NULL;
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctls = c1 + 1;
        if (!want) {
            found = strncmp(line, "0:", 2) == 0 && ctls[0] == '\0';
        } else {
            char copy[256], *s2 = NULL;
            if (!str_copy(copy, ctls, sizeof(copy)))
                continue;
            for (char *o = strtok_r(copy, ",", &s2); o && !found; o = strtok_r(NULL, ",", &s2))
                found = strcmp(o, want) == 0;
        }
        if (found && !str_copy(path, c2 + 1, len))
            found = false;
    }
    fclose(f);
    return found;
}

/* A cgroup path we accept as a parent: absolute, no "." or ".." step, no "//". */
static bool clean_cgroup_path(const char *s)
{
    if (s[0] != '/' || strlen(s) > 1024)
        return false;
    for (const char *step = s + 1; *step;) {
        size_t n = strcspn(step, "/");
        if (n == 0 || (n == 1 && step[0] == '.') || (n == 2 && step[0] == '.' && step[1] == '.'))
            return false;
        step += n;
        if (*step == '/')
            step++;
    }
    return true;
}

/* The parent directory for one hierarchy: MNT + (parent relative to the mount's root). */
static char *parent_dir(const char *mnt, const char *mnt_root, const char *cg_path)
{
    size_t rl = strlen(mnt_root);
    const char *rel = cg_path;
    if (strcmp(mnt_root, "/") != 0) {
        if (strncmp(cg_path, mnt_root, rl) != 0 || (cg_path[rl] != '/' && cg_path[rl] != '\0'))
            return NULL; /* our cgroup is not below what is mounted */
        rel = cg_path + rl;
    }
    if (strcmp(rel, "/") == 0 || rel[0] == '\0')
        return xasprintf("%s/nsjail-lite", mnt); /* never at the root itself */
    return xasprintf("%s%s", mnt, rel);
}

static bool file_has_word(const char *path, const char *word)
{
    char buf[512];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *save = NULL;
    for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
        if (strcmp(w, word) == 0)
            return true;
    return false;
}

/* v2 when every controller asked for is available to the parent there. */
static bool try_v2(const struct proc_texts *t, const struct jail_config *cfg,
                   struct cgroup_plan *cg, const bool want[CG_N])
{
    char mnt[1024], root[1024], own[1024];
    if (!find_mount(t, NULL, mnt, sizeof(mnt), root, sizeof(root)) ||
        !own_cgroup(t, NULL, own, sizeof(own)))
        return false;
    char *parent = parent_dir(mnt, root, cfg->cgroup_parent ? cfg->cgroup_parent : own);
    if (!parent)
        return false;
    /* The parent's cgroup.controllers lists what its own parent hands down; a parent we
     * would create ("/nsjail-lite") gets what the root has. */
    char *probe = xasprintf("%s/cgroup.controllers", parent);
    struct stat st;
    if (stat(parent, &st) < 0) {
        free(probe);
        probe = xasprintf("%s/cgroup.controllers", mnt);
    }
    bool ok = true;
    for (int k = 0; k < CG_N && ok; k++)
        ok = !want[k] || file_has_word(probe, ctl_name[k]);
    free(probe);
    if (!ok) {
        free(parent);
        return false;
    }
    cg->version = 2;
    cg->own_parent = !cfg->cgroup_parent;
    for (int k = 0; k < CG_N; k++)
        if (want[k])
            cg->parent[k] = xstrdup(parent);
    free(parent);
    return true;
}

static int try_v1(const struct proc_texts *t, const struct jail_config *cfg, struct cgroup_plan *cg,
                  const bool want[CG_N], struct jail_error *err)
{
    for (int k = 0; k < CG_N; k++) {
        if (!want[k])
            continue;
        char mnt[1024], root[1024], own[1024];
        if (!find_mount(t, ctl_name[k], mnt, sizeof(mnt), root, sizeof(root))) {
            jail_err_set(err, 125,
                         "cgroup: no %s controller is mounted (neither in cgroup v2 nor v1); "
                         "set the %s limit to 0 to run without it",
                         ctl_name[k],
                         k == CG_MEMORY ? "memory_mb"
                         : k == CG_PIDS ? "pids"
                                        : "cpu_percent");
            return -1;
        }
        if (!own_cgroup(t, ctl_name[k], own, sizeof(own))) {
            jail_err_set(err, 125, "cgroup: /proc/self/cgroup names no %s cgroup", ctl_name[k]);
            return -1;
        }
        cg->parent[k] = parent_dir(mnt, root, cfg->cgroup_parent ? cfg->cgroup_parent : own);
        if (!cg->parent[k]) {
            jail_err_set(err, 125, "cgroup: the %s hierarchy at %s does not contain our cgroup",
                         ctl_name[k], mnt);
            return -1;
        }
    }
    cg->version = 1;
    return 0;
}

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
    if (cfg->cgroup_parent && !clean_cgroup_path(cfg->cgroup_parent)) {
        jail_err_set(err, 125,
                     "cgroup parent '%s': expected an absolute cgroup path without '.', '..' "
                     "or '//' (as /proc/self/cgroup writes it)",
                     cfg->cgroup_parent);
        return -1;
    }
    struct proc_texts t;
    proc_texts_read(&t);
    bool found = try_v2(&t, cfg, cg, want) || try_v1(&t, cfg, cg, want, err) == 0;
    proc_texts_free(&t);
    if (!found)
        return -1;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = (uint32_t)now_mono_ns() ^ (uint32_t)getpid();
    cg->rnd = rnd;
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
    p->cg.version = 0;
}

/* ---- monitor: syscalls over the paths prepared above ---- */

static int write_at(const char *dir, const char *file, const char *text)
{
    char path[1200];
    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The number after "key " in a flat-keyed file (memory.events, pids.events,
 * memory.oom_control), or the file's only number when key is NULL; 0 if absent. */
static uint64_t read_value(const char *dir, const char *file, const char *key)
{
    char path[1200], buf[2048];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
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

static bool same_dir_before(const struct cgroup_plan *cg, int k)
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

/* v2: the controllers a child of dir may use must be on in dir's subtree_control.
 * Returns 0, or the errno with err filled. */
static int enable_controllers(const char *dir, const struct cgroup_plan *cg, char *err,
                              size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
    for (int k = 0; k < CG_N; k++) {
        if (!cg->parent[k] || file_has_word(path, ctl_name[k]))
            continue;
        char plus[16];
        snprintf(plus, sizeof(plus), "+%s", ctl_name[k]);
        if (write_at(dir, "cgroup.subtree_control", plus) < 0) {
            int e = errno;
            snprintf(err, errlen, "cgroup: enabling %s for the children of %s: %s%s", ctl_name[k],
                     dir, strerror(e),
                     e == EBUSY ? " (it holds processes: give a delegated cgroup without "
                                  "processes as the cgroup parent)"
                                : "");
            return e;
        }
    }
    return 0;
}

/* v2's rule that a cgroup holding processes cannot hand controllers to its children:
 * when the parent is the caller's own cgroup (a systemd unit with Delegate=yes holds the
 * hub, netproxy and its Redis there), its processes move into a leaf beside the jails,
 * as container runtimes do. A few rounds, for processes forked meanwhile. */
static int move_into_leaf(const char *dir, char *err, size_t errlen)
{
    char leaf[1200];
    snprintf(leaf, sizeof(leaf), "%s/" LEAF_NAME, dir);
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cgroup: mkdir %s: %s", leaf, strerror(errno));
        return -1;
    }
    char procs[1200], buf[16384];
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    for (int round = 0; round < 8; round++) {
        int fd = open(procs, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read_full(fd, buf, sizeof(buf) - 1);
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            return n < 0 ? -1 : 0;
        buf[n] = '\0';
        char *save = NULL;
        for (char *pid = strtok_r(buf, "\n", &save); pid; pid = strtok_r(NULL, "\n", &save))
            (void)write_at(leaf, "cgroup.procs", pid); /* ESRCH: it has just exited */
    }
    return 0;
}

static int ensure_parent(const struct cgroup_plan *cg, int k, char *err, size_t errlen)
{
    const char *parent = cg->parent[k];
    if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cgroup: mkdir %s: %s", parent, strerror(errno));
        return -1;
    }
    if (cg->version == 2) {
        /* Our own "/nsjail-lite" under the root: the root hands the controllers down. */
        size_t len = strlen(parent);
        if (len > 12 && strcmp(parent + len - 12, "/nsjail-lite") == 0) {
            char up[1200];
            snprintf(up, sizeof(up), "%.*s", (int)(len - 12), parent);
            if (enable_controllers(up, cg, err, errlen) != 0)
                return -1;
        }
        int e = enable_controllers(parent, cg, err, errlen);
        if (e == EBUSY && cg->own_parent && move_into_leaf(parent, err, errlen) == 0)
            e = enable_controllers(parent, cg, err, errlen);
        if (e)
            return -1;
    }
    return 0;
}

static int set_limits(const struct cgroup_plan *cg, char *err, size_t errlen)
{
    char v[64];
    const char *dir, *file = NULL;
#define SET(F, ...)                                                                                \
    do {                                                                                           \
        file = (F);                                                                                \
        snprintf(v, sizeof(v), __VA_ARGS__);                                                       \
        if (write_at(dir, file, v) < 0)                                                            \
            goto fail;                                                                             \
    } while (0)
    if ((dir = cg->dir[CG_MEMORY])) {
        uint64_t bytes = cg->memory_mb * MIB;
        if (cg->version == 2) {
            SET("memory.max", "%" PRIu64, bytes);
            /* No swap: what the limit stops must not go to disk instead. Absent
             * without swap accounting, which also means nothing to swap to. */
            if (write_at(dir, "memory.swap.max", "0") < 0 && errno != ENOENT)
                goto fail_swap;
            SET("memory.oom.group", "1");
        } else {
            SET("memory.limit_in_bytes", "%" PRIu64, bytes);
            if (write_at(dir, "memory.memsw.limit_in_bytes", v) < 0 && errno != ENOENT)
                goto fail_swap;
            (void)write_at(dir, "memory.swappiness", "0");
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
        if (!cg->dir[k] || same_dir_before(cg, k))
            continue;
        char path[1200];
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
    for (int k = 0; k < CG_N; k++) {
        if (!cg->parent[k])
            continue;
        snprintf(cg->dir[k], strlen(cg->parent[k]) + 64, "%s/" NAME_PREFIX "%d-%08x", cg->parent[k],
                 (int)getpid(), (unsigned)cg->rnd);
        if (same_dir_before(cg, k))
            continue;
        if (ensure_parent(cg, k, err, errlen) < 0)
            goto undo;
        sweep_stale(cg->parent[k]);
        if (mkdir(cg->dir[k], 0755) < 0) {
            snprintf(err, errlen, "cgroup: mkdir %s: %s", cg->dir[k], strerror(errno));
            cg->dir[k][0] = '\0';
            goto undo;
        }
    }
    if (set_limits(cg, err, errlen) < 0 || open_placement_files(cg, err, errlen) < 0)
        goto undo;
    plan_debug(p, "cgroup %s: memory %" PRIu64 " MiB, pids %" PRIu64 ", cpu %" PRIu64 "%%",
               cg->dir[CG_MEMORY] ? cg->dir[CG_MEMORY]
               : cg->dir[CG_PIDS] ? cg->dir[CG_PIDS]
                                  : cg->dir[CG_CPU],
               cg->memory_mb, cg->pids, cg->cpu_percent);
    return 0;
undo:
    cgroup_remove(p, NULL);
    return -1;
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
        if (!cg->dir[k] || same_dir_before(cg, k))
            continue;
        if (write_at(cg->dir[k], "cgroup.procs", v) < 0) {
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

void cgroup_remove(struct jail_plan *p, struct cgroup_end *end)
{
    struct cgroup_plan *cg = &p->cg;
    if (end)
        memset(end, 0, sizeof(*end));
    if (!cg->version)
        return;
    close_placement_files(cg);
    const char *mem = cg->dir[CG_MEMORY], *pids = cg->dir[CG_PIDS];
    if (end && mem && mem[0]) {
        if (cg->version == 2) {
            end->oom_kills = read_value(mem, "memory.events", "oom_kill");
            end->memory_peak = read_value(mem, "memory.peak", NULL);
        } else {
            end->oom_kills = read_value(mem, "memory.oom_control", "oom_kill");
            end->memory_peak = read_value(mem, "memory.max_usage_in_bytes", NULL);
        }
    }
    if (end && pids && pids[0]) {
        end->pids_refused = read_value(pids, "pids.events", "max");
        end->pids_peak = read_value(pids, "pids.peak", NULL);
    }
    for (int k = CG_N - 1; k >= 0; k--) {
        if (!cg->dir[k] || !cg->dir[k][0] || same_dir_before(cg, k))
            continue;
        /* The last processes leave the cgroup as they exit, a moment after init has
         * been reaped: retry for up to a second. */
        for (int tries = 0; rmdir(cg->dir[k]) < 0 && errno == EBUSY && tries < 1000; tries++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    if (end)
        plan_debug(p,
                   "cgroup removed: memory peak %" PRIu64 " KiB, %" PRIu64
                   " OOM kills, pids peak %" PRIu64 ", %" PRIu64 " forks refused",
                   end->memory_peak / 1024, end->oom_kills, end->pids_peak, end->pids_refused);
    for (int k = 0; k < CG_N; k++)
        if (cg->dir[k])
            cg->dir[k][0] = '\0';
}
