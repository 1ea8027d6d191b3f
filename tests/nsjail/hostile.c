/* A hostile spoke: run inside nsjail-lite, it tries to escape in every way the issue
 * lists, each attempt in its own child process, and prints one machine-readable line
 * per attempt:
 *
 *   NAME OUTCOME
 *
 *   ok[:detail]        the attempt worked (an escape inside the jail; expected for a
 *                      control run outside)
 *   errno:ENAME[:...]  the operation failed with that errno
 *   signal:SIGNAME     the attempt's process was killed (SIGSYS: seccomp)
 *   blocked:detail     a check found nothing to exploit (no capability, no route...)
 *   unsafe:detail      a mutating attempt was NOT tried because the process is not in
 *                      a namespace of its own (so containment cannot be relied on)
 *   skip:detail        not applicable here (e.g. mutating attempts in a control run)
 *
 * The test (tests/nsjail/test_escape.sh) checks each outcome against the reason it
 * must be blocked for. Attempts that change something (write, mknod, mount, a fork
 * bomb, sethostname, ptrace) first compare the inodes of /proc/self/ns/ with the host's
 * (--host-ns) and refuse to run in any namespace they share with the host, so a
 * containment failure can never touch the host.
 *
 * Helper modes for the network tests: serve-tcp ADDR PORT, serve-unix PATH|@NAME,
 * connect ADDR PORT. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
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

#define OUT_MAX 256

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

static int out_fd = -1; /* the attempt's pipe to the parent */

/* ---- outcome reporting (in the attempt's child) ---- */

static _Noreturn void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char buf[OUT_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(out_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
    _exit(0);
}

static _Noreturn void report_errno(void)
{
    const char *name = strerrorname_np(errno);
    report("errno:%s", name ? name : "unknown");
}

/* The common shape: a syscall result; >= 0 is success (an escape inside the jail). */
static _Noreturn void outcome(long rc)
{
    if (rc < 0)
        report_errno();
    report("ok");
}

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
        report("skip:mutating attempt not run outside the jail");
    for (size_t i = 0; types[i]; i++) {
        unsigned long mine = ns_inode(types[i]), host = host_inode(types[i]);
        if (!mine || !host || mine == host)
            report("unsafe:%s namespace not separate from the host (mine %lu, host %lu)", types[i],
                   mine, host);
    }
}

static const char *const NS_MNT[] = {"mnt", "user", NULL};
static const char *const NS_UTS[] = {"uts", "user", NULL};
static const char *const NS_PID[] = {"pid", "user", "mnt", NULL};

/* ---- network ---- */

static int connect_tcp(const char *addr, int port, int timeout_ms)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(s);
            errno = e;
            return -1;
        }
        struct pollfd p = {.fd = s, .events = POLLOUT};
        if (poll(&p, 1, timeout_ms) != 1) {
            close(s);
            errno = ETIMEDOUT;
            return -1;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            close(s);
            errno = err;
            return -1;
        }
    }
    return s;
}

static int connect_unix(const char *name)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    socklen_t len;
    if (name[0] == '@') {
        size_t n = strlen(name + 1);
        memcpy(sun.sun_path + 1, name + 1, n);
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    } else {
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", name);
        len = sizeof(sun);
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    if (connect(s, (struct sockaddr *)&sun, len) < 0) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}

static void a_tcp_host_loopback(void)
{
    if (args.port < 0)
        report("skip:no --port");
    outcome(connect_tcp("127.0.0.1", args.port, 2000));
}

static void a_abstract_unix(void)
{
    if (!args.abstract)
        report("skip:no --abstract");
    char name[128];
    snprintf(name, sizeof(name), "@%s", args.abstract);
    outcome(connect_unix(name));
}

static void a_path_unix(void)
{
    if (!args.unix_path)
        report("skip:no --unix");
    outcome(connect_unix(args.unix_path));
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
                report("ok:ipv4 default route via %s", ifname);
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
                report("ok:ipv6 default route via %s", ifname);
        }
        fclose(f);
    }
    report("blocked:no default route");
}

