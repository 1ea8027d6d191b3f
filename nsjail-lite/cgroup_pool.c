/* A pool of cgroups prepared ahead, so that a jail's start does not make its cgroup
 * and its end does not wait for the removal (issue 40). Making a cgroup (a mkdir per
 * hierarchy, the limit writes) and removing it cost well under a millisecond on an
 * idle machine, but under load the tail grows to about ten: that is now done by a
 * helper the monitor detaches after the jail has ended and its status is out.
 *
 * nsjail-lite is one process per jail, so the pool is shared state on the host: per
 * key (a hash of the version, the base in each hierarchy and every limit value
 * written: a slot is never handed to a jail with other limits), a token directory
 * /run/nsjail-lite/cgpool/KEY holding one file per slot, and the slot's cgroup
 * directories nsjail-pool-KEY-ID under the base of each hierarchy. The token's name is
 * the slot's state:
 *
 *   ID.prep.PID    being made by PID (a helper, under the key's flock)
 *   ID.ready       made and limited, empty, never used
 *   ID.taken.PID   claimed by the monitor PID (or, after it, its helper PID)
 *
 * A claim is one rename of ID.ready to ID.taken.PID: of any number of concurrent
 * claimers exactly one succeeds, the others get ENOENT and try the next. A slot is
 * used once: its helper (pool_helper.c) removes it after the jail (never back into the pool, so no
 * counter of one jail's - memory peak, OOM kills, pids peak, events - is seen by the
 * next), then refills the pool up to its size under an flock on the token directory
 * (one refiller at a time, so the pool never holds more than its size of ready slots).
 * A prep or taken slot whose PID is gone (a helper or monitor killed outright) is
 * reclaimed by the next refill: its directories removed (unless a process is still in
 * one: then it waits for a later refill), then its token. Tokens are made before the
 * directories and removed after them, so no directory of the pool is without one.
 * A key whose token directory has not changed for POOL_IDLE_S is drained by the next
 * helper of another key (its bases are in the key's "parents" file), so a limit set no
 * jail uses any more leaves nothing behind.
 *
 * The prefix "nsjail-pool-" is not "nsjail-lite-": the sweep of cgroups that monitors
 * killed outright (cgroup.c) leaves pool slots alone. */
#include "internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define POOL_ROOT "/run/nsjail-lite/cgpool"
#define SLOT_PREFIX "nsjail-pool-"
/* Changes whenever what a slot is made with changes (the set of files written): a
 * slot made by an older build is then under another key, never claimed. */
#define POOL_FORMAT "nsjail-lite cgroup pool 1"
/* A key none of whose tokens changed for this long (its directory's mtime: a claim or
 * a refill renames or makes a token) is drained by the next helper of another key. */
#define POOL_IDLE_S 600

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fnv1a_str(uint64_t h, const char *s)
{
    return fnv1a(h, s ? s : "-", strlen(s ? s : "-") + 1); /* the NUL separates */
}

void cgroup_pool_plan(const struct jail_config *cfg, struct cgroup_plan *cg)
{
    cg->pool_token[0] = '\0';
    cg->removal_pending = false;
    if (cfg->cgroup_pool < 0)
        cg->pool_size = 0;
    else if (cfg->cgroup_pool == 0)
        cg->pool_size = JAIL_CGROUP_POOL_DEFAULT;
    else
        cg->pool_size =
            cfg->cgroup_pool > JAIL_CGROUP_POOL_MAX ? JAIL_CGROUP_POOL_MAX : cfg->cgroup_pool;
    /* A base that lives and dies with this process (the transient scope systemd made
     * for this launcher, nsjail-lite-PID-RANDOM.scope: cgroup_base.c) would hold slots
     * no later jail can claim: no pool there. */
    for (int k = 0; k < CG_N && cg->pool_size; k++) {
        const char *last = cg->parent[k] ? strrchr(cg->parent[k], '/') : NULL;
        if (last && strncmp(last + 1, "nsjail-lite-", 12) == 0 && strstr(last, ".scope"))
            cg->pool_size = 0;
    }
    if (!cg->pool_size)
        return;
    char num[96];
    uint64_t h = fnv1a_str(0xcbf29ce484222325ULL, POOL_FORMAT);
    snprintf(num, sizeof(num), "v%d %" PRIu64 " %" PRIu64 " %" PRIu64, cg->version, cg->memory_mb,
             cg->pids, cg->cpu_percent);
    h = fnv1a_str(h, num);
    for (int k = 0; k < CG_N; k++)
        h = fnv1a_str(h, cg->parent[k]);
    snprintf(cg->pool_key, sizeof(cg->pool_key), "%016" PRIx64, h);
    size_t n = strlen(POOL_ROOT) + 1 + sizeof(cg->pool_key);
    cg->pool_dir = xcalloc(1, n);
    snprintf(cg->pool_dir, n, "%s/%s", POOL_ROOT, cg->pool_key);
}

