#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[PATH_MAX];
static unsigned standins;

const char *harness_dir(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/itest-llm-%d-XXXXXX", (int)getpid());
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return dir;
}

void harness_cleanup(void)
{
    if (!dir[0])
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            char p[PATH_MAX + 256];
            snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
    dir[0] = '\0';
}

const char *harness_write(const char *name, const char *text)
{
    static char path[PATH_MAX + 256];
    snprintf(path, sizeof(path), "%s/%s", harness_dir(), name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
    return path;
}

char *harness_json(const char *squoted)
{
    char *s = strdup(squoted);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

bool standin_start(struct standin *s, const char *squoted_script)
{
    memset(s, 0, sizeof(*s));
    unsigned n = ++standins;
    char name[64];
    snprintf(name, sizeof(name), "script-%u.json", n);
    char *json = harness_json(squoted_script);
    json_error_t je;
    json_t *check = json_loads(json, 0, &je);
    if (!check) {
        fprintf(stderr, "harness: script %u is not JSON: %s\n", n, je.text);
        free(json);
        return false;
    }
    json_decref(check);
    snprintf(s->script, sizeof(s->script), "%s", harness_write(name, json));
    free(json);
    snprintf(s->log, sizeof(s->log), "%s/requests-%u.jsonl", harness_dir(), n);

    const char *bin = getenv("BIN") ? getenv("BIN") : "build";
    char exe[PATH_MAX];
    snprintf(exe, sizeof(exe), "%s/tests/llm/openai_standin", bin);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        execl(exe, exe, "--script", s->script, "--log", s->log, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    s->pid = pid;
    char buf[32] = "";
    size_t got = 0;
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got) && poll(&p, 1, 5000) > 0) {
        ssize_t r = read(pfd[0], buf + got, sizeof(buf) - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
    }
    close(pfd[0]);
    s->port = atoi(buf);
    if (s->port <= 0) {
        standin_stop(s);
        return false;
    }
    snprintf(s->base_url, sizeof(s->base_url), "http://127.0.0.1:%d/v1", s->port);
    return true;
}

void standin_stop(struct standin *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
}

json_t *standin_requests(const struct standin *s)
{
    json_t *all = json_array();
    FILE *f = fopen(s->log, "r");
    if (!f)
        return all;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *rec = json_loads(line, 0, NULL);
        if (rec)
            json_array_append_new(all, rec);
    }
    free(line);
    fclose(f);
    return all;
}

json_t *standin_body(json_t *requests, size_t i)
{
    const char *body = json_string_value(json_object_get(json_array_get(requests, i), "body"));
    return body ? json_loads(body, 0, NULL) : NULL;
}

long harness_ms(unsigned long long from_ns, unsigned long long to_ns)
{
    return (long)((to_ns - from_ns) / 1000000ull);
}
