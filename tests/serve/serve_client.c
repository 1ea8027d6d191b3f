/* serve_client: a lean MCP client for measuring `hub serve` (make bench, make load) and
 * anything else that speaks MCP (supergateway, the anchor of the bench).
 *
 *   serve_client http HOST:PORT [--token T] [--sessions S] [--calls N] TOOL 'ARGS'
 *       S sessions at once over Streamable HTTP (each its own keep-alive connection):
 *       initialize, notifications/initialized, N tools/call one after another, DELETE.
 *   serve_client stdio [--calls N] TOOL 'ARGS' -- COMMAND ARGS...
 *       one session with COMMAND over stdio.
 *
 * Prints one JSON line: calls, errors, median/p99/min/max of a call's round trip in
 * µs (from writing the request to the parsed answer), wall time, calls per second. A
 * call is an error unless it answers a result without isError. Exit 0 when no call
 * failed. Measuring code, not a product: bounded where it reads, nothing more. */
#include "jsonrpc.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tool_name, *tool_args_text, *token, *host;
static int port;
static long n_calls = 1000, n_sessions = 1;
static uint64_t *lat;
static size_t n_lat, n_errors;
static long sessions_left;
static struct event_base *base;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(double wall_s)
{
    qsort(lat, n_lat, sizeof(*lat), cmp_u64);
    size_t p99 = n_lat ? (n_lat * 99 + 99) / 100 : 0;
    if (p99 >= n_lat && n_lat)
        p99 = n_lat - 1;
    printf("{\"calls\":%zu,\"errors\":%zu,\"median_us\":%.1f,\"p99_us\":%.1f,\"min_us\":%.1f,"
           "\"max_us\":%.1f,\"wall_s\":%.3f,\"calls_per_s\":%.1f}\n",
           n_lat, n_errors, n_lat ? lat[n_lat / 2] / 1000.0 : 0, n_lat ? lat[p99] / 1000.0 : 0,
           n_lat ? lat[0] / 1000.0 : 0, n_lat ? lat[n_lat - 1] / 1000.0 : 0, wall_s,
           wall_s > 0 ? n_lat / wall_s : 0);
}

static char *call_body(long id)
{
    return xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{"
                     "\"name\":\"%s\",\"arguments\":%s}}",
                     id, tool_name, tool_args_text);
}

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"serve_client\",\"version\":"
    "\"1\"}}}";
