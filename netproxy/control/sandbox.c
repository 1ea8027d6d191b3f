#include "sandbox.h"

#include "util.h"

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>

/* Plain allowlist: no argument filters needed. */
static const int allow_any[] = {
    /* I/O on descriptors we already hold */
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendto),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmmsg),
    SCMP_SYS(sendmmsg),
    SCMP_SYS(splice),
    SCMP_SYS(pipe2),
    SCMP_SYS(close),
    SCMP_SYS(shutdown),
    SCMP_SYS(fcntl),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(lseek),
    /* lib/audit cuts a record that a full disk left half-written off the log again.
     * No power the proxy lacks: it may already clear O_APPEND (fcntl) and rewrite. */
    SCMP_SYS(ftruncate),
    /* lib/auditchain locks the log while it links a record to the one before. */
    SCMP_SYS(flock),
    /* sockets: creating them is filtered below */
    SCMP_SYS(connect),
    SCMP_SYS(accept),
    SCMP_SYS(accept4),
    SCMP_SYS(getsockopt),
    SCMP_SYS(setsockopt),
    SCMP_SYS(getsockname),
    SCMP_SYS(getpeername),
    /* the event loop */
    SCMP_SYS(epoll_wait),
    SCMP_SYS(epoll_pwait),
    SCMP_SYS(epoll_ctl),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    /* memory (mmap and mprotect are filtered below) */
    SCMP_SYS(brk),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    /* time, randomness, identity */
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(getrandom),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(sysinfo), /* glibc's qsort asks for the memory size */
    /* signals and ending */
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(futex),
    SCMP_SYS(wait4),  /* reaping the log opener at exit */
    SCMP_SYS(tgkill), /* abort() */
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
#if defined(__SANITIZE_ADDRESS__)
    /* LeakSanitizer stops the world with a ptrace'ing thread at exit. Only in the
     * SAN=1 test build; the release filter kills ptrace. */
    SCMP_SYS(clone),
    SCMP_SYS(ptrace),
    SCMP_SYS(prctl),
    SCMP_SYS(sched_yield),
    SCMP_SYS(open),
    SCMP_SYS(openat),
    SCMP_SYS(getdents),
    SCMP_SYS(getdents64),
    SCMP_SYS(readlinkat),
    SCMP_SYS(readlink),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(mprotect),
    SCMP_SYS(mmap),
    SCMP_SYS(waitid),
    SCMP_SYS(getppid),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(pread64),
    SCMP_SYS(lstat),
    SCMP_SYS(stat),
    SCMP_SYS(access),
    SCMP_SYS(kill),
#endif
};

/* Calls that only an attacker would make: the process dies (SIGSYS) instead of
 * getting an error to retry with. */
static const int kill_any[] = {
    SCMP_SYS(execve),
    SCMP_SYS(execveat),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(init_module),
    SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),
    SCMP_SYS(kexec_load),
    SCMP_SYS(kexec_file_load),
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(pivot_root),
    SCMP_SYS(unshare),
    SCMP_SYS(setns),
    SCMP_SYS(bpf),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(keyctl),
    SCMP_SYS(add_key),
    SCMP_SYS(request_key),
#if !defined(__SANITIZE_ADDRESS__)
    SCMP_SYS(ptrace),
#endif
};

/* SCMP_A0() and friends leave a field to the compiler's default, which clang warns
 * about; spell the comparison out. */
static struct scmp_arg_cmp arg(unsigned n, enum scmp_compare op, scmp_datum_t a, scmp_datum_t b)
{
    struct scmp_arg_cmp c = {.arg = n, .op = op, .datum_a = a, .datum_b = b};
    return c;
}

int sandbox_apply(char *err, size_t errlen)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        snprintf(err, errlen, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return -1;
    }
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!f) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < ARRAY_LEN(allow_any) && rc == 0; i++)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, allow_any[i], 0);
    for (size_t i = 0; i < ARRAY_LEN(kill_any) && rc == 0; i++)
        rc = seccomp_rule_add(f, SCMP_ACT_KILL_PROCESS, kill_any[i], 0);
    /* Outgoing connections and DNS only: inet sockets. */
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                              arg(0, SCMP_CMP_EQ, AF_INET, 0));
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                              arg(0, SCMP_CMP_EQ, AF_INET6, 0));
#if !defined(__SANITIZE_ADDRESS__)
    /* Memory, but never executable memory: no shellcode, no JIT. */
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                              arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
                              arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
#endif
    /* evbuffer asks how much is readable (the metrics endpoint). */
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                              arg(1, SCMP_CMP_EQ, FIONREAD, 0));
    /* Every thread (netproxy --workers) gets the filter, not only the caller. */
    if (rc == 0)
        rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
    if (rc == 0)
        rc = seccomp_load(f);
    seccomp_release(f);
    if (rc < 0) {
        snprintf(err, errlen, "loading the seccomp filter: %s", strerror(-rc));
        return -1;
    }
    return 0;
}
