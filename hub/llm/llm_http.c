/* The HTTP back end: POST {base_url}/chat/completions with libcurl.
 *
 * Retries: 429, 5xx, 408 and connection failures (refused, reset, nothing answered,
 * connect timeout) are retried up to max_attempts, waiting backoff_ms x 2^(n-1)
 * capped at backoff_max_ms, with "equal jitter" (half fixed, half random) so that
 * many clients do not retry in step, and never less than the server's Retry-After
 * (seconds or an HTTP date; or retry-after-ms, which OpenAI and Azure send). A
 * Retry-After beyond retry_after_max_ms ends the call.
 * Not retried: a timeout after the connection was made (the model is slow; a retry
 * would only double the wait), 4xx answers (the request itself is wrong), malformed
 * answers, and a stream that already delivered text (a retry would repeat it).
 *
 * Redirects are not followed, so the Authorization header never reaches another
 * host. The key lives only in secret memory (lib/secret.h: wiped in forked children)
 * and, while a request is being sent, in curl's buffers, which are wiped when freed. */
#include "llm_impl.h"
#include "secret.h"

#include "log.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct http {
    CURL *curl;
    char *url;     /* the chat completions endpoint */
    char *key;     /* NULL: no Authorization header; secret memory */
    char *key_env; /* named in messages, never the key */
    /* "Authorization: Bearer KEY" as the last node of each request's header list,
     * node and text in secret memory, so that curl never copies them to its heap. */
    struct curl_slist *auth_node;
};

/* libcurl's allocator: every block is wiped when freed. curl copies the request's
 * header lines (the Authorization header among them) into its own buffers; without
 * this, freed copies of the key would linger in the heap that forked children
 * inherit. Installed by the first curl_global_init_mem() of the process. */
static void wipe_free(void *p)
{
    if (p) {
        explicit_bzero(p, malloc_usable_size(p));
        free(p);
    }
}

static void *wipe_malloc(size_t n)
{
    return malloc(n);
}

static void *wipe_calloc(size_t count, size_t size)
{
    return calloc(count, size);
}

static void *wipe_realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (n == 0) {
        wipe_free(p);
        return NULL;
    }
    /* A moving realloc would free the old block unwiped: move it ourselves. */
    size_t old = malloc_usable_size(p);
    if (n <= old)
        return p;
    void *q = malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, old);
    wipe_free(p);
    return q;
}

static char *wipe_strdup(const char *s)
{
    return strdup(s);
}

/* One attempt's state, shared by the curl callbacks. */
struct xfer {
    CURL *curl;
    const struct llm_request *rq;
    const char *secret;
    size_t max_bytes;
    size_t received;
    struct llm_buf body;
    bool want_stream;
    bool decided;
    struct llm_sse *sse; /* set when the answer is an event stream */
    bool sse_failed;
    struct llm_error sse_err;
    bool too_large;
    bool cancelled;
    char content_type[128];
    char retry_after[64];
    char retry_after_ms[32]; /* OpenAI and Azure also send retry-after-ms */
};

/* The outcome of one attempt. */
struct attempt {
    enum llm_error_kind kind; /* LLM_OK on success */
    bool retryable;
    long status;
    long retry_after_ms; /* -1: none given */
    char msg[sizeof(((struct llm_error *)0)->msg)];       /* the hub's words */
    char detail[sizeof(((struct llm_error *)0)->detail)]; /* the server's, or "" */
};

static const char *status_text(long status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 408:
        return "Request Timeout";
    case 413:
        return "Payload Too Large";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "";
    }
}

/* Replaces every occurrence of the key in msg: servers sometimes echo what they got. */
static void redact(char *msg, size_t size, const char *key)
{
    size_t n;
    char *clean = llm_redact(msg, strlen(msg), key, &n);
    snprintf(msg, size, "%s", clean);
    free(clean);
}

