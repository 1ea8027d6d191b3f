/* The resource attacks a cgroup must stop (issue 14), run inside nsjail-lite. Each
 * takes memory or processes that RLIMIT_AS and RLIMIT_NPROC do not see or do not
 * bound for the jail as a whole, prints one line per step on stdout, and then holds
 * what it got for HOLD_MS, the way a spoke keeps serving after its call returned:
 *
 *   memhog shm MB HOLD_MS     System V segments of 8 MiB: created, touched, detached
 *   memhog memfd MB HOLD_MS   memfds written with write(2), never mapped, kept open
 *   memhog fill DIR MB HOLD_MS  files written into a tmpfs
 *   memhog crowd N HOLD_MS    N children spinning on the CPU
 *
 * Lines: "got N" (MiB or processes so far), then "stopped ERRNO-NAME" when a step
 * failed, and "holding N" before the hold. The test measures from the host what the
 * jail really held (tests/nsjail/test_cgroup.sh). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)
#define SEG_MB 8

static void say(const char *what, long v)
{
    printf("%s %ld\n", what, v);
    fflush(stdout);
}

static void hold(long got, long ms)
{
    say("holding", got);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void stopped(const char *what)
{
    printf("stopped %s %s\n", what, strerror(errno));
    fflush(stdout);
}

static long attack_shm(long mb)
{
    long got = 0;
    while (got < mb) {
        int id = shmget(IPC_PRIVATE, SEG_MB * MIB, IPC_CREAT | 0600);
        if (id < 0) {
            stopped("shmget");
            break;
        }
        char *p = shmat(id, NULL, 0);
        if (p == (void *)-1) {
            stopped("shmat");
            break;
        }
        memset(p, 0x5a, SEG_MB * MIB);
        shmdt(p); /* no process maps it any more: RLIMIT_AS never counted it */
        got += SEG_MB;
        say("got", got);
    }
    return got;
}

static long attack_memfd(long mb)
{
    static char chunk[MIB];
    memset(chunk, 0x5a, sizeof(chunk));
    long got = 0;
    while (got < mb) {
        int fd = memfd_create("hog", MFD_CLOEXEC);
        if (fd < 0) {
            stopped("memfd_create");
            break;
        }
        long i = 0;
        for (; i < 16 && got < mb; i++, got++) {
            if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
                stopped("write");
                return got;
            }
        }
        say("got", got); /* the descriptor stays open: the memory stays */
    }
    return got;
}

static long attack_fill(const char *dir, long mb)
{
    static char chunk[MIB];
    memset(chunk, 0x5a, sizeof(chunk));
    long got = 0;
    for (int n = 0; got < mb; n++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/fill.%d", dir, n);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            stopped("open");
            break;
        }
        for (int i = 0; i < 8 && got < mb; i++, got++) {
            if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
                stopped("write");
                close(fd);
                return got;
            }
        }
        close(fd);
        say("got", got);
    }
    return got;
}

static long attack_crowd(long n, long ms)
{
    /* The crowd waits behind a gate until every fork is done, then spins together: under
     * TCG forking 40 took longer than one spin, and the first had ended before the last
     * began (the control saw 35 at once). */
    int gate[2];
    if (pipe(gate) < 0) {
        stopped("pipe");
        return 0;
    }
    long got = 0;
    for (; got < n; got++) {
        pid_t pid = fork();
        if (pid < 0) {
            stopped("fork");
            break;
        }
        if (pid == 0) {
            char c;
            close(gate[1]);
            while (read(gate[0], &c, 1) < 0 && errno == EINTR)
                ;
            /* Spin for the hold, then go: the crowd outlives nothing but the test. */
            struct timespec t0, now;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do
                clock_gettime(CLOCK_MONOTONIC, &now);
            while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 <
                   ms + 500);
            _exit(0);
        }
    }
    close(gate[0]);
    close(gate[1]); /* the gate opens: each child's read sees EOF */
    say("got", got);
    return got;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && strcmp(argv[1], "shm") == 0) {
        hold(attack_shm(atol(argv[2])), atol(argv[3]));
    } else if (argc == 4 && strcmp(argv[1], "memfd") == 0) {
        hold(attack_memfd(atol(argv[2])), atol(argv[3]));
    } else if (argc == 5 && strcmp(argv[1], "fill") == 0) {
        hold(attack_fill(argv[2], atol(argv[3])), atol(argv[4]));
    } else if (argc == 4 && strcmp(argv[1], "crowd") == 0) {
        hold(attack_crowd(atol(argv[2]), atol(argv[3])), atol(argv[3]));
    } else {
        fprintf(stderr, "usage: memhog shm|memfd MB HOLD_MS | fill DIR MB HOLD_MS | "
                        "crowd N HOLD_MS\n");
        return 2;
    }
    return 0;
}
