/* Where the jails' cgroups go: in each hierarchy, a parent cgroup that is ours to fill
 * (the "base"), found once per process and configured parent, and checked at each
 * start. cgroup.c makes each jail's own cgroup under it.
 *
 * v2 (unified), the base is:
 *   - a configured parent (cgroup_parent, --cgroup-parent): as given; it must hold no
 *     processes, since v2 lets only a cgroup without processes of its own hand
 *     controllers to its children;
 *   - else our own cgroup D, made an inner node: its processes (a hub's Redis and
 *     netproxy too, under a unit) move into D/nsjail-lite.leaf, and the jails'
 *     cgroups are the leaf's siblings. A caller already in D/nsjail-lite.leaf (moved
 *     there by an earlier start, of this process or of another in the same cgroup)
 *     has D as its base: it is never moved one level deeper;
 *   - where D is systemd's and not delegated to us (a login shell's session scope, a
 *     cron job; systemd marks delegated cgroups with the trusted.delegate xattr), a
 *     transient scope with Delegate=yes that systemd makes for this process
 *     (cgroup_scope.c) is D instead;
 *   - a caller in the root cgroup (no systemd, or a test) gets D = /nsjail-lite.
 * Moving D's processes and enabling the controllers in D's cgroup.subtree_control
 * happen under a mutex (threads of one process) and an flock on D (processes sharing
 * D: several launchers from one shell), so no start ever sees D half-prepared.
 *
 * v1: each controller's hierarchy has its own base, our own cgroup there (or
 * /nsjail-lite at its root, or the configured parent); v1 lets a cgroup with
 * processes have children, so nothing moves.
 *
 * v2 is used when its root has every controller asked for (a controller is in one
 * hierarchy only, so then v1 cannot have it); a base that lacks one then is an error
 * that names the cgroup, the controller and the fix, not a fall back to v1. */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define LEAF_NAME "nsjail-lite.leaf"
#define ROOT_BASE "nsjail-lite" /* the base of a caller in a hierarchy's root */
#define FIX_HINT                                                                                   \
    "run it under a systemd unit with Delegate=yes (config/systemd), or under "                    \
    "`systemd-run --scope -p Delegate=yes COMMAND`"

const char *const cgroup_ctl_names[CG_N] = {"memory", "pids", "cpu"};

static const char *limit_key(int k)
{
    return k == CG_MEMORY ? "memory_mb" : k == CG_PIDS ? "pids" : "cpu_percent";
}

/* ---- reading /proc and cgroupfs ---- */

/* A whole file whose size is not known in advance (/proc, cgroupfs), NUL-terminated,
 * or NULL with errno. */
char *cgroup_read_text(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 8192, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap)
            buf = xrealloc(buf, cap *= 2);
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            int e = errno;
            close(fd);
            if (got < 0) {
                free(buf);
                errno = e;
                return NULL;
            }
            buf[n] = '\0';
            if (len)
                *len = n;
            return buf;
        }
        n += (size_t)got;
    }
}

/* Whether the space-separated words of DIR/FILE include word. */
static bool text_has_word(const char *text, const char *word)
{
    bool found = false;
    size_t wl = strlen(word);
    for (const char *w = text; w && *w && !found; w += strcspn(w, " \n")) {
        w += strspn(w, " \n");
        found = strncmp(w, word, wl) == 0 && (w[wl] == ' ' || w[wl] == '\n' || !w[wl]);
    }
    return found;
}

bool cgroup_file_has_word(const char *dir, const char *file, const char *word)
{
    char *path = xasprintf("%s/%s", dir, file);
    char *text = cgroup_read_text(path, NULL);
    free(path);
    bool found = text_has_word(text, word);
    free(text);
    return found;
}

/* The next line of text at *at (NUL-terminated in place), or NULL at the end. */
static char *next_line(char **at)
{
    if (!*at || !**at)
        return NULL;
    char *line = *at, *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *at = nl + 1;
    } else {
        *at = line + strlen(line);
    }
    return line;
}

/* Whether the comma-separated list has word. */
static bool list_has(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *s = list; *s; s += strcspn(s, ",")) {
        s += *s == ',';
        if (strncmp(s, word, wl) == 0 && (s[wl] == ',' || !s[wl]))
            return true;
    }
    return false;
}

/* The mount point and root of the v2 hierarchy (want == NULL) or of the v1 hierarchy
 * holding controller want, from /proc/self/mountinfo (lines of any length). */
