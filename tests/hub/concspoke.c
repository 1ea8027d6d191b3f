/* concspoke: an MCP server that serves many calls at once, answering each when it is
 * done (in any order), for the hub's tests of calls in flight (test_hub_inflight.c).
 * Raw JSON-RPC on a poll loop, no SDK: some of its tools break the protocol on
 * purpose. `concspoke --manifest NAME [MAX_INFLIGHT]` prints the manifest that pins
 * its tools, so the test and the spoke never disagree about them.
 *
 * Tools (arguments in braces; every answer's structuredContent says when the call
 * arrived and ended, in ms of CLOCK_MONOTONIC, and how many calls the spoke held):
 *   sleep {ms}                 answers after ms
 *   queue {ms}                 takes ms of a worker that does one call at a time: each
 *                              waits for the queue calls before it (a server that works
 *                              through its input one request after another)
 *   progress {n}               n progress notifications with its own token, then answers
 *   ask {method, params, name} asks the hub (isolate/call, sampling, elicitation) and
 *                              answers with the hub's answer; name says how the request
 *                              names its call: "id" (_meta.relatedRequestId), "token"
 *                              (_meta.progressToken), "none", "wrong" (an id not in flight)
 *   log {text, name}           a notifications/message, named likewise, then answers
 *   stats                      the most calls it held at once, and cancellations seen
 * and the attacks:
 *   hold                       never answers; once cancelled, answers all the same
 *   forge                      answers an id the hub never sent, then its own
 *   twice                      answers its call twice
 *   steal {token, n}           n progress notifications with token (default: the token
 *                              of another call it holds)
 *   hang                       stops reading and answering anything, pings included */
#include "jsonrpc.h"

#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const tool_names[] = {"sleep", "progress", "ask",   "log",  "stats", "hold",
                                         "forge", "twice",    "steal", "hang", "queue"};
#define N_TOOLS (sizeof(tool_names) / sizeof(tool_names[0]))

struct held {
    struct held *next;
    json_t *id; /* the hub's request id */
    char token[80];
    long long started, due; /* due 0: not on a timer */
    int inflight_at_start;
    json_int_t asked; /* our request to the hub this call waits for; 0 none */
    bool hold;
};

static struct held *calls;
static int n_held, max_held, cancels_seen;
static long long queue_free_ms; /* when the one-at-a-time worker of queue is free */
static json_int_t next_id = 1;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void send_msg(json_t *msg)
{
    if (jrpc_send(STDOUT_FILENO, msg) < 0)
        exit(0); /* the hub went away */
}

static json_t *tools_json(void)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < N_TOOLS; i++)
        json_array_append_new(arr,
                              json_pack("{s:s,s:s,s:{s:s}}", "name", tool_names[i], "description",
                                        "Concurrency probe.", "inputSchema", "type", "object"));
    return arr;
}

static json_t *answer_for(const struct held *h, json_t *extra)
{
    json_t *sc = json_pack("{s:I,s:I,s:i,s:i}", "started_ms", (json_int_t)h->started, "ended_ms",
                           (json_int_t)now_ms(), "inflight_at_start", h->inflight_at_start,
                           "max_inflight", max_held);
    if (extra)
        json_object_update(sc, extra);
    json_decref(extra);
    char *text = json_dumps(sc, JSON_COMPACT);
    json_t *r = json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text", text,
                          "structuredContent", sc);
    free(text);
    return r;
}

