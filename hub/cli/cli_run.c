#include "cli_run.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int cli_run(char *const argv[], int log_fd, char **out, size_t *len, size_t max)
{
    int pipefd[2] = {-1, -1};
    if (out && pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out ? pipefd[1] : log_fd, 1);
        dup2(log_fd, 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull > 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (out)
        close(pipefd[1]);
    if (pid < 0) {
        if (out)
            close(pipefd[0]);
        return -1;
    }
    int rc = 0;
    if (out) {
        size_t cap = 65536, n = 0;
        char *buf = xmalloc(cap + 1);
        for (;;) {
            if (n == cap && cap < max) {
                cap = cap * 2 > max ? max : cap * 2;
                buf = xrealloc(buf, cap + 1);
            }
            if (n == cap) {
                rc = -1; /* too large: read on so the child can finish */
                char sink[4096];
                if (read(pipefd[0], sink, sizeof(sink)) <= 0)
                    break;
                continue;
            }
            ssize_t r = read(pipefd[0], buf + n, cap - n);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            n += (size_t)r;
        }
        close(pipefd[0]);
        buf[n] = '\0';
        *out = buf;
        *len = n;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (rc < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
