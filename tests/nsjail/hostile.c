/* A hostile spoke: run inside nsjail-lite, it tries to escape in every way the issue
 * lists, each attempt in its own child process, and prints one machine-readable line
 * per attempt:
 *
 *   NAME OUTCOME
 *
 * with OUTCOME as tests/nsjail/probes.h describes ("ok" is an escape inside the jail,
 * expected for a control run outside; "unsafe:" marks a mutating attempt NOT tried
 * because the process is not in a namespace of its own; "skip:" one not applicable,
 * e.g. mutating attempts in a control run).
 *
 * The test (tests/nsjail/test_escape.sh) checks each outcome against the reason it
 * must be blocked for. Attempts that change something (write, mknod, mount, a fork
 * bomb, sethostname, ptrace) first compare the inodes of /proc/self/ns/ with the host's
 * (--host-ns) and refuse to run in any namespace they share with the host, so a
 * containment failure can never touch the host.
 *
 * Helper modes for the network tests: serve-tcp ADDR PORT, serve-unix PATH|@NAME,
 * connect ADDR PORT. */
#include "probes.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/sched.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
    bool control;
    const char *host_ns; /* "mnt:4026531832,uts:...,..." */
    int port;
    const char *abstract;
    const char *unix_path;
    const char *marker;
    const char *checkout;
    int fd;
    int host_pid;
    const char *tmpdir; /* for the control run; the jail uses its own /tmp */
} args = {.port = -1, .fd = -1, .host_pid = -1, .tmpdir = "/tmp"};

/* ---- namespace guard for mutating attempts ---- */

static unsigned long ns_inode(const char *type)
{
    char path[64], link[64];
    snprintf(path, sizeof(path), "/proc/self/ns/%s", type);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n < 0)
        return 0;
    link[n] = '\0';
    const char *open = strchr(link, '[');
    return open ? strtoul(open + 1, NULL, 10) : 0;
}

static unsigned long host_inode(const char *type)
{
    if (!args.host_ns)
        return 0;
    size_t len = strlen(type);
    for (const char *p = args.host_ns; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, type, len) == 0 && p[len] == ':')
            return strtoul(p + len + 1, NULL, 10);
    return 0;
}

/* Returns only when every listed namespace differs from the host's. */
static void require_own_ns(const char *const types[])
{
    if (args.control)
        probe_report("skip:mutating attempt not run outside the jail");
    for (size_t i = 0; types[i]; i++) {
        unsigned long mine = ns_inode(types[i]), host = host_inode(types[i]);
        if (!mine || !host || mine == host)
            probe_report("unsafe:%s namespace not separate from the host (mine %lu, host %lu)",
                         types[i], mine, host);
    }
}

static const char *const NS_MNT[] = {"mnt", "user", NULL};
static const char *const NS_UTS[] = {"uts", "user", NULL};
static const char *const NS_PID[] = {"pid", "user", "mnt", NULL};

/* ---- network ---- */

static void a_tcp_host_loopback(void)
{
    if (args.port < 0)
        probe_report("skip:no --port");
    probe_outcome(probe_connect_tcp("127.0.0.1", args.port, 2000));
}

static void a_abstract_unix(void)
{
    if (!args.abstract)
        probe_report("skip:no --abstract");
    char name[128];
    snprintf(name, sizeof(name), "@%s", args.abstract);
    probe_outcome(probe_connect_unix(name));
}

static void a_path_unix(void)
{
    if (!args.unix_path)
        probe_report("skip:no --unix");
    probe_outcome(probe_connect_unix(args.unix_path));
}

