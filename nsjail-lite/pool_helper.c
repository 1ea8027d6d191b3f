/* The pools' helper: the last thing a monitor starts before it exits, once the jail
 * has ended and its status is out. It removes the jail's pooled cgroup and refills the
 * cgroup pool (cgroup_pool.c), and refills the network namespace pool (netns_pool.c).
 * Detached: its own session, no descriptor of the monitor's (a caller reading the
 * launcher's output to its end, or waiting on the status descriptor, never waits for
 * it), no death signal, every signal at its default. */
#include "internal.h"
#include "util.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

struct helper_work {
    struct cgroup_plan cg; /* its own copy: the monitor's plan is not the helper's */
    bool cgroup;           /* the jail's pooled cgroup to remove, the pool to refill */
    bool netns;            /* the network namespace pool to refill */
};

static _Noreturn void helper_main(struct helper_work *w)
{
    (void)setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    (void)close_fds_except(NULL, 0);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3 && null >= 0; fd++)
        if (fd != null)
            dup2(null, fd);
    prctl(PR_SET_NAME, "nsjail-cgpool", 0, 0, 0);
    if (w->cgroup)
        cgroup_pool_recycle(&w->cg);
    if (w->netns)
        netns_pool_refill();
    _exit(0);
}

#if !defined(__SANITIZE_ADDRESS__)
static int helper_entry(void *w)
{
    helper_main(w);
}
#endif

/* Without the sanitizers the helper shares the monitor's memory (CLONE_VM on a stack of
 * its own): no copy of the page tables on the launcher's way out (fork was about 70 us
 * of a /bin/true jail's 3.5 ms here). The monitor touches no memory after it but its
 * own stack frames on the way to _exit, so nothing is used by both at once; the address
 * space stays while the helper runs. ASan keeps per-thread state that this would share:
 * fork there. */
static pid_t start_helper(struct helper_work *w)
{
#if defined(__SANITIZE_ADDRESS__)
    pid_t pid = fork();
    if (pid == 0)
        helper_main(w);
    return pid;
#else
    enum { STACK = 256 * 1024 };
    char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return -1;
    pid_t pid = clone(helper_entry, stack + STACK, CLONE_VM | SIGCHLD, w);
    if (pid < 0)
        munmap(stack, STACK);
    return pid;
#endif
}

void pools_after_exit(struct jail_plan *p)
{
    struct cgroup_plan *cg = &p->cg;
    bool cgroup = cg->version && cg->removal_pending;
    if (!cgroup && !p->netns_pool)
        return;
    cg->removal_pending = false;
    struct helper_work *w = xcalloc(1, sizeof(*w));
    w->cg = *cg; /* the strings are on the heap, which the monitor never frees now */
    w->cgroup = cgroup;
    w->netns = p->netns_pool;
    /* The status is out and the monitor needs no descriptor any more: none goes to the
     * helper, not even for the moment before it closes them (a caller reading the
     * launcher's output to its end would wait for the helper to be scheduled). */
    (void)close_fds_except(NULL, 0);
    for (int fd = 0; fd < 3; fd++)
        close(fd);
    if (start_helper(w) < 0 && cgroup) {
        /* No helper: remove it here, as without a pool, and leave the refill. */
        (void)cgroup_rmdirs(cg);
        cgroup_pool_drop_claim(cg);
    }
}