static bool cancelled(const struct llm_request *rq)
{
    return rq->cancel && *rq->cancel;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nitems;
    if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue, say): forget the last one's headers. */
        x->content_type[0] = '\0';
        x->retry_after[0] = '\0';
        x->retry_after_ms[0] = '\0';
        return n;
    }
    const char *colon = memchr(buf, ':', n);
    if (!colon)
        return n;
    size_t name_len = (size_t)(colon - buf);
    const char *v = colon + 1;
    size_t vlen = n - name_len - 1;
    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    char *dst = NULL;
    size_t cap = 0;
    if (name_len == 12 && strncasecmp(buf, "content-type", 12) == 0) {
        dst = x->content_type;
        cap = sizeof(x->content_type);
    } else if (name_len == 11 && strncasecmp(buf, "retry-after", 11) == 0) {
        dst = x->retry_after;
        cap = sizeof(x->retry_after);
    } else if (name_len == 14 && strncasecmp(buf, "retry-after-ms", 14) == 0) {
        dst = x->retry_after_ms;
        cap = sizeof(x->retry_after_ms);
    }
    if (dst) {
        size_t k = vlen < cap - 1 ? vlen : cap - 1;
        memcpy(dst, v, k);
        dst[k] = '\0';
    }
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    x->received += n;
    if (x->received > x->max_bytes) {
        x->too_large = true;
        return 0;
    }
    if (!x->decided) {
        x->decided = true;
        /* Stream only what the server really streams; an error or a server that
         * ignored "stream" answers with plain JSON, read below as usual. */
        long status = 0;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
        if (x->want_stream && status >= 200 && status <= 299 &&
            strncasecmp(x->content_type, "text/event-stream", 17) == 0)
            x->sse = llm_sse_new(x->max_bytes, x->rq->on_delta, x->rq->delta_arg, x->secret);
    }
    if (x->sse) {
        if (llm_sse_feed(x->sse, data, n, &x->sse_err) < 0) {
            x->sse_failed = true;
            return 0;
        }
        return n;
    }
    llm_buf_add(&x->body, data, n);
    return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    struct xfer *x = ud;
    if (cancelled(x->rq)) {
        x->cancelled = true;
        return 1;
    }
    return 0;
}

static long parse_retry_after(const char *v)
{
    if (!*v)
        return -1;
    uint64_t secs;
    if (parse_u64(v, 0, 86400 * 365, &secs))
        return (long)(secs * 1000);
    time_t when = curl_getdate(v, NULL);
    if (when < 0)
        return -1;
    time_t now = time(NULL);
    return when > now ? (long)(when - now) * 1000 : 0;
}

static bool connection_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

static void set_msg(struct attempt *a, enum llm_error_kind kind, bool retryable, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));
static void set_msg(struct attempt *a, enum llm_error_kind kind, bool retryable, const char *fmt,
                    ...)
{
    a->kind = kind;
    a->retryable = retryable;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
    va_end(ap);
}

static void classify_status(struct llm *llm, struct http *h, struct xfer *x, const char *model,
                            struct attempt *a)
{
    long st = a->status;
    char *why = llm_wire_error_message(x->body.p, x->body.len, h->key);
    const char *reason = status_text(st);
    const char *sp = *reason ? " " : "";
    char keyhint[200];
    if (h->key)
        snprintf(keyhint, sizeof(keyhint), "check the key in $%s", h->key_env);
    else if (h->key_env)
        snprintf(keyhint, sizeof(keyhint), "$%s is not set: export the key there", h->key_env);
    else
        snprintf(keyhint, sizeof(keyhint),
                 "no key is configured: set llm.api_key_env to the variable that holds it");
    /* The server's words go to a->detail, never into the hub's own sentence. */
    str_copy(a->detail, why, sizeof(a->detail));
    if (st == 401 || st == 403) {
        set_msg(a, LLM_ERR_AUTH, false, "%s answered HTTP %ld%s%s: %s", h->url, st, sp, reason,
                keyhint);
    } else if (st == 404) {
        set_msg(a, LLM_ERR_NOT_FOUND, false,
                "%s answered HTTP 404 Not Found for model \"%s\": check that the base URL "
                "ends in /v1 and that the server has this model (ollama: ollama pull %s)",
                h->url, model ? model : "(none)", model ? model : "MODEL");
    } else if (st == 400 || st == 413 || st == 422) {
        set_msg(a, LLM_ERR_BAD_REQUEST, false, "%s rejected the request: HTTP %ld%s%s", h->url, st,
                sp, reason);
    } else if (st == 429) {
        set_msg(a, LLM_ERR_RATE_LIMIT, true, "%s answered HTTP 429 Too Many Requests", h->url);
    } else if (st >= 500 && st <= 599) {
        set_msg(a, LLM_ERR_SERVER, true, "%s answered HTTP %ld%s%s", h->url, st, sp, reason);
    } else if (st == 408) {
        set_msg(a, LLM_ERR_HTTP, true, "%s answered HTTP 408 Request Timeout", h->url);
    } else if (st >= 300 && st <= 399) {
        a->detail[0] = '\0';
        set_msg(a, LLM_ERR_HTTP, false,
                "%s answered HTTP %ld (a redirect, not followed so that the key stays with this "
                "host): set llm.base_url to the final URL",
                h->url, st);
    } else {
        set_msg(a, LLM_ERR_HTTP, false, "%s answered HTTP %ld%s%s", h->url, st, sp, reason);
    }
    free(why);
    (void)llm;
}

