/* Resource limits: computed in the caller (units converted, clamped to the caller's
 * hard limits, which an unprivileged process cannot exceed anyway), applied by the
 * program's process before it drops its capabilities. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

static void add(struct jail_plan *p, int resource, const char *name, uint64_t soft, uint64_t hard)
{
    struct rlimit cur;
    if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
        if (hard > cur.rlim_max) {
            plan_debug(p, "rlimit %s: %llu lowered to the caller's hard limit %llu", name,
                       (unsigned long long)hard, (unsigned long long)cur.rlim_max);
            hard = cur.rlim_max;
        }
        if (soft > hard)
            soft = hard;
    }
    struct rlimit_set *r = &p->rlimits[p->n_rlimits++];
    r->resource = resource;
    r->name = name;
    r->rl.rlim_cur = soft;
    r->rl.rlim_max = hard;
}

int rlimit_prepare(const struct jail_config *cfg, struct jail_plan *p, struct jail_error *err)
{
    const struct jail_limits *l = &cfg->limits;
    (void)err;
    p->n_rlimits = 0;
    if (l->as_mb)
        add(p, RLIMIT_AS, "as", l->as_mb * MIB, l->as_mb * MIB);
    /* CPU: SIGXCPU at the soft limit, SIGKILL one second later if it is caught. */
    if (l->cpu_s)
        add(p, RLIMIT_CPU, "cpu", l->cpu_s, l->cpu_s + 1);
    if (l->fsize_mb)
        add(p, RLIMIT_FSIZE, "fsize", l->fsize_mb * MIB, l->fsize_mb * MIB);
    if (l->nofile)
        add(p, RLIMIT_NOFILE, "nofile", l->nofile, l->nofile);
    if (l->nproc)
        add(p, RLIMIT_NPROC, "nproc", l->nproc, l->nproc);
    add(p, RLIMIT_CORE, "core", 0, 0);
    p->cpu_s = l->cpu_s;
    p->wall_s = l->wall_s;
    return 0;
}

int rlimit_apply(const struct jail_plan *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n_rlimits; i++) {
        if (setrlimit(p->rlimits[i].resource, &p->rlimits[i].rl) < 0) {
            snprintf(err, errlen, "setrlimit %s: %s", p->rlimits[i].name, strerror(errno));
            return -1;
        }
    }
    return 0;
}
