/* The seccomp allowlist: built with libseccomp in the caller (before any fork),
 * exported to a BPF program, and loaded by the program's process as its last step
 * before execve.
 *
 * Default deny. Denied syscalls fail with EPERM, or kill the process when the
 * profile says "kill". Non-native ABIs (i386 through int 0x80, x32) always kill.
 * Some syscalls are allowed only with safe arguments: clone without namespace
 * flags (and, in the python preset, only with CLONE_THREAD), socket/socketpair by
 * address family and type, mknod only for FIFOs;
 * clone3 answers ENOSYS (its flags live in memory that seccomp cannot read, and
 * glibc falls back to clone), and ioctl refuses TIOCSTI and TIOCLINUX. */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __x86_64__
#error "nsjail-lite's seccomp policy is written for x86_64"
#endif

/* Reading extended attributes: ls, cp -a and Python's shutil.copystat do. Each of the
 * C and Python lists has them (Node's does not). */
#define XATTR_READ "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr"
/* Waiting for a signal and the old timers: the C list's programs (sleep, timeout) and
 * the Python runner's interrupt timer, signal and faulthandler. */
#define SIGNAL_WAITS_AND_TIMERS                                                                    \
    "rt_sigpending", "rt_sigtimedwait", "rt_sigsuspend", "pause", "alarm", "getitimer",            \
        "setitimer", "time"

/* What both interpreter runtimes, CPython and Node.js, need: the calls the traces of
 * each (below) have in common. Every preset is this list and its own additions. */
static const char *const runtime_common[] = {
    /* files and descriptors */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "openat",
    "close",
    "close_range",
    "lseek",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "fsync",
    "fdatasync",
    "ftruncate",
    "fallocate",
    "sendfile",
    "copy_file_range",
    "stat",
    "fstat",
    "lstat",
    "newfstatat",
    "statx",
    "statfs",
    "fstatfs",
    "access",
    "faccessat",
    "faccessat2",
    "getdents64",
    "getcwd",
    "chdir",
    "fchdir",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "unlink",
    "unlinkat",
    "symlink",
    "symlinkat",
    "readlink",
    "readlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "umask",
    "utimensat",
    "pipe2",
    "ioctl",
    /* waiting for events: epoll loops (libuv, asyncio), eventfd wake-ups, poll */
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "eventfd2",
    "poll",
    "ppoll",
    /* memory: the allocators, mmap, JIT and ctypes code */
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    /* the process and its threads */
    "exit",
    "exit_group",
    "execve",
    "kill",
    "tgkill",
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "rseq",
    "futex",
    "sched_yield",
    "sched_getaffinity",
    "getpriority",
    "getrlimit",
    "prlimit64",
    "getrusage",
    "sysinfo",
    "uname",
    "getrandom",
    /* signals and time */
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "restart_syscall",
    /* sockets (socket and socketpair themselves are filtered by argument) */
    "connect",
    "accept4",
    "bind",
    "listen",
    "getsockname",
    "getpeername",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "shutdown",
    "setsockopt",
    "getsockopt",
};

/* What an ordinary C program (glibc, the dynamic loader, a shell, coreutils, libcurl)
 * needs beyond the interpreter runtimes' common list (below): the `c` preset is that list
 * and these. Names unknown to this libseccomp are skipped. */
static const char *const c_only[] = {
    /* files and descriptors */
    "open",
    "openat2",
    "creat",
    "flock",
    "sync",
    "syncfs",
    "sync_file_range",
    "truncate",
    "fadvise64",
    "readahead",
    "splice",
    "tee",
    "getdents",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "futimesat",
    XATTR_READ,
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "pipe",
    /* waiting for events */
    "select",
    "pselect6",
    "epoll_create",
    "epoll_pwait2",
    "eventfd",
    "signalfd",
    "signalfd4",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    /* memory */
    "msync",
    "mincore",
    "mlock",
    "mlock2",
    "munlock",
    "mlockall",
    "munlockall",
    "membarrier",
    "memfd_create",
    "pkey_mprotect",
    "pkey_alloc",
    "pkey_free",
    /* processes and threads */
    "wait4",
    "waitid",
    "fork",
    "vfork",
    "execveat",
    "tkill",
    "getpgrp",
    "getpgid",
    "setpgid",
    "getsid",
    "setsid",
    "getresuid",
    "getresgid",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "capget",
    "prctl",
    "futex_waitv",
    "sched_setaffinity",
    "sched_getparam",
    "sched_setparam",
    "sched_getscheduler",
    "sched_setscheduler",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    "setpriority",
    "setrlimit",
    "times",
    "getcpu",
    "pidfd_open",
    "pidfd_send_signal",
    /* signals and time */
    SIGNAL_WAITS_AND_TIMERS,
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "timer_create",
    "timer_settime",
    "timer_gettime",
    "timer_getoverrun",
    "timer_delete",
    /* sockets (socket and socketpair themselves are filtered by argument) */
    "accept",
    /* System V and POSIX IPC, private to the jail's ipc namespace. Not System V shared
     * memory: a detached segment belongs to no process, so no rlimit sees it (the
     * cgroup and the namespace's shmmax/shmall do); a profile that needs it adds
     * shmget, shmat, shmdt and shmctl to seccomp.allow. */
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
};