static bool find_mount(const char *mountinfo, const char *want, char **mnt, char **root)
{
    char *copy = xstrdup(mountinfo ? mountinfo : ""), *at = copy, *line;
    bool found = false;
    while (!found && (line = next_line(&at))) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
        char *save = NULL, *field[5] = {0};
        char *tok = strtok_r(line, " ", &save);
        for (int i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " ", &save))
            field[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
        char *super = source ? strtok_r(NULL, " ", &save) : NULL;
        if (!super || !field[4] || strchr(field[4], '\\') || strchr(field[3], '\\'))
            continue; /* escaped (unusual) paths are not ours to guess */
        found = want ? strcmp(fstype, "cgroup") == 0 && list_has(super, want)
                     : strcmp(fstype, "cgroup2") == 0;
        if (found) {
            *mnt = xstrdup(field[4]);
            *root = xstrdup(field[3]);
        }
    }
    free(copy);
    return found;
}

/* Our cgroup path in the v2 hierarchy (want == NULL) or in the v1 hierarchy of
 * controller want, from the text of /proc/self/cgroup; NULL if none. */
static char *own_cgroup_in(const char *text, const char *want)
{
    char *copy = xstrdup(text ? text : ""), *at = copy, *line, *path = NULL;
    while (!path && (line = next_line(&at))) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctls = c1 + 1;
        bool match = want ? list_has(ctls, want) : strncmp(line, "0:", 2) == 0 && ctls[0] == '\0';
        if (match && c2[1] == '/')
            path = xstrdup(c2 + 1);
    }
    free(copy);
    return path;
}

static char *own_cgroup(const char *want)
{
    char *text = cgroup_read_text("/proc/self/cgroup", NULL);
    char *path = own_cgroup_in(text, want);
    free(text);
    return path;
}

/* A cgroup path we accept as a parent: absolute, no "." or ".." step, no "//". */
static bool clean_cgroup_path(const char *s)
{
    if (s[0] != '/' || strlen(s) >= PATH_MAX)
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

/* MNT + cg_path relative to the mount's root; NULL when cg_path is not below it. The
 * root itself gives MNT ("" relative). */
static char *host_dir(const char *mnt, const char *mnt_root, const char *cg_path)
{
    const char *rel = cg_path;
    if (strcmp(mnt_root, "/") != 0) {
        size_t rl = strlen(mnt_root);
        if (strncmp(cg_path, mnt_root, rl) != 0 || (cg_path[rl] != '/' && cg_path[rl] != '\0'))
            return NULL;
        rel = cg_path + rl;
    }
    if (strcmp(rel, "/") == 0)
        rel = "";
    return xasprintf("%s%s", mnt, rel);
}

/* ---- v2: the base and its controllers ---- */

/* Writes text to DIR/FILE (no allocation: the monitor calls it too). */
int cgroup_write(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX];
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

/* The cgroup of the hierarchy's root cgroup (not a cgroup namespace's root): only it
 * lacks cgroup.type. */
static bool is_real_root(const char *dir)
{
    char *path = xasprintf("%s/cgroup.type", dir);
    bool root = access(path, F_OK) < 0 && errno == ENOENT;
    free(path);
    return root;
}

/* Delegated to whoever runs in it: systemd's mark on a unit with Delegate=yes. */
static bool is_delegated(const char *dir)
{
    static const char *const marks[] = {"trusted.delegate", "user.delegate"};
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
        char v[8];
        if (getxattr(dir, marks[i], v, sizeof(v)) == 1 && v[0] == '1')
            return true;
    }
    return false;
}

static bool systemd_running(void)
{
    return access("/run/systemd/system", F_OK) == 0;
}

/* Moves every process of dir into dir/LEAF_NAME (made if needed), a few rounds for
 * those forked meanwhile. A pid that has exited meanwhile is skipped (ESRCH). */
