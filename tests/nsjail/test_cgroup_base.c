/* Where the jails' cgroups go on cgroup v2 (nsjail-lite/cgroup_base.c), on whatever
 * v2 hierarchy the host has: the development machines' controller-less one beside v1
 * (with hugetlb, the one controller v1 left to it) as well as a systemd host's.
 *
 * Each case runs in processes moved into a test cgroup X of its own, marked delegated
 * as systemd marks a unit with Delegate=yes (trusted.delegate), and asks for a base
 * with one domain controller, which v2 hands down only from a cgroup without
 * processes (memory where the v2 root has it, else hugetlb; pids and cpu are
 * "threaded" controllers, which a cgroup with processes may enable):
 *   - the first start makes X an inner node: the process goes to X/nsjail-lite.leaf,
 *     X hands the controller down, and X is the base;
 *   - 10,000 more starts in that process find the same base and never move it again
 *     (the bug: leaf/leaf/leaf... until the path outgrew its buffer, ~58 starts);
 *   - 20 processes sharing one cgroup, and 50 threads of one process, asking at the
 *     same moment all get the base, each moved once, the controller on;
 *   - a configured parent that holds processes, and a cgroup whose parent does not
 *     hand it the controller, are refused with an error naming the cgroup, the
 *     controller and the fix;
 *   - on a systemd host, a caller in a cgroup that is systemd's (not delegated) gets a
 *     transient scope of its own with Delegate=yes.
 * Everything runs in seconds; the VM test (tests/host) runs real jails the same way. */
#include "nsjail-lite/internal.h"
#include "tests/unit/test.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define LEAF "nsjail-lite.leaf"

static char mnt[PATH_MAX], mnt_root[PATH_MAX];
static const char *ctl;

static bool find_v2_mount(void)
{
    char *text = cgroup_read_text("/proc/self/mountinfo", NULL);
    bool found = false;
    for (char *line = text, *next; line && *line && !found; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char root[PATH_MAX], point[PATH_MAX], type[64];
        const char *dash = strstr(line, " - ");
        found = dash && sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) == 2 &&
                sscanf(dash + 3, "%63s", type) == 1 && strcmp(type, "cgroup2") == 0;
        if (found) {
            snprintf(mnt, sizeof(mnt), "%s", point);
            snprintf(mnt_root, sizeof(mnt_root), "%s", root);
        }
        if (!next)
            break;
    }
    free(text);
    return found;
}