/* Only in the jail: outside it could send a packet to a real address. */
static void a_route_out(void)
{
    if (args.control)
        report("skip:would send traffic outside the jail");
    outcome(connect_tcp("198.18.0.1", 443, 1000));
}

static void a_ipv6_addrs(void)
{
    FILE *f = fopen("/proc/net/if_inet6", "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
        char addr[40], ifname[64];
        if (sscanf(line, "%39s %*s %*s %*s %*s %63s", addr, ifname) == 2 &&
            strcmp(ifname, "lo") != 0)
            report("ok:%s on %s", addr, ifname);
    }
    report("blocked:no IPv6 address besides loopback");
}

static void a_netlink_socket(void)
{
    outcome(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */));
}

static void a_packet_socket(void)
{
    outcome(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)));
}

static void a_raw_socket(void)
{
    outcome(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
}

static void a_udp_socket(void)
{
    outcome(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

/* ---- file system ---- */

static void a_read_shadow(void)
{
    outcome(open("/etc/shadow", O_RDONLY | O_CLOEXEC));
}

static void a_host_marker(void)
{
    if (!args.marker)
        report("skip:no --marker");
    int fd = open(args.marker, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        report_errno();
    report("ok:read %s", args.marker);
}

static void a_checkout(void)
{
    if (!args.checkout)
        report("skip:no --checkout");
    outcome(open(args.checkout, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void a_root_home(void)
{
    outcome(open("/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void a_home(void)
{
    outcome(open("/home", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static void try_create(const char *path)
{
    require_own_ns(NS_MNT);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        report_errno();
    close(fd);
    unlink(path);
    report("ok:created %s", path);
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
        report_errno();
    unlink("/tmp/itest-nsj-null");
    report("ok:created a device node");
}

static void open_ro(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        report_errno();
    report("ok:opened %s", path);
}

static void a_dev_mem(void)
{
    open_ro("/dev/mem");
}

static void a_dev_kmsg(void)
{
    open_ro("/dev/kmsg");
}

static void a_dev_disk(void)
{
    static const char *const disks[] = {"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda",
                                        "/dev/loop0"};
    int first = 0;
    for (size_t i = 0; i < sizeof(disks) / sizeof(disks[0]); i++) {
        int fd = open(disks[i], O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            report("ok:opened %s", disks[i]);
        if (!first)
            first = errno;
        if (errno != ENOENT)
            first = errno; /* the most telling reason */
    }
    errno = first;
    report_errno();
}

static void a_proc_kcore(void)
{
    open_ro("/proc/kcore");
}

/* Opened for writing, never written: a success is reported without any effect. */
static void open_wr(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        report_errno();
    report("ok:opened %s for writing", path);
}

static void a_proc_sys_write(void)
{
    open_wr("/proc/sys/kernel/hostname");
}

static void a_sys_write(void)
{
    open_wr("/sys/class/net/lo/mtu");
}

static void a_sethostname(void)
{
    require_own_ns(NS_UTS);
    outcome(sethostname("itest-nsj-escaped", 17));
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
    outcome(rc);
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
    outcome(rc);
}

static void a_unshare_user(void)
{
    outcome(unshare(CLONE_NEWUSER));
}

static void a_unshare_net(void)
{
    outcome(unshare(CLONE_NEWNET));
}

static void a_clone_newns(void)
{
    long rc = syscall(SYS_clone, (unsigned long)(CLONE_NEWNS | CLONE_NEWUSER | SIGCHLD), NULL, NULL,
                      NULL, 0);
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        waitpid((pid_t)rc, NULL, 0);
    outcome(rc);
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
    outcome(rc);
}

static void a_setns(void)
{
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        report_errno();
    outcome(setns(fd, CLONE_NEWNET));
}

static void a_mount(void)
{
    require_own_ns(NS_MNT);
    long rc = mount("none", "/tmp", "tmpfs", 0, NULL);
    if (rc == 0)
        umount2("/tmp", MNT_DETACH);
    outcome(rc);
}

static void a_chroot(void)
{
    outcome(chroot("/tmp"));
}

static void a_bpf(void)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    outcome(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
}

static void a_perf_event_open(void)
{
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof(pe));
    pe.size = sizeof(pe);
    pe.type = PERF_TYPE_SOFTWARE;
    pe.config = PERF_COUNT_SW_CPU_CLOCK;
    pe.disabled = 1;
    pe.exclude_kernel = 1;
    outcome(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
}

static void a_keyctl(void)
{
    outcome(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}

static void a_userfaultfd(void)
{
    outcome(syscall(SYS_userfaultfd, O_CLOEXEC));
}

static void a_io_uring(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    outcome(syscall(SYS_io_uring_setup, 1, &p));
}

/* getpid through the i386 entry: in a 64-bit process int 0x80 runs the 32-bit
 * syscall table (nr 20 = getpid there). */
static void a_i386_int80(void)
{
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
    if (ret < 0) {
        errno = (int)-ret;
        report_errno();
    }
    report("ok:getpid via int 0x80 returned %ld", ret);
}

static void a_x32_syscall(void)
{
    outcome(syscall(0x40000000L | SYS_getpid));
}

/* ---- identity and leftovers ---- */

static bool status_field(const char *key, char *value, size_t size)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t klen = strlen(key);
    bool found = false;
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *v = line + klen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(value, size, "%.*s", (int)strcspn(v, "\n"), v);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void a_caps(void)
{
    static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        char v[64];
        if (!status_field(sets[i], v, sizeof(v)))
            report("errno:ENOENT:no %s in /proc/self/status", sets[i]);
        if (strtoull(v, NULL, 16) != 0)
            report("ok:%s=%s", sets[i], v);
    }
    report("blocked:every capability set is empty");
}

static void a_no_new_privs(void)
{
    char v[16] = "";
    status_field("NoNewPrivs", v, sizeof(v));
    if (strcmp(v, "1") != 0)
        report("ok:NoNewPrivs=%s", v);
    report("blocked:NoNewPrivs=1");
}

static void a_seccomp_mode(void)
{
    char v[16] = "";
    status_field("Seccomp", v, sizeof(v));
    if (strcmp(v, "2") != 0)
        report("ok:Seccomp=%s", v);
    report("blocked:Seccomp=2");
}

static void a_uid0(void)
{
    if (getuid() == 0 || geteuid() == 0 || getgid() == 0)
        report("ok:uid=%d gid=%d", (int)getuid(), (int)getgid());
    report("blocked:uid=%d gid=%d", (int)getuid(), (int)getgid());
}

static void a_host_pids(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        report_errno();
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
        report("ok:%d processes visible (highest pid %d)", count, max);
    report("blocked:%d processes visible (highest pid %d)", count, max);
}

/* A host process (the test's shell) by its host pid: its /proc entry, and a signal 0. */
static void a_host_pid(void)
{
    if (args.host_pid <= 0)
        report("skip:no --host-pid");
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", args.host_pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[128] = "";
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        report("ok:/proc/%d is %s", args.host_pid, buf);
    }
    if (kill(args.host_pid, 0) == 0)
        report("ok:pid %d can be signalled", args.host_pid);
    report_errno(); /* kill's errno: ESRCH, no such process here */
}

/* The launcher's command line through its representative, pid 1. */
static void a_launcher_cmdline(void)
{
    int fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        report_errno();
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] != '\0') {
            for (ssize_t k = 0; k < n; k++)
                buf[k] = buf[k] ? buf[k] : ' ';
            buf[n] = '\0';
            report("ok:%.80s", buf);
        }
    }
    report("blocked:empty (%zd bytes)", n);
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
        report("ok:in my own environment");
    DIR *d = opendir("/proc");
    if (!d)
        report_errno();
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
            report("ok:in %s", path);
    }
    closedir(d);
    report("blocked:not found (%d environ files unreadable)", denied);
}

static void a_launcher_fd(void)
{
    if (args.fd >= 0 && fcntl(args.fd, F_GETFD) >= 0)
        report("ok:descriptor %d is open", args.fd);
    int e = errno;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        report_errno();
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        int fd = atoi(ent->d_name);
        if (ent->d_name[0] < '0' || ent->d_name[0] > '9' || fd <= 2 || fd == dirfd(d) ||
            fd == out_fd)
            continue;
        report("ok:descriptor %d is open", fd);
    }
    closedir(d);
    errno = args.fd >= 0 ? e : EBADF;
    report_errno();
}

/* Never against a real terminal: a success there would type into it. */
static void no_tty_on_stdin(void)
{
    if (isatty(0))
        report("skip:stdin is a terminal, not injecting into it");
}

static void a_tiocsti(void)
{
    char c = '#';
    no_tty_on_stdin();
    outcome(ioctl(0, TIOCSTI, &c));
}

/* Garbage in the upper half of the request: the kernel only looks at 32 bits. */
static void a_tiocsti_hibits(void)
{
    char c = '#';
    no_tty_on_stdin();
    outcome(syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c));
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
        report("ok:%d processes", n);
    const char *name = strerrorname_np(err);
    report("errno:%s:after %d processes", name ? name : "unknown", n);
}

static void a_map_4g(void)
{
    void *p = mmap(NULL, 4ULL << 30, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        report_errno();
    munmap(p, 4ULL << 30);
    report("ok:mapped 4 GiB");
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
        report_errno();
    /* Sparse: a success costs no space. */
    long rc = ftruncate(fd, 1LL << 30);
    int e = errno;
    close(fd);
    unlink(path);
    errno = e;
    if (rc < 0)
        report_errno();
    report("ok:1 GiB file");
}

static void a_fds_512(void)
{
    int n = 0;
    while (n < 512) {
        if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) {
            const char *name = strerrorname_np(errno);
            report("errno:%s:after %d descriptors", name ? name : "unknown", n);
        }
        n++;
    }
    report("ok:512 descriptors");
}

static void a_raise_hard_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        report_errno();
    if (rl.rlim_max == RLIM_INFINITY)
        report("ok:no hard limit to raise");
    rl.rlim_max += 1;
    rl.rlim_cur = rl.rlim_max;
    outcome(setrlimit(RLIMIT_NOFILE, &rl));
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
    {"dev_disk", a_dev_disk},
    {"proc_kcore", a_proc_kcore},
    {"proc_sys_write", a_proc_sys_write},
    {"sys_write", a_sys_write},
    {"sethostname", a_sethostname},
    {"ptrace_launcher", a_ptrace_launcher},
    {"process_vm_readv", a_process_vm_readv},
    {"unshare_user", a_unshare_user},
    {"unshare_net", a_unshare_net},
    {"clone_newns", a_clone_newns},
    {"clone3_newuser", a_clone3_newuser},
    {"setns", a_setns},
    {"mount", a_mount},
    {"chroot", a_chroot},
    {"bpf", a_bpf},
    {"perf_event_open", a_perf_event_open},
    {"keyctl", a_keyctl},
    {"userfaultfd", a_userfaultfd},
    {"io_uring", a_io_uring},
    {"i386_int80", a_i386_int80},
    {"x32_syscall", a_x32_syscall},
    {"caps", a_caps},
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

static void run_attempt(const struct attempt *a)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        printf("%s error:pipe\n", a->name);
        return;
    }
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        out_fd = p[1];
        alarm(10); /* a hung attempt ends as signal:SIGALRM */
        a->fn();
        report("error:attempt returned");
    }
    close(p[1]);
    char buf[OUT_MAX] = "";
    ssize_t n = c < 0 ? -1 : read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    int st = 0;
    if (c > 0)
        waitpid(c, &st, 0);
    if (n > 0) {
        buf[n] = '\0';
        printf("%s %s\n", a->name, buf);
    } else if (c > 0 && WIFSIGNALED(st)) {
        const char *sig = sigabbrev_np(WTERMSIG(st));
        printf("%s signal:SIG%s\n", a->name, sig ? sig : "?");
    } else {
        printf("%s error:no outcome (status %d)\n", a->name, st);
    }
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
    int s = connect_tcp(addr, atoi(port), 2000);
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
