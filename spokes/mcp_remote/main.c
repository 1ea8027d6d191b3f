/* mcp_remote URL: the bridge that makes a remote MCP server (Streamable HTTP) a spoke.
 * It speaks MCP stdio to the hub (newline-delimited JSON-RPC) and forwards each message
 * as an HTTP POST to URL, writing back what the server answers (a JSON body or the
 * events of an SSE stream), so that the hub pins, validates, mediates and audits a
 * remote server exactly as a local one. In namespace mode its only way out is netproxy
 * (HTTPS_PROXY, which libcurl reads itself) under the app's allowlist: the URL's
 * registrable domain, the address guard. The credential is MCP_REMOTE_BEARER, from a
 * hub secret bound to the URL's host with --hosts: the jail holds a stand-in, and
 * netproxy puts the real value into the Authorization header at the egress.
 *
 * The older HTTP+SSE transport (2024-11-05) too: when the first POST gets a 4xx other
 * than 401/403, the bridge GETs the URL as an SSE stream, whose first event names the
 * endpoint (same origin only) that messages are POSTed to from then on; answers come on
 * the stream, written by the thread that reads it.
 *
 * Requests run concurrently, each in a thread of its own (up to JOBS_MAX); initialize,
 * notifications and answers to the server's requests go in order. */
#include "util.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MSG_MAX (1024 * 1024)    /* a message either way, as the hub's own bound */
#define SESSION_ID_MAX 256       /* Mcp-Session-Id: visible ASCII */
#define TOKEN_MAX (4096 + 16)    /* the store's bound for a value sent in a header */
#define ERR_UNREACHABLE (-32001) /* JSON-RPC server error codes the bridge answers with */
#define ERR_HTTP (-32002)
#define JOBS_MAX 8             /* requests under way at once (threads, in the jail's nproc) */
#define JOB_STACK (512 * 1024) /* a thread's stack: the jail's address space is bounded */

static const char *url;
static char session_id[SESSION_ID_MAX + 1];
static char protocol_version[40];
/* HTTP+SSE: the endpoint the stream named (NULL until then), and who waits for it. */
static char *legacy_endpoint;
static bool legacy_stream_ended, legacy_endpoint_refused;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t endpoint_named = PTHREAD_COND_INITIALIZER;
static sem_t slots;

/* What one POST's response is being read as. */
struct response {
    char ctype[128];
    bool sse, too_big, wrote_answer;
    char event[32];     /* the current SSE event's type ("" is "message") */
    json_t *request_id; /* the id the answer must carry, or NULL */
    char *buf;          /* a JSON body, or the SSE lines not yet complete */
    size_t len;
    char *event_data; /* the current SSE event's data lines */
    size_t event_len;
};

/* One message to the hub: compact, one line. */
static void emit(json_t *msg, struct response *r)
{
    pthread_mutex_lock(&lock);
    if (r && r->request_id && json_equal(json_object_get(msg, "id"), r->request_id) &&
        !json_object_get(msg, "method"))
        r->wrote_answer = true;
    /* An initialize result gives the protocol version every later request names. */
    const char *pv =
        json_string_value(json_object_get(json_object_get(msg, "result"), "protocolVersion"));
    if (pv && strlen(pv) < sizeof(protocol_version))
        snprintf(protocol_version, sizeof(protocol_version), "%s", pv);
    char *s = json_dumps(msg, JSON_COMPACT);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    free(s);
    pthread_mutex_unlock(&lock);
}

static void emit_text(const char *text, size_t len, struct response *r)
{
    json_error_t e;
    json_t *v = json_loadb(text, len, 0, &e);
    if (!v) {
        fprintf(stderr, "mcp_remote: the server sent malformed JSON (%s); dropped\n", e.text);
        return;
    }
    if (json_is_array(v)) { /* a batch, from an older server */
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) if (json_is_object(m)) emit(m, r);
    } else if (json_is_object(v)) {
        emit(v, r);
    }
    json_decref(v);
}

