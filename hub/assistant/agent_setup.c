/* Wiring the agent from hub.json and the command line: the LLM (llm.* plus the
 * agent's limits, which live in the same object), and the memory (a configured Redis,
 * --memory, or a private redis-server the hub starts itself). */
#include "agent.h"
#include "jsonfile.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

int agent_config_limits(const struct hub_config *cfg, struct agent_limits *lim, char *err,
                        size_t errlen)
{
    agent_limits_defaults(lim);
    if (!cfg->llm)
        return 0;
    struct jf_ctx c = {.file = cfg->file ? cfg->file : "hub.json", .err = err, .errlen = errlen};
    int64_t v;
    const json_t *o = cfg->llm;
#define LIMIT(key, min, max, field)                                                                \
    do {                                                                                           \
        v = -1;                                                                                    \
        if (!jf_int(&c, o, "llm", key, false, min, max, &v))                                       \
            return -1;                                                                             \
        if (v >= 0)                                                                                \
            lim->field = (__typeof__(lim->field))v;                                                \
    } while (0)
    LIMIT("max_plan_steps", 1, 32, max_plan_steps);
    LIMIT("max_tool_rounds", 1, 64, max_tool_rounds);
    LIMIT("max_replans", 0, 10, max_replans);
    LIMIT("history_entries", 0, 1000, history_entries);
    LIMIT("result_max_bytes", 256, 1 << 20, result_max_bytes);
#undef LIMIT
    return llm_sampling_limits_parse(cfg, &lim->sampling, err, errlen);
}

struct llm *agent_llm_open(const struct hub_config *cfg, const char *spec, struct audit *audit,
                           bool debug, char *err, size_t errlen)
{
    return llm_open_hub(cfg, spec, audit, debug, err, errlen);
}

/* --- memory ------------------------------------------------------------------------ */

/* scripts/redis-private next to the build: <exe>/../scripts or <exe>/../../scripts
 * (build/san/hub). NULL when neither exists. */
static char *find_redis_script(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *dir = dirname(exe);
    const char *up[] = {"/..", "/../.."};
    for (size_t i = 0; i < 2; i++) {
        char *p = xasprintf("%s%s/scripts/redis-private", dir, up[i]);
        if (access(p, X_OK) == 0)
            return p;
        free(p);
    }
    return NULL;
}

