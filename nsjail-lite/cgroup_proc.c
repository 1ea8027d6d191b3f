/* A cgroup of its own for a process started outside any jail (jail.h,
 * jail_cgroup_process): the hub's netproxy, which serves every spoke and so must not
 * be able to take the host's memory. Made beside the jails' cgroups, under the same
 * base (cgroup_base.c), with a memory limit and no swap. */
#include "internal.h"
#include "jail.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)

/* Siblings "PREFIX.PID" left by an owner that died without removing them (a hub killed
 * with SIGKILL): removed when that pid is gone (EBUSY while a process is still in). */
static void sweep_stale(const char *base, const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return;
    size_t pl = (size_t)(dot - name) + 1;
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, name, pl) != 0 || strcmp(e->d_name, name) == 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + pl, &end, 10);
        if (pid <= 0 || *end || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char *dir = xasprintf("%s/%s", base, e->d_name);
        (void)rmdir(dir);
        free(dir);
    }
    closedir(d);
}

char *jail_cgroup_process(const char *name, pid_t pid, uint64_t memory_mb, char *err, size_t errlen)
{
    if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        snprintf(err, errlen, "cgroup: '%s' is not a cgroup name", name);
        return NULL;
    }
    bool want[CG_N] = {[CG_MEMORY] = true};
    char *dirs[CG_N] = {NULL};
    int version = 0;
    struct jail_error je = {0};
    if (cgroup_base_get(NULL, want, &version, dirs, &je) < 0) {
        snprintf(err, errlen, "%s", je.message);
        return NULL;
    }
    sweep_stale(dirs[CG_MEMORY], name);
    char *dir = xasprintf("%s/%s", dirs[CG_MEMORY], name);
    free(dirs[CG_MEMORY]);
    const char *file = NULL;
    char v[32];
    snprintf(v, sizeof(v), "%" PRIu64, (uint64_t)(memory_mb * MIB));
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        file = ".";
        goto fail;
    }
    if (version == 2) {
        if (cgroup_write(dir, file = "memory.max", v) < 0)
            goto fail;
        /* No swap: what the limit stops must not go to disk instead (absent without
         * swap accounting, which also means nothing to swap to). */
        if (cgroup_write(dir, file = "memory.swap.max", "0") < 0 && errno != ENOENT)
            goto fail;
    } else {
        if (cgroup_write(dir, file = "memory.limit_in_bytes", v) < 0)
            goto fail;
        if (cgroup_write(dir, file = "memory.memsw.limit_in_bytes", v) < 0 && errno != ENOENT)
            goto fail;
        (void)cgroup_write(dir, "memory.swappiness", "0");
    }
    snprintf(v, sizeof(v), "%d", (int)pid);
    if (cgroup_write(dir, file = "cgroup.procs", v) < 0)
        goto fail;
    return dir;
fail:
    snprintf(err, errlen, "cgroup: writing %s/%s: %s", dir, file, strerror(errno));
    (void)rmdir(dir);
    free(dir);
    return NULL;
}

uint64_t jail_cgroup_oom_kills(const char *dir)
{
    char path[4096];
    const char *file = "memory.events", *key = "oom_kill ";
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (access(path, R_OK) < 0)
        snprintf(path, sizeof(path), "%s/memory.oom_control", dir); /* v1 */
    size_t len = 0;
    char *text = cgroup_read_text(path, &len);
    if (!text)
        return 0;
    uint64_t n = 0;
    for (char *line = text; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, strlen(key)) == 0) {
            n = strtoull(line + strlen(key), NULL, 10);
            break;
        }
    free(text);
    return n;
}

int jail_cgroup_remove(const char *dir)
{
    /* Its last process leaves a moment after it was reaped: retry for up to a second. */
    for (int tries = 0; tries < 1000; tries++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return -1;
}
