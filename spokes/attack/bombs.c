/* Resource exhaustion, bounded: a fork bomb that stops at cap processes, a memory bomb
 * that stops at cap MiB, a disk bomb whose file stops at cap MiB. Each runs in a child
 * of the spoke (so the spoke can report and go on), holds its peak for HOLD_MS so that
 * the runner can observe it from the host, then lets go. Where nothing stops them they
 * reach their cap, a few times the manifest's limit: enough to show the limit was not
 * enforced, never enough to hurt the machine. */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MS 400
#define CAP_MAX_PROCS 256
#define CAP_MAX_MIB 1024
#define CHUNK_MIB 4
#define BOMB_TIMEOUT_MS 20000

struct bomb_result {
    long reached; /* processes, or MiB */
    int err;      /* errno that stopped it before the cap, 0 when the cap did */
};

static void hold(void)
{
    struct timespec ts = {.tv_sec = HOLD_MS / 1000, .tv_nsec = (HOLD_MS % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Runs body in a child and collects its result; false when the child could not run
 * or died without one (the report then says how it ended). */
static bool in_child(void (*body)(const struct orders *, struct bomb_result *),
                     const struct orders *o, struct bomb_result *res, json_t *report)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return report_errno(report, "pipe", errno);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return report_errno(report, "fork the bomb", e);
    }
    if (pid == 0) {
        close(p[0]);
        struct bomb_result r = {0, 0};
        body(o, &r);
        if (write(p[1], &r, sizeof(r)) != sizeof(r))
            _exit(1);
        _exit(0);
    }
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    bool got = false;
    if (poll(&pfd, 1, BOMB_TIMEOUT_MS) > 0)
        got = read(p[0], res, sizeof(*res)) == sizeof(*res);
    close(p[0]);
    if (!got)
        kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!got) {
        if (WIFSIGNALED(st))
            json_object_set_new(report, "bomb_signal", json_integer(WTERMSIG(st)));
        return report_errno(report, "the bomb ended without a result", ECHILD);
    }
    return true;
}

static void fork_body(const struct orders *o, struct bomb_result *r)
{
    int gate[2];
    if (pipe2(gate, O_CLOEXEC) < 0) {
        r->err = errno;
        return;
    }
    pid_t kids[CAP_MAX_PROCS];
    long cap = o->cap > 0 && o->cap <= CAP_MAX_PROCS ? o->cap : CAP_MAX_PROCS;
    long n = 0;
    while (n < cap) {
        pid_t pid = fork();
        if (pid < 0) {
            r->err = errno;
            break;
        }
        if (pid == 0) {
            /* Waits (no CPU) until the gate closes, then leaves. */
            char c;
            close(gate[1]);
            while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
            }
            _exit(0);
        }
        kids[n++] = pid;
    }
    r->reached = n;
    hold();
    close(gate[1]);
    for (long i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    close(gate[0]);
}

static void memory_body(const struct orders *o, struct bomb_result *r)
{
    long cap = o->cap > 0 && o->cap <= CAP_MAX_MIB ? o->cap : CAP_MAX_MIB;
    long mib = 0;
    while (mib < cap) {
        size_t len = (size_t)CHUNK_MIB << 20;
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            r->err = errno;
            break;
        }
        memset(p, 0xa5, len); /* touched: resident, not just reserved */
        mib += CHUNK_MIB;
    }
    r->reached = mib;
    hold();
}

static void disk_body(const struct orders *o, struct bomb_result *r)
{
    /* SIGXFSZ would end the process; ignored, the write fails with EFBIG instead. */
    signal(SIGXFSZ, SIG_IGN);
    long cap = o->cap > 0 && o->cap <= CAP_MAX_MIB ? o->cap : CAP_MAX_MIB;
    char *path = xasprintf("%s/fill.bin", o->data_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    free(path);
    if (fd < 0) {
        r->err = errno;
        return;
    }
    char *chunk = xmalloc(1 << 20);
    memset(chunk, 'x', 1 << 20);
    long mib = 0;
    while (mib < cap) {
        if (write_all(fd, chunk, 1 << 20) < 0) {
            r->err = errno;
            break;
        }
        mib++;
    }
    free(chunk);
    fsync(fd);
    close(fd);
    r->reached = mib;
}

static void run_bomb(const struct orders *o, json_t *report,
                     void (*body)(const struct orders *, struct bomb_result *), const char *unit)
{
    struct bomb_result r = {0, 0};
    if (!in_child(body, o, &r, report))
        return;
    json_object_set_new(report, "reached", json_integer(r.reached));
    json_object_set_new(report, "cap", json_integer(o->cap));
    json_object_set_new(report, "unit", json_string(unit));
    if (r.err) {
        char what[96];
        snprintf(what, sizeof(what), "stopped at %ld %s of a cap of %ld", r.reached, unit, o->cap);
        report_errno(report, what, r.err);
    } else {
        report_done(report, "reached the cap: %ld %s", r.reached, unit);
    }
}

void attack_fork_bomb(const struct orders *o, json_t *report)
{
    run_bomb(o, report, fork_body, "processes");
}

void attack_memory_bomb(const struct orders *o, json_t *report)
{
    run_bomb(o, report, memory_body, "MiB resident");
}

void attack_disk_bomb(const struct orders *o, json_t *report)
{
    run_bomb(o, report, disk_body, "MiB written");
}