bool pool_parse_token(const char *name, uint32_t *id, enum slot_state *state, pid_t *pid)
{
    char *end;
    if (strlen(name) < 10 || name[8] != '.')
        return false;
    for (int i = 0; i < 8; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    *id = (uint32_t)strtoul(name, NULL, 16);
    const char *rest = name + 9;
    *pid = 0;
    if (strcmp(rest, "ready") == 0) {
        *state = SLOT_READY;
        return true;
    }
    if (strncmp(rest, "prep.", 5) == 0)
        *state = SLOT_PREP, rest += 5;
    else if (strncmp(rest, "taken.", 6) == 0)
        *state = SLOT_TAKEN, rest += 6;
    else
        return false;
    if (*rest < '1' || *rest > '9')
        return false;
    errno = 0;
    long v = strtol(rest, &end, 10);
    if (*end || errno || v <= 0 || v > INT32_MAX)
        return false;
    *pid = (pid_t)v;
    return true;
}

/* The slot's directory for controller k into buf (as long as the parent plus 64). */
static void slot_path(const struct cgroup_plan *cg, int k, uint32_t id, char *buf)
{
    snprintf(buf, strlen(cg->parent[k]) + 64, "%s/" SLOT_PREFIX "%s-%08x", cg->parent[k],
             cg->pool_key, (unsigned)id);
}

/* A copy of cg whose directories are slot id's (freed by slot_free). */
static void slot_plan(const struct cgroup_plan *cg, uint32_t id, struct cgroup_plan *s)
{
    *s = *cg;
    for (int k = 0; k < CG_N; k++) {
        s->dir[k] = NULL;
        if (cg->parent[k]) {
            s->dir[k] = xcalloc(1, strlen(cg->parent[k]) + 64);
            slot_path(cg, k, id, s->dir[k]);
        }
    }
}

static void slot_free(struct cgroup_plan *s)
{
    for (int k = 0; k < CG_N; k++)
        free(s->dir[k]);
}

/* Removes the slot's directories without waiting: 0 when none is left. */
static int slot_rmdirs_now(const struct cgroup_plan *s)
{
    int rc = 0;
    for (int k = CG_N - 1; k >= 0; k--)
        if (s->dir[k] && !cgroup_same_dir_before(s, k) && rmdir(s->dir[k]) < 0 && errno != ENOENT)
            rc = -1;
    return rc;
}

bool cgroup_pool_claim(struct jail_plan *p)
{
    struct cgroup_plan *cg = &p->cg;
    int dfd = open(cg->pool_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        plan_debug(p, "cgroup pool %s: none yet: making the cgroup", cg->pool_key);
        return false;
    }
    struct dirent *e;
    bool got = false;
    while (!got && (e = readdir(d))) {
        uint32_t id;
        enum slot_state state;
        pid_t owner;
        if (!pool_parse_token(e->d_name, &id, &state, &owner) || state != SLOT_READY)
            continue;
        char taken[sizeof(cg->pool_token)];
        snprintf(taken, sizeof(taken), "%08x.taken.%d", (unsigned)id, (int)getpid());
        /* ENOENT: a concurrent start had it first. */
        if (renameat(dirfd(d), e->d_name, dirfd(d), taken) < 0)
            continue;
        str_copy(cg->pool_token, taken, sizeof(cg->pool_token));
        for (int k = 0; k < CG_N; k++)
            if (cg->parent[k])
                slot_path(cg, k, id, cg->dir[k]);
        got = true;
    }
    closedir(d);
    if (got)
        plan_debug(p,
                   "cgroup pool %s: claimed slot %.8s: memory %" PRIu64 " MiB, pids %" PRIu64
                   ", cpu %" PRIu64 "%%",
                   cg->pool_key, cg->pool_token, cg->memory_mb, cg->pids, cg->cpu_percent);
    else
        plan_debug(p, "cgroup pool %s: no ready slot: making the cgroup", cg->pool_key);
    return got;
}

/* Gives up the claimed slot for good: its directories, then its token. */
void cgroup_pool_drop_claim(struct cgroup_plan *cg)
{
    if (!cg->pool_token[0])
        return;
    if (cgroup_rmdirs(cg) == 0) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", cg->pool_dir, cg->pool_token);
        (void)unlink(path);
    }
    cg->pool_token[0] = '\0';
}