static int move_into_leaf(const char *dir, char *err, size_t errlen)
{
    char *leaf = xasprintf("%s/" LEAF_NAME, dir);
    char *procs = xasprintf("%s/cgroup.procs", dir);
    int rc = 0;
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cgroup: mkdir %s: %s", leaf, strerror(errno));
        rc = -1;
    }
    for (int round = 0; rc == 0 && round < 16; round++) {
        char *text = cgroup_read_text(procs, NULL);
        if (!text) {
            snprintf(err, errlen, "cgroup: reading %s: %s", procs, strerror(errno));
            rc = -1;
            break;
        }
        bool any = false;
        char *at = text, *pid;
        while ((pid = next_line(&at))) {
            if (!*pid)
                continue;
            any = true;
            if (cgroup_write(leaf, "cgroup.procs", pid) < 0 && errno != ESRCH) {
                snprintf(err, errlen, "cgroup: moving process %s into %s: %s", pid, leaf,
                         strerror(errno));
                rc = -1;
                break;
            }
        }
        free(text);
        if (!any)
            break;
    }
    free(procs);
    free(leaf);
    return rc;
}

/* Under an flock on dir (shared with other processes preparing the same base): every
 * controller of ctls (NULL-terminated names) on in dir's cgroup.subtree_control,
 * dir's processes moved into its leaf first when it is ours (managed). */
int cgroup_v2_enable(const char *dir, const char *const ctls[], bool managed, char *err,
                     size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cgroup: open %s: %s", dir, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
        ;
    /* Never the real root's processes (the whole system's): only a base of ours. */
    if (managed && is_real_root(dir))
        managed = false;
    int rc = 0;
    for (size_t i = 0; ctls[i] && rc == 0; i++) {
        if (cgroup_file_has_word(dir, "cgroup.controllers", ctls[i]))
            continue;
        char *path = xasprintf("%s/cgroup.controllers", dir);
        char *have = cgroup_read_text(path, NULL);
        if (have)
            have[strcspn(have, "\n")] = '\0';
        snprintf(err, errlen,
                 "cgroup: %s has no %s controller to give the jails (its cgroup.controllers: "
                 "'%s'): it is not delegated; %s",
                 dir, ctls[i], have ? have : "", FIX_HINT);
        free(have);
        free(path);
        rc = -1;
    }
    if (rc == 0 && managed)
        rc = move_into_leaf(dir, err, errlen);
    for (size_t i = 0; ctls[i] && rc == 0; i++) {
        if (cgroup_file_has_word(dir, "cgroup.subtree_control", ctls[i]))
            continue;
        char plus[32];
        snprintf(plus, sizeof(plus), "+%s", ctls[i]);
        if (cgroup_write(dir, "cgroup.subtree_control", plus) < 0) {
            int e = errno;
            snprintf(err, errlen, "cgroup: enabling %s for the children of %s: %s%s", ctls[i], dir,
                     strerror(e),
                     e == EBUSY ? " (it holds processes, and v2 hands controllers down only "
                                  "from a cgroup without any: give an empty delegated cgroup "
                                  "as the cgroup parent)"
                                : "");
            rc = -1;
        }
    }
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

/* Where our jails go in the v2 hierarchy mounted at mnt (its root mnt_root), before
 * any controller is enabled. */
static int v2_find(const char *mnt, const char *mnt_root, const char *cfg_parent,
                   struct cgroup_v2_base *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof(*b));
    if (cfg_parent) {
        b->dir = host_dir(mnt, mnt_root, cfg_parent);
        if (!b->dir) {
            snprintf(err, errlen, "cgroup: the parent %s is not below the cgroup2 mount's root %s",
                     cfg_parent, mnt_root);
            return -1;
        }
        if (mkdir(b->dir, 0755) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cgroup: mkdir %s: %s", b->dir, strerror(errno));
            return -1;
        }
        return 0;
    }
    char *own = own_cgroup(NULL);
    b->dir = own ? host_dir(mnt, mnt_root, own) : NULL;
    if (!b->dir) {
        snprintf(err, errlen, "cgroup: our v2 cgroup (%s) is not below the cgroup2 mount's root %s",
                 own ? own : "none in /proc/self/cgroup", mnt_root);
        free(own);
        return -1;
    }
    free(own);
    char *dir = b->dir;
    size_t len = strlen(dir), ll = strlen(LEAF_NAME);
    bool in_leaf =
        len > ll + 1 && strcmp(dir + len - ll, LEAF_NAME) == 0 && dir[len - ll - 1] == '/';
    if (in_leaf)
        dir[len - ll - 1] = '\0'; /* already in our leaf: its parent is the base */
    if (strcmp(dir, mnt) == 0 && is_real_root(dir)) {
        /* The root may hold processes and hand controllers down: we stay there. */
        free(b->dir);
        b->dir = xasprintf("%s/" ROOT_BASE, mnt);
        b->under_root = true;
        if (mkdir(b->dir, 0755) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cgroup: mkdir %s: %s", b->dir, strerror(errno));
            return -1;
        }
        return 0;
    }
    b->managed = true;
    if (in_leaf || strcmp(dir, mnt) == 0 || is_delegated(dir) || !systemd_running())
        return 0;
    /* systemd's own cgroup (a session scope, a service without Delegate=): a scope of
     * ours from systemd, which moves this process there. */
    char name[128], why[384];
    if (cgroup_scope_delegate_self(name, sizeof(name), why, sizeof(why)) < 0) {
        snprintf(err, errlen,
                 "cgroup: %s belongs to systemd (not delegated), and systemd made no "
                 "delegated scope for us (%s); %s",
                 dir, why, FIX_HINT);
        return -1;
    }
    free(b->dir);
    own = own_cgroup(NULL);
    b->dir = own ? host_dir(mnt, mnt_root, own) : NULL;
    size_t nl = strlen(name);
    if (!b->dir || strlen(b->dir) <= nl || strcmp(b->dir + strlen(b->dir) - nl, name) != 0) {
        snprintf(err, errlen, "cgroup: systemd started the scope %s, but we are in %s", name,
                 own ? own : "no v2 cgroup");
        free(own);
        return -1;
    }
    free(own);
    return 0;
}