static const char initialized_body[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

/* The answer in a body (JSON, or the last SSE data line): ok when it is a result
 * without isError. */
static bool answer_ok(const char *text, size_t len)
{
    const char *data = NULL;
    for (const char *p = text; p && p < text + len; p = memchr(p, '\n', (size_t)(text + len - p))) {
        if (*p == '\n')
            p++;
        if ((size_t)(text + len - p) > 6 && strncmp(p, "data: ", 6) == 0)
            data = p + 6;
    }
    json_t *msg =
        data ? json_loads(data, JSON_DISABLE_EOF_CHECK, NULL) : json_loadb(text, len, 0, NULL);
    json_t *result = json_object_get(msg, "result");
    bool ok = json_is_object(result) && !json_is_true(json_object_get(result, "isError"));
    json_decref(msg);
    return ok;
}

/* ---- HTTP ---- */

struct hsess {
    struct evhttp_connection *conn;
    char sid[128];
    long done_calls;
    int stage; /* 0 initialize, 1 initialized, 2 calls, 3 delete */
    uint64_t t0;
};

static void hsess_next(struct hsess *s);

static void on_http_done(struct evhttp_request *req, void *ud)
{
    struct hsess *s = ud;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    struct evbuffer *b = req ? evhttp_request_get_input_buffer(req) : NULL;
    size_t len = b ? evbuffer_get_length(b) : 0;
    const char *text = b ? (const char *)evbuffer_pullup(b, -1) : NULL;
    switch (s->stage) {
    case 0: {
        const char *sid =
            req ? evhttp_find_header(evhttp_request_get_input_headers(req), "Mcp-Session-Id")
                : NULL;
        if (status != 200 || !text || !answer_ok(text, len)) {
            fprintf(stderr, "initialize failed: HTTP %d\n", status);
            n_errors += (size_t)n_calls;
            s->stage = 4;
            sessions_left--;
            if (sessions_left == 0)
                event_base_loopbreak(base);
            return;
        }
        str_copy(s->sid, sid ? sid : "", sizeof(s->sid));
        s->stage = 1;
        break;
    }
    case 1:
        s->stage = 2;
        break;
    case 2:
        lat[n_lat++] = now_mono_ns() - s->t0;
        if (status != 200 || !text || !answer_ok(text, len))
            n_errors++;
        if (++s->done_calls == n_calls)
            s->stage = 3;
        break;
    case 3:
        s->stage = 4;
        sessions_left--;
        if (sessions_left == 0)
            event_base_loopbreak(base);
        return;
    }
    hsess_next(s);
}

static void hsess_next(struct hsess *s)
{
    struct evhttp_request *req = evhttp_request_new(on_http_done, s);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char hostport[300];
    snprintf(hostport, sizeof(hostport), "%s:%d", host, port);
    evhttp_add_header(h, "Host", hostport);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Accept", "application/json, text/event-stream");
    if (token) {
        char auth[600];
        snprintf(auth, sizeof(auth), "Bearer %s", token);
        evhttp_add_header(h, "Authorization", auth);
    }
    if (s->sid[0]) {
        evhttp_add_header(h, "Mcp-Session-Id", s->sid);
        evhttp_add_header(h, "MCP-Protocol-Version", "2025-06-18");
    }
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    enum evhttp_cmd_type cmd = EVHTTP_REQ_POST;
    if (s->stage == 0) {
        evbuffer_add(out, init_body, strlen(init_body));
    } else if (s->stage == 1) {
        evbuffer_add(out, initialized_body, strlen(initialized_body));
    } else if (s->stage == 2) {
        char *body = call_body(s->done_calls + 1);
        evbuffer_add(out, body, strlen(body));
        free(body);
        s->t0 = now_mono_ns();
    } else {
        cmd = EVHTTP_REQ_DELETE;
    }
    evhttp_make_request(s->conn, req, cmd, "/mcp");
}

static int run_http(void)
{
    struct hsess *ss = xcalloc((size_t)n_sessions, sizeof(*ss));
    sessions_left = n_sessions;
    uint64_t t0 = now_mono_ns();
    for (long i = 0; i < n_sessions; i++) {
        ss[i].conn = evhttp_connection_base_new(base, NULL, host, (ev_uint16_t)port);
        evhttp_connection_set_timeout(ss[i].conn, 120);
        hsess_next(&ss[i]);
    }
    event_base_dispatch(base);
    report((now_mono_ns() - t0) / 1e9);
    for (long i = 0; i < n_sessions; i++)
        evhttp_connection_free(ss[i].conn);
    free(ss);
    return n_errors ? 1 : 0;
}

/* ---- stdio ---- */

static int run_stdio(char **cmd)
{
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        return 2;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execvp(cmd[0], cmd);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    struct line_reader lr;
    lr_init(&lr, 16 * 1024 * 1024);
    const char *line;
    size_t len;
    /* One request, then its answer line (the server says nothing unasked here). */
    int rc = 0;
    for (long i = -1; i <= n_calls; i++) {
        char *body = i < 0 ? xstrdup(init_body) : i == 0 ? xstrdup(initialized_body) : call_body(i);
        uint64_t t0 = now_mono_ns();
        if (write_all(in[1], body, strlen(body)) < 0 || write_all(in[1], "\n", 1) < 0) {
            free(body);
            rc = 2;
            break;
        }
        free(body);
        if (i == 0)
            continue; /* a notification: no answer */
        enum lr_status st;
        while ((st = lr_next(&lr, &line, &len)) == LR_NEED_MORE)
            if (lr_fill(&lr, out[0]) <= 0)
                break;
        if (st != LR_LINE) {
            fprintf(stderr, "the server ended\n");
            rc = 2;
            break;
        }
        if (i > 0) {
            lat[n_lat++] = now_mono_ns() - t0;
            if (!answer_ok(line, len))
                n_errors++;
        }
    }
    close(in[1]);
    int status;
    waitpid(pid, &status, 0);
    close(out[0]);
    lr_free(&lr);
    return rc;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of tests/serve/serve_client.c\n");
        return 2;
    }
    const char *mode = argv[1];
    int i = 2;
    if (strcmp(mode, "http") == 0 && i < argc) {
        char buf[300];
        str_copy(buf, argv[i++], sizeof(buf));
        char *colon = strrchr(buf, ':');
        if (!colon)
            return 2;
        *colon = '\0';
        host = xstrdup(buf);
        port = atoi(colon + 1);
    }
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--token") == 0 && i + 1 < argc)
            token = argv[++i];
        else if (strcmp(argv[i], "--sessions") == 0 && i + 1 < argc)
            n_sessions = atol(argv[++i]);
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            n_calls = atol(argv[++i]);
        else
            break;
    }
    if (i + 2 > argc || n_calls < 1 || n_sessions < 1)
        return 2;
    tool_name = argv[i];
    tool_args_text = argv[i + 1];
    i += 2;
    lat = xcalloc((size_t)(n_calls * n_sessions), sizeof(*lat));
    int rc;
    if (strcmp(mode, "http") == 0) {
        base = event_base_new();
        rc = run_http();
        event_base_free(base);
    } else if (strcmp(mode, "stdio") == 0 && i < argc && strcmp(argv[i], "--") == 0) {
        uint64_t t0 = now_mono_ns();
        rc = run_stdio(argv + i + 1);
        report((now_mono_ns() - t0) / 1e9);
        if (!rc && n_errors)
            rc = 1;
    } else {
        return 2;
    }
    free(lat);
    return rc;
}