/* Reclaims the prep and taken slots whose process is gone; returns how many slots are
 * ready or being made by a live process. */
static int pool_sweep(const struct cgroup_plan *cg, int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset */
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return JAIL_CGROUP_POOL_MAX; /* unreadable: make nothing */
    }
    int ready = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint32_t id;
        enum slot_state state;
        pid_t owner;
        if (!pool_parse_token(e->d_name, &id, &state, &owner))
            continue;
        if (state == SLOT_READY) {
            ready++;
            continue;
        }
        if (kill(owner, 0) == 0 || errno != ESRCH) {
            ready += state == SLOT_PREP;
            continue;
        }
        struct cgroup_plan s;
        slot_plan(cg, id, &s);
        if (slot_rmdirs_now(&s) == 0)
            (void)unlinkat(dirfd(d), e->d_name, 0); /* else still in use: a later sweep */
        slot_free(&s);
    }
    closedir(d);
    return ready;
}

/* Makes one ready slot: token first (prep), directories, limits, then the token's
 * rename to ready. */
static int pool_make_slot(const struct cgroup_plan *cg, int dfd)
{
    uint32_t id = 0;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
        id = (uint32_t)now_mono_ns() ^ (uint32_t)getpid();
    char prep[64], ready[32], err[JAIL_ERR_MAX];
    snprintf(prep, sizeof(prep), "%08x.prep.%d", (unsigned)id, (int)getpid());
    snprintf(ready, sizeof(ready), "%08x.ready", (unsigned)id);
    int fd = openat(dfd, prep, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    close(fd);
    struct cgroup_plan s;
    slot_plan(cg, id, &s);
    int rc = -1;
    for (int k = 0; k < CG_N; k++)
        if (s.dir[k] && !cgroup_same_dir_before(&s, k) && mkdir(s.dir[k], 0755) < 0)
            goto out;
    if (cgroup_set_limits(&s, err, sizeof(err)) < 0)
        goto out;
    rc = renameat(dfd, prep, dfd, ready);
out:
    if (rc < 0 && slot_rmdirs_now(&s) == 0)
        (void)unlinkat(dfd, prep, 0);
    slot_free(&s);
    return rc;
}

/* Removes ready slots beyond the size the last jail asked for (a pool made larger by
 * one start shrinks at the next). */
static void pool_trim(const struct cgroup_plan *cg, int dfd, int surplus)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset */
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while (surplus > 0 && (e = readdir(d))) {
        uint32_t id;
        enum slot_state state;
        pid_t owner;
        char taken[64];
        if (!pool_parse_token(e->d_name, &id, &state, &owner) || state != SLOT_READY)
            continue;
        snprintf(taken, sizeof(taken), "%08x.taken.%d", (unsigned)id, (int)getpid());
        if (renameat(dirfd(d), e->d_name, dirfd(d), taken) < 0)
            continue; /* claimed meanwhile */
        struct cgroup_plan s;
        slot_plan(cg, id, &s);
        if (slot_rmdirs_now(&s) == 0)
            (void)unlinkat(dirfd(d), taken, 0);
        slot_free(&s);
        surplus--;
    }
    closedir(d);
}

/* Its bases, one line per controller ("-" for none), for the drain of an idle key by
 * a helper that knows only the key. */