/* What CPython 3.11 (Debian's, in isolated mode) needs to run code that uses its
 * standard library: derived by tracing the interpreter under the jail (strace -f)
 * over workloads of stdlib imports, file and sqlite I/O, threads, asyncio, ctypes,
 * mmap, signals and the code spoke's own loop, plus the syscalls behind the same os
 * functions that other paths reach (fstat/lstat beside newfstatat, pipe beside pipe2,
 * ...); scripts/trace-python-seccomp repeats the derivation. Not in it, unlike `c`:
 * fork, vfork and clone without CLONE_THREAD (so
 * subprocess, os.system, os.fork and multiprocessing fail with EPERM and a fork bomb
 * cannot start), execveat, prctl, the set*id calls, sessions and process groups,
 * System V and POSIX message-queue IPC, inotify, signalfd, timerfd, mlock, pkeys,
 * scheduler changes. execve stays: the jail's last step is the execve of the interpreter and a
 * filter cannot tell that one from a later one; without fork a later execve can only
 * replace the session's own process by a program of its read-only mounts, under the
 * same filter, namespaces and limits, which gains nothing ctypes does not have. */
static const char *const python_only[] = {
    /* files: the os module's older and wider calls, fcntl.flock, extended attributes
       (shutil.copystat) */
    "open",
    "flock",
    "truncate",
    "fadvise64",
    "splice",
    XATTR_READ,
    "pipe",
    /* waiting for events: select, selectors */
    "select",
    "pselect6",
    /* memory: mmap.flush, the runner's capture file */
    "msync",
    "mincore",
    "memfd_create",
    /* the process: os.wait*, process groups, resource and scheduler queries */
    "wait4",
    "waitid",
    "tkill",
    "getpgrp",
    "getpgid",
    "getsid",
    "getresuid",
    "getresgid",
    "sched_getparam",
    "sched_getscheduler",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "setpriority",
    "setrlimit",
    "times",
    /* signals and time: the runner's interrupt timer, signal, faulthandler */
    SIGNAL_WAITS_AND_TIMERS,
    /* sockets */
    "accept",
};

/* What Node.js (Debian's nodejs, and the 20.x builds of nodesource) needs to run MCP
 * servers from npm: derived by tracing node under the jail (strace -f) while the
 * reference servers of tests/mcpservers (filesystem, memory, everything,
 * sequential-thinking) answer every one of their tools; scripts/trace-node-seccomp
 * repeats the derivation. Like `python`, and for the same reasons: threads only
 * (clone with CLONE_THREAD; child_process and a fork bomb fail with EPERM), no
 * execveat, prctl, set*id, sessions, System V or message-queue IPC, mlock or
 * scheduler changes; libuv's io_uring probe is refused (it falls back to its thread
 * pool). The argument rules of `c` apply unchanged. */
static const char *const node_only[] = {
    /* memory: V8's W^X protection of JIT code (pkeys) */
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    /* the process: capability queries (libuv) */
    "capget",
};

struct preset {
    const char *name;
    /* the common list, the preset's own additions, and (a "+exec" variant) c_only */
    const char *const *syscalls[3];
    size_t n[3];
    bool threads_only; /* clone only with CLONE_THREAD: no new processes */
};

static const struct preset presets[] = {
    {"c", {runtime_common, c_only}, {ARRAY_LEN(runtime_common), ARRAY_LEN(c_only)}, false},
    {"python",
     {runtime_common, python_only},
     {ARRAY_LEN(runtime_common), ARRAY_LEN(python_only)},
     true},
    {"node", {runtime_common, node_only}, {ARRAY_LEN(runtime_common), ARRAY_LEN(node_only)}, true},
};
const char *const seccomp_preset_names[] = {"c",           "python",    "node", "c+exec",
                                            "python+exec", "node+exec", NULL};