/* A default route in /proc/net/route (destination 00000000) or ipv6_route (::/0). */
static void a_default_route(void)
{
    char line[512];
    FILE *f = fopen("/proc/net/route", "r");
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            char ifname[64], dest[16];
            if (sscanf(line, "%63s %15s", ifname, dest) == 2 && strcmp(dest, "00000000") == 0)
                probe_report("ok:ipv4 default route via %s", ifname);
        }
        fclose(f);
    }
    f = fopen("/proc/net/ipv6_route", "r");
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            char dest[40], plen[8], ifname[64];
            if (sscanf(line, "%39s %7s %*s %*s %*s %*s %*s %*s %*s %63s", dest, plen, ifname) ==
                    3 &&
                strcmp(dest, "00000000000000000000000000000000") == 0 && strcmp(plen, "00") == 0 &&
                strcmp(ifname, "lo") != 0)
                probe_report("ok:ipv6 default route via %s", ifname);
        }
        fclose(f);
    }
    probe_report("blocked:no default route");
}

/* Only in the jail: outside it could send a packet to a real address. */
static void a_route_out(void)
{
    if (args.control)
        probe_report("skip:would send traffic outside the jail");
    probe_outcome(probe_connect_tcp("198.18.0.1", 443, 1000));
}

static void a_ipv6_addrs(void)
{
    FILE *f = fopen("/proc/net/if_inet6", "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
        char addr[40], ifname[64];
        if (sscanf(line, "%39s %*s %*s %*s %*s %63s", addr, ifname) == 2 &&
            strcmp(ifname, "lo") != 0)
            probe_report("ok:%s on %s", addr, ifname);
    }
    probe_report("blocked:no IPv6 address besides loopback");
}

static void a_netlink_socket(void)
{
    probe_outcome(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */));
}

static void a_packet_socket(void)
{
    probe_outcome(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)));
}