/* A JSON-RPC error for a request the server did not answer. */
static void answer_error(const json_t *id, int code, const char *message)
{
    json_t *m = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                          code, "message", message);
    emit(m, NULL);
    json_decref(m);
}

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    struct response *r = ud;
    size_t len = size * n, vlen;
    const char *v;
    /* A new status line (after a 100 Continue): what came before does not count. */
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        r->ctype[0] = '\0';
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return len;
    size_t nlen = (size_t)(colon - line);
    v = colon + 1;
    vlen = len - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (nlen == 14 && strncasecmp(line, "Mcp-Session-Id", 14) == 0) {
        bool visible = vlen > 0 && vlen <= SESSION_ID_MAX;
        for (size_t i = 0; visible && i < vlen; i++)
            visible = v[i] > 0x20 && v[i] < 0x7f;
        if (visible) {
            pthread_mutex_lock(&lock);
            memcpy(session_id, v, vlen);
            session_id[vlen] = '\0';
            pthread_mutex_unlock(&lock);
        } else {
            fprintf(stderr, "mcp_remote: ignoring a malformed Mcp-Session-Id\n");
        }
    } else if (nlen == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
        snprintf(r->ctype, sizeof(r->ctype), "%.*s", (int)vlen, v);
        r->sse = strncasecmp(r->ctype, "text/event-stream", 17) == 0;
    }
    return len;
}

/* HTTP+SSE's endpoint event: a path, or a URL of the same origin as url (a server may
 * not send the hub's messages elsewhere). */
static void name_endpoint(const char *data, size_t len)
{
    const char *origin_end = url + 8 + strcspn(url + 8, "/?#");
    size_t olen = (size_t)(origin_end - url);
    char *ep = NULL;
    bool visible = len > 0 && len < 2048;
    for (size_t i = 0; visible && i < len; i++)
        visible = data[i] > 0x20 && data[i] < 0x7f;
    if (visible && data[0] == '/' && (len < 2 || data[1] != '/'))
        ep = xasprintf("%.*s%.*s", (int)olen, url, (int)len, data);
    else if (visible && len > olen && strncmp(data, url, olen) == 0 && strchr("/?", data[olen]))
        ep = xstrndup(data, len);
    pthread_mutex_lock(&lock);
    if (ep && !legacy_endpoint)
        legacy_endpoint = ep;
    else
        free(ep);
    if (!legacy_endpoint) {
        legacy_endpoint_refused = true;
        fprintf(stderr, "mcp_remote: the stream's endpoint is not of the server's origin\n");
    }
    pthread_cond_broadcast(&endpoint_named);
    pthread_mutex_unlock(&lock);
}

/* One SSE line (without its end): "data:" lines make the event, a blank line ends it. */
static void sse_line(struct response *r, const char *line, size_t len)
{
    if (len == 0) {
        if (r->event_len && strcmp(r->event, "endpoint") == 0)
            name_endpoint(r->event_data, r->event_len);
        else if (r->event_len && (!r->event[0] || strcmp(r->event, "message") == 0))
            emit_text(r->event_data, r->event_len, r);
        r->event_len = 0;
        r->event[0] = '\0';
        return;
    }
    if (len > 6 && strncmp(line, "event:", 6) == 0) {
        line += 6, len -= 6;
        if (len && *line == ' ')
            line++, len--;
        snprintf(r->event, sizeof(r->event), "%.*s", (int)len, line);
        return;
    }
    if (len < 5 || strncmp(line, "data:", 5) != 0)
        return; /* id:, retry:, comments: nothing the hub needs */
    line += 5, len -= 5;
    if (len && *line == ' ')
        line++, len--;
    if (r->event_len + len + 1 > MSG_MAX) {
        r->too_big = true;
        return;
    }
    r->event_data = xrealloc(r->event_data, r->event_len + len + 1);
    if (r->event_len)
        r->event_data[r->event_len++] = '\n';
    memcpy(r->event_data + r->event_len, line, len);
    r->event_len += len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct response *r = ud;
    size_t len = size * n;
    if (r->len + len > MSG_MAX + 2) {
        r->too_big = true;
        return 0; /* ends the transfer */
    }
    r->buf = xrealloc(r->buf, r->len + len + 1);
    memcpy(r->buf + r->len, data, len);
    r->len += len;
    if (!r->sse)
        return len;
    /* Complete lines now: a stream may stay open between events. */
    size_t start = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->buf[i] != '\n')
            continue;
        size_t end = i;
        if (end > start && r->buf[end - 1] == '\r')
            end--;
        sse_line(r, r->buf + start, end - start);
        start = i + 1;
    }
    memmove(r->buf, r->buf + start, r->len - start);
    r->len -= start;
    return r->too_big ? 0 : len;
}