int cgroup_v2_prepare(const struct cgroup_v2_base *b, const char *mnt, const char *const ctls[],
                      char *err, size_t errlen)
{
    /* Our /nsjail-lite under the root: the root hands the controllers down to it. */
    if (b->under_root && cgroup_v2_enable(mnt, ctls, false, err, errlen) < 0)
        return -1;
    return cgroup_v2_enable(b->dir, ctls, b->managed, err, errlen);
}

int cgroup_v2_base(const char *mnt, const char *mnt_root, const char *cfg_parent,
                   const char *const ctls[], struct cgroup_v2_base *b, char *err, size_t errlen)
{
    if (v2_find(mnt, mnt_root, cfg_parent, b, err, errlen) < 0 ||
        cgroup_v2_prepare(b, mnt, ctls, err, errlen) < 0) {
        free(b->dir);
        b->dir = NULL;
        return -1;
    }
    return 0;
}

/* ---- once per process ---- */

struct base {
    struct base *next;
    char *cfg_parent; /* NULL: our own cgroup */
    int version;
    char *dir[CG_N]; /* v1: one per hierarchy */
    struct cgroup_v2_base v2;
    unsigned enabled; /* v2: the controllers known on in its subtree_control (bits) */
};

static pthread_mutex_t bases_lock = PTHREAD_MUTEX_INITIALIZER;
static struct base *bases;
static struct {
    bool read;
    char *v2_mnt, *v2_root; /* NULL without a cgroup2 mount */
    unsigned v2_ctls;       /* controllers of the v2 root (bits of CG_*) */
    char *v1_mnt[CG_N], *v1_root[CG_N];
} hier;

static void read_hierarchies(void)
{
    char *mountinfo = cgroup_read_text("/proc/self/mountinfo", NULL);
    if (find_mount(mountinfo, NULL, &hier.v2_mnt, &hier.v2_root)) {
        /* Read once: each launcher is a process of its own, and this is its start. */
        char *path = xasprintf("%s/cgroup.controllers", hier.v2_mnt);
        char *ctls = cgroup_read_text(path, NULL);
        free(path);
        for (int k = 0; k < CG_N; k++)
            if (text_has_word(ctls, cgroup_ctl_names[k]))
                hier.v2_ctls |= 1u << k;
        free(ctls);
    }
    for (int k = 0; k < CG_N; k++)
        find_mount(mountinfo, cgroup_ctl_names[k], &hier.v1_mnt[k], &hier.v1_root[k]);
    free(mountinfo);
    hier.read = true;
}

static struct base *find_base(const char *cfg_parent, int version)
{
    for (struct base *b = bases; b; b = b->next)
        if (b->version == version &&
            ((!b->cfg_parent && !cfg_parent) ||
             (b->cfg_parent && cfg_parent && strcmp(b->cfg_parent, cfg_parent) == 0)))
            return b;
    struct base *b = xcalloc(1, sizeof(*b));
    b->cfg_parent = cfg_parent ? xstrdup(cfg_parent) : NULL;
    b->version = version;
    b->next = bases;
    bases = b;
    return b;
}

