/* The plumbing between the processes of a jail: fixed-size records on pipes, failure
 * reports from forked children, the -v trace, raw clone and descriptor cleanup. */
#include "internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h> /* struct clone_args, CLONE_INTO_CGROUP */
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(struct jail_rec) <= PIPE_BUF, "a record must be written atomically");

int rec_send(int fd, const struct jail_rec *r)
{
    return write_all(fd, r, sizeof(*r));
}

int rec_recv(int fd, struct jail_rec *r)
{
    ssize_t n = read_full(fd, r, sizeof(*r));
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    if ((size_t)n != sizeof(*r)) {
        errno = EPROTO;
        return -1;
    }
    r->reason[sizeof(r->reason) - 1] = '\0';
    r->message[sizeof(r->message) - 1] = '\0';
    return 1;
}

__attribute__((format(printf, 4, 0))) static _Noreturn void
child_fail_v(int fd, int code, int errnum, const char *fmt, va_list ap)
{
    struct jail_rec r;
    memset(&r, 0, sizeof(r));
    r.type = REC_ERROR;
    r.exit_code = code;
    int n = vsnprintf(r.message, sizeof(r.message), fmt, ap);
    if (errnum && n >= 0 && (size_t)n < sizeof(r.message))
        snprintf(r.message + n, sizeof(r.message) - (size_t)n, ": %s", strerror(errnum));
    if (fd >= 0)
        (void)rec_send(fd, &r);
    _exit(code);
}

void child_fail(int fd, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    child_fail_v(fd, code, 0, fmt, ap);
}

void child_fail_errno(int fd, int code, const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    child_fail_v(fd, code, e, fmt, ap);
}

void jail_err_set(struct jail_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return;
    err->exit_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
}

void plan_debug(const struct jail_plan *p, const char *fmt, ...)
{
    if (!p->verbose)
        return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* Which process of the jail took the step, and when (ms since jail_start). */
    uint64_t ms100 = (now_mono_ns() - p->t0_ns) / 100000;
    log_info("[%d] +%llu.%llums %s", (int)getpid(), (unsigned long long)(ms100 / 10),
             (unsigned long long)(ms100 % 10), line);
}

pid_t raw_clone(unsigned long flags)
{
    /* With a NULL stack the child continues on a copy of the parent's stack, as with
     * fork(). glibc's cached thread id is stale in the child, so the children never
     * call pthread functions, raise() or abort(): they make syscalls and exec/_exit. */
    return (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0UL);
}

pid_t raw_clone_into_cgroup(unsigned long flags, int cgroup_fd)
{
    /* clone3(2): the same fork-like child (no stack given), born in the cgroup whose
     * directory cgroup_fd is, so no one has to move it there afterwards. */
    struct clone_args args;
    memset(&args, 0, sizeof(args));
    args.flags = (uint64_t)(flags & ~(unsigned long)CSIGNAL) | CLONE_INTO_CGROUP;
    args.exit_signal = flags & CSIGNAL;
    args.cgroup = (uint64_t)cgroup_fd;
    return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

uint64_t rusage_cpu_ns(const struct rusage *ru)
{
    return ((uint64_t)ru->ru_utime.tv_sec + (uint64_t)ru->ru_stime.tv_sec) * 1000000000ULL +
           ((uint64_t)ru->ru_utime.tv_usec + (uint64_t)ru->ru_stime.tv_usec) * 1000ULL;
}
