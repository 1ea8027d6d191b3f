#include "metrics.h"

#include "netproxy/netproxy.h"
#include "netproxy/core/core.h"
#include "util.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Workers on several threads bump the same counters: relaxed atomic adds (the
 * exposition reads a moment's values, nothing orders against them). */
#define ADD(field, v) __atomic_add_fetch(&(field), (v), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* Upper bounds in seconds, shared by the DNS and connect histograms. */
static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                 0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct histogram {
    uint64_t counts[NBUCKETS + 1]; /* the last one is +Inf */
    uint64_t n;
    uint64_t sum_ns;
};

struct metrics {
    uint64_t decisions[DECISION_KINDS][R_COUNT];
    uint64_t closed[CLOSE_COUNT];
    uint64_t bytes_up, bytes_down;
    uint64_t audit_failures;
    uint64_t accept_errors;
    struct histogram dns, connect;
    struct evhttp *http;
    struct proxy *px;
};

struct metrics *metrics_new(void)
{
    return xcalloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    if (m->http)
        evhttp_free(m->http);
    free(m);
}

void metrics_decision(struct metrics *m, enum decision_kind kind, enum reason r)
{
    if ((unsigned)kind < DECISION_KINDS && (unsigned)r < R_COUNT)
        ADD(m->decisions[kind][r], 1);
}

static void observe(struct histogram *h, uint64_t ns)
{
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < NBUCKETS && s > buckets[i])
        i++;
    ADD(h->counts[i], 1);
    ADD(h->n, 1);
    ADD(h->sum_ns, ns);
}

void metrics_dns(struct metrics *m, uint64_t ns)
{
    observe(&m->dns, ns);
}

void metrics_connect(struct metrics *m, uint64_t ns)
{
    observe(&m->connect, ns);
}

void metrics_bytes(struct metrics *m, uint64_t up, uint64_t down)
{
    if (up)
        ADD(m->bytes_up, up);
    if (down)
        ADD(m->bytes_down, down);
}

void metrics_closed(struct metrics *m, enum close_reason r)
{
    if ((unsigned)r < CLOSE_COUNT)
        ADD(m->closed[r], 1);
}

void metrics_audit_failure(struct metrics *m)
{
    ADD(m->audit_failures, 1);
}

void metrics_accept_error(struct metrics *m)
{
    ADD(m->accept_errors, 1);
}

struct text {
    char *buf;
    size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void out(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (n > 0 ? (size_t)n : 0);
        t->buf = xrealloc(t->buf, t->cap);
    }
}

