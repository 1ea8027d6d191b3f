/* Many jails with a cgroup from one process, through the library as the hub starts
 * them: JAIL_STARTS one after another (default 60, past the ~58 where the bug stopped every start; the VM test runs 10,000), then 50
 * at once from 50 threads. Each must run (/bin/true, exit 0), and this process must
 * stay where its first start put it: on v2 that is its cgroup's nsjail-lite.leaf, or a
 * scope systemd made for it; the bug moved it one level deeper at every start until,
 * ~58 starts in, no jail started at all. */
#include "nsjail-lite/internal.h"
#include "nsjail-lite/jail.h"
#include "tests/unit/test.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define THREADS 50

static struct jail_config cfg;
static char *argv_true[] = {"/bin/true", NULL};

/* This process's cgroups, one path per line as /proc/self/cgroup has them. */
static char *own_cgroups(void)
{
    char *text = cgroup_read_text("/proc/self/cgroup", NULL);
    return text ? text : xstrdup("");
}

static int depth(const char *text)
{
    int d = 0;
    for (const char *c = text; *c; c++)
        d += *c == '/';
    return d;
}

/* 0 when a jail ran /bin/true to exit 0; else prints why. */
static int one_jail(const char *what)
{
    struct jail_error err;
    struct jail *j = jail_start(&cfg, argv_true, &err);
    if (!j) {
        printf("# %s: %s\n", what, err.message);
        return -1;
    }
    struct jail_status st;
    int rc = jail_wait(j, &st) == 1 && st.exit_code == 0 ? 0 : -1;
    if (rc < 0)
        printf("# %s: status %d (%s)\n", what, st.exit_code, st.reason);
    jail_free(j);
    return rc;
}

/* The host-id lock files of our range, once no jail holds them. */
static void remove_id_locks(void)
{
    for (uint32_t i = 0; i < cfg.host_id_count; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/run/nsjail-lite/id-%u.lock", cfg.host_id_base + i);
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlink(path);
        if (fd >= 0)
            close(fd);
    }
}

static pthread_barrier_t barrier;

static void *thread_main(void *arg)
{
    pthread_barrier_wait(&barrier);
    *(int *)arg = one_jail("a thread's jail");
    return NULL;
}

int main(void)
{
    if (getuid() != 0) {
        printf("ok - test_cgroup_many # SKIP needs root\n");
        return 0;
    }
    const char *n_env = getenv("JAIL_STARTS");
    long starts = n_env ? strtol(n_env, NULL, 10) : 60;
    if (starts < 1)
        starts = 300;
    jail_config_init(&cfg);
    cfg.limits.memory_mb = 64;
    cfg.limits.pids = 16;
    cfg.limits.cpu_percent = 50;
    /* A range of our own (as tests/nsjail/lib-nsjail.sh picks them). */
    cfg.host_id_base = 3000000 + (uint32_t)(getpid() % 4096) * 64;
    cfg.host_id_count = 64;

    CHECK(one_jail("the first jail") == 0, "the first jail with a cgroup runs");
    char *after_first = own_cgroups();
    printf("# after the first start: %s", after_first);
    uint64_t t0 = now_mono_ns();
    long failed = 0, moved_at = 0;
    for (long i = 1; i < starts; i++) {
        failed += one_jail("a jail") < 0;
        if (!moved_at && (i % 100 == 0 || i == starts - 1)) {
            char *now = own_cgroups();
            if (strcmp(now, after_first) != 0)
                moved_at = i + 1;
            free(now);
        }
        if (i % 1000 == 0) {
            printf("# %ld jails, %ld failed\n", i, failed);
            fflush(stdout);
        }
    }
    double secs = (double)(now_mono_ns() - t0) / 1e9;
    CHECK(failed == 0, "%ld jails one after another from one process: %ld failed (%.1f ms each)",
          starts, failed, 1000.0 * secs / (double)(starts > 1 ? starts - 1 : 1));
    CHECK(moved_at == 0, "  and this process stayed where the first start put it%s",
          moved_at ? " (it moved)" : "");

    pthread_barrier_init(&barrier, NULL, THREADS);
    pthread_t t[THREADS];
    int rc[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, thread_main, &rc[i]);
    int good = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        good += rc[i] == 0;
    }
    CHECK(good == THREADS, "%d jails at once from %d threads: %d ran", THREADS, THREADS, good);
    char *end = own_cgroups();
    CHECK(strcmp(end, after_first) == 0 && depth(end) == depth(after_first),
          "  and this process is still where the first start put it");
    free(end);
    free(after_first);
    remove_id_locks();
    jail_config_free(&cfg);
    return test_done();
}
