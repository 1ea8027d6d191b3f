/* hub serve's metrics in the Prometheus text format, on --metrics ADDR:PORT (GET
 * /metrics): sessions, calls by outcome, refusals by layer, call latency as a
 * histogram, questions asked and refused, HTTP refusals. Kept as counters in struct
 * serve; nothing here allocates per call. */
#include "log.h"
#include "serve_impl.h"
#include "util.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const layers[] = {"permission", "hub-validation", "deadline", "spoke", "audit",
                                     "hub",        "client",         "other"};
static const double bucket_s[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                  0.05,   0.1,   0.25,   0.5,   1,    5};

void serve_metrics_call(struct serve *sv, const char *outcome, const char *layer,
                        uint64_t duration_ns)
{
    struct serve_metrics *m = &sv->m;
    if (strcmp(outcome, "success") == 0)
        m->calls_ok++;
    else if (strcmp(outcome, "tool-error") == 0)
        m->calls_tool_error++;
    else if (strcmp(outcome, "refused") == 0)
        m->calls_refused++;
    else
        m->calls_failed++;
    if (layer) {
        size_t i = 0;
        while (i + 1 < sizeof(layers) / sizeof(layers[0]) && strcmp(layers[i], layer) != 0)
            i++;
        m->refused_by_layer[i]++;
    }
    double s = (double)duration_ns / 1e9;
    for (size_t i = 0; i < sizeof(bucket_s) / sizeof(bucket_s[0]); i++)
        if (s <= bucket_s[i])
            m->latency_buckets[i]++;
    m->latency_count++;
    m->latency_sum_s += s;
}

char *serve_metrics_text(const struct serve *sv)
{
    const struct serve_metrics *m = &sv->m;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b,
                        "# HELP isolate_serve_sessions_open Client sessions open now.\n"
                        "# TYPE isolate_serve_sessions_open gauge\n"
                        "isolate_serve_sessions_open %llu\n"
                        "# HELP isolate_serve_sessions_total Client sessions started.\n"
                        "# TYPE isolate_serve_sessions_total counter\n"
                        "isolate_serve_sessions_total %llu\n"
                        "# HELP isolate_serve_calls_total Tool calls by outcome.\n"
                        "# TYPE isolate_serve_calls_total counter\n"
                        "isolate_serve_calls_total{outcome=\"success\"} %llu\n"
                        "isolate_serve_calls_total{outcome=\"tool-error\"} %llu\n"
                        "isolate_serve_calls_total{outcome=\"refused\"} %llu\n"
                        "isolate_serve_calls_total{outcome=\"failure\"} %llu\n"
                        "isolate_serve_calls_total{outcome=\"cancelled\"} %llu\n",
                        (unsigned long long)m->sessions_open, (unsigned long long)m->sessions_total,
                        (unsigned long long)m->calls_ok, (unsigned long long)m->calls_tool_error,
                        (unsigned long long)m->calls_refused, (unsigned long long)m->calls_failed,
                        (unsigned long long)m->calls_cancelled);
    evbuffer_add_printf(b, "# HELP isolate_serve_stopped_total Calls the hub refused or that "
                           "failed, by the layer that stopped them.\n"
                           "# TYPE isolate_serve_stopped_total counter\n");
    for (size_t i = 0; i < sizeof(layers) / sizeof(layers[0]); i++)
        evbuffer_add_printf(b, "isolate_serve_stopped_total{layer=\"%s\"} %llu\n", layers[i],
                            (unsigned long long)m->refused_by_layer[i]);
    evbuffer_add_printf(b, "# HELP isolate_serve_call_seconds Tool call latency through the "
                           "hub.\n# TYPE isolate_serve_call_seconds histogram\n");
    for (size_t i = 0; i < sizeof(bucket_s) / sizeof(bucket_s[0]); i++)
        evbuffer_add_printf(b, "isolate_serve_call_seconds_bucket{le=\"%g\"} %llu\n", bucket_s[i],
                            (unsigned long long)m->latency_buckets[i]);
    evbuffer_add_printf(b,
                        "isolate_serve_call_seconds_bucket{le=\"+Inf\"} %llu\n"
                        "isolate_serve_call_seconds_sum %.6f\n"
                        "isolate_serve_call_seconds_count %llu\n"
                        "# HELP isolate_serve_questions_total Permission and elicitation "
                        "questions sent to clients.\n"
                        "# TYPE isolate_serve_questions_total counter\n"
                        "isolate_serve_questions_total %llu\n"
                        "# HELP isolate_serve_denied_total Permission questions answered no.\n"
                        "# TYPE isolate_serve_denied_total counter\n"
                        "isolate_serve_denied_total %llu\n"
                        "# HELP isolate_serve_http_refused_total HTTP requests refused before "
                        "a session, by reason.\n"
                        "# TYPE isolate_serve_http_refused_total counter\n"
                        "isolate_serve_http_refused_total{reason=\"unauthorized\"} %llu\n"
                        "isolate_serve_http_refused_total{reason=\"forbidden\"} %llu\n"
                        "isolate_serve_http_refused_total{reason=\"limit\"} %llu\n",
                        (unsigned long long)m->latency_count, m->latency_sum_s,
                        (unsigned long long)m->latency_count, (unsigned long long)m->asks_total,
                        (unsigned long long)m->asks_denied,
                        (unsigned long long)m->http_unauthorized,
                        (unsigned long long)m->http_forbidden, (unsigned long long)m->http_limited);
    size_t n = evbuffer_get_length(b);
    char *text = xmalloc(n + 1);
    evbuffer_remove(b, text, n);
    text[n] = '\0';
    evbuffer_free(b);
    return text;
}

static void on_metrics(struct evhttp_request *req, void *ud)
{
    struct serve *sv = ud;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_send_error(req, 405, "Method Not Allowed");
        return;
    }
    char *text = serve_metrics_text(sv);
    struct evbuffer *out = evbuffer_new();
    evbuffer_add(out, text, strlen(text));
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

int serve_metrics_listen(struct serve *sv, const char *addr, char *err, size_t errlen)
{
    char why[300];
    int fd = serve_listen_socket(addr, true, NULL, why, sizeof(why));
    if (fd < 0) {
        snprintf(err, errlen, "--metrics %s: %s", addr, why);
        return -1;
    }
    sv->metrics_http = evhttp_new(sv->base);
    evhttp_set_allowed_methods(sv->metrics_http, EVHTTP_REQ_GET);
    evhttp_set_cb(sv->metrics_http, "/metrics", on_metrics, sv);
    evhttp_set_timeout(sv->metrics_http, 10);
    evhttp_set_max_body_size(sv->metrics_http, 0);
    evhttp_set_max_headers_size(sv->metrics_http, 8192);
    if (!evhttp_accept_socket_with_handle(sv->metrics_http, fd)) {
        close(fd);
        snprintf(err, errlen, "--metrics %s: cannot serve", addr);
        return -1;
    }
    return 0;
}
