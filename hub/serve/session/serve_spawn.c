/* Starting the background hub (serve_background.c) for a `hub serve --stdio` that finds
 * no hub on the control socket, so that the stdio clients of a host share one hub even
 * when no service runs.
 *
 * One starter at a time: the flock on PATH.start (PATH the control socket). Holding it,
 * a starter looks again (another one may have started a hub meanwhile) and only then
 * starts one, and keeps the lock until the hub says "ready" on a pipe, so that two
 * clients starting at once end with one hub. The hub itself takes the socket's own
 * lock (PATH.lock) before anything else; a hub that finds it taken (the service, or a
 * hub serve --http starting at the same moment) says "owned" and ends, and the starter
 * waits for that one to answer.
 *
 * The hub is a daemon: a fork that calls setsid() and forks again (no terminal can be
 * its own, and no starter is its parent), in /, stdin from /dev/null, stdout and stderr
 * appended to RUN_DIR/serve-background.log (0600; kept to one older file of 1 MiB), no
 * descriptor but the ready pipe (3), the signal mask and dispositions reset, then the
 * hub binary exec'd anew. It runs as the user who started it. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a starter waits for its turn and then for the hub's "ready": a hub in
 * namespace mode starts netproxy and its gateway first. */
#define START_WAIT_S 60
#define LOG_KEEP_BYTES (1024 * 1024)
#define READY_FD 3
#define LOG_TAIL_BYTES 2048

static uint64_t deadline_in(unsigned s)
{
    return now_mono_ns() + (uint64_t)s * 1000000000ULL;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The starters' lock, taken (blocking until deadline): its descriptor, or -1 with err. */
static int take_start_lock(const char *sock, uint64_t deadline, char *err, size_t errlen)
{
    char *path = xasprintf("%s.start", sock);
    char *dir = xstrdup(sock);
    int fd = mkdir_p(dirname(dir), 0711) < 0
                 ? -1
                 : open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    free(dir);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        } else if (now_mono_ns() > deadline) {
            snprintf(err, errlen,
                     "another hub serve --stdio has been starting a hub for over "
                     "%d s (%s)",
                     START_WAIT_S, path);
        } else {
            sleep_ms(20);
            continue;
        }
        close(fd);
        free(path);
        return -1;
    }
    free(path);
    return fd;
}

/* The hub's log, appended to; an old one past LOG_KEEP_BYTES moved to LOG.1 first.
 * *offset: where this start's lines begin. */
static int open_log(const char *path, off_t *offset)
{
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size > LOG_KEEP_BYTES) {
        char *old = xasprintf("%s.1", path);
        if (rename(path, old) < 0)
            log_debug("spawn: cannot move %s aside: %s", path, strerror(errno));
        free(old);
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    *offset = fd >= 0 && fstat(fd, &st) == 0 ? st.st_size : 0;
    return fd;
}

/* The last lines the hub wrote to its log since offset, on one line, into out. */
static void log_tail(const char *path, off_t offset, char *out, size_t len)
{
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size - offset > LOG_TAIL_BYTES)
        offset = st.st_size - LOG_TAIL_BYTES;
    char buf[LOG_TAIL_BYTES + 1];
    ssize_t n = pread(fd, buf, LOG_TAIL_BYTES, offset);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    size_t o = 0;
    for (char *line = strtok(buf, "\n"); line && o + 1 < len; line = strtok(NULL, "\n"))
        o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " | " : "", line);
}

/* In the daemon-to-be (after the second fork): its descriptors, signals, directory and
 * environment as a daemon's, then the hub. Never returns. */
