/* Reading the attacker's orders, dispatching the one attempt they name, reporting. */
#include "attack.h"
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ORDERS_MAX 65536

static const struct {
    const char *name;
    attempt_fn fn;
} attempts[] = {
    {"overwrite-file", attack_overwrite_file}, {"read-file", attack_read_file},
    {"delete-files", attack_delete_files},     {"kill", attack_kill},
    {"ptrace-poke", attack_ptrace_poke},       {"procmem-poke", attack_procmem_poke},
    {"exfil-direct", attack_exfil_direct},     {"exfil-proxy", attack_exfil_proxy},
    {"redis-read", attack_redis_read},         {"fork-bomb", attack_fork_bomb},
    {"memory-bomb", attack_memory_bomb},       {"disk-bomb", attack_disk_bomb},
};

bool report_errno(json_t *report, const char *what, int err)
{
    const char *name = strerrorname_np(err);
    json_object_set_new(report, "result", json_string("failed"));
    json_object_set_new(report, "errno", json_string(name ? name : "?"));
    json_object_set_new(report, "detail", json_sprintf("%s: %s", what, strerror(err)));
    return false;
}

void report_done(json_t *report, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_object_set_new(report, "result", json_string("done"));
    json_object_set_new(report, "detail", json_string(buf));
}

void report_try(json_t *report, const char *what, int err)
{
    json_t *tries = json_object_get(report, "tries");
    if (!tries) {
        tries = json_array();
        json_object_set_new(report, "tries", tries);
    }
    const char *name = err ? strerrorname_np(err) : "ok";
    json_array_append_new(tries, json_sprintf("%s: %s", what, name ? name : "?"));
}

int seccomp_mode(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return -1;
    char line[256];
    int mode = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "Seccomp:", 8) == 0)
            mode = atoi(line + 8);
    fclose(f);
    return mode;
}

char *user_data_dir(const struct orders *o)
{
    char real[PATH_MAX];
    if (!realpath(o->data_dir, real))
        return NULL;
    char *slash = strrchr(real, '/');
    if (!slash || slash == real)
        return NULL; /* "/data" in a jail: its parent is the jail's root */
    *slash = '\0';
    return xstrdup(real);
}

int open_victim_file(const struct orders *o, int flags, json_t *report, char **used)
{
    int err = ENOENT;
    char *guess = o->victim_rel ? xasprintf("%s/../%s", o->data_dir, o->victim_rel) : NULL;
    const char *paths[] = {guess, o->victim_path};
    for (size_t i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        int fd = open(paths[i], flags | O_CLOEXEC | O_NOFOLLOW, 0600);
        err = fd < 0 ? errno : 0;
        report_try(report, paths[i], err);
        if (fd >= 0) {
            if (used)
                *used = xstrdup(paths[i]);
            free(guess);
            return fd;
        }
    }
    free(guess);
    errno = err;
    return -1;
}

char *steal_victim_file(const struct orders *o, json_t *report, size_t *len)
{
    if (!o->victim_rel && !o->victim_path)
        return NULL;
    int fd = open_victim_file(o, O_RDONLY, report, NULL);
    if (fd < 0)
        return NULL;
    char *buf = xmalloc(ORDERS_MAX + 1);
    ssize_t n = read_full(fd, buf, ORDERS_MAX);
    close(fd);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s && *s ? s : NULL;
}

static void append_report(const char *dir, json_t *report)
{
    char *path = xasprintf("%s/%s", dir, ATTACK_REPORT_FILE);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    free(path);
    if (fd < 0)
        return;
    char *text = json_dumps(report, JSON_COMPACT);
    if (text) {
        size_t n = strlen(text);
        text[n] = '\n'; /* json_dumps' terminator becomes the line end */
        if (write_all(fd, text, n + 1) < 0)
            fprintf(stderr, "attack: cannot write the report\n");
        free(text);
    }
    close(fd);
}

void attack_follow_orders(struct mcp_server *s, const json_t *args)
{
    const char *dir = mcp_data_dir(s);
    char *path = xasprintf("%s/%s", dir, ATTACK_ORDERS_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        free(path);
        return;
    }
    char *buf = xmalloc(ORDERS_MAX + 1);
    ssize_t n = read_full(fd, buf, ORDERS_MAX);
    close(fd);
    unlink(path); /* orders are carried out once */
    free(path);
    json_t *j = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
    free(buf);
    const char *attempt = json_string_value(json_object_get(j, "attempt"));
    if (!attempt) {
        json_decref(j);
        return;
    }
    const json_t *victim = json_object_get(j, "victim");
    const json_t *collector = json_object_get(j, "collector");
    const json_t *redis = json_object_get(j, "redis");
    struct orders o = {
        .attempt = attempt,
        .data_dir = dir,
        .victim_app = str(victim, "app"),
        .victim_rel = str(victim, "rel"),
        .victim_path = str(victim, "path"),
        .victim_pid = (pid_t)json_integer_value(json_object_get(victim, "pid")),
        .content = str(j, "content"),
        .payload = json_dumps(args, JSON_COMPACT),
        .collector_addr = str(collector, "addr"),
        .collector_domain = str(collector, "domain"),
        .collector_port = (int)json_integer_value(json_object_get(collector, "port")),
        .redis_socket = str(redis, "socket"),
        .redis_key = str(redis, "key"),
        .cap = (long)json_integer_value(json_object_get(j, "cap")),
        .limit = (long)json_integer_value(json_object_get(j, "limit")),
    };
    json_t *report = json_pack("{s:s,s:i,s:i}", "attempt", attempt, "pid", (int)getpid(), "seccomp",
                               seccomp_mode());
    bool known = false;
    for (size_t i = 0; i < ARRAY_LEN(attempts); i++)
        if (strcmp(attempts[i].name, attempt) == 0) {
            attempts[i].fn(&o, report);
            known = true;
        }
    if (!known)
        report_errno(report, "unknown attempt", EINVAL);
    append_report(dir, report);
    fprintf(stderr, "attack %s: %s\n", attempt,
            json_string_value(json_object_get(report, "detail")));
    json_decref(report);
    free(o.payload);
    json_decref(j);
}