static void pool_write_parents(const struct cgroup_plan *cg, int dfd)
{
    if (faccessat(dfd, "parents", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return;
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "parents.%d", (int)getpid());
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    bool ok = true;
    for (int k = 0; k < CG_N; k++)
        ok = ok && dprintf(fd, "%s\n", cg->parent[k] ? cg->parent[k] : "-") > 0;
    close(fd);
    if (!ok || renameat(dfd, tmp, dfd, "parents") < 0)
        (void)unlinkat(dfd, tmp, 0);
}

/* The bases of an idle key, from its "parents" file; false if it has none. */
static bool pool_read_parents(int dfd, const char *key, struct cgroup_plan *s)
{
    memset(s, 0, sizeof(*s));
    int fd = openat(dfd, "parents", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[3 * (PATH_MAX + 1) + 1];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *at = buf;
    for (int k = 0; k < CG_N; k++) {
        char *nl = strchr(at, '\n');
        if (!nl)
            goto bad;
        *nl = '\0';
        if (at[0] != '/' && strcmp(at, "-") != 0)
            goto bad;
        s->parent[k] = at[0] == '/' ? xstrdup(at) : NULL;
        at = nl + 1;
    }
    str_copy(s->pool_key, key, sizeof(s->pool_key));
    return true;
bad:
    for (int k = 0; k < CG_N; k++)
        free(s->parent[k]);
    return false;
}

/* Drains the keys idle for POOL_IDLE_S (other limit sets, other bases): their ready
 * slots and those of dead processes removed, then the key's directory once empty. */
static void pool_expire_idle(const char *own_key)
{
    int rfd = open(POOL_ROOT, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *root = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!root) {
        if (rfd >= 0)
            close(rfd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(root))) {
        if (strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16 ||
            strcmp(e->d_name, own_key) == 0)
            continue;
        int kfd = openat(dirfd(root), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        struct cgroup_plan s;
        if (kfd < 0 || fstat(kfd, &st) < 0 || now - st.st_mtime < POOL_IDLE_S ||
            flock(kfd, LOCK_EX | LOCK_NB) < 0 || !pool_read_parents(kfd, e->d_name, &s)) {
            if (kfd >= 0)
                close(kfd);
            continue;
        }
        (void)pool_sweep(&s, kfd);                    /* the dead processes' slots */
        pool_trim(&s, kfd, JAIL_CGROUP_POOL_MAX * 4); /* every ready one */
        /* Empty now (no live claim): the key goes, "parents" last but one. */
        int left = 0, fd2 = openat(kfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
        struct dirent *t;
        while (d && (t = readdir(d)))
            left += t->d_name[0] != '.' && strcmp(t->d_name, "parents") != 0;
        if (d)
            closedir(d);
        else if (fd2 >= 0)
            close(fd2);
        if (!left && unlinkat(kfd, "parents", 0) == 0)
            (void)unlinkat(dirfd(root), e->d_name, AT_REMOVEDIR);
        for (int k = 0; k < CG_N; k++)
            free(s.parent[k]);
        close(kfd);
    }
    closedir(root);
}

static void pool_refill(const struct cgroup_plan *cg)
{
    if (mkdir_p(cg->pool_dir, 0700) < 0)
        return;
    int dfd = open(cg->pool_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    /* One refiller per key at a time; the others leave it to that one. */
    if (flock(dfd, LOCK_EX | LOCK_NB) == 0) {
        pool_write_parents(cg, dfd);
        int have = pool_sweep(cg, dfd);
        while (have < cg->pool_size && pool_make_slot(cg, dfd) == 0)
            have++;
        if (have > cg->pool_size)
            pool_trim(cg, dfd, have - cg->pool_size);
    }
    close(dfd);
}

void cgroup_pool_recycle(struct cgroup_plan *cg)
{
    if (cg->pool_token[0]) {
        /* Ours now: a sweep must not take it for its dead monitor's while we wait. */
        char from[PATH_MAX], to[PATH_MAX], id[9];
        snprintf(from, sizeof(from), "%s/%s", cg->pool_dir, cg->pool_token);
        str_copy(id, cg->pool_token, sizeof(id));
        snprintf(cg->pool_token, sizeof(cg->pool_token), "%s.taken.%d", id, (int)getpid());
        snprintf(to, sizeof(to), "%s/%s", cg->pool_dir, cg->pool_token);
        if (rename(from, to) < 0)
            cg->pool_token[0] = '\0';
    }
    if (cgroup_rmdirs(cg) == 0 && cg->pool_token[0]) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", cg->pool_dir, cg->pool_token);
        (void)unlink(path);
    }
    pool_refill(cg);
    pool_expire_idle(cg->pool_key);
    cgroup_sweep_stale(cg); /* what monitors killed outright left (cgroup.c) */
}