static void a_raw_socket(void)
{
    probe_outcome(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
}

static void a_udp_socket(void)
{
    probe_outcome(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

/* ---- file system ---- */

static void a_read_shadow(void)
{
    probe_outcome(open("/etc/shadow", O_RDONLY | O_CLOEXEC));
}

static void a_host_marker(void)
{
    if (!args.marker)
        probe_report("skip:no --marker");
    int fd = open(args.marker, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    probe_report("ok:read %s", args.marker);
}

static void a_checkout(void)
{
    if (!args.checkout)
        probe_report("skip:no --checkout");
    probe_outcome(open(args.checkout, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void a_root_home(void)
{
    probe_outcome(open("/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void a_home(void)
{
    probe_outcome(open("/home", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void try_create(const char *path)
{
    require_own_ns(NS_MNT);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        probe_report_errno();
    close(fd);
    unlink(path);
    probe_report("ok:created %s", path);
}

static void a_write_usr(void)
{
    try_create("/usr/.itest-nsj-probe");
}

static void a_write_etc(void)
{
    try_create("/etc/.itest-nsj-probe");
}

static void a_write_root(void)
{
    try_create("/.itest-nsj-probe");
}

static void a_mknod(void)
{
    require_own_ns(NS_MNT);
    if (mknod("/tmp/itest-nsj-null", S_IFCHR | 0666, makedev(1, 3)) < 0)
        probe_report_errno();
    unlink("/tmp/itest-nsj-null");
    probe_report("ok:created a device node");
}

static void a_dev_mem(void)
{
    probe_open_ro("/dev/mem");
}

static void a_dev_kmsg(void)
{
    probe_open_ro("/dev/kmsg");
}

static void a_proc_kcore(void)
{
    probe_open_ro("/proc/kcore");
}

static void a_proc_sys_write(void)
{
    probe_open_wr("/proc/sys/kernel/hostname");
}

static void a_sys_write(void)
{
    probe_open_wr("/sys/class/net/lo/mtu");
}

static void a_sethostname(void)
{
    require_own_ns(NS_UTS);
    probe_outcome(sethostname("itest-nsj-escaped", 17));
}

/* ---- processes ---- */

/* The launcher's representative inside the jail is init, pid 1 (a copy of the
 * launcher). Outside (control) the target is a child of our own. */
static pid_t victim(void)
{
    if (!args.control) {
        require_own_ns(NS_PID);
        return 1;
    }
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    return c;
}

static void a_ptrace_launcher(void)
{
    pid_t t = victim();
    long rc = ptrace(PTRACE_ATTACH, t, NULL, NULL);
    if (rc == 0)
        ptrace(PTRACE_DETACH, t, NULL, NULL);
    if (args.control)
        kill(t, SIGKILL);
    probe_outcome(rc);
}

static void a_process_vm_readv(void)
{
    pid_t t = victim();
    static char buf[8] = "secret!";
    char got[8];
    struct iovec local = {got, sizeof(got)}, remote = {buf, sizeof(buf)};
    long rc = process_vm_readv(t, &local, 1, &remote, 1, 0);
    if (args.control)
        kill(t, SIGKILL);
    probe_outcome(rc);
}

static void a_unshare_net(void)
{
    probe_outcome(unshare(CLONE_NEWNET));
}

static void a_clone_newns(void)
{
    long rc = syscall(SYS_clone, (unsigned long)(CLONE_NEWNS | CLONE_NEWUSER | SIGCHLD), NULL, NULL,
                      NULL, 0);
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        waitpid((pid_t)rc, NULL, 0);
    probe_outcome(rc);
}

static void a_clone3_newuser(void)
{
    struct clone_args ca;
    memset(&ca, 0, sizeof(ca));
    ca.flags = CLONE_NEWUSER;
    ca.exit_signal = SIGCHLD;
    long rc = syscall(SYS_clone3, &ca, sizeof(ca));
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        waitpid((pid_t)rc, NULL, 0);
    probe_outcome(rc);
}

static void a_mount(void)
{
    require_own_ns(NS_MNT);
    long rc = mount("none", "/tmp", "tmpfs", 0, NULL);
    if (rc == 0)
        umount2("/tmp", MNT_DETACH);
    probe_outcome(rc);
}

static void a_chroot(void)
{
    probe_outcome(chroot("/tmp"));
}

static void a_userfaultfd(void)
{
    probe_outcome(syscall(SYS_userfaultfd, O_CLOEXEC));
}

static void a_io_uring(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    probe_outcome(syscall(SYS_io_uring_setup, 1, &p));
}

/* getpid through the i386 entry: in a 64-bit process int 0x80 runs the 32-bit
 * syscall table (nr 20 = getpid there). */
static void a_i386_int80(void)
{
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
    if (ret < 0) {
        errno = (int)-ret;
        probe_report_errno();
    }
    probe_report("ok:getpid via int 0x80 returned %ld", ret);
}

static void a_x32_syscall(void)
{
    probe_outcome(syscall(0x40000000L | SYS_getpid));
}

/* ---- identity and leftovers ---- */

static void a_no_new_privs(void)
{
    char v[16] = "";
    probe_status_field("NoNewPrivs", v, sizeof(v));
    if (strcmp(v, "1") != 0)
        probe_report("ok:NoNewPrivs=%s", v);
    probe_report("blocked:NoNewPrivs=1");
}

static void a_seccomp_mode(void)
{
    char v[16] = "";
    probe_status_field("Seccomp", v, sizeof(v));
    if (strcmp(v, "2") != 0)
        probe_report("ok:Seccomp=%s", v);
    probe_report("blocked:Seccomp=2");
}

static void a_uid0(void)
{
    if (getuid() == 0 || geteuid() == 0 || getgid() == 0)
        probe_report("ok:uid=%d gid=%d", (int)getuid(), (int)getgid());
    probe_report("blocked:uid=%d gid=%d", (int)getuid(), (int)getgid());
}

static void a_host_pids(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        probe_report_errno();
    int count = 0, max = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid = atoi(e->d_name);
        if (pid > 0) {
            count++;
            max = pid > max ? pid : max;
        }
    }
    closedir(d);
    if (count > 8)
        probe_report("ok:%d processes visible (highest pid %d)", count, max);
    probe_report("blocked:%d processes visible (highest pid %d)", count, max);
}

/* A host process (the test's shell) by its host pid: its /proc entry, and a signal 0. */
static void a_host_pid(void)
{
    if (args.host_pid <= 0)
        probe_report("skip:no --host-pid");
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", args.host_pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[128] = "";
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        probe_report("ok:/proc/%d is %s", args.host_pid, buf);
    }
    if (kill(args.host_pid, 0) == 0)
        probe_report("ok:pid %d can be signalled", args.host_pid);
    probe_report_errno(); /* kill's errno: ESRCH, no such process here */
}

/* The launcher's command line through its representative, pid 1. */
static void a_launcher_cmdline(void)
{
    int fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] != '\0') {
            for (ssize_t k = 0; k < n; k++)
                buf[k] = buf[k] ? buf[k] : ' ';
            buf[n] = '\0';
            probe_report("ok:%.80s", buf);
        }
    }
    probe_report("blocked:empty (%zd bytes)", n);
}

static bool environ_has_secret(const char *buf, size_t len)
{
    static const char key[] = "ITEST_SECRET=";
    for (size_t i = 0; i + sizeof(key) - 1 <= len; i++)
        if (memcmp(buf + i, key, sizeof(key) - 1) == 0)
            return true;
    return false;
}

static void a_env_secret(void)
{
    if (getenv("ITEST_SECRET"))
        probe_report("ok:in my own environment");
    DIR *d = opendir("/proc");
    if (!d)
        probe_report_errno();
    struct dirent *e;
    int denied = 0;
    while ((e = readdir(d)) != NULL) {
        if (atoi(e->d_name) <= 0)
            continue;
        char path[300], buf[65536];
        snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            denied++;
            continue;
        }
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0)
            denied++;
        close(fd);
        if (n > 0 && environ_has_secret(buf, (size_t)n))
            probe_report("ok:in %s", path);
    }
    closedir(d);
    probe_report("blocked:not found (%d environ files unreadable)", denied);
}

static void a_launcher_fd(void)
{
    if (args.fd >= 0 && fcntl(args.fd, F_GETFD) >= 0)
        probe_report("ok:descriptor %d is open", args.fd);
    int e = errno;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        probe_report_errno();
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        int fd = atoi(ent->d_name);
        if (ent->d_name[0] < '0' || ent->d_name[0] > '9' || fd <= 2 || fd == dirfd(d) ||
            fd == probe_pipe_fd())
            continue;
        probe_report("ok:descriptor %d is open", fd);
    }
    closedir(d);
    errno = args.fd >= 0 ? e : EBADF;
    probe_report_errno();
}

/* Never against a real terminal: a success there would type into it. */
static void no_tty_on_stdin(void)
{
    if (isatty(0))
        probe_report("skip:stdin is a terminal, not injecting into it");
}

static void a_tiocsti(void)
{
    char c = '#';
    no_tty_on_stdin();
    probe_outcome(ioctl(0, TIOCSTI, &c));
}

/* Garbage in the upper half of the request: the kernel only looks at 32 bits. */
static void a_tiocsti_hibits(void)
{
    char c = '#';
    no_tty_on_stdin();
    probe_outcome(syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c));
}

/* ---- limits ---- */

static void a_fork_bomb(void)
{
    require_own_ns(NS_PID);
    enum { MAX = 4096 };
    static pid_t kids[MAX];
    int n = 0;
    int err = 0;
    while (n < MAX) {
        pid_t c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        if (c < 0) {
            err = errno;
            break;
        }
        kids[n++] = c;
    }
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    if (!err)
        probe_report("ok:%d processes", n);
    const char *name = strerrorname_np(err);
    probe_report("errno:%s:after %d processes", name ? name : "unknown", n);
}

static void a_map_4g(void)
{
    void *p = mmap(NULL, 4ULL << 30, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        probe_report_errno();
    munmap(p, 4ULL << 30);
    probe_report("ok:mapped 4 GiB");
}

static void a_file_1g(void)
{
    if (!args.control)
        require_own_ns(NS_MNT);
    signal(SIGXFSZ, SIG_IGN);
    char path[512];
    snprintf(path, sizeof(path), "%s/itest-nsj-big", args.control ? args.tmpdir : "/tmp");
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        probe_report_errno();
    /* Sparse: a success costs no space. */
    long rc = ftruncate(fd, 1LL << 30);
    int e = errno;
    close(fd);
    unlink(path);
    errno = e;
    if (rc < 0)
        probe_report_errno();
    probe_report("ok:1 GiB file");
}

static void a_fds_512(void)
{
    int n = 0;
    while (n < 512) {
        if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) {
            const char *name = strerrorname_np(errno);
            probe_report("errno:%s:after %d descriptors", name ? name : "unknown", n);
        }
        n++;
    }
    probe_report("ok:512 descriptors");
}

static void a_raise_hard_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        probe_report_errno();
    if (rl.rlim_max == RLIM_INFINITY)
        probe_report("ok:no hard limit to raise");
    rl.rlim_max += 1;
    rl.rlim_cur = rl.rlim_max;
    probe_outcome(setrlimit(RLIMIT_NOFILE, &rl));
}

/* ---- driver ---- */

struct attempt {
    const char *name;
    void (*fn)(void);
};

static const struct attempt attempts[] = {
    {"tcp_host_loopback", a_tcp_host_loopback},
    {"abstract_unix", a_abstract_unix},
    {"path_unix", a_path_unix},
    {"default_route", a_default_route},
    {"route_out", a_route_out},
    {"ipv6_addrs", a_ipv6_addrs},
    {"netlink_socket", a_netlink_socket},
    {"packet_socket", a_packet_socket},
    {"raw_socket", a_raw_socket},
    {"udp_socket", a_udp_socket},
    {"read_shadow", a_read_shadow},
    {"host_marker", a_host_marker},
    {"checkout", a_checkout},
    {"root_home", a_root_home},
    {"home", a_home},
    {"write_usr", a_write_usr},
    {"write_etc", a_write_etc},
    {"write_root", a_write_root},
    {"mknod", a_mknod},
    {"dev_mem", a_dev_mem},
    {"dev_kmsg", a_dev_kmsg},
    {"dev_disk", probe_dev_disk},
    {"proc_kcore", a_proc_kcore},
    {"proc_sys_write", a_proc_sys_write},
    {"sys_write", a_sys_write},
    {"sethostname", a_sethostname},
    {"ptrace_launcher", a_ptrace_launcher},
    {"process_vm_readv", a_process_vm_readv},
    {"unshare_user", probe_unshare_user},
    {"unshare_net", a_unshare_net},
    {"clone_newns", a_clone_newns},
    {"clone3_newuser", a_clone3_newuser},
    {"setns", probe_setns},
    {"mount", a_mount},
    {"chroot", a_chroot},
    {"bpf", probe_bpf},
    {"perf_event_open", probe_perf_event_open},
    {"keyctl", probe_keyctl},
    {"userfaultfd", a_userfaultfd},
    {"io_uring", a_io_uring},
    {"i386_int80", a_i386_int80},
    {"x32_syscall", a_x32_syscall},
    {"caps", probe_caps},
    {"no_new_privs", a_no_new_privs},
    {"seccomp_mode", a_seccomp_mode},
    {"uid0", a_uid0},
    {"host_pids", a_host_pids},
    {"host_pid", a_host_pid},
    {"env_secret", a_env_secret},
    {"launcher_cmdline", a_launcher_cmdline},
    {"launcher_fd", a_launcher_fd},
    {"tiocsti", a_tiocsti},
    {"tiocsti_hibits", a_tiocsti_hibits},
    {"fork_bomb", a_fork_bomb},
    {"map_4g", a_map_4g},
    {"file_1g", a_file_1g},
    {"fds_512", a_fds_512},
    {"raise_hard_limit", a_raise_hard_limit},
};

static void call_attempt(void *ud)
{
    ((const struct attempt *)ud)->fn();
}

static void run_attempt(const struct attempt *a)
{
    char out[PROBE_OUT_MAX];
    probe_run(call_attempt, (void *)a, 10, out, sizeof(out));
    printf("%s %s\n", a->name, out);
    fflush(stdout);
}

/* ---- helper modes ---- */

static int serve(int s)
{
    if (listen(s, 16) < 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0)
            continue;
        (void)!write(c, "hello\n", 6);
        close(c);
    }
}

static int serve_tcp(const char *addr, const char *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* IP_FREEBIND: the address may appear later (a veth's host side). */
    setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
        bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
        perror("serve-tcp: bind");
        return 1;
    }
    return serve(s);
}

static int serve_unix(const char *name)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    socklen_t len = sizeof(sun);
    if (name[0] == '@') {
        memcpy(sun.sun_path + 1, name + 1, strlen(name + 1));
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
    } else {
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", name);
    }
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(s, (struct sockaddr *)&sun, len) < 0) {
        perror("serve-unix: bind");
        return 1;
    }
    return serve(s);
}

