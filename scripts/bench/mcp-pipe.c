/* mcp-pipe: the anchors scripts/bench/mcpservers measures the hub against, an MCP
 * server run straight on the host with nothing between it and its client.
 *
 *   mcp-pipe WARM COLD COMMAND [ARG...]
 *
 * Prints "MEDIAN_US P99_US COLD_MEDIAN_US": the round trip of WARM tools/call echo
 * requests written to the server's stdin and answered on its stdout (one warm-up call
 * first), and the median of COLD starts from fork to the answered initialize. Lines
 * are matched by their "id" only: no JSON parsing, the least a client can do. With
 * MCP_PIPE_SOCKET set, the server's stdin and stdout are one socketpair, as a spoke's.
 * With MCP_PIPE_PROGRESS set, each call carries a _meta.progressToken of 32 hex digits,
 * as the hub's calls do (so that a spoke can report progress): the same request bytes
 * the hub sends, apart from the token's digits. */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct server {
    pid_t pid;
    FILE *in, *out;
};

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void start(struct server *s, char **cmd)
{
    int to[2], from[2];
    if (getenv("MCP_PIPE_SOCKET")) {
        /* What the hub gives a spoke: one socket for stdin and stdout. */
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
            exit(2);
        to[0] = from[1] = sv[1];
        to[1] = sv[0];
        from[0] = dup(sv[0]);
    } else if (pipe(to) < 0 || pipe(from) < 0) {
        exit(2);
    }
    s->pid = fork();
    if (s->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        close(to[1]);
        close(from[0]);
        if (to[0] != 0 && to[0] != 1)
            close(to[0]);
        execvp(cmd[0], cmd);
        _exit(127);
    }
    close(to[0]);
    if (from[1] != to[0])
        close(from[1]);
    s->in = fdopen(to[1], "w");
    s->out = fdopen(from[0], "r");
}

static void stop(struct server *s)
{
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    fclose(s->in);
    fclose(s->out);
}

/* Sends line and reads until the answer with this id. */
static void ask(struct server *s, const char *line, long id)
{
    static char buf[1 << 20];
    char want[32];
    snprintf(want, sizeof(want), "\"id\":%ld", id);
    fputs(line, s->in);
    fflush(s->in);
    while (fgets(buf, sizeof(buf), s->out))
        if (strstr(buf, want))
            return;
    fprintf(stderr, "mcp-pipe: the server ended\n");
    exit(2);
}

static int cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int warm = atoi(argv[1]), cold = atoi(argv[2]);
    char **cmd = argv + 3;
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{\"sampling\":{},\"elicitation\":{}},\"clientInfo\":{"
        "\"name\":\"bench\",\"version\":\"1\"}}}\n";
    unsigned long long *starts = calloc((size_t)cold + 1, sizeof(*starts));
    unsigned long long *calls = calloc((size_t)warm + 1, sizeof(*calls));
    struct server s;
    for (int i = 0; i < cold; i++) {
        unsigned long long t0 = now_ns();
        start(&s, cmd);
        ask(&s, init, 1);
        starts[i] = now_ns() - t0;
        stop(&s);
    }
    start(&s, cmd);
    ask(&s, init, 1);
    fputs("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n", s.in);
    const bool progress = getenv("MCP_PIPE_PROGRESS") != NULL;
    for (int i = 0; i <= warm; i++) {
        char req[256], meta[80] = "";
        if (progress)
            snprintf(meta, sizeof(meta), ",\"_meta\":{\"progressToken\":\"%032x\"}", 100 + i);
        snprintf(req, sizeof(req),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"echo\",\"arguments\":{\"message\":\"ping\"}%s}}\n",
                 100 + i, meta);
        unsigned long long t0 = now_ns();
        ask(&s, req, 100 + i);
        if (i)
            calls[i - 1] = now_ns() - t0;
    }
    stop(&s);
    qsort(calls, (size_t)warm, sizeof(*calls), cmp);
    qsort(starts, (size_t)cold, sizeof(*starts), cmp);
    int p99 = warm * 99 / 100;
    printf("%.1f %.1f %.1f\n", warm ? calls[warm / 2] / 1e3 : 0.0,
           warm ? calls[p99 < warm ? p99 : warm - 1] / 1e3 : 0.0, cold ? starts[cold / 2] / 1e3 : 0.0);
    free(starts);
    free(calls);
    return 0;
}
