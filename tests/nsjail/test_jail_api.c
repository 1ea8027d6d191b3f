/* The library contract (nsjail-lite/jail.h) as the hub uses it, and the seccomp policy
 * evaluated instruction by instruction:
 *
 * - the compiled filter, run through a small classic-BPF interpreter on synthetic
 *   syscalls (foreign arch, x32, TIOCSTI with garbage in the high half, clone with
 *   namespace flags, clone3, socket families and types per network mode, mknod):
 *   this checks the policy itself, also where this kernel cannot show it (no i386
 *   entry here);
 * - the built-in defaults equal config/profiles/spoke.json;
 * - jail_start/jail_wait/jail_poll/jail_fd/jail_kill/jail_reaped and the status
 *   reasons; jail_start_async/jail_start_result (started, 127 from the jail, killed or
 *   freed while starting, in both modes), wall time enforced in library mode, killing the returned
 * pid ends the whole jail, the "process" mode (no namespaces), chown of a bind-rw source to the
 *   jail's host id, no caller descriptor held by the jail;
 * - 200 jails from one process leave no descriptor, child or zombie behind, also
 *   when started from several threads at once. */
#include "nsjail-lite/internal.h"
#include "nsjail-lite/jail.h"
#include "tests/unit/test.h"
#include "jsonfile.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOST_ID_BASE (3300000 + (uint32_t)(getpid() % 4096) * 64)

/* ---- a classic BPF interpreter, enough for seccomp filters ---- */