/* Runs the script with cmd and dir; its first output line into out. Exit status. */
static int run_script(const char *script, const char *cmd, const char *dir, char *out,
                      size_t outlen)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        /* The server it starts lives on: it must hold none of the hub's descriptors
         * (a pipe the hub's caller waits on would never see its end). */
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        dup2(pfd[1], STDOUT_FILENO);
        close_range(3, ~0U, 0);
        execl(script, script, cmd, dir, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < outlen && (r = read(pfd[0], out + got, outlen - 1 - got)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        got += (size_t)r;
    }
    out[got] = '\0';
    out[strcspn(out, "\n")] = '\0';
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char memory_help[] =
    "set memory.redis in hub.json (\"unix:/path/redis.sock\" or \"host:port\"), start a "
    "private one with `scripts/redis-private start DIR` and use --memory unix:DIR/redis.sock, "
    "or run without persistence with --memory none";

/* The private Redis's files in its directory: a hub that uses it holds users.lock
 * shared; starting, and stopping by the last user, happen under start.lock; a hub that
 * started it leaves hub-started, so that one started by hand is never stopped. */
struct private_redis {
    char *dir;
    int users_fd;
};

static int lock_file(const char *dir, const char *name, int op)
{
    char *path = xasprintf("%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    free(path);
    if (fd < 0)
        return -1;
    while (flock(fd, op) < 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* A hub started the server in dir: the last hub out may stop it. */
static void mark_started(const char *dir)
{
    char *mark = xasprintf("%s/hub-started", dir);
    int fd = open(mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    free(mark);
}

struct memory *agent_memory_open(const struct hub_config *cfg, const char *spec,
                                 struct private_redis **private, char *err, size_t errlen)
{
    *private = NULL;
    struct memory_config mc;
    memory_config_defaults(&mc);
    if (cfg->memory) {
        struct jf_ctx c = {
            .file = cfg->file ? cfg->file : "hub.json", .err = err, .errlen = errlen};
        if (!memory_config_parse(&c, cfg->memory, "memory", &mc))
            return NULL;
    }
    if (spec || mc.redis)
        return memory_open(spec, &mc, err, errlen);
    /* Nothing configured: a private redis-server in the run directory. */
    char *script = find_redis_script();
    if (!script) {
        snprintf(err, errlen, "no Redis is configured and scripts/redis-private was not found: %s",
                 memory_help);
        return NULL;
    }
    char *dir = xasprintf("%s/redis", cfg->run_dir);
    char *abs = NULL;
    if (mkdir_p(dir, 0700) == 0)
        abs = realpath(dir, NULL);
    char sock[512];
    struct memory *m = NULL;
    int start_fd = abs ? lock_file(abs, "start.lock", LOCK_EX) : -1;
    if (!abs || start_fd < 0) {
        snprintf(err, errlen, "no Redis is configured and %s cannot be created (%s): %s", dir,
                 strerror(errno), memory_help);
    } else {
        bool running = run_script(script, "status", abs, sock, sizeof(sock)) == 0;
        int rc = running ? 0 : run_script(script, "start", abs, sock, sizeof(sock));
        if (rc != 0 || !sock[0]) {
            snprintf(err, errlen,
                     "no Redis is configured and a private redis-server could not be started "
                     "in %s (is redis-server installed? `make deps` installs it): %s",
                     abs, memory_help);
        } else {
            if (!running)
                mark_started(abs);
            char *where = xasprintf("unix:%s", sock);
            m = memory_open(where, &mc, err, errlen);
            free(where);
            int users = m ? lock_file(abs, "users.lock", LOCK_SH) : -1;
            if (users >= 0) {
                *private = xcalloc(1, sizeof(**private));
                (*private)->dir = xstrdup(abs);
                (*private)->users_fd = users;
            }
            log_debug("memory: private redis-server in %s%s", abs,
                      running ? " (already running)" : "");
        }
    }
    if (start_fd >= 0)
        close(start_fd);
    free(abs);
    free(dir);
    free(script);
    return m;
}

void agent_memory_release_private(struct private_redis *pr)
{
    if (!pr)
        return;
    int start_fd = lock_file(pr->dir, "start.lock", LOCK_EX);
    /* The last user: no other hub holds users.lock (conversion is not atomic, but
     * under start.lock no hub can take it meanwhile). */
    bool last = start_fd >= 0 && flock(pr->users_fd, LOCK_EX | LOCK_NB) == 0;
    char *mark = xasprintf("%s/hub-started", pr->dir);
    char *script = find_redis_script();
    char out[256];
    if (last && script && access(mark, F_OK) == 0 &&
        run_script(script, "stop", pr->dir, out, sizeof(out)) == 0)
        unlink(mark);
    free(script);
    free(mark);
    close(pr->users_fd);
    if (start_fd >= 0)
        close(start_fd);
    free(pr->dir);
    free(pr);
}

/* Whether the pid in DIR/redis.pid is a live redis-server (as the script's own check,
 * without starting a process: this runs before every request). */
static bool private_alive(const char *dir)
{
    char *path = xasprintf("%s/redis.pid", dir);
    char buf[32] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    uint64_t pid;
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (!parse_u64(buf, 1, 1u << 22, &pid))
        return false;
    char comm[32] = "";
    path = xasprintf("/proc/%llu/comm", (unsigned long long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    comm[n > 0 ? n : 0] = '\0';
    return strcmp(comm, "redis-server\n") == 0;
}

const char *agent_private_redis_dir(const struct private_redis *pr)
{
    return pr ? pr->dir : NULL;
}

int agent_memory_revive_private(const char *dir, char *err, size_t errlen)
{
    if (private_alive(dir))
        return 0;
    /* Under start.lock, as agent_memory_open(): another hub may revive it meanwhile. */
    int start_fd = lock_file(dir, "start.lock", LOCK_EX);
    char *script = find_redis_script();
    char sock[512];
    int rc = 0;
    if (!private_alive(dir))
        rc = script ? run_script(script, "start", dir, sock, sizeof(sock)) : -1;
    free(script);
    if (rc == 0)
        mark_started(dir);
    if (start_fd >= 0)
        close(start_fd);
    if (rc == 0)
        return 1;
    snprintf(err, errlen,
             "the hub's private redis-server in %s is not running and could not be started "
             "again: start it with `scripts/redis-private start %s` (its log: %s/redis.log), or "
             "run the hub with --memory none",
             dir, dir, dir);
    return -1;
}
