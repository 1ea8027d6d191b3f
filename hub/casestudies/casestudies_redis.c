/* A private redis-server for a case-study run when the configuration names none:
 * unix socket only (port 0), protected mode, nothing persisted, a child of the
 * runner that gets SIGTERM if the runner dies (PR_SET_PDEATHSIG) and is stopped and
 * reaped at the end. `make demo` starts its own with scripts/redis-private instead. */
#include "casestudies.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t cs_redis_start(const char *dir, char **socket_path, char *err, size_t errlen)
{
    char *sock = xasprintf("%s/redis.sock", dir);
    char *log = xasprintf("%s/redis.log", dir);
    if (strlen(sock) > 100) {
        snprintf(err, errlen, "%s: too long for a unix socket", sock);
        free(sock);
        free(log);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        free(sock);
        free(log);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            dup2(devnull, STDOUT_FILENO);
        }
        /* Ctrl-C in the terminal is the runner's to handle: it stops this server. */
        setpgid(0, 0);
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
               "--unixsocketperm", "700", "--dir", dir, "--save", "", "--appendonly", "yes",
               "--appendfsync", "always", "--protected-mode", "yes", "--daemonize", "no",
               "--logfile", log, (char *)NULL);
        fprintf(stderr, "hub casestudies: redis-server: %s (make deps installs it)\n",
                strerror(errno));
        _exit(127);
    }
    free(log);
    long long hits, conns;
    for (int i = 0; i < 200; i++) {
        if (cs_redis_stats(sock, &hits, &conns) == 0) {
            *socket_path = sock;
            return pid;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            snprintf(err, errlen, "redis-server did not start (status %d)", st);
            free(sock);
            return -1;
        }
        struct timespec ts = {0, 25 * 1000000L};
        nanosleep(&ts, NULL);
    }
    snprintf(err, errlen, "redis-server did not answer on %s within 5 s", sock);
    cs_redis_stop(pid);
    free(sock);
    return -1;
}

void cs_redis_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        struct timespec ts = {0, 25 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}