static void one_attempt(struct llm *llm, struct http *h, const struct llm_request *rq,
                        const char *body, struct curl_slist *headers, struct llm_response *rs,
                        struct attempt *a)
{
    CURL *c = h->curl;
    struct xfer x = {.curl = c,
                     .rq = rq,
                     .secret = h->key,
                     .max_bytes = llm->cfg.max_response_bytes,
                     .want_stream = rq->on_delta != NULL};
    char errbuf[CURL_ERROR_SIZE] = "";
    const char *model = rq->model ? rq->model : llm->cfg.model;

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, h->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "isolategpt-hub/1");
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* the cap counts decoded bytes */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, llm->cfg.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, llm->cfg.timeout_ms);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
    uint64_t ra_ms;
    if (parse_u64(x.retry_after_ms, 0, 86400000, &ra_ms))
        a->retry_after_ms = (long)ra_ms;
    else
        a->retry_after_ms = parse_retry_after(x.retry_after);
    curl_off_t connect_us = 0;
    curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
    bool delivered = x.sse && llm_sse_delivered(x.sse);

    if (x.cancelled || rc == CURLE_ABORTED_BY_CALLBACK) {
        set_msg(a, LLM_ERR_CANCELLED, false, "the LLM call was cancelled");
    } else if (x.too_large) {
        set_msg(a, LLM_ERR_TOO_LARGE, false,
                "the answer from %s exceeded %zu bytes (llm.max_response_bytes)", h->url,
                x.max_bytes);
    } else if (x.sse_failed) {
        set_msg(a, x.sse_err.kind, false, "%s (from %s)", x.sse_err.msg, h->url);
        str_copy(a->detail, x.sse_err.detail, sizeof(a->detail));
    } else if (rc == CURLE_OPERATION_TIMEDOUT && connect_us > 0) {
        set_msg(a, LLM_ERR_TIMEOUT, false,
                "no complete answer from %s within %ld ms (llm.timeout_ms)%s", h->url,
                llm->cfg.timeout_ms, delivered ? " (the answer shown is incomplete)" : "");
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        set_msg(a, LLM_ERR_CONNECT, true, "cannot connect to %s within %ld ms", h->url,
                llm->cfg.connect_timeout_ms);
    } else if (rc != CURLE_OK) {
        set_msg(a, LLM_ERR_CONNECT, connection_error(rc) && !delivered,
                "cannot reach the LLM server at %s: %s", h->url,
                errbuf[0] ? errbuf : curl_easy_strerror(rc));
    } else if (a->status < 200 || a->status > 299) {
        classify_status(llm, h, &x, model, a);
    } else {
        struct llm_error e = {0};
        int prc;
        if (x.sse) {
            prc = llm_sse_finish(x.sse, rs, &e);
        } else {
            prc = llm_wire_parse(x.body.p ? x.body.p : "", x.body.len, rs, &e);
            /* A server that ignored "stream": hand the caller the text in one piece. */
            if (prc == 0 && rq->on_delta && rs->content && rs->content[0] &&
                rq->on_delta(rq->delta_arg, rs->content, strlen(rs->content)) != 0)
                prc = llm_fail(&e, LLM_ERR_CANCELLED, "cancelled while streaming");
        }
        if (prc == 0) {
            a->kind = LLM_OK;
        } else {
            llm_response_free(rs);
            set_msg(a, e.kind, false, "%s (from %s)", e.msg, h->url);
            str_copy(a->detail, e.detail, sizeof(a->detail));
        }
    }
    llm_sse_free(x.sse);
    llm_buf_free(&x.body);
}

static uint32_t random_u32(void)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
        r = (uint32_t)now_mono_ns();
    return r;
}

/* Sleeps ms, waking early when the call is cancelled; false when cancelled. */
static bool wait_ms(const struct llm_request *rq, long ms, unsigned attempt, const char *why)
{
    uint64_t end = now_mono_ns() + (uint64_t)ms * 1000000u;
    long told = -1; /* the whole seconds left last told */
    for (;;) {
        if (cancelled(rq)) {
            if (rq->on_wait && told >= 0)
                rq->on_wait(rq->wait_arg, 0, attempt, why);
            return false;
        }
        uint64_t now = now_mono_ns();
        if (now >= end) {
            if (rq->on_wait && told >= 0)
                rq->on_wait(rq->wait_arg, 0, attempt, why);
            return true;
        }
        uint64_t left = end - now;
        long secs = (long)((left + 999999999u) / 1000000000u);
        if (rq->on_wait && secs != told && ms >= 1000) {
            told = secs;
            rq->on_wait(rq->wait_arg, (long)(left / 1000000u), attempt, why);
        }
        if (left > 20000000u)
            left = 20000000u;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left};
        nanosleep(&ts, NULL);
    }
}