static int get_v2(struct base *b, unsigned want, struct jail_error *err)
{
    const char *ctls[CG_N + 1] = {0};
    size_t n = 0;
    for (int k = 0; k < CG_N; k++)
        if (want & (1u << k))
            ctls[n++] = cgroup_ctl_names[k];
    char why[JAIL_ERR_MAX];
    int rc = 0;
    if (!b->v2.dir) {
        rc = cgroup_v2_base(hier.v2_mnt, hier.v2_root, b->cfg_parent, ctls, &b->v2, why,
                            sizeof(why));
    } else {
        /* Known: check that nobody turned a controller off since (one small read). */
        bool all_on = (want & ~b->enabled) == 0;
        for (size_t i = 0; i < n && all_on; i++)
            all_on = cgroup_file_has_word(b->v2.dir, "cgroup.subtree_control", ctls[i]);
        if (!all_on)
            rc = cgroup_v2_prepare(&b->v2, hier.v2_mnt, ctls, why, sizeof(why));
    }
    if (rc < 0) {
        jail_err_set(err, 125, "%s", why);
        return -1;
    }
    b->enabled |= want;
    for (int k = 0; k < CG_N; k++)
        if (!b->dir[k])
            b->dir[k] = xstrdup(b->v2.dir);
    return 0;
}

static int get_v1(struct base *b, unsigned want, struct jail_error *err)
{
    char *self = NULL; /* /proc/self/cgroup, read once for every controller */
    int rc = -1;
    for (int k = 0; k < CG_N; k++) {
        if (!(want & (1u << k)) || b->dir[k])
            continue;
        const char *name = cgroup_ctl_names[k];
        if (!hier.v1_mnt[k]) {
            jail_err_set(err, 125,
                         "cgroup: no %s controller is mounted (neither in cgroup v2 nor v1); "
                         "set the %s limit to 0 to run without it",
                         name, limit_key(k));
            goto out;
        }
        if (!b->cfg_parent && !self)
            self = cgroup_read_text("/proc/self/cgroup", NULL);
        char *own = b->cfg_parent ? xstrdup(b->cfg_parent) : own_cgroup_in(self, name);
        if (!own) {
            jail_err_set(err, 125, "cgroup: /proc/self/cgroup names no %s cgroup", name);
            goto out;
        }
        char *dir = host_dir(hier.v1_mnt[k], hier.v1_root[k], own);
        free(own);
        if (!dir) {
            jail_err_set(err, 125, "cgroup: the %s hierarchy at %s does not contain our cgroup",
                         name, hier.v1_mnt[k]);
            goto out;
        }
        if (strcmp(dir, hier.v1_mnt[k]) == 0) { /* never at the root itself */
            char *base = xasprintf("%s/" ROOT_BASE, dir);
            free(dir);
            dir = base;
        }
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            jail_err_set(err, 125, "cgroup: mkdir %s: %s", dir, strerror(errno));
            free(dir);
            goto out;
        }
        b->dir[k] = dir;
    }
    rc = 0;
out:
    free(self);
    return rc;
}

int cgroup_base_get(const char *cfg_parent, const bool want[CG_N], int *version, char *dirs[CG_N],
                    struct jail_error *err)
{
    if (cfg_parent && !clean_cgroup_path(cfg_parent)) {
        jail_err_set(err, 125,
                     "cgroup parent '%s': expected an absolute cgroup path without '.', '..' "
                     "or '//' (as /proc/self/cgroup writes it)",
                     cfg_parent);
        return -1;
    }
    unsigned bits = 0;
    for (int k = 0; k < CG_N; k++)
        bits |= want[k] ? 1u << k : 0;
    pthread_mutex_lock(&bases_lock);
    if (!hier.read)
        read_hierarchies();
    int v = hier.v2_mnt && (bits & ~hier.v2_ctls) == 0 ? 2 : 1;
    struct base *b = find_base(cfg_parent, v);
    int rc = v == 2 ? get_v2(b, bits, err) : get_v1(b, bits, err);
    if (rc == 0) {
        *version = v;
        for (int k = 0; k < CG_N; k++)
            dirs[k] = want[k] ? xstrdup(b->dir[k]) : NULL;
    }
    pthread_mutex_unlock(&bases_lock);
    return rc;
}