/* "NAME" or "NAME+exec": the preset, and for "+exec" (a jail that runs host programs,
 * jail_config.programs) what an ordinary C program needs on top (c_only: the programs
 * run under the same filter) with processes allowed: fork, vfork, clone without
 * namespace flags, execve, wait. false when NAME is unknown. */
static bool preset_lookup(const char *name, struct preset *out)
{
    size_t base = strcspn(name, "+");
    bool exec = name[base] != '\0';
    if (exec && strcmp(name + base, "+exec") != 0)
        return false;
    for (size_t i = 0; i < ARRAY_LEN(presets); i++) {
        if (strlen(presets[i].name) != base || strncmp(presets[i].name, name, base) != 0)
            continue;
        *out = presets[i];
        if (exec) {
            out->syscalls[2] = c_only;
            out->n[2] = ARRAY_LEN(c_only);
            out->threads_only = false;
        }
        return true;
    }
    return false;
}

/* Never allowed, whatever a profile says: each is an escape or an attack surface the
 * issue names, or cannot be filtered safely. */
static const char *const never_allowed[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "iopl",
    "ioperm",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "sethostname",
    "setdomainname",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    "quotactl",
    "modify_ldt",
    "uselib",
    "lookup_dcookie",
    "vhangup",
    "setgroups",
    /* filtered by argument below: allowing them whole would undo the filter */
    "clone",
    "clone3",
    "socket",
    "socketpair",
    "mknod",
    "mknodat",
};

bool seccomp_preset_known(const char *name)
{
    struct preset p;
    return preset_lookup(name, &p);
}

const char *seccomp_preset_list(void)
{
    return "c, python, node (each also as NAME+exec)";
}

bool seccomp_check_extra(char *const *names, char *why, size_t whylen)
{
    for (size_t i = 0; names && names[i]; i++) {
        for (size_t k = 0; k < ARRAY_LEN(never_allowed); k++) {
            if (strcmp(names[i], never_allowed[k]) == 0) {
                snprintf(why, whylen, "'%s' is never allowed", names[i]);
                return false;
            }
        }
        if (seccomp_syscall_resolve_name(names[i]) == __NR_SCMP_ERROR) {
            snprintf(why, whylen, "'%s' is not a syscall name", names[i]);
            return false;
        }
    }
    return true;
}

#define NS_CLONE_FLAGS                                                                             \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |  \
     CLONE_NEWNET)

/* SCMP_A0() and friends leave datum_b out, which clang's -Wextra rejects. */
static struct scmp_arg_cmp arg(unsigned idx, enum scmp_compare op, scmp_datum_t a, scmp_datum_t b)
{
    struct scmp_arg_cmp c = {.arg = idx, .op = op, .datum_a = a, .datum_b = b};
    return c;
}

static int add_rules(scmp_filter_ctx ctx, const struct preset *preset, char *const *extra,
                     enum inet_policy inet, struct jail_error *err)
{
    const uint32_t allow = SCMP_ACT_ALLOW;
    for (size_t l = 0; l < ARRAY_LEN(preset->syscalls); l++) {
        for (size_t i = 0; i < preset->n[l]; i++) {
            int nr = seccomp_syscall_resolve_name(preset->syscalls[l][i]);
            if (nr == __NR_SCMP_ERROR)
                continue;
            if (seccomp_rule_add(ctx, allow, nr, 0) < 0) {
                jail_err_set(err, 125, "seccomp: cannot allow %s", preset->syscalls[l][i]);
                return -1;
            }
        }
    }
    for (size_t i = 0; extra && extra[i]; i++) {
        int nr = seccomp_syscall_resolve_name(extra[i]);
        if (nr == __NR_SCMP_ERROR || seccomp_rule_add(ctx, allow, nr, 0) < 0) {
            jail_err_set(err, 125, "seccomp: cannot allow %s", extra[i]);
            return -1;
        }
    }