/* Our v2 cgroup as a host path. */
static char *own_dir(void)
{
    char *text = cgroup_read_text("/proc/self/cgroup", NULL);
    char *line = text ? strstr(text, "0::") : NULL;
    char *dir = NULL;
    if (line) {
        line += 3;
        line[strcspn(line, "\n")] = '\0';
        const char *rel = strcmp(mnt_root, "/") == 0 ? line : line + strlen(mnt_root);
        dir = xasprintf("%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel);
    }
    free(text);
    return dir;
}

static int join(const char *dir)
{
    char *path = xasprintf("%s/cgroup.procs", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    free(path);
    int rc = fd >= 0 && write(fd, "0", 1) == 1 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* dir and every cgroup below it, deepest first (a nested leaf too, should the code
 * under test make one), retried while their last processes leave. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        char *sub = xasprintf("%s/%s", dir, e->d_name);
        remove_tree(sub);
        free(sub);
    }
    if (d)
        closedir(d);
    for (int i = 0; i < 2000 && rmdir(dir) < 0 && errno == EBUSY; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* A fresh test cgroup under parent, marked delegated (as systemd marks a unit). */
static char *test_cgroup(const char *parent, const char *tag)
{
    char *dir = xasprintf("%s/itest-cgbase-%d-%s", parent, (int)getpid(), tag);
    if (mkdir(dir, 0755) < 0) {
        printf("# mkdir %s: %s\n", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    if (setxattr(dir, "trusted.delegate", "1", 1, 0) < 0)
        printf("# setxattr trusted.delegate on %s: %s\n", dir, strerror(errno));
    return dir;
}

static bool base_is(const char *x, char *err, size_t errlen)
{
    const char *ctls[] = {ctl, NULL};
    struct cgroup_v2_base b;
    if (cgroup_v2_base(mnt, mnt_root, NULL, ctls, &b, err, errlen) < 0)
        return false;
    bool same = strcmp(b.dir, x) == 0 && b.managed;
    if (!same)
        snprintf(err, errlen, "the base is %s", b.dir);
    free(b.dir);
    return same;
}

static bool in_leaf_of(const char *x)
{
    char *own = own_dir();
    char *want = xasprintf("%s/" LEAF, x);
    bool same = own && strcmp(own, want) == 0;
    if (!same)
        printf("# in %s, not %s\n", own ? own : "?", want);
    free(own);
    free(want);
    return same;
}

/* ---- one process: the first start, then 10,000 more ---- */
static void case_one_process(const char *parent)
{
    char *x = test_cgroup(parent, "one");
    if (!x) {
        CHECK(0, "a test cgroup");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char err[JAIL_ERR_MAX] = "";
        if (join(x) < 0) {
            printf("# joining %s: %s\n", x, strerror(errno));
            _exit(2);
        }
        CHECK(base_is(x, err, sizeof(err)), "the first start: the base is our cgroup %s%s", x, err);
        CHECK(in_leaf_of(x), "  and we are in its leaf, beside the jails to come");
        CHECK(cgroup_file_has_word(x, "cgroup.subtree_control", ctl),
              "  and it hands %s to its children", ctl);
        int failed = 0;
        for (int i = 0; i < 10000 && !failed; i++)
            failed = !base_is(x, err, sizeof(err)) ? i + 1 : 0;
        CHECK(!failed, "10,000 more starts find the same base (%d: %s)", failed, err);
        CHECK(in_leaf_of(x), "  and we never moved deeper");
        char *deeper = xasprintf("%s/" LEAF "/" LEAF, x);
        CHECK(access(deeper, F_OK) < 0, "  and there is no leaf in the leaf");
        free(deeper);
        _exit(test_done());
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "one process: its checks ran (status %d)", st);
    remove_tree(x);
    CHECK(access(x, F_OK) < 0, "  its test cgroup is removed");
    free(x);
}

/* ---- 20 processes of one cgroup, asking at once ---- */
static void case_processes(const char *parent)
{
    char *x = test_cgroup(parent, "procs");
    if (!x) {
        CHECK(0, "a test cgroup");
        return;
    }
    enum { N = 20 };
    int ready[2], go[2];
    if (pipe(ready) < 0 || pipe(go) < 0) {
        CHECK(0, "pipes");
        return;
    }
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(ready[0]);
            close(go[1]);
            char c = join(x) == 0 ? 'j' : 'x', err[JAIL_ERR_MAX] = "";
            (void)!write(ready[1], &c, 1);
            (void)!read(go[0], &c, 1); /* all at once, once all have joined */
            bool ok = base_is(x, err, sizeof(err)) && in_leaf_of(x);
            if (!ok)
                printf("# process %d: %s\n", i, err);
            _exit(ok ? 0 : 1);
        }
    }
    close(ready[1]);
    close(go[0]);
    int joined = 0;
    char c;
    for (int i = 0; i < N && read(ready[0], &c, 1) == 1; i++)
        joined += c == 'j';
    CHECK(joined == N, "20 processes joined one cgroup (%d)", joined);
    close(go[1]); /* go */
    int good = 0;
    for (int i = 0; i < N; i++) {
        int st = -1;
        waitpid(pids[i], &st, 0);
        good += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    close(ready[0]);
    CHECK(good == N, "  asking at once, all %d got it as the base, each in its leaf", good);
    CHECK(cgroup_file_has_word(x, "cgroup.subtree_control", ctl), "  and %s is on", ctl);
    remove_tree(x);
    free(x);
}

/* ---- 50 threads of one process, asking at once ---- */
static const char *thread_x;
static pthread_barrier_t barrier;

static void *thread_ask(void *arg)
{
    char err[JAIL_ERR_MAX] = "";
    pthread_barrier_wait(&barrier);
    *(bool *)arg = base_is(thread_x, err, sizeof(err));
    if (!*(bool *)arg)
        printf("# thread: %s\n", err);
    return NULL;
}

static void case_threads(const char *parent)
{
    char *x = test_cgroup(parent, "threads");
    if (!x) {
        CHECK(0, "a test cgroup");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        enum { N = 50 };
        if (join(x) < 0)
            _exit(2);
        thread_x = x;
        pthread_barrier_init(&barrier, NULL, N);
        pthread_t t[N];
        bool ok[N];
        for (int i = 0; i < N; i++)
            pthread_create(&t[i], NULL, thread_ask, &ok[i]);
        int good = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            good += ok[i];
        }
        CHECK(good == N, "50 threads asking at once: all %d got our cgroup as the base", good);
        CHECK(in_leaf_of(x), "  and the process moved once, into the leaf");
        _exit(test_done());
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "threads: their checks ran (status %d)", st);
    remove_tree(x);
    free(x);
}

/* ---- refusals that say what is wrong and what to do ---- */
static void case_refusals(const char *parent)
{
    char *x = test_cgroup(parent, "busy");
    if (!x) {
        CHECK(0, "a test cgroup");
        return;
    }
    int hold[2];
    if (pipe(hold) < 0)
        return;
    pid_t sitter = fork();
    if (sitter == 0) {
        close(hold[1]);
        char c;
        _exit(join(x) < 0 || read(hold[0], &c, 1) < 0);
    }
    close(hold[0]);
    /* Wait until the sitter is in x. */
    char *procs = xasprintf("%s/cgroup.procs", x);
    char *text = NULL;
    for (int i = 0; i < 5000; i++) {
        free(text);
        text = cgroup_read_text(procs, NULL);
        if (text && *text)
            break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    CHECK(text && *text, "a process sits in %s", x);
    free(text);
    const char *rel = x + strlen(mnt);
    char *cfg = strcmp(mnt_root, "/") == 0 ? xstrdup(rel) : xasprintf("%s%s", mnt_root, rel);
    const char *ctls[] = {ctl, NULL};
    struct cgroup_v2_base b;
    char err[JAIL_ERR_MAX] = "";
    int rc = cgroup_v2_base(mnt, mnt_root, cfg, ctls, &b, err, sizeof(err));
    CHECK(rc < 0 && strstr(err, x) && strstr(err, "holds processes") &&
              strstr(err, "cgroup parent"),
          "a configured parent with a process in it is refused, naming it and the fix: %s", err);
    char *moved = xasprintf("%s/" LEAF, x);
    CHECK(access(moved, F_OK) < 0, "  and its processes are not ours to move: no leaf");
    free(moved);
    close(hold[1]);
    waitpid(sitter, NULL, 0);
    free(procs);
    free(cfg);

    /* y under x: x hands it only ctl (x has it on for its children once we ask). A
     * controller x does not hand down is named, with the cgroup and the fix. */
    const char *other = strcmp(ctl, "memory") == 0 ? "pids" : "memory";
    char *y = xasprintf("%s/sub", x);
    const char *want[] = {ctl, NULL}, *want2[] = {other, NULL};
    rc = cgroup_v2_enable(x, want, false, err, sizeof(err));
    CHECK(rc == 0, "%s on for the children of an empty cgroup: %s", ctl, rc ? err : "yes");
    if (mkdir(y, 0755) == 0) {
        rc = cgroup_v2_enable(y, want2, false, err, sizeof(err));
        CHECK(rc < 0 && strstr(err, y) && strstr(err, other) && strstr(err, "Delegate=yes"),
              "a cgroup without %s is refused, naming it, the controller and the fix: %s", other,
              err);
        rmdir(y);
    } else {
        CHECK(0, "mkdir %s: %s", y, strerror(errno));
    }
    free(y);
    remove_tree(x);
    free(x);
}

/* ---- a caller in systemd's own cgroup: a scope of ours ---- */
static void case_systemd_scope(void)
{
    char *own = own_dir();
    bool systemd = access("/run/systemd/system", F_OK) == 0;
    char v[8];
    bool delegated = own && getxattr(own, "trusted.delegate", v, sizeof(v)) == 1;
    if (!systemd || !own || strcmp(own, mnt) == 0 || delegated || strstr(own, "/" LEAF)) {
        printf("ok - a scope from systemd # SKIP %s\n",
               !systemd ? "systemd is not running" : "we are not in one of systemd's cgroups");
        free(own);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        const char *ctls[] = {ctl, NULL};
        struct cgroup_v2_base b;
        char err[JAIL_ERR_MAX] = "";
        int rc = cgroup_v2_base(mnt, mnt_root, NULL, ctls, &b, err, sizeof(err));
        CHECK(rc == 0, "in %s (systemd's): the base is a scope systemd made for us: %s", own,
              rc == 0 ? b.dir : err);
        if (rc == 0) {
            size_t n = strlen(b.dir);
            CHECK(n > 6 && strcmp(b.dir + n - 6, ".scope") == 0 && strstr(b.dir, "/nsjail-lite-"),
                  "  named nsjail-lite-PID-RANDOM.scope");
            CHECK(getxattr(b.dir, "trusted.delegate", v, sizeof(v)) == 1 && v[0] == '1',
                  "  delegated (trusted.delegate)");
            CHECK(in_leaf_of(b.dir), "  and we are in its leaf");
            free(b.dir);
        }
        _exit(test_done());
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the scope case ran (status %d)", st);
    free(own);
}

int main(void)
{
    if (getuid() != 0) {
        printf("ok - test_cgroup_base # SKIP needs root\n");
        return 0;
    }
    if (!find_v2_mount()) {
        printf("ok - test_cgroup_base # SKIP no cgroup2 mount\n");
        return 0;
    }
    static const char *const candidates[] = {"memory", "hugetlb", NULL};
    for (int i = 0; candidates[i] && !ctl; i++)
        if (cgroup_file_has_word(mnt, "cgroup.controllers", candidates[i]))
            ctl = candidates[i];
    if (!ctl) {
        printf("ok - test_cgroup_base # SKIP the v2 hierarchy has no domain controller to test "
               "with\n");
        return 0;
    }
    printf("# v2 at %s (root %s), testing with the %s controller\n", mnt, mnt_root, ctl);
    /* Where the test cgroups go: under the root if we are there (the root may hand
     * controllers down with processes in it), else under a base of our own. */
    char *own = own_dir();
    char *parent = NULL;
    if (own && strcmp(own, mnt) == 0) {
        const char *ctls[] = {ctl, NULL};
        char err[JAIL_ERR_MAX];
        CHECK(cgroup_v2_enable(mnt, ctls, false, err, sizeof(err)) == 0, "the root hands %s down",
              ctl);
        parent = xstrdup(mnt);
    } else {
        case_systemd_scope();
        const char *ctls[] = {ctl, NULL};
        struct cgroup_v2_base b;
        char err[JAIL_ERR_MAX] = "";
        CHECK(cgroup_v2_base(mnt, mnt_root, NULL, ctls, &b, err, sizeof(err)) == 0,
              "a base of our own for the test cgroups: %s", b.dir ? b.dir : err);
        parent = b.dir;
    }
    free(own);
    if (parent) {
        case_one_process(parent);
        case_processes(parent);
        case_threads(parent);
        case_refusals(parent);
    }
    free(parent);
    return test_done();
}
