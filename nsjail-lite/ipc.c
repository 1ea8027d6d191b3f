/* System V shared memory of the jail's own ipc namespace. A new ipc namespace starts
 * with the kernel's near-unlimited shmmax/shmall, and a segment that is created,
 * touched and detached belongs to no process: RLIMIT_AS never sees it, and it lives
 * until the namespace ends. The cgroup charges its pages to the jail; these limits
 * refuse the segments beforehand (shmget fails with EINVAL or ENOSPC), whether or not
 * the jail has a memory cgroup.
 *
 * The ipc sysctls under /proc/sys/kernel are those of the writer's ipc namespace, and
 * writable by the namespace's owner: init writes them right after the clone, while it
 * is still host root (its uid inside is not 0 and maps to no owner once it switches)
 * and the host's /proc is still mounted. */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)

static int write_sysctl(const char *name, uint64_t value, char *err, size_t errlen)
{
    char path[64], text[32];
    snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
    snprintf(text, sizeof(text), "%" PRIu64, value);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
        snprintf(err, errlen, "setting kernel.%s in the jail's ipc namespace: %s", name,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* The jail's memory limit: the cgroup's, else RLIMIT_AS; 0 when it has neither. */
static uint64_t memory_limit_mb(const struct jail_plan *p)
{
    if (p->cg.memory_mb)
        return p->cg.memory_mb;
    for (size_t i = 0; i < p->n_rlimits; i++)
        if (p->rlimits[i].resource == RLIMIT_AS)
            return p->rlimits[i].rl.rlim_max / MIB;
    return 0;
}

int ipc_limit_shm(const struct jail_plan *p, char *err, size_t errlen)
{
    uint64_t mb = memory_limit_mb(p);
    if (!mb)
        return 0;
    uint64_t pages = mb * MIB / (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t segments = mb < 16 ? 16 : mb > 4096 ? 4096 : mb;
    if (write_sysctl("shmmax", mb * MIB, err, errlen) < 0 ||
        write_sysctl("shmall", pages, err, errlen) < 0 ||
        write_sysctl("shmmni", segments, err, errlen) < 0)
        return -1;
    plan_debug(p,
               "ipc namespace: shmmax %" PRIu64 " MiB, shmall %" PRIu64 " pages, shmmni %" PRIu64,
               mb, pages, segments);
    return 0;
}
