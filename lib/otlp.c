#include "otlp.h"
#include "log.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct otlp {
    char *url;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    json_t *queue; /* spans (OTLP JSON objects) waiting */
    bool stopping;
    uint64_t dropped, exported;
};

static void attr(json_t *attrs, const char *key, const char *value)
{
    if (value && value[0])
        json_array_append_new(
            attrs, json_pack("{s:s,s:{s:s}}", "key", key, "value", "stringValue", value));
}

static json_t *span_json(const struct otlp_span *s)
{
    char start[24], end[24];
    snprintf(start, sizeof(start), "%" PRIu64, s->start_unix_ns);
    snprintf(end, sizeof(end), "%" PRIu64, s->end_unix_ns);
    json_t *attrs = json_array();
    attr(attrs, "enduser.id", s->user);
    attr(attrs, "isolate.app", s->app);
    attr(attrs, "isolate.tool", s->tool);
    attr(attrs, "isolate.call.id", s->call_id);
    attr(attrs, "isolate.caller.app", s->caller);
    json_t *span = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:o}", "traceId", s->trace_id, "spanId",
                             s->span_id, "name", s->name, "kind", 1, "startTimeUnixNano", start,
                             "endTimeUnixNano", end, "attributes", attrs);
    if (s->parent_id && s->parent_id[0])
        json_object_set_new(span, "parentSpanId", json_string(s->parent_id));
    json_t *status = json_pack("{s:i}", "code", s->error ? 2 : 1);
    if (s->error && s->message)
        json_object_set_new(status, "message", json_string(s->message));
    json_object_set_new(span, "status", status);
    return span;
}

void otlp_span(struct otlp *o, const struct otlp_span *s)
{
    if (!o)
        return;
    json_t *span = span_json(s);
    pthread_mutex_lock(&o->lock);
    if (o->stopping || json_array_size(o->queue) >= OTLP_QUEUE_MAX) {
        o->dropped++;
        json_decref(span);
    } else {
        json_array_append_new(o->queue, span);
        if (json_array_size(o->queue) >= OTLP_BATCH)
            pthread_cond_signal(&o->wake);
    }
    pthread_mutex_unlock(&o->lock);
}

uint64_t otlp_dropped(struct otlp *o)
{
    pthread_mutex_lock(&o->lock);
    uint64_t d = o->dropped;
    pthread_mutex_unlock(&o->lock);
    return d;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

/* One POST of spans; true when the collector took it (2xx). */
static bool post(struct otlp *o, CURL *curl, json_t *spans, long timeout_ms)
{
    json_t *body =
        json_pack("{s:[{s:{s:[{s:s,s:{s:s}}]},s:[{s:{s:s},s:O}]}]}", "resourceSpans", "resource",
                  "attributes", "key", "service.name", "value", "stringValue", "isolategpt-hub",
                  "scopeSpans", "scope", "name", "isolategpt", "spans", spans);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return false;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, o->url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    free(text);
    return rc == CURLE_OK && status >= 200 && status < 300;
}

static void *exporter(void *arg)
{
    struct otlp *o = arg;
    CURL *curl = curl_easy_init();
    pthread_mutex_lock(&o->lock);
    for (;;) {
        if (json_array_size(o->queue) == 0 && !o->stopping) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&o->wake, &o->lock, &until);
        }
        if (json_array_size(o->queue) == 0) {
            if (o->stopping)
                break;
            continue;
        }
        /* A batch out of the queue; the lock is not held while it is sent. */
        json_t *batch = json_array();
        while (json_array_size(o->queue) > 0 && json_array_size(batch) < OTLP_BATCH) {
            json_array_append(batch, json_array_get(o->queue, 0));
            json_array_remove(o->queue, 0);
        }
        bool last = o->stopping;
        pthread_mutex_unlock(&o->lock);
        bool ok = curl && post(o, curl, batch, last ? OTLP_FLUSH_S * 1000L : 5000L);
        pthread_mutex_lock(&o->lock);
        if (ok)
            o->exported += json_array_size(batch);
        else
            o->dropped += json_array_size(batch);
        json_decref(batch);
        if (last) {
            /* One try at the end, then whatever is left is dropped. */
            o->dropped += json_array_size(o->queue);
            json_array_clear(o->queue);
            break;
        }
    }
    pthread_mutex_unlock(&o->lock);
    if (curl)
        curl_easy_cleanup(curl);
    return NULL;
}

struct otlp *otlp_from_env(void)
{
    const char *traces = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    const char *base = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    char *url = NULL;
    if (traces && traces[0])
        url = xstrdup(traces);
    else if (base && base[0]) {
        size_t n = strlen(base);
        url = xasprintf("%.*s/v1/traces", (int)(base[n - 1] == '/' ? n - 1 : n), base);
    }
    if (!url)
        return NULL;
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        log_warnx("OTLP endpoint %s: not an http(s) URL; no traces exported", url);
        free(url);
        return NULL;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct otlp *o = xcalloc(1, sizeof(*o));
    o->url = url;
    o->queue = json_array();
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->wake, NULL);
    if (pthread_create(&o->thread, NULL, exporter, o) != 0) {
        log_warnx("OTLP: cannot start the exporter thread; no traces exported");
        json_decref(o->queue);
        free(o->url);
        free(o);
        return NULL;
    }
    return o;
}

void otlp_free(struct otlp *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    o->stopping = true;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    if (o->dropped)
        log_warnx("OTLP: %" PRIu64 " spans not exported to %s (queue full or the collector "
                  "did not take them); %" PRIu64 " exported",
                  o->dropped, o->url, o->exported);
    json_decref(o->queue);
    pthread_mutex_destroy(&o->lock);
    pthread_cond_destroy(&o->wake);
    free(o->url);
    free(o);
}
