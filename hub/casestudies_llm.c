/* The case studies' LLM-level steps: the user's requests run through the agent
 * (issue 5) in the case's hub, with the LLM the command names (a recording under
 * config/casestudies, or a live endpoint), and what happened judged afterwards from
 * the apps' data and the agent's tool calls, not from the model's words alone. */
#include "casestudies.h"
#include "hub.h"
#include "log.h"
#include "memory.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cs_llm_describe(const char *spec)
{
    static char buf[1200];
    if (strncmp(spec, "replay:", 7) == 0)
        snprintf(buf, sizeof(buf), "%s (offline recordings)", spec);
    else
        snprintf(buf, sizeof(buf), "%s (live)", spec);
    return buf;
}

/* The user's memory in Redis, as the hub keeps it. */
static struct memory *open_memory(const struct cs_run *run, char *err, size_t errlen)
{
    struct memory_config mc;
    memory_config_defaults(&mc);
    char *spec = xasprintf("unix:%s", run->env->redis_socket);
    struct memory *m = memory_open(spec, &mc, err, errlen);
    free(spec);
    return m;
}

int cs_llm_forget(struct cs_run *run, char *err, size_t errlen)
{
    if (!run->env->redis_socket)
        return 0;
    struct memory *m = open_memory(run, err, errlen);
    if (!m)
        return -1;
    int rc = memory_history_clear(m, run->user, err, errlen);
    if (rc == 0 && memory_grant_revoke(m, run->user, -1, NULL, NULL, NULL, err, errlen) < 0)
        rc = -1;
    memory_close(m);
    return rc;
}

/* The OS-level step on the hub's memory needs something there to read: the user's
 * first request, as the agent records it. */
static int ensure_history(struct cs_run *run, char *err, size_t errlen)
{
    struct memory *m = open_memory(run, err, errlen);
    if (!m)
        return -1;
    struct memory_msg *msgs = NULL;
    size_t n = 0;
    int rc = memory_history_last(m, run->user, 1, &msgs, &n, err, errlen);
    if (rc == 0 && n == 0)
        rc = memory_history_append(m, run->user, "user", run->c->requests[0], err, errlen);
    memory_msgs_free(msgs, n);
    memory_close(m);
    return rc;
}

int cs_llm_steps(struct cs_run *run, struct cs_case_result *r, char *err, size_t errlen)
{
    (void)r;
    if (run->env->redis_socket && ensure_history(run, err, errlen) < 0)
        return -1;
    snprintf(err, errlen, "this build has no agent (issue 5): the LLM-level steps did not run");
    return -1;
}