static int http_complete(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                         struct llm_error *e)
{
    struct http *h = llm->impl;
    const struct llm_config *cfg = &llm->cfg;
    if (!rq->model && !cfg->model)
        return llm_fail(e, LLM_ERR_CONFIG, "no model configured: pass --model NAME or set llm.model in hub.json");
    json_t *jbody = llm_wire_body(cfg, rq, rq->on_delta != NULL);
    char *body = json_dumps(jbody, JSON_COMPACT);
    json_decref(jbody);
    if (!body)
        return llm_fail(e, LLM_ERR_CONFIG, "the request could not be encoded as JSON");

    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, rq->on_delta ? "Accept: text/event-stream"
                                                      : "Accept: application/json");
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
    struct curl_slist *last = headers;
    while (last && last->next)
        last = last->next;
    if (h->auth_node && last)
        last->next = h->auth_node;

    log_debug("llm: POST %s (context %s, %zu messages, %zu tools%s)", h->url, rq->context,
              json_array_size(rq->messages), json_array_size(rq->tools),
              rq->on_delta ? ", streaming" : "");
    int rc = -1;
    struct attempt a;
    unsigned n;
    for (n = 1;; n++) {
        memset(&a, 0, sizeof(a));
        if (cancelled(rq)) {
            set_msg(&a, LLM_ERR_CANCELLED, false, "the LLM call was cancelled");
            break;
        }
        one_attempt(llm, h, rq, body, headers, rs, &a);
        e->http_status = (int)a.status;
        e->attempts = n;
        if (a.kind == LLM_OK) {
            rs->attempts = n;
            rc = 0;
            break;
        }
        if (!a.retryable || n >= cfg->max_attempts)
            break;
        long delay = cfg->backoff_ms;
        for (unsigned i = 1; i < n && delay < cfg->backoff_max_ms; i++)
            delay *= 2;
        if (delay > cfg->backoff_max_ms)
            delay = cfg->backoff_max_ms;
        delay = delay / 2 + (long)(random_u32() % (uint32_t)(delay / 2 + 1));
        if (a.retry_after_ms >= 0) {
            if (a.retry_after_ms > cfg->retry_after_max_ms) {
                size_t len = strlen(a.msg);
                snprintf(a.msg + len, sizeof(a.msg) - len,
                         " (it asks to retry after %ld s, longer than llm.retry_after_max_ms)",
                         a.retry_after_ms / 1000);
                break;
            }
            if (a.retry_after_ms > delay)
                delay = a.retry_after_ms;
        }
        log_debug("llm: attempt %u of %u failed (%s, HTTP %ld); retrying in %ld ms", n,
                  cfg->max_attempts, llm_error_kind_name(a.kind), a.status, delay);
        if (!wait_ms(rq, delay, n, llm_error_kind_name(a.kind))) {
            set_msg(&a, LLM_ERR_CANCELLED, false, "the LLM call was cancelled");
            break;
        }
    }
    if (rc < 0) {
        e->kind = a.kind;
        if (a.kind == LLM_ERR_CANCELLED)
            a.detail[0] = '\0';
        char gave_up[48] = "";
        if (n > 1 && a.kind != LLM_ERR_CANCELLED)
            snprintf(gave_up, sizeof(gave_up), " (gave up after %u attempts)", n);
        /* The server's words last, so that a caller can show them apart as data. */
        snprintf(e->msg, sizeof(e->msg), "%s%s%s%s%s", a.msg, gave_up,
                 a.detail[0] ? LLM_SERVER_SAID : "", a.detail, a.detail[0] ? "\"" : "");
        str_copy(e->detail, a.detail, sizeof(e->detail));
        redact(e->msg, sizeof(e->msg), h->key);
        redact(e->detail, sizeof(e->detail), h->key);
    }
    if (last)
        last->next = NULL; /* the secret node is ours, not curl's to free */
    curl_slist_free_all(headers);
    free(body);
    return rc;
}

static void http_destroy(struct llm *llm)
{
    struct http *h = llm->impl;
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    free(h->url);
    secret_free(h->key);
    if (h->auth_node) {
        secret_free(h->auth_node->data);
        secret_free(h->auth_node);
    }
    free(h->key_env);
    free(h);
    curl_global_cleanup();
}