static void become_hub(char *const *argv, int log, int ready_w)
{
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* Above the targets first, so that no dup2 below overwrites another's source. */
    int l = fcntl(log, F_DUPFD_CLOEXEC, 10), r = fcntl(ready_w, F_DUPFD_CLOEXEC, 10);
    int n = fcntl(devnull, F_DUPFD_CLOEXEC, 10);
    if (l < 0 || r < 0 || n < 0 || dup2(n, STDIN_FILENO) < 0 || dup2(l, STDOUT_FILENO) < 0 ||
        dup2(l, STDERR_FILENO) < 0 || dup2(r, READY_FD) < 0)
        _exit(125);
    int keep[] = {READY_FD};
    close_fds_except(keep, 1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL); /* SIGKILL/SIGSTOP refuse; nothing else is left ignored */
    if (chdir("/") < 0)
        _exit(125);
    execv(argv[0], argv);
    dprintf(STDERR_FILENO, "hub serve: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Forks the daemon; the read end of its ready pipe, or -1 with err. */
static int spawn(char *const *start_argv, const struct hub_config *cfg, int log, char *err,
                 size_t errlen)
{
    size_t n = 0;
    while (start_argv[n])
        n++;
    char **argv = xcalloc(n + 3, sizeof(*argv));
    for (size_t i = 0; i < n; i++)
        argv[i] = start_argv[i];
    argv[n] = "--ready-fd";
    argv[n + 1] = "3";
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        free(argv);
        return -1;
    }
    /* The LLM key this process took out of its environment (cli_load), for the hub's
     * --llm: in the environment again for the fork only (the secret's own copy is wiped
     * in a child), and wiped here after it. */
    char *key_env = NULL;
    if (cfg->llm_key_env && cfg->llm_api_key) {
        key_env = xasprintf("%s=%s", cfg->llm_key_env, cfg->llm_api_key);
        putenv(key_env);
    }
    pid_t mid = fork();
    if (mid == 0) {
        close(p[0]);
        if (setsid() < 0)
            _exit(125);
        pid_t hub = fork();
        if (hub == 0)
            become_hub(argv, log, p[1]);
        _exit(hub < 0 ? 125 : 0);
    }
    if (key_env) {
        unsetenv(cfg->llm_key_env);
        explicit_bzero(key_env, strlen(key_env));
        free(key_env);
    }
    free(argv);
    close(p[1]);
    int status = 0;
    if (mid < 0 || waitpid(mid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "cannot start the background hub: %s",
                 mid < 0 ? strerror(errno) : "its first fork failed");
        close(p[0]);
        return -1;
    }
    return p[0];
}

/* The hub's word on fd: 1 and the word, 0 when the pipe closed without one, -1 at the
 * deadline. */
static int read_word(int fd, uint64_t deadline, char *word, size_t len)
{
    size_t got = 0;
    for (;;) {
        uint64_t now = now_mono_ns();
        if (now >= deadline)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((deadline - now) / 1000000ULL) + 1);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0)
            continue;
        ssize_t n = read(fd, word + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
        word[got] = 0;
        char *nl = strchr(word, '\n');
        if (nl) {
            *nl = 0;
            return 1;
        }
        if (got == len - 1)
            return 1;
    }
}

/* Whether a hub answers on the control socket now. */
static bool answers(const struct hub_config *cfg)
{
    char err[200];
    int fd = serve_control_connect(cfg, err, sizeof(err));
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

int serve_start_background(const struct hub_config *cfg, char *const *start_argv, char *err,
                           size_t errlen)
{
    char sock[108];
    if (!serve_control_path(cfg, sock, sizeof(sock))[0]) {
        snprintf(err, errlen, "no control socket is configured to start a hub on");
        return -1;
    }
    uint64_t deadline = deadline_in(START_WAIT_S);
    int lock = take_start_lock(sock, deadline, err, errlen);
    if (lock < 0)
        return -1;
    if (answers(cfg)) { /* another starter's hub, ready while this one waited its turn */
        close(lock);
        return 0;
    }
    char *log_path = xasprintf("%s/serve-background.log", cfg->run_dir);
    off_t offset = 0;
    int log = mkdir_p(cfg->run_dir, 0711) == 0 ? open_log(log_path, &offset) : -1;
    int rc = -1;
    if (log < 0) {
        snprintf(err, errlen, "the background hub's log %s: %s", log_path, strerror(errno));
    } else {
        int ready = spawn(start_argv, cfg, log, err, errlen);
        close(log);
        char word[64] = "", tail[600];
        int got = ready < 0 ? -2 : read_word(ready, deadline, word, sizeof(word));
        if (ready >= 0)
            close(ready);
        if (got == 1 && strcmp(word, "ready") == 0) {
            log_info("started a background hub (its log: %s)", log_path);
            rc = 1;
        } else if (got == 1 && strcmp(word, "owned") == 0) {
            /* Another hub took the socket at this very moment: it answers once ready. */
            while (rc < 0 && now_mono_ns() < deadline) {
                if (answers(cfg))
                    rc = 0;
                else
                    sleep_ms(50);
            }
            if (rc < 0)
                snprintf(err, errlen, "another hub owns the control socket %s but does not answer",
                         sock);
        } else if (got == 0 || got == 1) {
            log_tail(log_path, offset, tail, sizeof(tail));
            snprintf(err, errlen, "the background hub ended at its start (%s): %s", log_path,
                     tail[0] ? tail : "it said nothing");
        } else if (got == -1) {
            snprintf(err, errlen, "the background hub was not ready within %d s (its log: %s)",
                     START_WAIT_S, log_path);
        }
    }
    free(log_path);
    close(lock);
    return rc;
}