static void render_histogram(struct text *t, const char *name, const char *help,
                             const struct histogram *h)
{
    out(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < NBUCKETS; i++) {
        cum += h->counts[i];
        out(t, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[i], (unsigned long long)cum);
    }
    cum += h->counts[NBUCKETS];
    out(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    out(t, "%s_sum %.9f\n%s_count %llu\n", name, (double)h->sum_ns / 1e9, name,
        (unsigned long long)h->n);
}

static unsigned idle_pipes(const struct proxy *px)
{
    unsigned n = 0;
    for (unsigned i = 0; i < px->nworkers; i++)
        if (px->workers[i].pipes)
            n += pipe_pool_size(px->workers[i].pipes);
    return n;
}

char *metrics_render(const struct metrics *m, const struct proxy *px, size_t *len)
{
    static const char *const kinds[DECISION_KINDS] = {"allow", "deny", "would-deny"};
    struct text t = {.buf = xmalloc(4096), .cap = 4096};
    out(&t, "# HELP netproxy_decisions_total CONNECT decisions by outcome and reason.\n"
            "# TYPE netproxy_decisions_total counter\n");
    for (int k = 0; k < DECISION_KINDS; k++)
        for (int r = 0; r < R_COUNT; r++)
            if (m->decisions[k][r] || (k == DECISION_ALLOW && r == R_ALLOWED))
                out(&t, "netproxy_decisions_total{decision=\"%s\",reason=\"%s\"} %llu\n", kinds[k],
                    reason_code((enum reason)r), (unsigned long long)m->decisions[k][r]);
    out(&t, "# HELP netproxy_tunnels_closed_total Established tunnels closed, by cause.\n"
            "# TYPE netproxy_tunnels_closed_total counter\n");
    for (int r = 0; r < CLOSE_COUNT; r++)
        out(&t, "netproxy_tunnels_closed_total{reason=\"%s\"} %llu\n",
            close_reason_code((enum close_reason)r), (unsigned long long)m->closed[r]);
    out(&t,
        "# HELP netproxy_tunnels_active Tunnels being set up or relaying.\n"
        "# TYPE netproxy_tunnels_active gauge\nnetproxy_tunnels_active %u\n"
        "# HELP netproxy_connections_pending Connections still sending their request.\n"
        "# TYPE netproxy_connections_pending gauge\nnetproxy_connections_pending %u\n",
        LOAD(px->tunnels), LOAD(px->pending));
    out(&t, "# HELP netproxy_spoke_tunnels_active Tunnels per spoke.\n"
            "# TYPE netproxy_spoke_tunnels_active gauge\n");
    for (const struct spoke *s = px->spokes; s; s = s->next)
        out(&t, "netproxy_spoke_tunnels_active{spoke=\"%s\"} %u\n", s->name, LOAD(s->tunnels));
    out(&t,
        "# HELP netproxy_bytes_total Payload bytes relayed.\n"
        "# TYPE netproxy_bytes_total counter\n"
        "netproxy_bytes_total{direction=\"client-to-upstream\"} %llu\n"
        "netproxy_bytes_total{direction=\"upstream-to-client\"} %llu\n",
        (unsigned long long)m->bytes_up, (unsigned long long)m->bytes_down);
    render_histogram(&t, "netproxy_dns_duration_seconds", "Time to resolve a destination.",
                     &m->dns);
    render_histogram(&t, "netproxy_connect_duration_seconds", "Time to connect to the upstream.",
                     &m->connect);
    out(&t,
        "# HELP netproxy_audit_write_failures_total Audit lines that could not be written.\n"
        "# TYPE netproxy_audit_write_failures_total counter\n"
        "netproxy_audit_write_failures_total %llu\n"
        "# HELP netproxy_accept_errors_total accept() failures (descriptors exhausted).\n"
        "# TYPE netproxy_accept_errors_total counter\nnetproxy_accept_errors_total %llu\n"
        "# HELP netproxy_idle_pipes Splice pipes kept for reuse.\n"
        "# TYPE netproxy_idle_pipes gauge\nnetproxy_idle_pipes %u\n",
        (unsigned long long)m->audit_failures, (unsigned long long)m->accept_errors,
        idle_pipes(px));
    *len = t.len;
    return t.buf;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct metrics *m = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_send_error(req, 405, "Method Not Allowed");
        return;
    }
    size_t len;
    char *text = metrics_render(m, m->px, &len);
    struct evbuffer *body = evbuffer_new();
    if (!body) {
        free(text);
        evhttp_send_error(req, 500, "Internal Server Error");
        return;
    }
    evbuffer_add(body, text, len);
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", body);
    evbuffer_free(body);
}

static void on_other(struct evhttp_request *req, void *arg)
{
    (void)arg;
    evhttp_send_error(req, 404, "Not Found");
}

int metrics_serve(struct metrics *m, struct proxy *px, int fd)
{
    m->px = px;
    m->http = evhttp_new(px->base);
    if (!m->http)
        return -1;
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
    evhttp_set_max_headers_size(m->http, 8192);
    evhttp_set_max_body_size(m->http, 0);
    evhttp_set_timeout(m->http, 10);
    evhttp_set_cb(m->http, "/metrics", on_request, m);
    evhttp_set_gencb(m->http, on_other, m);
    if (!evhttp_accept_socket_with_handle(m->http, fd))
        return -1;
    return 0;
}