static const struct llm_ops http_ops = {
    .kind = "http",
    .complete = http_complete,
    .destroy = http_destroy,
};

/* base_url must be http(s), hold no credentials, query or fragment. */
static bool check_base_url(const char *url, char *err, size_t errlen)
{
    size_t n = strlen(url);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f) {
            snprintf(err, errlen, "llm.base_url must not contain spaces or control characters");
            return false;
        }
    if (n > 2048) {
        snprintf(err, errlen, "llm.base_url is longer than 2048 characters");
        return false;
    }
    CURLU *u = curl_url();
    bool ok = false;
    char *scheme = NULL, *user = NULL, *password = NULL, *host = NULL, *query = NULL,
         *fragment = NULL;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        snprintf(err, errlen, "llm.base_url \"%.200s\" is not a URL", url);
        goto out;
    }
    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(u, CURLUPART_USER, &user, 0);
    curl_url_get(u, CURLUPART_PASSWORD, &password, 0);
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0);
    if (!scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
        snprintf(err, errlen, "llm.base_url must start with http:// or https://");
    else if (user || password)
        snprintf(err, errlen,
                 "llm.base_url must not carry credentials (they would be logged): put the key "
                 "in an environment variable named by llm.api_key_env");
    else if (!host || !*host)
        snprintf(err, errlen, "llm.base_url has no host");
    else if (query || fragment)
        snprintf(err, errlen, "llm.base_url must not have a query or fragment");
    else
        ok = true;
out:
    curl_free(scheme);
    curl_free(user);
    curl_free(password);
    curl_free(host);
    curl_free(query);
    curl_free(fragment);
    curl_url_cleanup(u);
    return ok;
}

struct llm *llm_http_open(const struct llm_config *cfg, char *err, size_t errlen)
{
    if (curl_global_init_mem(CURL_GLOBAL_DEFAULT, wipe_malloc, wipe_free, wipe_realloc, wipe_strdup,
                             wipe_calloc) != CURLE_OK) {
        snprintf(err, errlen, "libcurl could not be initialised");
        return NULL;
    }
    struct llm *llm = NULL;
    struct http *h = NULL;
    if (!check_base_url(cfg->base_url, err, errlen))
        goto fail;
    if (!cfg->model || !*cfg->model) {
        snprintf(err, errlen,
                 "no model configured: pass --model NAME (e.g. llama3.1 for ollama, "
                 "gpt-4o-mini for OpenAI, with --api-key-env VAR naming the variable that "
                 "holds the key) or set llm.model in hub.json");
        goto fail;
    }
    h = xcalloc(1, sizeof(*h));
    size_t n = strlen(cfg->base_url);
    while (n > 0 && cfg->base_url[n - 1] == '/')
        n--;
    h->url = xasprintf("%.*s/chat/completions", (int)n, cfg->base_url);
    if (cfg->api_key_env && *cfg->api_key_env) {
        h->key_env = xstrdup(cfg->api_key_env);
        const char *key = cfg->api_key ? cfg->api_key : getenv(cfg->api_key_env);
        if (key && *key) {
            for (const char *p = key; *p; p++)
                if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
                    snprintf(err, errlen,
                             "the API key in $%s contains spaces or characters that cannot "
                             "go into an HTTP header",
                             cfg->api_key_env);
                    goto fail;
                }
            h->key = secret_strdup(key);
            h->auth_node = secret_alloc(sizeof(*h->auth_node));
            h->auth_node->data = secret_concat("Authorization: Bearer ", key);
        } else {
            log_debug("llm: $%s is not set; sending no Authorization header", cfg->api_key_env);
        }
    }
    h->curl = curl_easy_init();
    if (!h->curl) {
        snprintf(err, errlen, "libcurl could not create a handle");
        goto fail;
    }
    llm = xcalloc(1, sizeof(*llm));
    llm->ops = &http_ops;
    llm->impl = h;
    llm->cfg = *cfg;
    llm->base_url = xstrdup(cfg->base_url);
    llm->model = xstrdup(cfg->model);
    llm->cfg.base_url = llm->base_url;
    llm->cfg.model = llm->model;
    llm->cfg.api_key_env = h->key_env;
    llm->cfg.api_key = NULL; /* the caller's copy; ours is h->key */
    llm->describe = xasprintf("%.*s (model %s)", (int)n, cfg->base_url, cfg->model);
    return llm;
fail:
    if (h) {
        struct llm tmp = {.impl = h};
        http_destroy(&tmp); /* also balances curl_global_init */
    } else {
        curl_global_cleanup();
    }
    return NULL;
}