    /* threads_only: CLONE_THREAD must be set (the kernel then insists on CLONE_VM and
     * CLONE_SIGHAND), which is every pthread_create and no fork, vfork or spawn. */
    const scmp_datum_t clone_mask = NS_CLONE_FLAGS | (preset->threads_only ? CLONE_THREAD : 0);
    const scmp_datum_t clone_want = preset->threads_only ? CLONE_THREAD : 0;
    int rc = 0;
    rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(clone), 1,
                           arg(0, SCMP_CMP_MASKED_EQ, clone_mask, clone_want));
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(socket), 1, arg(0, SCMP_CMP_EQ, AF_UNIX, 0));
    rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(socketpair), 1, arg(0, SCMP_CMP_EQ, AF_UNIX, 0));
    if (inet != INET_NONE) {
        const int families[] = {AF_INET, AF_INET6};
        for (size_t f = 0; f < ARRAY_LEN(families); f++) {
            rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(socket), 2,
                                   arg(0, SCMP_CMP_EQ, (scmp_datum_t)families[f], 0),
                                   arg(1, SCMP_CMP_MASKED_EQ, 0xf, SOCK_STREAM));
            if (inet == INET_ANY)
                rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(socket), 2,
                                       arg(0, SCMP_CMP_EQ, (scmp_datum_t)families[f], 0),
                                       arg(1, SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM));
        }
    }
    rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(mknod), 1,
                           arg(1, SCMP_CMP_MASKED_EQ, S_IFMT, S_IFIFO));
    rc |= seccomp_rule_add(ctx, allow, SCMP_SYS(mknodat), 1,
                           arg(2, SCMP_CMP_MASKED_EQ, S_IFMT, S_IFIFO));
    if (rc < 0) {
        jail_err_set(err, 125, "seccomp: cannot add the argument rules");
        return -1;
    }
    return 0;
}

/* Checks libseccomp 2.5 cannot express, run before its program:
 * - x32 syscalls (the x86_64 arch with bit 30 set in the number) and foreign arches
 *   kill the process;
 * - ioctl's request is an unsigned int in the kernel, so only its low 32 bits decide
 *   whether it is TIOCSTI; libseccomp compares all 64 and would let TIOCSTI with
 *   garbage in the high half through an "ioctl != TIOCSTI" rule. */
static size_t prologue(struct sock_filter *out, uint32_t deny)
{
    const uint32_t arch_off = offsetof(struct seccomp_data, arch);
    const uint32_t nr_off = offsetof(struct seccomp_data, nr);
    const uint32_t a1_lo = offsetof(struct seccomp_data, args[1]); /* little endian */
    const struct sock_filter p[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arch_off),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr_off),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, a1_lo),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, deny),
    };
    memcpy(out, p, sizeof(p));
    return ARRAY_LEN(p);
}

static int export_program(scmp_filter_ctx ctx, uint32_t deny, struct sock_fprog *out,
                          struct jail_error *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        jail_err_set(err, 125, "seccomp: pipe: %s", strerror(errno));
        return -1;
    }
    int rc = seccomp_export_bpf(ctx, fds[1]);
    close(fds[1]);
    if (rc < 0) {
        close(fds[0]);
        jail_err_set(err, 125, "seccomp: cannot export the filter: %s", strerror(-rc));
        return -1;
    }
    /* A filter of a few hundred instructions fits the pipe buffer. */
    enum { MAX_INSNS = 4096 };
    struct sock_filter *insns = xcalloc(MAX_INSNS, sizeof(*insns));
    size_t n = prologue(insns, deny);
    ssize_t got = read_full(fds[0], insns + n, (MAX_INSNS - n) * sizeof(*insns));
    close(fds[0]);
    if (got <= 0 || got % (ssize_t)sizeof(*insns) != 0 ||
        (size_t)got == (MAX_INSNS - n) * sizeof(*insns)) {
        free(insns);
        jail_err_set(err, 125, "seccomp: exported filter has an unexpected size");
        return -1;
    }
    n += (size_t)got / sizeof(*insns);
    out->len = (unsigned short)n;
    out->filter = xrealloc(insns, n * sizeof(*insns));
    return 0;
}

int seccomp_compile(const char *preset_name, char *const *extra, bool kill, enum inet_policy inet,
                    struct sock_fprog *out, struct jail_error *err)
{
    struct preset found;
    const struct preset *preset = preset_lookup(preset_name, &found) ? &found : NULL;
    if (!preset) {
        jail_err_set(err, 125, "seccomp: unknown preset '%s' (known: %s)", preset_name,
                     seccomp_preset_list());
        return -1;
    }
    char why[256];
    if (!seccomp_check_extra(extra, why, sizeof(why))) {
        jail_err_set(err, 125, "seccomp: %s", why);
        return -1;
    }
    const uint32_t deny = kill ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_ERRNO(EPERM);
    /* The filter is only compiled here, never loaded: declare the kernel API level
     * (3: SECCOMP_RET_KILL_PROCESS, Linux 4.14) instead of letting libseccomp probe
     * the calling process, which may itself be confined (or run under valgrind). */
    seccomp_api_set(3);
    scmp_filter_ctx ctx = seccomp_init(deny);
    if (!ctx) {
        jail_err_set(err, 125, "seccomp: seccomp_init failed");
        return -1;
    }
    int rc = -1;
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0 ||
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 ||
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0) {
        jail_err_set(err, 125, "seccomp: cannot set filter attributes");
        goto out;
    }
    if (add_rules(ctx, preset, extra, inet, err) < 0)
        goto out;
    rc = export_program(ctx, deny, out, err);