static uint32_t bpf_run(const struct sock_fprog *prog, const struct seccomp_data *d)
{
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    const unsigned char *data = (const unsigned char *)d;
    for (unsigned pc = 0; pc < prog->len; pc++) {
        const struct sock_filter *f = &prog->filter[pc];
        uint32_t k = f->k;
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (k + 4 > sizeof(*d))
                return 0xdead;
            memcpy(&a, data + k, 4);
            break;
        case BPF_LD | BPF_MEM:
            a = mem[k % BPF_MEMWORDS];
            break;
        case BPF_LDX | BPF_MEM:
            x = mem[k % BPF_MEMWORDS];
            break;
        case BPF_ST:
            mem[k % BPF_MEMWORDS] = a;
            break;
        case BPF_STX:
            mem[k % BPF_MEMWORDS] = x;
            break;
        case BPF_LD | BPF_IMM:
            a = k;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= k;
            break;
        case BPF_ALU | BPF_OR | BPF_K:
            a |= k;
            break;
        case BPF_MISC | BPF_TAX:
            x = a;
            break;
        case BPF_MISC | BPF_TXA:
            a = x;
            break;
        case BPF_JMP | BPF_JA:
            pc += k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += (a == k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += (a > k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += (a >= k) ? f->jt : f->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += (a & k) ? f->jt : f->jf;
            break;
        case BPF_RET | BPF_K:
            return k;
        case BPF_RET | BPF_A:
            return a;
        default:
            printf("# unsupported BPF opcode 0x%x at %u\n", f->code, pc);
            return 0xdead;
        }
    }
    return 0xdead;
}

static uint32_t verdict(const struct sock_fprog *p, uint32_t arch, int nr, uint64_t a0, uint64_t a1,
                        uint64_t a2)
{
    struct seccomp_data d;
    memset(&d, 0, sizeof(d));
    d.arch = arch;
    d.nr = nr;
    d.args[0] = a0;
    d.args[1] = a1;
    d.args[2] = a2;
    return bpf_run(p, &d);
}

#define X86_64 AUDIT_ARCH_X86_64
#define ALLOW SECCOMP_RET_ALLOW
#define EPERM_RET (SECCOMP_RET_ERRNO | EPERM)
#define ENOSYS_RET (SECCOMP_RET_ERRNO | ENOSYS)
#define KILL SECCOMP_RET_KILL_PROCESS

static struct sock_fprog filter_for(bool namespaces, enum jail_net net, bool kill,
                                    const char *extra)
{
    struct jail_config cfg;
    jail_config_init(&cfg);
    cfg.namespaces = namespaces;
    cfg.net = net;
    cfg.seccomp_action = kill ? JAIL_SECCOMP_KILL : JAIL_SECCOMP_ERRNO;
    if (extra) {
        jf_strv_free(cfg.seccomp_extra_allow);
        cfg.seccomp_extra_allow = xcalloc(2, sizeof(char *));
        cfg.seccomp_extra_allow[0] = xstrdup(extra);
    }
    struct sock_fprog p = {0, NULL};
    struct jail_error err;
    CHECK(seccomp_prepare(&cfg, &p, &err) == 0, "seccomp filter builds (%s)", err.message);
    jail_config_free(&cfg);
    return p;
}

static void test_filter(void)
{
    struct sock_fprog none = filter_for(true, JAIL_NET_NONE, false, NULL);
    struct sock_fprog veth = filter_for(true, JAIL_NET_VETH, false, NULL);
    struct sock_fprog proc = filter_for(false, JAIL_NET_NONE, false, NULL);
    struct sock_fprog kill = filter_for(true, JAIL_NET_NONE, true, NULL);
    struct sock_fprog extra = filter_for(true, JAIL_NET_NONE, false, "personality");

    CHECK(verdict(&none, X86_64, __NR_read, 0, 0, 0) == ALLOW, "read is allowed");
    CHECK(verdict(&none, X86_64, __NR_ptrace, 0, 0, 0) == EPERM_RET, "ptrace: EPERM");
    CHECK(verdict(&kill, X86_64, __NR_ptrace, 0, 0, 0) == KILL, "ptrace: kill when asked");
    CHECK(verdict(&none, AUDIT_ARCH_I386, 20, 0, 0, 0) == KILL, "i386 arch: kill (errno mode)");
    CHECK(verdict(&none, AUDIT_ARCH_X86_64, 0x40000000 | __NR_getpid, 0, 0, 0) == KILL,
          "x32 syscall: kill");
    CHECK(verdict(&none, X86_64, __NR_ioctl, 0, TCGETS, 0) == ALLOW, "ioctl TCGETS allowed");
    CHECK(verdict(&none, X86_64, __NR_ioctl, 0, TIOCSTI, 0) == EPERM_RET, "ioctl TIOCSTI: EPERM");
    CHECK(verdict(&none, X86_64, __NR_ioctl, 0, TIOCSTI | (1ULL << 32), 0) == EPERM_RET,
          "ioctl TIOCSTI with high bits set: EPERM");
    CHECK(verdict(&kill, X86_64, __NR_ioctl, 0, TIOCSTI | (7ULL << 40), 0) == KILL,
          "ioctl TIOCSTI with high bits set: kill when asked");
    CHECK(verdict(&none, X86_64, __NR_ioctl, 0, TIOCLINUX, 0) == EPERM_RET, "TIOCLINUX: EPERM");
    CHECK(verdict(&none, X86_64, __NR_clone, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND, 0, 0) ==
              ALLOW,
          "clone for a thread allowed");
    CHECK(verdict(&none, X86_64, __NR_clone, SIGCHLD, 0, 0) == ALLOW, "clone for fork allowed");
    const unsigned long ns[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
                                CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
    for (size_t i = 0; i < ARRAY_LEN(ns); i++)
        CHECK(verdict(&none, X86_64, __NR_clone, ns[i] | SIGCHLD, 0, 0) == EPERM_RET,
              "clone with namespace flag 0x%lx: EPERM", ns[i]);
    CHECK(verdict(&none, X86_64, __NR_clone3, 0, 0, 0) == ENOSYS_RET, "clone3: ENOSYS");
    CHECK(verdict(&kill, X86_64, __NR_clone3, 0, 0, 0) == ENOSYS_RET,
          "clone3: ENOSYS even in kill mode (libc falls back)");
    CHECK(verdict(&none, X86_64, __NR_socket, AF_UNIX, SOCK_STREAM, 0) == ALLOW,
          "AF_UNIX sockets allowed");
    CHECK(verdict(&none, X86_64, __NR_socket, AF_INET, SOCK_STREAM, 0) == EPERM_RET,
          "net none: AF_INET refused");
    CHECK(verdict(&veth, X86_64, __NR_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) == ALLOW,
          "veth: TCP allowed");
    CHECK(verdict(&veth, X86_64, __NR_socket, AF_INET6, SOCK_STREAM, 0) == ALLOW,
          "veth: TCP over IPv6 allowed");
    CHECK(verdict(&veth, X86_64, __NR_socket, AF_INET, SOCK_DGRAM, 0) == EPERM_RET,
          "veth: UDP refused (no DNS)");
    CHECK(verdict(&veth, X86_64, __NR_socket, AF_INET, SOCK_RAW, 0) == EPERM_RET,
          "veth: raw refused");
    CHECK(verdict(&veth, X86_64, __NR_socket, AF_INET | (1ULL << 32), SOCK_STREAM, 0) == EPERM_RET,
          "veth: garbage in the family's high half refused");
    CHECK(verdict(&proc, X86_64, __NR_socket, AF_INET, SOCK_DGRAM, 0) == ALLOW,
          "process mode: UDP allowed (direct network)");
    CHECK(verdict(&proc, X86_64, __NR_socket, AF_NETLINK, SOCK_RAW, 0) == EPERM_RET,
          "process mode: netlink refused");
    CHECK(verdict(&none, X86_64, __NR_socketpair, AF_INET, SOCK_STREAM, 0) == EPERM_RET,
          "socketpair only for AF_UNIX");
    CHECK(verdict(&none, X86_64, __NR_mknodat, AT_FDCWD, 0, S_IFIFO | 0600) == ALLOW,
          "mknodat of a FIFO allowed");
    CHECK(verdict(&none, X86_64, __NR_mknodat, AT_FDCWD, 0, S_IFCHR | 0600) == EPERM_RET,
          "mknodat of a device: EPERM");
    CHECK(verdict(&none, X86_64, __NR_personality, 0, 0, 0) == EPERM_RET,
          "personality is not in the preset");
    CHECK(verdict(&extra, X86_64, __NR_personality, 0, 0, 0) == ALLOW,
          "a profile can add personality");
    free(none.filter);
    free(veth.filter);
    free(proc.filter);
    free(kill.filter);
    free(extra.filter);

    /* The programs compiled at build time are what the code compiles now. */
    size_t n_presets = 0;
    while (seccomp_preset_names[n_presets])
        n_presets++;
    CHECK(n_presets == 6 && seccomp_builtins_len == 6 * n_presets,
          "%zu built-in programs (presets c, python and node, and each's +exec, x 2 actions x "
          "3 networks)",
          seccomp_builtins_len);
    for (size_t i = 0; i < seccomp_builtins_len; i++) {
        static const enum inet_policy inets[] = {INET_NONE, INET_STREAM, INET_ANY};
        const struct seccomp_builtin *b = &seccomp_builtins[i];
        bool same = false;
        for (size_t p = 0; p < n_presets && !same; p++) {
            const char *preset = seccomp_preset_names[p];
            for (int k = 0; k <= 1 && !same; k++) {
                for (size_t n = 0; n < 3 && !same; n++) {
                    char *key = seccomp_key(preset, NULL, k, inets[n]);
                    if (strcmp(key, b->key) == 0) {
                        struct sock_fprog fresh = {0, NULL};
                        struct jail_error err;
                        same = seccomp_compile(preset, NULL, k, inets[n], &fresh, &err) == 0 &&
                               fresh.len == b->len &&
                               memcmp(fresh.filter, b->filter, b->len * sizeof(*b->filter)) == 0;
                        free(fresh.filter);
                    }
                    free(key);
                }
            }
        }
        CHECK(same, "built-in program %s equals a fresh compile", b->key);
    }

    char why[256];
    char *bad[] = {"ptrace", NULL}, *unknown[] = {"no_such_syscall", NULL},
         *whole[] = {"socket", NULL};
    CHECK(!seccomp_check_extra(bad, why, sizeof(why)) && strstr(why, "never allowed"),
          "a profile cannot add ptrace: %s", why);
    CHECK(!seccomp_check_extra(unknown, why, sizeof(why)) && strstr(why, "not a syscall"),
          "a profile cannot add an unknown name: %s", why);
    CHECK(!seccomp_check_extra(whole, why, sizeof(why)),
          "a profile cannot allow socket() whole: %s", why);
}

/* ---- profile defaults ---- */

static bool same_binds(const struct jail_config *a, const struct jail_config *b)
{
    if (a->n_binds != b->n_binds)
        return false;
    for (size_t i = 0; i < a->n_binds; i++) {
        const struct jail_bind *x = &a->binds[i], *y = &b->binds[i];
        if (strcmp(x->src, y->src) != 0 || (x->dst == NULL) != (y->dst == NULL) ||
            x->writable != y->writable || x->optional != y->optional)
            return false;
    }
    return true;
}

/* The python preset: threads but no new processes, and the `c` preset's argument
 * rules (namespaces, sockets) unchanged. */
static void test_python_filter(void)
{
    struct jail_config cfg;
    jail_config_init(&cfg);
    free(cfg.seccomp_preset);
    cfg.seccomp_preset = xstrdup("python");
    struct sock_fprog py = {0, NULL};
    struct jail_error err;
    CHECK(seccomp_prepare(&cfg, &py, &err) == 0, "python preset builds (%s)", err.message);
    jail_config_free(&cfg);
    const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                            CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                            CLONE_CHILD_CLEARTID;
    CHECK(verdict(&py, X86_64, __NR_clone, thread, 0, 0) == ALLOW,
          "python: clone for a thread (glibc's pthread_create flags) allowed");
    CHECK(verdict(&py, X86_64, __NR_clone, SIGCHLD, 0, 0) == EPERM_RET, "python: fork: EPERM");
    CHECK(verdict(&py, X86_64, __NR_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0) == EPERM_RET,
          "python: posix_spawn's vfork clone: EPERM");
    CHECK(verdict(&py, X86_64, __NR_clone, thread | CLONE_NEWUSER, 0, 0) == EPERM_RET,
          "python: a thread with a namespace flag: EPERM");
    CHECK(verdict(&py, X86_64, __NR_clone3, 0, 0, 0) == ENOSYS_RET, "python: clone3: ENOSYS");
    const int denied[] = {__NR_fork,   __NR_vfork,  __NR_execveat, __NR_setuid, __NR_setsid,
                          __NR_shmget, __NR_msgget, __NR_ptrace,   __NR_unshare};
    for (size_t i = 0; i < ARRAY_LEN(denied); i++)
        CHECK(verdict(&py, X86_64, denied[i], 0, 0, 0) == EPERM_RET, "python: syscall %d: EPERM",
              denied[i]);
    const int allowed[] = {__NR_read,      __NR_mmap,         __NR_futex,
                           __NR_setitimer, __NR_memfd_create, __NR_epoll_wait};
    for (size_t i = 0; i < ARRAY_LEN(allowed); i++)
        CHECK(verdict(&py, X86_64, allowed[i], 0, 0, 0) == ALLOW, "python: syscall %d allowed",
              allowed[i]);
    CHECK(verdict(&py, X86_64, __NR_socket, AF_INET, SOCK_STREAM, 0) == EPERM_RET,
          "python, net none: AF_INET refused");
    CHECK(verdict(&py, X86_64, __NR_socket, AF_UNIX, SOCK_STREAM, 0) == ALLOW,
          "python: AF_UNIX sockets allowed");
    free(py.filter);
}

/* The node preset: like python, threads only; what V8 and libuv use is in it, and
 * libuv's io_uring probe and child_process are refused. */
static void test_node_filter(void)
{
    struct jail_config cfg;
    jail_config_init(&cfg);
    free(cfg.seccomp_preset);
    cfg.seccomp_preset = xstrdup("node");
    struct sock_fprog nd = {0, NULL};
    struct jail_error err;
    CHECK(seccomp_prepare(&cfg, &nd, &err) == 0, "node preset builds (%s)", err.message);
    jail_config_free(&cfg);
    const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                            CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                            CLONE_CHILD_CLEARTID;
    CHECK(verdict(&nd, X86_64, __NR_clone, thread, 0, 0) == ALLOW,
          "node: clone for a thread allowed");
    CHECK(verdict(&nd, X86_64, __NR_clone, SIGCHLD, 0, 0) == EPERM_RET,
          "node: fork (child_process): EPERM");
    CHECK(verdict(&nd, X86_64, __NR_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0) == EPERM_RET,
          "node: libuv's vfork-style spawn: EPERM");
    const int denied[] = {
        __NR_fork,   __NR_vfork,   __NR_execveat, __NR_setuid, __NR_setsid, __NR_io_uring_setup,
        __NR_ptrace, __NR_unshare, __NR_mount,    __NR_bpf,    __NR_shmget, __NR_process_vm_readv};
    for (size_t i = 0; i < ARRAY_LEN(denied); i++)
        CHECK(verdict(&nd, X86_64, denied[i], 0, 0, 0) == EPERM_RET, "node: syscall %d: EPERM",
              denied[i]);
    const int allowed[] = {__NR_read,       __NR_statx,  __NR_futex,    __NR_epoll_pwait,
                           __NR_pkey_alloc, __NR_capget, __NR_eventfd2, __NR_getdents64};
    for (size_t i = 0; i < ARRAY_LEN(allowed); i++)
        CHECK(verdict(&nd, X86_64, allowed[i], 0, 0, 0) == ALLOW, "node: syscall %d allowed",
              allowed[i]);
    CHECK(verdict(&nd, X86_64, __NR_socket, AF_INET, SOCK_STREAM, 0) == EPERM_RET,
          "node, net none: AF_INET refused");
    free(nd.filter);

    /* A jail that runs host programs (programs): the +exec variant, processes allowed,
     * namespaces and the never-allowed list still refused. */
    jail_config_init(&cfg);
    free(cfg.seccomp_preset);
    cfg.seccomp_preset = xstrdup("node");
    cfg.programs = xcalloc(2, sizeof(char *));
    cfg.programs[0] = xstrdup("/usr/bin/git");
    cfg.net = JAIL_NET_VETH;
    cfg.veth_gateway = true;
    CHECK(seccomp_prepare(&cfg, &nd, &err) == 0, "node+exec builds (%s)", err.message);
    jail_config_free(&cfg);
    CHECK(verdict(&nd, X86_64, __NR_clone, SIGCHLD, 0, 0) == ALLOW, "node+exec: fork allowed");
    CHECK(verdict(&nd, X86_64, __NR_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0) == ALLOW,
          "node+exec: a vfork-style spawn allowed");
    CHECK(verdict(&nd, X86_64, __NR_clone, CLONE_NEWUSER | SIGCHLD, 0, 0) == EPERM_RET,
          "node+exec: clone into a new user namespace: EPERM");
    CHECK(verdict(&nd, X86_64, __NR_clone, CLONE_NEWNET | SIGCHLD, 0, 0) == EPERM_RET,
          "node+exec: clone into a new network namespace: EPERM");
    const int exec_allowed[] = {__NR_fork, __NR_vfork, __NR_execve, __NR_wait4, __NR_setsid};
    for (size_t i = 0; i < ARRAY_LEN(exec_allowed); i++)
        CHECK(verdict(&nd, X86_64, exec_allowed[i], 0, 0, 0) == ALLOW,
              "node+exec: syscall %d allowed", exec_allowed[i]);
    const int exec_denied[] = {__NR_ptrace, __NR_unshare,        __NR_setns,           __NR_mount,
                               __NR_bpf,    __NR_io_uring_setup, __NR_process_vm_readv};
    for (size_t i = 0; i < ARRAY_LEN(exec_denied); i++)
        CHECK(verdict(&nd, X86_64, exec_denied[i], 0, 0, 0) == EPERM_RET,
              "node+exec: syscall %d still EPERM", exec_denied[i]);
    CHECK(verdict(&nd, X86_64, __NR_socket, AF_INET, SOCK_DGRAM, 0) == ALLOW &&
              verdict(&nd, X86_64, __NR_socket, AF_INET, SOCK_RAW, 0) == EPERM_RET,
          "node+exec with a gateway veth: UDP (DNS) allowed, raw sockets not");
    free(nd.filter);
}

static void test_profile(void)
{
    struct jail_config def, file;
    jail_config_init(&def);
    jail_config_init(&file);
    /* start the loaded one from something else, so that a key missing from the file
     * cannot pass by keeping the default */
    file.limits = (struct jail_limits){1, 1, 1, 1, 1, 1, 1, 1, 1};
    file.tmp_size_mb = 1;
    file.host_id_base = 70000;
    char err[JAIL_ERR_MAX];
    int rc = jail_config_load_profile(&file, "config/profiles/spoke.json", err, sizeof(err));
    CHECK(rc == 0, "config/profiles/spoke.json loads (%s)", rc ? err : "");
    CHECK(memcmp(&def.limits, &file.limits, sizeof(def.limits)) == 0,
          "built-in limits equal the profile's");
    CHECK(def.host_id_base == file.host_id_base && def.host_id_count == file.host_id_count,
          "built-in host id range equals the profile's");
    CHECK(def.inside_uid == file.inside_uid && def.inside_gid == file.inside_gid &&
              def.tmp_size_mb == file.tmp_size_mb && def.namespaces == file.namespaces,
          "built-in identity and /tmp size equal the profile's");
    CHECK_STR(def.hostname, file.hostname, "built-in hostname equals the profile's");
    CHECK_STR(def.cwd, file.cwd, "built-in cwd equals the profile's");
    CHECK_STR(def.seccomp_preset, file.seccomp_preset, "built-in preset equals the profile's");
    CHECK(def.seccomp_action == file.seccomp_action && !file.seccomp_extra_allow[0],
          "built-in seccomp action and additions equal the profile's");
    CHECK(same_binds(&def, &file), "built-in binds equal the profile's");
    CHECK(def.env && file.env && def.env[0] && file.env[0] && !def.env[1] && !file.env[1] &&
              strcmp(def.env[0], file.env[0]) == 0,
          "built-in environment equals the profile's");
    jail_config_free(&def);
    jail_config_free(&file);
}

/* ---- library mode ---- */

static void base_config(struct jail_config *cfg)
{
    jail_config_init(cfg);
    cfg->host_id_base = HOST_ID_BASE;
    cfg->host_id_count = 64;
}

static struct jail *start(struct jail_config *cfg, const char *script)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct jail_error err;
    struct jail *j = jail_start(cfg, argv, &err);
    if (!j)
        printf("# jail_start: %d %s\n", err.exit_code, err.message);
    return j;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* Processes whose command line contains needle (for the "whole jail is gone" check). */
static int count_procs(const char *needle)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (atoi(e->d_name) <= 0)
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        for (ssize_t i = 0; i < len; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        if (len > 0) {
            buf[len] = '\0';
            n += strstr(buf, needle) != NULL;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static bool wait_gone(const char *needle, int ms)
{
    for (int i = 0; i < ms / 20; i++) {
        if (count_procs(needle) == 0)
            return true;
        usleep(20000);
    }
    return false;
}

static void test_statuses(void)
{
    struct jail_config cfg;
    base_config(&cfg);
    struct jail_status st;

    struct jail *j = start(&cfg, "exit 7");
    CHECK(j && jail_wait(j, &st) == 1 && st.exit_code == 7 && st.term_signal == 0 &&
              st.reason[0] == '\0',
          "jail_wait: exit code 7");
    CHECK(j && jail_host_uid(j) >= HOST_ID_BASE && jail_host_uid(j) < HOST_ID_BASE + 64 &&
              jail_host_gid(j) == jail_host_uid(j),
          "jail_host_uid/gid: an id of the configured range (%u)", j ? jail_host_uid(j) : 0);
    CHECK(j && strcmp(jail_host_ifname(j), "") == 0, "no host interface without a veth");
    jail_free(j);

    /* wall time in library mode, and the whole pid namespace goes with it */
    char script[200], needle[64];
    snprintf(needle, sizeof(needle), "sleep 4%d", (int)getpid());
    snprintf(script, sizeof(script), "%s & %s", needle, needle);
    cfg.limits.wall_s = 1;
    uint64_t t0 = now_mono_ns();
    j = start(&cfg, script);
    CHECK(j && jail_poll(j, &st) == 0, "jail_poll: 0 while it runs");
    struct pollfd pfd = {.fd = j ? jail_fd(j) : -1, .events = POLLIN};
    CHECK(j && poll(&pfd, 1, 10000) == 1, "jail_fd becomes readable when the jail ends");
    CHECK(j && jail_wait(j, &st) == 1 && st.exit_code == 137 && st.term_signal == SIGKILL &&
              strcmp(st.reason, "wall-time") == 0,
          "wall time enforced in library mode: %d %s", st.exit_code, st.reason);
    uint64_t ms = (now_mono_ns() - t0) / 1000000;
    CHECK(ms >= 900 && ms < 10000, "  after about a second (%llu ms)", (unsigned long long)ms);
    CHECK(count_procs(needle) == 0, "  no process of the jail is left");
    jail_free(j);
    cfg.limits.wall_s = 0;

    /* jail_kill */
    j = start(&cfg, script);
    CHECK(j && jail_kill(j) == 0 && jail_wait(j, &st) == 1 && strcmp(st.reason, "killed") == 0 &&
              st.exit_code == 137,
          "jail_kill: reason killed, 137");
    CHECK(count_procs(needle) == 0, "  no process of the jail is left");
    jail_free(j);

    /* the caller kills the pid itself: everything goes */
    j = start(&cfg, script);
    CHECK(j && kill(jail_pid(j), SIGKILL) == 0, "SIGKILL to jail_pid()");
    int ws;
    CHECK(j && waitpid(jail_pid(j), &ws, 0) == jail_pid(j) && WIFSIGNALED(ws),
          "  the caller can waitpid() the pid");
    CHECK(wait_gone(needle, 5000), "  and the whole jail is gone with it");
    CHECK(j && jail_reaped(j, ws, &st) == 1 && st.exit_code == 137 &&
              strcmp(st.reason, "killed") == 0,
          "  jail_reaped: reason killed");
    jail_free(j);

    /* the caller reaps the pid and asks for the reason: seccomp */
    cfg.seccomp_action = JAIL_SECCOMP_KILL;
    char *argv[] = {"/usr/bin/unshare", "-U", "/bin/true", NULL};
    struct jail_error err;
    j = jail_start(&cfg, argv, &err);
    CHECK(j && waitpid(jail_pid(j), &ws, 0) == jail_pid(j), "waitpid on a seccomp-killed jail");
    CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSYS,
          "  the pid dies of the program's signal (SIGSYS)");
    CHECK(j && jail_reaped(j, ws, &st) == 1 && strcmp(st.reason, "seccomp") == 0 &&
              st.exit_code == 128 + SIGSYS,
          "  jail_reaped: reason seccomp");
    jail_free(j);
    cfg.seccomp_action = JAIL_SECCOMP_ERRNO;

    /* start errors */
    char *missing[] = {"/nonexistent/itest", NULL};
    j = jail_start(&cfg, missing, &err);
    CHECK(!j && err.exit_code == 127 && strstr(err.message, "No such file"),
          "a missing program: NULL, 127 (%s)", err.message);
    jail_config_free(&cfg);
}

static void test_descriptors_and_modes(void)
{
    struct jail_config cfg;
    base_config(&cfg);
    struct jail_status st;

    /* stdout to a pipe; a caller descriptor not passed is not held by the jail */
    int out[2], other[2];
    CHECK(pipe2(out, O_CLOEXEC) == 0 && pipe(other) == 0, "pipes");
    cfg.stdout_fd = out[1];
    struct jail *j = start(&cfg, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; sleep 1");
    close(out[1]);
    close(other[1]);
    char c;
    struct pollfd pfd = {.fd = other[0], .events = POLLIN};
    CHECK(poll(&pfd, 1, 500) == 1 && read(other[0], &c, 1) == 0,
          "the jail holds none of the caller's other descriptors (EOF at once)");
    char buf[256] = "";
    ssize_t n = read_full(out[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    CHECK(strstr(buf, "NoNewPrivs:\t1") && strstr(buf, "Seccomp:\t2"),
          "stdout_fd carries the program's output");
    CHECK(j && jail_wait(j, &st) == 1 && st.exit_code == 0, "  and it exits 0");
    jail_free(j);
    close(out[0]);
    close(other[0]);

    /* the hub's "process" mode: no namespaces, same seccomp and limits */
    cfg.namespaces = false;
    CHECK(pipe2(out, O_CLOEXEC) == 0, "pipe");
    cfg.stdout_fd = out[1];
    j = start(&cfg, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status; "
                    "readlink /proc/self/ns/net; ulimit -n");
    close(out[1]);
    n = read_full(out[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(out[0]);
    char host_net[64] = "";
    ssize_t hl = readlink("/proc/self/ns/net", host_net, sizeof(host_net) - 1);
    host_net[hl > 0 ? hl : 0] = '\0';
    CHECK(strstr(buf, "NoNewPrivs:\t1") && strstr(buf, "Seccomp:\t2") && strstr(buf, "\n256\n"),
          "process mode: no_new_privs, seccomp, rlimits");
    CHECK(strstr(buf, host_net) != NULL, "process mode: the caller's netns (direct network)");
    CHECK(j && jail_wait(j, &st) == 1 && st.exit_code == 0, "  exits 0");
    jail_free(j);
    char needle[64], script[200];
    snprintf(needle, sizeof(needle), "sleep 5%d", (int)getpid());
    snprintf(script, sizeof(script), "%s & %s", needle, needle);
    cfg.limits.wall_s = 1;
    cfg.stdout_fd = -1;
    j = start(&cfg, script);
    CHECK(j && jail_wait(j, &st) == 1 && strcmp(st.reason, "wall-time") == 0,
          "process mode: wall time enforced");
    CHECK(wait_gone(needle, 5000), "  and the program's process group is gone");
    jail_free(j);
    jail_config_free(&cfg);

    /* a bind-rw source handed to the jail's host id */
    base_config(&cfg);
    char dir[] = "/tmp/itest-nsj-api-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    char path[300];
    snprintf(path, sizeof(path), "%s/old", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600); /* owned by root: an earlier run */
    if (fd >= 0)
        close(fd);
    jail_config_add_bind(&cfg, dir, "/data", true);
    cfg.binds[cfg.n_binds - 1].chown = true;
    j = start(&cfg, "echo more >> /data/old && echo new > /data/new");
    uid_t host = j ? jail_host_uid(j) : 0;
    CHECK(j && jail_wait(j, &st) == 1 && st.exit_code == 0,
          "the jail writes to a file left by an earlier run");
    struct stat sb;
    snprintf(path, sizeof(path), "%s/new", dir);
    CHECK(stat(path, &sb) == 0 && sb.st_uid == host && sb.st_gid == host,
          "  its new file belongs to the jail's host id %u", (unsigned)host);
    jail_free(j);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    CHECK(system(path) == 0, "cleanup");
    jail_config_free(&cfg);
}

/* ---- 200 jails, some from threads ---- */

static void *worker(void *arg)
{
    int *failures = arg;
    struct jail_config cfg;
    base_config(&cfg);
    for (int i = 0; i < 25; i++) {
        struct jail_status st;
        struct jail *j = start(&cfg, "exit 0");
        if (!j || jail_wait(j, &st) != 1 || st.exit_code != 0)
            (*failures)++;
        jail_free(j);
    }
    jail_config_free(&cfg);
    return NULL;
}

static void test_leaks(void)
{
    int fds = count_fds();
    struct jail_config cfg;
    base_config(&cfg);
    int failures = 0;
    for (int i = 0; i < 150; i++) {
        struct jail_status st;
        struct jail *j = start(&cfg, "exit 0");
        if (!j || jail_wait(j, &st) != 1 || st.exit_code != 0)
            failures++;
        jail_free(j);
    }
    jail_config_free(&cfg);
    pthread_t t[2];
    int tf[2] = {0, 0};
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, &tf[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(failures == 0 && tf[0] == 0 && tf[1] == 0,
          "200 jails (50 of them from two threads at once) all ran");
    CHECK(count_fds() == fds, "no descriptor leaked (%d before, %d after)", fds, count_fds());
    errno = 0;
    CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child or zombie left");
}

/* The lock files of the test's host id range, unless someone holds one. */
static void remove_id_locks(void)
{
    for (uint32_t i = 0; i < 64; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/run/nsjail-lite/id-%u.lock", HOST_ID_BASE + i);
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlink(path);
        if (fd >= 0)
            close(fd);
    }
}

/* ---- the start without the wait (jail_start_async) ---- */

/* Waits on jail_fd() until jail_start_result() has an answer. */
static int start_outcome(struct jail *j, struct jail_error *err)
{
    for (int i = 0; i < 1000; i++) {
        int rc = jail_start_result(j, err);
        if (rc != 0)
            return rc;
        struct pollfd pfd = {.fd = jail_fd(j), .events = POLLIN};
        poll(&pfd, 1, 10);
    }
    return 0;
}

static void test_async(bool namespaces)
{
    const char *mode = namespaces ? "namespaces" : "process mode";
    struct jail_config cfg;
    base_config(&cfg);
    cfg.namespaces = namespaces;
    struct jail_status st;
    struct jail_error err;

    char *exit3[] = {"/bin/sh", "-c", "exit 3", NULL};
    struct jail *j = jail_start_async(&cfg, exit3, &err);
    CHECK(j != NULL, "%s: jail_start_async returns a starting jail", mode);
    CHECK(j && start_outcome(j, &err) == 1, "%s:   jail_start_result: 1 once exec'd", mode);
    CHECK(j && jail_wait(j, &st) == 1 && st.exit_code == 3 && !st.reason[0],
          "%s:   its exit code is the program's (%d)", mode, st.exit_code);
    CHECK(j && jail_start_result(j, &err) == 1, "%s:   the start result stays 1", mode);
    jail_free(j);

    /* Found missing only inside the jail: the code and message arrive asynchronously,
     * then the monitor is reaped with the launcher's status. */
    char *missing[] = {"/nonexistent/itest-async", NULL};
    memset(&err, 0, sizeof(err));
    j = jail_start_async(&cfg, missing, &err);
    CHECK(j != NULL || err.exit_code == 127, "%s: a missing program: started or refused", mode);
    if (j) {
        CHECK(start_outcome(j, &err) == -1 && err.exit_code == 127 &&
                  strstr(err.message, "No such file"),
              "%s:   jail_start_result: -1, 127 (%s)", mode, err.message);
        CHECK(jail_wait(j, &st) == 1 && st.exit_code == 127 && strcmp(st.reason, "not-found") == 0,
              "%s:   reaped with 127, reason not-found (%d %s)", mode, st.exit_code, st.reason);
        jail_free(j);
    }

    /* Killed and freed while starting: nothing of the jail is left. */
    char needle[64], script[200];
    snprintf(needle, sizeof(needle), "sleep %d%d", namespaces ? 6 : 7, (int)getpid());
    snprintf(script, sizeof(script), "%s & %s", needle, needle);
    char *sleeper[] = {"/bin/sh", "-c", script, NULL};
    j = jail_start_async(&cfg, sleeper, &err);
    CHECK(j && jail_start_result(j, &err) == 0, "%s: still starting right after the call", mode);
    CHECK(j && jail_kill(j) == 0 && jail_wait(j, &st) == 1 && st.exit_code == 137,
          "%s:   jail_kill while starting: 137 (%s)", mode, st.reason);
    CHECK(wait_gone(needle, 5000), "%s:   no process of the jail is left", mode);
    jail_free(j);
    /* jail_free() kills the monitor outright: in a pid namespace everything goes with
     * init (its death signal), also at every step of the setup. (Without namespaces
     * what the program forked would survive that, starting or not: jail.h says to
     * reap a jail before freeing it.) */
    for (int i = 0; namespaces && i < 40; i++) {
        j = jail_start_async(&cfg, sleeper, &err);
        if (j && i % 2)
            usleep(500 * (unsigned)i);
        jail_free(j);
    }
    if (namespaces)
        CHECK(wait_gone(needle, 5000), "%s: 40 jails freed while starting leave no process", mode);
    jail_config_free(&cfg);
}

/* The cgroup v2 "tasks"-less placement (nsjail-lite/cgroup.c): init cloned straight
 * into its cgroup by clone3(CLONE_INTO_CGROUP), with the jail's namespace flags. This
 * host's controllers are all on v1, so the jail itself never takes that path here;
 * the empty v2 hierarchy still shows where the child is born. */
static void proc_cgroup(pid_t pid, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
}

/* A child cloned by raw_clone_into_cgroup() (cgroup_fd >= 0) or raw_clone() that
 * waits until release_held(): its pid (-1 on failure) and, in *release, the pipe end
 * whose closing lets it go. It holds no copy of that end, so it also goes when the
 * test itself dies. */
static pid_t clone_held(unsigned long flags, int cgroup_fd, int *release)
{
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) {
        *release = -1;
        return -1;
    }
    pid_t pid = cgroup_fd >= 0 ? raw_clone_into_cgroup(flags, cgroup_fd) : raw_clone(flags);
    if (pid == 0) {
        char c;
        close(go[1]);
        _exit(read(go[0], &c, 1) < 0);
    }
    int saved = errno;
    close(go[0]);
    *release = go[1];
    errno = saved;
    return pid;
}

static void release_held(pid_t pid, int release)
{
    if (release >= 0)
        close(release);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static void test_clone_into_cgroup(void)
{
    char mnt[512] = "";
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[2048];
    while (f && fgets(line, sizeof(line), f)) {
        char point[512], type[64];
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - FSTYPE */
        const char *dash = strstr(line, " - ");
        if (dash && sscanf(line, "%*s %*s %*s %*s %511s", point) == 1 &&
            sscanf(dash + 3, "%63s", type) == 1 && strcmp(type, "cgroup2") == 0) {
            snprintf(mnt, sizeof(mnt), "%s", point);
            break;
        }
    }
    if (f)
        fclose(f);
    if (!mnt[0]) {
        printf("ok - clone into a v2 cgroup # SKIP no cgroup2 mount\n");
        return;
    }
    char dir[700], name[64];
    snprintf(name, sizeof(name), "itest-clone3-%d", (int)getpid());
    snprintf(dir, sizeof(dir), "%s/%s", mnt, name);
    if (mkdir(dir, 0755) < 0) {
        printf("ok - clone into a v2 cgroup # SKIP mkdir %s: %s\n", dir, strerror(errno));
        return;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(dfd >= 0, "the cgroup directory opens");
    const unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
                                CLONE_NEWUTS | CLONE_NEWNET | SIGCHLD;
    int release;
    pid_t pid = clone_held(flags, dfd, &release);
    CHECK(pid > 0, "clone3 with the jail's namespaces and CLONE_INTO_CGROUP: %s",
          pid > 0 ? "ok" : strerror(errno));
    if (pid > 0) {
        char want[128], got[4096];
        snprintf(want, sizeof(want), "0::/%s\n", name);
        proc_cgroup(pid, got, sizeof(got));
        CHECK(strstr(got, want) != NULL, "the child is born in the cgroup (/%s)", name);
        char procs[800];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
        FILE *pf = fopen(procs, "re");
        int listed = -1;
        CHECK(pf && fscanf(pf, "%d", &listed) == 1 && listed == pid,
              "  and the cgroup lists it (%d)", listed);
        if (pf)
            fclose(pf);
    }
    release_held(pid, release);
    /* Control: the plain clone stays in the caller's cgroup. */
    pid = clone_held(flags, -1, &release);
    if (pid > 0) {
        char got[4096];
        proc_cgroup(pid, got, sizeof(got));
        CHECK(strstr(got, name) == NULL, "control: a plain clone is not in it");
    }
    release_held(pid, release);
    /* A descriptor that is no cgroup directory is refused, which the monitor answers
     * by falling back to clone and a move. */
    int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    pid = raw_clone_into_cgroup(flags, tmp);
    if (pid == 0)
        _exit(0);
    CHECK(pid < 0, "clone3 into a directory that is no cgroup fails (%s)",
          pid < 0 ? strerror(errno) : "it did not");
    if (pid > 0)
        waitpid(pid, NULL, 0);
    close(tmp);
    if (dfd >= 0)
        close(dfd);
    CHECK(rmdir(dir) == 0, "the test cgroup is removed");
}

int main(void)
{
    if (getuid() != 0) {
        printf("ok - test_jail_api # SKIP needs root\n");
        return 0;
    }
    test_filter();
    test_python_filter();
    test_node_filter();
    test_profile();
    test_statuses();
    test_descriptors_and_modes();
    test_async(true);
    test_async(false);
    test_leaks();
    test_clone_into_cgroup();
    remove_id_locks();
    return test_done();
}
