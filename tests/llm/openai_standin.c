/* A stand-in OpenAI-compatible server for the LLM client's tests.
 *
 *   openai_standin --script FILE --log FILE
 *
 * Listens on 127.0.0.1, port 0 (the kernel picks), prints the port on stdout, then
 * answers each request with the next scripted response and appends one JSON line per
 * request it received to the log: {"n", "ms" (since start), "method", "path",
 * "headers" (names lower-cased), "body"}. It serves until it is killed.
 *
 * The script: {"responses": [R, ...], "otherwise": R}. When the queue is used up,
 * "otherwise" answers (default: 599 "script exhausted"). A response R:
 *   "status"   HTTP status (default 200)
 *   "headers"  {"Name": "value"} added to the answer
 *   "json"     any JSON value, sent as the application/json body
 *   "body"     a string sent as the body as is (text/plain unless headers say)
 *   "sse"      [item, ...]: a text/event-stream answer, "data: ITEM\n\n" per item, an
 *              item being a JSON value (sent compact) or a string (sent verbatim,
 *              e.g. "[DONE]" or broken JSON); the connection closes after it
 *   "sse_raw"  a string sent verbatim as the event stream (odd framing)
 *   "delay_ms" wait before answering; "split" N: write the answer N bytes at a time,
 *   "split_delay_ms" between the pieces
 *   "close"    true: close the connection without answering
 *   "times"    serve this response N times (default 1)
 * Single-threaded (poll), enough for a client that sends one request at a time. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 16
#define MAX_HEADER (64 * 1024)
#define MAX_BODY (16 * 1024 * 1024)

struct conn {
    int fd;
    char *buf;
    size_t len, cap;
};

static json_t *script_responses;
static json_t *script_otherwise;
static size_t next_response, served_of_current;
static unsigned request_no;
static FILE *request_log;
static struct timespec t_start;

static void die(const char *what)
{
    fprintf(stderr, "openai_standin: %s: %s\n", what, strerror(errno));
    exit(2);
}

static long ms_since_start(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t_start.tv_sec) * 1000 + (t.tv_nsec - t_start.tv_nsec) / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int send_split(int fd, const char *p, size_t n, long split, long split_delay)
{
    if (split <= 0)
        return send_all(fd, p, n);
    while (n > 0) {
        size_t k = n < (size_t)split ? n : (size_t)split;
        if (send_all(fd, p, k) < 0)
            return -1;
        p += k;
        n -= k;
        if (n && split_delay > 0)
            sleep_ms(split_delay);
    }
    return 0;
}

static json_t *next_scripted(void)
{
    while (next_response < json_array_size(script_responses)) {
        json_t *r = json_array_get(script_responses, next_response);
        json_int_t times = json_integer_value(json_object_get(r, "times"));
        if (times <= 0)
            times = 1;
        if ((json_int_t)served_of_current < times) {
            served_of_current++;
            return r;
        }
        next_response++;
        served_of_current = 0;
    }
    return script_otherwise;
}

static const char *reason(long status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    default:
        return "Status";
    }
}

/* Answers one request; false when the connection is to be closed. */
static bool answer(int fd, json_t *r)
{
    long delay = (long)json_integer_value(json_object_get(r, "delay_ms"));
    if (delay > 0)
        sleep_ms(delay);
    if (json_is_true(json_object_get(r, "close")))
        return false;
    long status =
        json_object_get(r, "status") ? (long)json_integer_value(json_object_get(r, "status")) : 200;
    long split = (long)json_integer_value(json_object_get(r, "split"));
    long split_delay = (long)json_integer_value(json_object_get(r, "split_delay_ms"));
    json_t *sse = json_object_get(r, "sse");
    json_t *sse_raw = json_object_get(r, "sse_raw");
    bool stream = sse || sse_raw;

    char *body = NULL;
    size_t body_len = 0;
    const char *ctype = "text/plain";
    if (stream) {
        ctype = "text/event-stream";
        if (sse_raw) {
            body = strdup(json_string_value(sse_raw));
        } else {
            size_t cap = 1024, len = 0;
            body = malloc(cap);
            size_t i;
            json_t *item;
            json_array_foreach(sse, i, item)
            {
                char *text = json_is_string(item)
                                 ? strdup(json_string_value(item))
                                 : json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);
                size_t need = len + strlen(text) + 16;
                if (need > cap) {
                    while (cap < need)
                        cap *= 2;
                    body = realloc(body, cap);
                }
                len += (size_t)sprintf(body + len, "data: %s\n\n", text);
                free(text);
            }
            body[len] = '\0';
        }
        body_len = strlen(body);
    } else if (json_object_get(r, "json")) {
        body = json_dumps(json_object_get(r, "json"), JSON_COMPACT | JSON_ENCODE_ANY);
        body_len = strlen(body);
        ctype = "application/json";
    } else if (json_is_string(json_object_get(r, "body"))) {
        body = strdup(json_string_value(json_object_get(r, "body")));
        body_len = strlen(body);
    } else {
        body = strdup("");
    }

    char head[8192];
    size_t h = (size_t)snprintf(head, sizeof(head), "HTTP/1.1 %ld %s\r\n", status, reason(status));
    json_t *headers = json_object_get(r, "headers");
    bool have_ctype = false;
    const char *k;
    json_t *v;
    json_object_foreach(headers, k, v)
    {
        if (strcasecmp(k, "content-type") == 0)
            have_ctype = true;
        h += (size_t)snprintf(head + h, sizeof(head) - h, "%s: %s\r\n", k, json_string_value(v));
    }
    if (!have_ctype)
        h += (size_t)snprintf(head + h, sizeof(head) - h, "Content-Type: %s\r\n", ctype);
    if (stream)
        h += (size_t)snprintf(head + h, sizeof(head) - h,
                              "Cache-Control: no-cache\r\nConnection: close\r\n\r\n");
    else
        h += (size_t)snprintf(head + h, sizeof(head) - h, "Content-Length: %zu\r\n\r\n", body_len);
    bool ok = send_all(fd, head, h) == 0 && send_split(fd, body, body_len, split, split_delay) == 0;
    free(body);
    return ok && !stream;
}