static void drop(struct held *h)
{
    for (struct held **p = &calls; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    n_held--;
    json_decref(h->id);
    free(h);
}

static void finish(struct held *h, json_t *extra)
{
    send_msg(jrpc_result(h->id, answer_for(h, extra)));
    drop(h);
}

static json_t *named_meta(const struct held *h, const char *name)
{
    if (!name || strcmp(name, "id") == 0)
        return json_pack("{s:O}", "relatedRequestId", h->id);
    if (strcmp(name, "token") == 0)
        return json_pack("{s:s}", "progressToken", h->token);
    if (strcmp(name, "wrong") == 0)
        return json_pack("{s:I}", "relatedRequestId", (json_int_t)987654321);
    return NULL;
}

static void progress(const char *token, int n)
{
    for (int i = 0; i < n; i++)
        send_msg(jrpc_notification(
            "notifications/progress",
            json_pack("{s:s,s:i,s:i}", "progressToken", token, "progress", i + 1, "total", n)));
}

static void on_call(json_t *id, const json_t *params)
{
    const char *tool = json_string_value(json_object_get(params, "name"));
    const json_t *a = json_object_get(params, "arguments");
    const char *token =
        json_string_value(json_object_get(json_object_get(params, "_meta"), "progressToken"));
    struct held *h = calloc(1, sizeof(*h));
    h->id = json_incref(id);
    snprintf(h->token, sizeof(h->token), "%s", token ? token : "");
    h->started = now_ms();
    h->next = calls;
    calls = h;
    h->inflight_at_start = ++n_held;
    if (n_held > max_held)
        max_held = n_held;
    tool = tool ? tool : "";
    if (strcmp(tool, "sleep") == 0) {
        h->due = h->started + json_integer_value(json_object_get(a, "ms"));
    } else if (strcmp(tool, "queue") == 0) {
        long long from = queue_free_ms > h->started ? queue_free_ms : h->started;
        h->due = queue_free_ms = from + json_integer_value(json_object_get(a, "ms"));
    } else if (strcmp(tool, "progress") == 0) {
        progress(h->token, (int)json_integer_value(json_object_get(a, "n")));
        finish(h, NULL);
    } else if (strcmp(tool, "ask") == 0) {
        json_t *p = json_deep_copy(json_object_get(a, "params"));
        if (!json_is_object(p)) {
            json_decref(p);
            p = json_object();
        }
        json_t *meta = named_meta(h, json_string_value(json_object_get(a, "name")));
        if (meta)
            json_object_set_new(p, "_meta", meta);
        h->asked = next_id++;
        const char *method = json_string_value(json_object_get(a, "method"));
        send_msg(jrpc_request(h->asked, method ? method : "isolate/call", p));
    } else if (strcmp(tool, "log") == 0) {
        json_t *p = json_pack("{s:s,s:O}", "level", "info", "data", json_object_get(a, "text"));
        json_t *meta = named_meta(h, json_string_value(json_object_get(a, "name")));
        if (meta)
            json_object_set_new(p, "_meta", meta);
        send_msg(jrpc_notification("notifications/message", p));
        finish(h, NULL);
    } else if (strcmp(tool, "stats") == 0) {
        finish(h, json_pack("{s:i}", "cancels_seen", cancels_seen));
    } else if (strcmp(tool, "hold") == 0) {
        h->hold = true;
    } else if (strcmp(tool, "forge") == 0) {
        send_msg(jrpc_result(json_integer(json_integer_value(id) + 100000), answer_for(h, NULL)));
        finish(h, NULL);
    } else if (strcmp(tool, "twice") == 0) {
        send_msg(jrpc_result(h->id, answer_for(h, NULL)));
        finish(h, NULL);
    } else if (strcmp(tool, "steal") == 0) {
        const char *victim = json_string_value(json_object_get(a, "token"));
        for (struct held *o = calls; !victim && o; o = o->next)
            if (o != h)
                victim = o->token;
        progress(victim ? victim : "", (int)json_integer_value(json_object_get(a, "n")));
        finish(h, NULL);
    } else if (strcmp(tool, "hang") == 0) {
        sleep(600); /* nothing read, nothing answered */
        exit(0);
    } else {
        send_msg(jrpc_error(id, JRPC_INVALID_PARAMS, "unknown tool", NULL));
        drop(h);
    }
}

/* The hub answered one of our requests: the call that asked answers with it. */
static void on_answer(const json_t *msg)
{
    json_int_t id = json_integer_value(json_object_get(msg, "id"));
    for (struct held *h = calls; h; h = h->next)
        if (h->asked == id) {
            const json_t *r = json_object_get(msg, "result");
            const json_t *e = json_object_get(msg, "error");
            finish(h, r ? json_pack("{s:b,s:O}", "ok", 1, "result", r)
                        : json_pack("{s:b,s:O}", "ok", 0, "error", e));
            return;
        }
}

static void on_cancel(const json_t *params)
{
    const json_t *rid = json_object_get(params, "requestId");
    cancels_seen++;
    for (struct held *h = calls; h; h = h->next)
        if (json_equal(h->id, rid)) {
            if (h->hold)
                finish(h, json_pack("{s:b}", "late", 1)); /* answers the cancelled call */
            else
                drop(h); /* as MCP asks: no answer */
            return;
        }
}

static void on_frame(const char *line, size_t len)
{
    json_t *msg = json_loadb(line, len, 0, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    if (!method) {
        if (id)
            on_answer(msg);
    } else if (!id) {
        if (strcmp(method, "notifications/cancelled") == 0)
            on_cancel(params);
    } else if (strcmp(method, "initialize") == 0) {
        send_msg(jrpc_result(id, json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion",
                                           "2025-11-25", "capabilities", "tools", "serverInfo",
                                           "name", "concspoke", "version", "1")));
    } else if (strcmp(method, "tools/list") == 0) {
        send_msg(jrpc_result(id, json_pack("{s:o}", "tools", tools_json())));
    } else if (strcmp(method, "tools/call") == 0) {
        on_call(id, params);
    } else if (strcmp(method, "ping") == 0) {
        send_msg(jrpc_result(id, json_object()));
    } else {
        send_msg(jrpc_error(id, JRPC_METHOD_NOT_FOUND, "method not found", NULL));
    }
    json_decref(msg);
}

static int print_manifest(const char *name, int max_inflight)
{
    json_t *m =
        json_pack("{s:s,s:s,s:[s],s:s,s:{s:i},s:o}", "name", name, "description",
                  "Serves many calls at once (tests/hub/concspoke.c).", "command", "concspoke",
                  "runtime", "c", "limits", "call_s", 20, "tools", tools_json());
    if (max_inflight > 0)
        json_object_set_new(m, "max_inflight", json_integer(max_inflight));
    json_dumpf(m, stdout, JSON_INDENT(1));
    json_decref(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--manifest") == 0)
        return print_manifest(argv[2], argc >= 4 ? atoi(argv[3]) : 0);
    struct line_reader lr;
    lr_init(&lr, JRPC_DEFAULT_MAX_FRAME);
    for (;;) {
        long long now = now_ms(), next = -1;
        for (struct held *h = calls, *nx; h; h = nx) {
            nx = h->next;
            if (h->due && h->due <= now)
                finish(h, NULL);
            else if (h->due && (next < 0 || h->due < next))
                next = h->due;
        }
        struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
        int rc = poll(&pfd, 1, next < 0 ? -1 : (int)(next - now));
        if (rc <= 0)
            continue;
        ssize_t n = lr_fill(&lr, STDIN_FILENO);
        if (n == 0)
            return 0;
        const char *line;
        size_t len;
        enum lr_status st;
        while ((st = lr_next(&lr, &line, &len)) == LR_LINE)
            on_frame(line, len);
        if (st == LR_TOO_LONG)
            return 1;
    }
}