static int do_connect(const char *addr, const char *port)
{
    int s = probe_connect_tcp(addr, atoi(port), 2000);
    if (s < 0) {
        const char *name = strerrorname_np(errno);
        printf("errno:%s\n", name ? name : "unknown");
        return 1;
    }
    char buf[64] = "";
    struct pollfd p = {.fd = s, .events = POLLIN};
    ssize_t n = poll(&p, 1, 2000) == 1 ? read(s, buf, sizeof(buf) - 1) : -1;
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    printf("ok:%s\n", buf);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: hostile [--control] [--host-ns mnt:INO,...] [--port N] [--abstract NAME]\n"
            "               [--unix PATH] [--marker PATH] [--checkout DIR] [--fd N]\n"
            "               [--host-pid N] [--tmpdir DIR] run [ATTEMPT...]\n"
            "       hostile list | serve-tcp ADDR PORT | serve-unix PATH|@NAME |\n"
            "               connect ADDR PORT\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--control") == 0) {
            args.control = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (strcmp(opt, "--host-ns") == 0)
            args.host_ns = v;
        else if (strcmp(opt, "--port") == 0)
            args.port = atoi(v);
        else if (strcmp(opt, "--abstract") == 0)
            args.abstract = v;
        else if (strcmp(opt, "--unix") == 0)
            args.unix_path = v;
        else if (strcmp(opt, "--marker") == 0)
            args.marker = v;
        else if (strcmp(opt, "--checkout") == 0)
            args.checkout = v;
        else if (strcmp(opt, "--fd") == 0)
            args.fd = atoi(v);
        else if (strcmp(opt, "--host-pid") == 0)
            args.host_pid = atoi(v);
        else if (strcmp(opt, "--tmpdir") == 0)
            args.tmpdir = v;
        else
            usage();
    }
    if (i >= argc)
        usage();
    const char *mode = argv[i++];
    if (strcmp(mode, "serve-tcp") == 0 && i + 2 == argc)
        return serve_tcp(argv[i], argv[i + 1]);
    if (strcmp(mode, "serve-unix") == 0 && i + 1 == argc)
        return serve_unix(argv[i]);
    if (strcmp(mode, "connect") == 0 && i + 2 == argc)
        return do_connect(argv[i], argv[i + 1]);
    if (strcmp(mode, "list") == 0) {
        for (size_t k = 0; k < sizeof(attempts) / sizeof(attempts[0]); k++)
            printf("%s\n", attempts[k].name);
        return 0;
    }
    if (strcmp(mode, "run") != 0)
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t k = 0; k < sizeof(attempts) / sizeof(attempts[0]); k++) {
        bool want = i >= argc;
        for (int j = i; j < argc; j++)
            want |= strcmp(argv[j], attempts[k].name) == 0;
        if (want)
            run_attempt(&attempts[k]);
    }
    return 0;
}