out:
    seccomp_release(ctx);
    return rc;
}

/* The hub may start spokes with profile additions: keep those compiled programs too,
 * keyed by everything that shapes them. */
struct cached {
    char *key;
    struct sock_fprog prog;
};
static struct cached cache[16];
static size_t cache_len;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

char *seccomp_key(const char *preset, char *const *extra, bool kill, enum inet_policy inet)
{
    size_t len = strlen(preset) + 16;
    for (size_t i = 0; extra && extra[i]; i++)
        len += strlen(extra[i]) + 1;
    char *key = xmalloc(len);
    int n = snprintf(key, len, "%s|%d|%d", preset, kill, (int)inet);
    for (size_t i = 0; extra && extra[i]; i++)
        n += snprintf(key + n, len - (size_t)n, ",%s", extra[i]);
    return key;
}

static void copy_prog(struct sock_fprog *dst, const struct sock_fprog *src)
{
    dst->len = src->len;
    dst->filter = xmalloc(src->len * sizeof(struct sock_filter));
    memcpy(dst->filter, src->filter, src->len * sizeof(struct sock_filter));
}

int seccomp_prepare(const struct jail_config *cfg, struct sock_fprog *out, struct jail_error *err)
{
    /* A veth to a gateway that is also the jail's resolver needs UDP for DNS (the
     * gateway takes every datagram: the resolver answers those to it and audits and
     * drops the rest); a plain veth to a proxy needs TCP only. */
    enum inet_policy inet = !cfg->namespaces            ? INET_ANY
                            : cfg->net != JAIL_NET_VETH ? INET_NONE
                            : cfg->veth_gateway         ? INET_ANY
                                                        : INET_STREAM;
    bool kill = cfg->seccomp_action == JAIL_SECCOMP_KILL;
    const char *base = cfg->seccomp_preset ? cfg->seccomp_preset : "c";
    /* A jail that runs host programs gets its preset's "+exec" variant. */
    char *with_exec =
        cfg->programs && cfg->programs[0] && !strchr(base, '+') ? xasprintf("%s+exec", base) : NULL;
    const char *preset = with_exec ? with_exec : base;
    char *key = seccomp_key(preset, cfg->seccomp_extra_allow, kill, inet);

    /* The presets without additions were compiled by this same code at build time
     * (seccomp_gen.c): a launcher then spends no time in libseccomp at all. */
    for (size_t i = 0; i < seccomp_builtins_len; i++) {
        if (strcmp(seccomp_builtins[i].key, key) == 0) {
            struct sock_fprog builtin = {seccomp_builtins[i].len,
                                         (struct sock_filter *)seccomp_builtins[i].filter};
            copy_prog(out, &builtin);
            free(key);
            free(with_exec);
            return 0;
        }
    }

    pthread_mutex_lock(&cache_lock);
    int rc = 0;
    size_t i;
    for (i = 0; i < cache_len; i++)
        if (strcmp(cache[i].key, key) == 0)
            break;
    if (i < cache_len) {
        copy_prog(out, &cache[i].prog);
    } else {
        rc = seccomp_compile(preset, cfg->seccomp_extra_allow, kill, inet, out, err);
        if (rc == 0 && cache_len < ARRAY_LEN(cache)) {
            cache[cache_len].key = key;
            copy_prog(&cache[cache_len].prog, out);
            cache_len++;
            key = NULL;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    free(key);
    free(with_exec);
    return rc;
}

int seccomp_apply(const struct sock_fprog *prog)
{
    /* no_new_privs is set by the caller first; without it the kernel refuses the
     * filter to a process without CAP_SYS_ADMIN. */
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog);
}

int jail_seccomp_export(const struct jail_config *cfg, int fd, struct jail_error *err)
{
    struct sock_fprog prog;
    if (seccomp_prepare(cfg, &prog, err) < 0)
        return -1;
    int rc = write_all(fd, prog.filter, prog.len * sizeof(struct sock_filter));
    if (rc < 0)
        jail_err_set(err, 125, "writing the seccomp program: %s", strerror(errno));
    free(prog.filter);
    return rc;
}