static void log_request(const char *method, const char *path, json_t *headers, const char *body,
                        size_t body_len)
{
    json_t *rec = json_object();
    json_object_set_new(rec, "n", json_integer(++request_no));
    json_object_set_new(rec, "ms", json_integer(ms_since_start()));
    json_object_set_new(rec, "method", json_string(method));
    json_object_set_new(rec, "path", json_string(path));
    json_object_set(rec, "headers", headers);
    json_t *b = json_stringn(body, body_len);
    json_object_set_new(rec, "body", b ? b : json_string("(not UTF-8)"));
    char *line = json_dumps(rec, JSON_COMPACT);
    fprintf(request_log, "%s\n", line);
    fflush(request_log);
    free(line);
    json_decref(rec);
}

/* Handles every complete request in c's buffer; false to close the connection. */
static bool serve(struct conn *c)
{
    for (;;) {
        char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (!end)
            return c->len < MAX_HEADER;
        size_t head_len = (size_t)(end - c->buf) + 4;
        char *head = strndup(c->buf, head_len);
        char method[16] = "", path[1024] = "";
        sscanf(head, "%15s %1023s", method, path);
        json_t *headers = json_object();
        size_t content_length = 0;
        bool expect = false;
        for (char *line = strstr(head, "\r\n"); line && line[2] != '\r';) {
            line += 2;
            char *eol = strstr(line, "\r\n");
            char *colon = memchr(line, ':', (size_t)(eol - line));
            if (colon) {
                char name[128];
                size_t nl = (size_t)(colon - line) < sizeof(name) - 1 ? (size_t)(colon - line)
                                                                      : sizeof(name) - 1;
                for (size_t i = 0; i < nl; i++)
                    name[i] = (char)((line[i] >= 'A' && line[i] <= 'Z') ? line[i] + 32 : line[i]);
                name[nl] = '\0';
                const char *val = colon + 1;
                while (*val == ' ')
                    val++;
                json_object_set_new(headers, name, json_stringn(val, (size_t)(eol - val)));
                if (strcmp(name, "content-length") == 0)
                    content_length = strtoul(val, NULL, 10);
                if (strcmp(name, "expect") == 0)
                    expect = true;
            }
            line = eol;
        }
        free(head);
        if (content_length > MAX_BODY) {
            json_decref(headers);
            return false;
        }
        if (c->len < head_len + content_length) {
            json_decref(headers);
            if (expect && c->len == head_len)
                send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            return true; /* wait for the rest of the body */
        }
        log_request(method, path, headers, c->buf + head_len, content_length);
        json_decref(headers);
        size_t used = head_len + content_length;
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
        if (!answer(c->fd, next_scripted()))
            return false;
    }
}

int main(int argc, char **argv)
{
    const char *script = NULL, *log = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--script") == 0)
            script = argv[i + 1];
        else if (strcmp(argv[i], "--log") == 0)
            log = argv[i + 1];
    }
    if (!script || !log) {
        fprintf(stderr, "usage: openai_standin --script FILE --log FILE\n");
        return 2;
    }
    json_error_t je;
    json_t *root = json_load_file(script, 0, &je);
    if (!root) {
        fprintf(stderr, "openai_standin: %s:%d: %s\n", script, je.line, je.text);
        return 2;
    }
    script_responses = json_object_get(root, "responses");
    script_otherwise = json_object_get(root, "otherwise");
    if (!script_otherwise)
        script_otherwise = json_pack("{s:i,s:{s:{s:s}}}", "status", 599, "json", "error", "message",
                                     "script exhausted");
    request_log = fopen(log, "a");
    if (!request_log)
        die(log);
    signal(SIGPIPE, SIG_IGN);
    clock_gettime(CLOCK_MONOTONIC, &t_start);

    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0)
        die("socket");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 16) < 0)
        die("bind/listen");
    socklen_t sl = sizeof(sa);
    getsockname(ls, (struct sockaddr *)&sa, &sl);
    printf("%d\n", ntohs(sa.sin_port));
    fflush(stdout);

    struct conn conns[MAX_CONNS];
    size_t nconns = 0;
    for (;;) {
        struct pollfd pfd[MAX_CONNS + 1];
        pfd[0] = (struct pollfd){.fd = ls, .events = POLLIN};
        for (size_t i = 0; i < nconns; i++)
            pfd[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        if (poll(pfd, nconns + 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (size_t i = nconns; i-- > 0;) {
            if (!(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            struct conn *c = &conns[i];
            if (c->len + 65536 > c->cap) {
                c->cap = c->len + 65536;
                c->buf = realloc(c->buf, c->cap);
            }
            ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
            bool keep = n > 0;
            if (keep) {
                c->len += (size_t)n;
                keep = serve(c);
            }
            if (!keep) {
                close(c->fd);
                free(c->buf);
                conns[i] = conns[--nconns];
            }
        }
        if ((pfd[0].revents & POLLIN) && nconns < MAX_CONNS) {
            int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                conns[nconns++] = (struct conn){.fd = fd};
        }
    }
}