static struct curl_slist *headers(const char *method_json)
{
    struct curl_slist *h = NULL;
    if (method_json)
        h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    const char *bearer = getenv("MCP_REMOTE_BEARER");
    if (bearer && *bearer && strlen(bearer) <= TOKEN_MAX && !strpbrk(bearer, "\r\n")) {
        char *a = xasprintf("Authorization: Bearer %s", bearer);
        h = curl_slist_append(h, a);
        free(a);
    }
    pthread_mutex_lock(&lock);
    char *s = session_id[0] ? xasprintf("Mcp-Session-Id: %s", session_id) : NULL;
    char *p = protocol_version[0] ? xasprintf("MCP-Protocol-Version: %s", protocol_version) : NULL;
    pthread_mutex_unlock(&lock);
    if (s)
        h = curl_slist_append(h, s);
    if (p)
        h = curl_slist_append(h, p);
    free(s);
    free(p);
    return h;
}

static CURL *new_handle(struct response *r, struct curl_slist *h)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    pthread_mutex_lock(&lock);
    curl_easy_setopt(c, CURLOPT_URL, legacy_endpoint ? legacy_endpoint : url);
    pthread_mutex_unlock(&lock);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "isolategpt-mcp-remote/1.0");
    /* The trust store OpenSSL's variable names: the hub sets it to its bundle in a jail
     * with stand-ins; a manifest may for a server under a private CA (--env). */
    const char *ca = getenv("SSL_CERT_FILE");
    if (ca && *ca)
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    return c;
}

/* HTTP+SSE's stream, read until it ends: then the bridge ends, and the hub starts it
 * again for the next call. */
static void *legacy_stream(void *arg)
{
    (void)arg;
    struct response r = {0};
    struct curl_slist *h = headers(NULL);
    CURL *c = new_handle(&r, h);
    char errbuf[CURL_ERROR_SIZE] = "";
    if (c) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        fprintf(stderr, "mcp_remote: the server's SSE stream ended (HTTP %ld%s%s)\n", status,
                rc != CURLE_OK ? ": " : "", rc != CURLE_OK ? errbuf : "");
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(h);
    pthread_mutex_lock(&lock);
    bool was_open = legacy_endpoint != NULL;
    legacy_stream_ended = true;
    pthread_cond_broadcast(&endpoint_named);
    pthread_mutex_unlock(&lock);
    if (was_open) {
        fflush(stdout);
        _exit(0);
    }
    free(r.buf);
    free(r.event_data);
    return NULL;
}

/* Opens HTTP+SSE's stream and waits for its endpoint: 0, or -1. */
static int start_legacy(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, legacy_stream, NULL) != 0)
        return -1;
    pthread_detach(t);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 15;
    pthread_mutex_lock(&lock);
    while (!legacy_endpoint && !legacy_stream_ended && !legacy_endpoint_refused &&
           pthread_cond_timedwait(&endpoint_named, &lock, &deadline) == 0)
        ;
    int rc = legacy_endpoint ? 0 : -1;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* One POST of line; the answer, if in the response, written to the hub. */
static CURLcode post(const char *line, size_t len, struct response *r, long *status, char *errbuf)
{
    struct curl_slist *h = headers("json");
    CURL *c = new_handle(r, h);
    CURLcode rc = CURLE_FAILED_INIT;
    *status = 0;
    if (c) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, line);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(h);
    if (rc == CURLE_OK && *status >= 200 && *status < 300) {
        if (r->sse) {
            sse_line(r, r->buf, r->len); /* a last line without its end */
            sse_line(r, "", 0);
        } else if (r->len && strncasecmp(r->ctype, "application/json", 16) == 0) {
            emit_text(r->buf, r->len, r);
        }
    }
    return rc;
}

static void response_reset(struct response *r)
{
    json_t *id = r->request_id;
    free(r->buf);
    free(r->event_data);
    memset(r, 0, sizeof(*r));
    r->request_id = id;
}

static bool have_session(void)
{
    pthread_mutex_lock(&lock);
    bool have = session_id[0] != '\0';
    pthread_mutex_unlock(&lock);
    return have;
}

static bool legacy(void)
{
    pthread_mutex_lock(&lock);
    bool on = legacy_endpoint != NULL;
    pthread_mutex_unlock(&lock);
    return on;
}

/* Forwards one message from the hub; answers a request the server failed. */
static void forward(const char *line, size_t len)
{
    static bool tried_legacy;
    json_error_t e;
    json_t *msg = json_loadb(line, len, 0, &e);
    if (!json_is_object(msg)) {
        fprintf(stderr, "mcp_remote: the hub sent a malformed message (%s)\n", e.text);
        json_decref(msg);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    bool is_request = json_object_get(msg, "method") && id && !json_is_null(id);
    struct response r = {.request_id = is_request ? id : NULL};
    char errbuf[CURL_ERROR_SIZE] = "";
    long status;
    CURLcode rc = post(line, len, &r, &status, errbuf);
    /* A server of the HTTP+SSE transport refuses the first POST with a 4xx. */
    if (!tried_legacy && !legacy() && !have_session() && rc == CURLE_OK && status >= 400 &&
        status < 500 && status != 401 && status != 403) {
        tried_legacy = true;
        if (start_legacy() == 0) {
            fprintf(stderr, "mcp_remote: HTTP %ld to the POST: speaking HTTP+SSE\n", status);
            response_reset(&r);
            errbuf[0] = '\0';
            rc = post(line, len, &r, &status, errbuf);
        }
    }
    /* With HTTP+SSE the answer comes on the stream. */
    bool on_stream = legacy() && rc == CURLE_OK && status >= 200 && status < 300;
    if (is_request && !r.wrote_answer && !on_stream) {
        char m[CURL_ERROR_SIZE + 200];
        if (r.too_big)
            snprintf(m, sizeof(m), "remote: an answer over %d bytes", MSG_MAX);
        else if (rc != CURLE_OK)
            snprintf(m, sizeof(m), "remote: %s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        else if (status == 401 || status == 403)
            snprintf(m, sizeof(m),
                     "remote: HTTP %ld: the server wants a credential (hub secrets set, or hub "
                     "spokes login)",
                     status);
        else if (status == 404 && have_session())
            snprintf(m, sizeof(m), "remote: HTTP 404: the server ended the session");
        else
            snprintf(m, sizeof(m), "remote: HTTP %ld and no answer", status);
        fprintf(stderr, "mcp_remote: %s\n", m);
        answer_error(id, rc != CURLE_OK ? ERR_UNREACHABLE : ERR_HTTP, m);
    }
    free(r.buf);
    free(r.event_data);
    json_decref(msg);
}

/* At the end, the session is ended on the server too (a courtesy: it may refuse). */
static void end_session(void)
{
    if (!session_id[0])
        return;
    struct response r = {0};
    struct curl_slist *h = headers(NULL);
    CURL *c = new_handle(&r, h);
    if (c) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
        curl_easy_perform(c);
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(h);
    free(r.buf);
    free(r.event_data);
}

/* A request other than initialize runs in a thread of its own, so that a slow call
 * does not hold the others (the hub sends up to max_inflight at once); initialize,
 * notifications and answers to the server go in order, from the main thread. */
struct job {
    char *line;
    size_t len;
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    forward(j->line, j->len);
    free(j->line);
    free(j);
    sem_post(&slots);
    return NULL;
}

static bool concurrent(const char *line, size_t len)
{
    json_t *m = json_loadb(line, len, 0, NULL);
    const char *method = json_string_value(json_object_get(m, "method"));
    json_t *id = json_object_get(m, "id");
    bool yes = method && id && !json_is_null(id) && strcmp(method, "initialize") != 0;
    json_decref(m);
    return yes;
}

static void dispatch(const char *line, size_t len)
{
    if (concurrent(line, len)) {
        sem_wait(&slots);
        struct job *j = xmalloc(sizeof(*j));
        j->line = xstrndup(line, len);
        j->len = len;
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, JOB_STACK);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, run_job, j);
        pthread_attr_destroy(&attr);
        if (rc == 0)
            return;
        free(j->line); /* no thread (the jail's process limit): in order, then */
        free(j);
        sem_post(&slots);
    }
    forward(line, len);
}

int main(int argc, char **argv)
{
    if (argc != 2 || strncmp(argv[1], "https://", 8) != 0) {
        fprintf(stderr, "usage: mcp_remote https://HOST/PATH\n");
        return 2;
    }
    url = argv[1];
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || sem_init(&slots, 0, JOBS_MAX) < 0)
        return 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (len > MSG_MAX) {
            fprintf(stderr, "mcp_remote: a message over %d bytes from the hub\n", MSG_MAX);
            break;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len)
            dispatch(line, (size_t)len);
    }
    free(line);
    /* The calls still under way get a moment; then the session ends. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    int drained = 0;
    while (drained < JOBS_MAX && sem_timedwait(&slots, &deadline) == 0)
        drained++;
    if (drained < JOBS_MAX || legacy()) {
        fflush(stdout);
        _exit(0); /* threads still in libcurl: no cleanup under them */
    }
    end_session();
    curl_global_cleanup();
    return 0;
}
