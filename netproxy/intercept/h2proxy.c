/* HTTP/2 between the client and the upstream, both through nghttp2 (h2proxy.h).
 *
 * One pair per request: the client's stream on the server session (s_id) and ours on
 * the client session (c_id). Bytes are buffered per direction in the pair and handed to
 * the other session's data provider; the receiving session's window is given back
 * (nghttp2_session_consume) only when the provider has taken them, so each peer's flow
 * control reaches through the proxy. */
#include "h2proxy.h"

#include "util.h"

#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_STREAMS 100
#define MAX_HEADER_LIST (64 * 1024)
#define MAX_FIELDS 128

struct hdr {
    char *name, *value;
    size_t name_len, value_len;
};

struct pair {
    struct h2proxy *h;
    int32_t s_id, c_id; /* c_id -1: not sent upstream */
    struct hdr req[MAX_FIELDS];
    size_t n_req;
    size_t req_bytes;
    struct hdr resp[MAX_FIELDS];
    size_t n_resp;
    size_t resp_bytes;
    bool resp_in_trailers;      /* the upstream's response headers are done: next are trailers */
    struct evbuffer *up_body;   /* client -> upstream, not yet taken */
    struct evbuffer *down_body; /* upstream -> client */
    bool up_end, down_end;      /* END_STREAM seen from the client / the upstream */
    bool down_submitted;
    struct scrub *scrub; /* the answer, scrubbed of the values (scrub.h) */
    bool s_closed, c_closed;
    struct pair *next;
};

struct h2proxy {
    struct h2proxy_ops ops;
    nghttp2_session *server; /* towards the client */
    nghttp2_session *client; /* towards the upstream */
    struct pair *pairs;
    bool failed;
};

static void hdrs_free(struct hdr *v, size_t *n)
{
    for (size_t i = 0; i < *n; i++) {
        explicit_bzero(v[i].value, v[i].value_len);
        free(v[i].name);
        free(v[i].value);
    }
    *n = 0;
}

static struct pair *pair_new(struct h2proxy *h, int32_t s_id)
{
    struct pair *p = xcalloc(1, sizeof(*p));
    p->h = h;
    p->s_id = s_id;
    p->c_id = -1;
    p->up_body = evbuffer_new();
    p->down_body = evbuffer_new();
    p->next = h->pairs;
    h->pairs = p;
    return p;
}

static void pair_free(struct pair *p)
{
    struct h2proxy *h = p->h;
    for (struct pair **pp = &h->pairs; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    hdrs_free(p->req, &p->n_req);
    hdrs_free(p->resp, &p->n_resp);
    evbuffer_free(p->up_body);
    evbuffer_free(p->down_body);
    scrub_free(p->scrub);
    free(p);
}

static void maybe_free(struct pair *p)
{
    if (p->s_closed && (p->c_closed || p->c_id < 0)) {
        /* A tail held back for the scrub was received: the upstream's window gets it. */
        if (scrub_held(p->scrub))
            nghttp2_session_consume_connection(p->h->client, scrub_held(p->scrub));
        if (p->c_id >= 0)
            nghttp2_session_set_stream_user_data(p->h->client, p->c_id, NULL);
        pair_free(p);
    }
}

static const struct hdr *find(const struct hdr *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].name_len == strlen(name) && memcmp(v[i].name, name, v[i].name_len) == 0)
            return &v[i];
    return NULL;
}

/* ---- sending ---- */

/* Moves what each session has to send into its side's buffer, but not past the
 * backlog a side may have queued: what stays is nghttp2's, whose own limits (on ACKs
 * and RST_STREAMs it queues for a peer that does not read) then end a flooding peer's
 * session instead of our memory growing. */
static int flush(struct h2proxy *h)
{
    nghttp2_session *ss[2] = {h->server, h->client};
    for (int i = 0; i < 2; i++) {
        for (;;) {
            if (h->ops.backlog && h->ops.backlog(h->ops.ud, i == 0) > H2PROXY_MAX_BACKLOG)
                break;
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(ss[i], &data);
            if (n < 0)
                return -1;
            if (n == 0)
                break;
            if (!h->ops.out(h->ops.ud, i == 0, (const char *)data, (size_t)n)) {
                h->failed = true;
                return -1;
            }
        }
    }
    return 0;
}

/* Providers: the bytes the other side sent, handed out as the window allows. */
static ssize_t provide(nghttp2_session *session, struct evbuffer *buf, bool end,
                       nghttp2_session *from, int32_t from_id, uint8_t *out, size_t length,
                       uint32_t *flags)
{
    (void)session;
    size_t n = evbuffer_get_length(buf);
    if (n == 0) {
        if (end) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n > length)
        n = length;
    evbuffer_remove(buf, out, n);
    /* Taken: the sender may send as much again. */
    if (from_id >= 0)
        nghttp2_session_consume(from, from_id, n);
    if (end && evbuffer_get_length(buf) == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static ssize_t provide_up(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                          uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)stream_id;
    struct h2proxy *h = user_data;
    struct pair *p = source->ptr;
    return provide(session, p->up_body, p->up_end, h->server, p->s_closed ? -1 : p->s_id, buf,
                   length, flags);
}

static ssize_t provide_down(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *flags, nghttp2_data_source *source,
                            void *user_data)
{
    (void)stream_id;
    struct h2proxy *h = user_data;
    struct pair *p = source->ptr;
    ssize_t n = provide(session, p->down_body, p->down_end, h->client, p->c_closed ? -1 : p->c_id,
                        buf, length, flags);
    /* Trailers of the upstream's answer go after its last DATA. */
    if (n >= 0 && (*flags & NGHTTP2_DATA_FLAG_EOF) && p->n_resp && p->resp_in_trailers) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv nv[MAX_FIELDS];
        for (size_t i = 0; i < p->n_resp; i++)
            nv[i] = (nghttp2_nv){(uint8_t *)p->resp[i].name, (uint8_t *)p->resp[i].value,
                                 p->resp[i].name_len, p->resp[i].value_len, NGHTTP2_NV_FLAG_NONE};
        nghttp2_submit_trailer(session, stream_id, nv, p->n_resp);
    }
    return n;
}

/* Refuses a client's stream with an answer of our own (403, 421, ...). */
static void answer(struct h2proxy *h, struct pair *p, int status, const char *code,
                   const char *detail)
{
    char st[8];
    snprintf(st, sizeof(st), "%d", status);
    char body[400];
    int bl = snprintf(body, sizeof(body), "netproxy: %s\n", detail);
    evbuffer_drain(p->down_body, evbuffer_get_length(p->down_body));
    evbuffer_add(p->down_body, body, (size_t)(bl > 0 ? bl : 0));
    p->down_end = true;
    p->down_submitted = true;
    nghttp2_nv nv[] = {
        {(uint8_t *)":status", (uint8_t *)st, 7, strlen(st), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"x-proxy-error", (uint8_t *)code, 13, strlen(code), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"content-type", (uint8_t *)"text/plain; charset=utf-8", 12, 25,
         NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider dp = {.source.ptr = p, .read_callback = provide_down};
    nghttp2_submit_response(h->server, p->s_id, nv, 3, &dp);
    p->c_closed = true; /* never sent upstream */
}

/* ---- the client's requests (server session) ---- */

static int s_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2proxy *h = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct pair *p = pair_new(h, frame->hd.stream_id);
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, p);
    return 0;
}

static int add_hdr(struct hdr *v, size_t *n, size_t *bytes, const uint8_t *name, size_t nl,
                   const uint8_t *value, size_t vl)
{
    if (*n == MAX_FIELDS || *bytes + nl + vl > MAX_HEADER_LIST)
        return -1;
    v[*n] =
        (struct hdr){xstrndup((const char *)name, nl), xstrndup((const char *)value, vl), nl, vl};
    (*n)++;
    *bytes += nl + vl;
    return 0;
}

/* A header of the client's request (on_header). */
static int request_header(struct pair *p, const nghttp2_frame *frame, const uint8_t *name,
                          size_t namelen, const uint8_t *value, size_t valuelen)
{
    if (frame->headers.cat == NGHTTP2_HCAT_HEADERS) {
        /* Trailers of the request: shown to the scan like its body. */
        char detail[300];
        struct h2proxy *h = p->h;
        if (h->ops.body(h->ops.ud, (const char *)value, valuelen, detail, sizeof(detail)) !=
            R_ALLOWED)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        return 0;
    }
    if (add_hdr(p->req, &p->n_req, &p->req_bytes, name, namelen, value, valuelen) < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM */
    return 0;
}

/* The whole header block of a request: decided, rewritten, sent upstream. */
static void s_request(struct h2proxy *h, struct pair *p, bool end_stream)
{
    const struct hdr *method = find(p->req, p->n_req, ":method");
    const struct hdr *path = find(p->req, p->n_req, ":path");
    const struct hdr *auth = find(p->req, p->n_req, ":authority");
    if (!auth)
        auth = find(p->req, p->n_req, "host");
    if (!method || !path || (method->value_len == 7 && memcmp(method->value, "CONNECT", 7) == 0)) {
        answer(h, p, 405, "method-not-allowed",
               "this request is not relayed (CONNECT or no :path)");
        return;
    }
    struct inject_field fields[MAX_FIELDS];
    size_t nf = 0;
    for (size_t i = 0; i < p->n_req; i++)
        if (p->req[i].name[0] != ':')
            fields[nf++] = (struct inject_field){p->req[i].name, p->req[i].value,
                                                 p->req[i].name_len, p->req[i].value_len};
    struct inject_req rq = {.method = method->value,
                            .method_len = method->value_len,
                            .target = path->value,
                            .target_len = path->value_len,
                            .authority = auth ? auth->value : NULL,
                            .authority_len = auth ? auth->value_len : 0,
                            .fields = fields,
                            .n_fields = nf};
    struct inject_result res;
    h->ops.head(h->ops.ud, &rq, &res);
    if (res.verdict != R_ALLOWED) {
        answer(h, p, reason_status(res.verdict), reason_code(res.verdict), res.detail);
        inject_result_free(&res);
        return;
    }
    /* The upstream gets the pseudo-headers first, then every field, rewritten. */
    nghttp2_nv nv[MAX_FIELDS];
    size_t n = 0, f = 0;
    for (size_t i = 0; i < p->n_req; i++) {
        const struct hdr *x = &p->req[i];
        if (x->name[0] == ':') {
            bool is_path = x == path && res.target;
            nv[n++] = (nghttp2_nv){(uint8_t *)x->name, (uint8_t *)(is_path ? res.target : x->value),
                                   x->name_len, is_path ? res.target_len : x->value_len,
                                   NGHTTP2_NV_FLAG_NONE};
        }
    }
    for (size_t i = 0; i < p->n_req; i++) {
        const struct hdr *x = &p->req[i];
        if (x->name[0] == ':')
            continue;
        bool rw = res.values[f] != NULL;
        nv[n++] = (nghttp2_nv){(uint8_t *)x->name, (uint8_t *)(rw ? res.values[f] : x->value),
                               x->name_len, rw ? res.value_lens[f] : x->value_len,
                               /* an injected value stays out of HPACK's shared table */
                               rw ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE};
        f++;
    }
    p->up_end = end_stream;
    nghttp2_data_provider dp = {.source.ptr = p, .read_callback = provide_up};
    p->c_id = nghttp2_submit_request(h->client, NULL, nv, n, end_stream ? NULL : &dp, p);
    inject_result_free(&res);
    /* The request's own copy of the headers is no longer needed. */
    hdrs_free(p->req, &p->n_req);
    if (p->c_id < 0) {
        nghttp2_submit_rst_stream(h->server, NGHTTP2_FLAG_NONE, p->s_id, NGHTTP2_REFUSED_STREAM);
        p->c_closed = true;
    }
}

static int s_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2proxy *h = user_data;
    struct pair *p = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!p)
        return 0;
    bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        s_request(h, p, end);
        return 0;
    }
    if (end && (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS)) {
        p->up_end = true;
        if (p->c_id >= 0)
            nghttp2_session_resume_data(h->client, p->c_id);
    }
    return 0;
}

static int s_data(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                  size_t len, void *user_data)
{
    (void)flags;
    struct h2proxy *h = user_data;
    struct pair *p = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!p || p->c_id < 0) {
        nghttp2_session_consume(session, stream_id, len);
        return 0;
    }
    char detail[300];
    if (h->ops.body(h->ops.ud, (const char *)data, len, detail, sizeof(detail)) != R_ALLOWED) {
        nghttp2_submit_rst_stream(h->client, NGHTTP2_FLAG_NONE, p->c_id, NGHTTP2_CANCEL);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM to the client */
    }
    evbuffer_add(p->up_body, data, len);
    nghttp2_session_resume_data(h->client, p->c_id);
    return 0;
}

/* The client's stream ended (on_stream_close). */
static void request_stream_closed(struct h2proxy *h, struct pair *p, uint32_t error_code)
{
    p->s_closed = true;
    if (error_code && p->c_id >= 0 && !p->c_closed)
        nghttp2_submit_rst_stream(h->client, NGHTTP2_FLAG_NONE, p->c_id, error_code);
}

/* ---- the upstream's answers (client session) ---- */

static struct scrub *pair_scrub(struct pair *p)
{
    struct h2proxy *h = p->h;
    if (!p->scrub && h->ops.scrub_new)
        p->scrub = h->ops.scrub_new(h->ops.ud);
    return p->scrub;
}

/* The answer's header values (trailers too), scrubbed in place before they go on. */
static void scrub_resp(struct pair *p)
{
    struct scrub *sc = pair_scrub(p);
    for (size_t i = 0; sc && i < p->n_resp; i++)
        if (p->resp[i].name[0] != ':')
            scrub_piece(sc, p->resp[i].value, p->resp[i].value_len);
}

/* The answer's DATA ended: the held tail goes too. */
static void release_hold(struct pair *p)
{
    scrub_flush(p->scrub, p->down_body);
}

/* A header of the upstream's answer (on_header). */
static int response_header(struct pair *p, const nghttp2_frame *frame, const uint8_t *name,
                           size_t namelen, const uint8_t *value, size_t valuelen)
{
    if (frame->headers.cat == NGHTTP2_HCAT_HEADERS && !p->resp_in_trailers) {
        hdrs_free(p->resp, &p->n_resp);
        p->resp_bytes = 0;
        p->resp_in_trailers = true;
    }
    if (add_hdr(p->resp, &p->n_resp, &p->resp_bytes, name, namelen, value, valuelen) < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return 0;
}

static int c_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2proxy *h = user_data;
    struct pair *p = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!p || p->s_closed)
        return 0;
    bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_RESPONSE) {
        const struct hdr *st = find(p->resp, p->n_resp, ":status");
        if (st && st->value_len == 3 && st->value[0] == '1') {
            hdrs_free(p->resp, &p->n_resp); /* 1xx: not relayed */
            p->resp_bytes = 0;
            return 0;
        }
        scrub_resp(p);
        nghttp2_nv nv[MAX_FIELDS];
        for (size_t i = 0; i < p->n_resp; i++)
            nv[i] = (nghttp2_nv){(uint8_t *)p->resp[i].name, (uint8_t *)p->resp[i].value,
                                 p->resp[i].name_len, p->resp[i].value_len, NGHTTP2_NV_FLAG_NONE};
        p->down_end = end;
        p->down_submitted = true;
        nghttp2_data_provider dp = {.source.ptr = p, .read_callback = provide_down};
        nghttp2_submit_response(h->server, p->s_id, nv, p->n_resp, end ? NULL : &dp);
        hdrs_free(p->resp, &p->n_resp);
        p->resp_bytes = 0;
        return 0;
    }
    if (end && (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS)) {
        if (frame->hd.type == NGHTTP2_HEADERS)
            scrub_resp(p); /* trailers */
        release_hold(p);
        p->down_end = true;
        if (p->down_submitted)
            nghttp2_session_resume_data(h->server, p->s_id);
    }
    return 0;
}

static int c_data(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                  size_t len, void *user_data)
{
    (void)flags;
    struct h2proxy *h = user_data;
    struct pair *p = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!p || p->s_closed) {
        nghttp2_session_consume(session, stream_id, len);
        return 0;
    }
    struct scrub *sc = pair_scrub(p);
    if (sc)
        scrub_feed(sc, (const char *)data, len, p->down_body);
    else
        evbuffer_add(p->down_body, data, len);
    if (p->down_submitted)
        nghttp2_session_resume_data(h->server, p->s_id);
    return 0;
}

/* Our stream to the upstream ended (on_stream_close). */
static void answer_stream_closed(struct h2proxy *h, struct pair *p, uint32_t error_code)
{
    p->c_closed = true;
    if (!p->s_closed) {
        if (error_code || !p->down_submitted)
            nghttp2_submit_rst_stream(h->server, NGHTTP2_FLAG_NONE, p->s_id,
                                      error_code ? error_code : NGHTTP2_INTERNAL_ERROR);
        else {
            release_hold(p);
            p->down_end = true;
            nghttp2_session_resume_data(h->server, p->s_id);
        }
    }
}

/* Both sessions' headers and stream ends come here: the server session's are the
 * client's request, the client session's the upstream's answer. */
static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    (void)flags;
    struct h2proxy *h = user_data;
    struct pair *p = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!p)
        return 0;
    return session == h->server ? request_header(p, frame, name, namelen, value, valuelen)
                                : response_header(p, frame, name, namelen, value, valuelen);
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    struct h2proxy *h = user_data;
    struct pair *p = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!p)
        return 0;
    if (session == h->server)
        request_stream_closed(h, p, error_code);
    else
        answer_stream_closed(h, p, error_code);
    maybe_free(p);
    return 0;
}

/* ---- the sessions ---- */

struct h2proxy *h2proxy_new(const struct h2proxy_ops *ops)
{
    struct h2proxy *h = xcalloc(1, sizeof(*h));
    h->ops = *ops;
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0) {
        free(h);
        return NULL;
    }
    /* Windows are given back when the other side has taken the bytes (provide()). */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_send_header_block_length(opt, MAX_HEADER_LIST + 4096);

    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, s_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, s_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, s_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    int rc = nghttp2_session_server_new2(&h->server, cb, h, opt);
    nghttp2_session_callbacks_del(cb);

    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    if (rc == 0)
        rc = nghttp2_session_client_new2(&h->client, cb, h, opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(opt);
    if (rc != 0) {
        h2proxy_free(h);
        return NULL;
    }
    nghttp2_settings_entry s_set[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    };
    nghttp2_settings_entry c_set[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST},
    };
    nghttp2_submit_settings(h->server, NGHTTP2_FLAG_NONE, s_set, 3);
    nghttp2_submit_settings(h->client, NGHTTP2_FLAG_NONE, c_set, 2);
    return h;
}

int h2proxy_start(struct h2proxy *h)
{
    return flush(h);
}

int h2proxy_flush(struct h2proxy *h)
{
    if (h->failed)
        return -1;
    return flush(h);
}

void h2proxy_free(struct h2proxy *h)
{
    if (!h)
        return;
    while (h->pairs)
        pair_free(h->pairs);
    nghttp2_session_del(h->server);
    nghttp2_session_del(h->client);
    free(h);
}

int h2proxy_feed(struct h2proxy *h, bool from_client, const char *buf, size_t len)
{
    if (h->failed)
        return -1;
    nghttp2_session *s = from_client ? h->server : h->client;
    ssize_t n = nghttp2_session_mem_recv(s, (const uint8_t *)buf, len);
    if (n < 0) {
        /* A protocol error: GOAWAY (nghttp2 queued it), then the end. */
        (void)flush(h);
        h->failed = true;
        return -1;
    }
    return flush(h);
}

void h2proxy_eof(struct h2proxy *h, bool from_client)
{
    /* The other session ends too: GOAWAY to the side still there. */
    nghttp2_session_terminate_session(from_client ? h->client : h->server, NGHTTP2_NO_ERROR);
    (void)flush(h);
}

bool h2proxy_done(const struct h2proxy *h)
{
    return !nghttp2_session_want_read(h->server) && !nghttp2_session_want_write(h->server) &&
           !nghttp2_session_want_read(h->client) && !nghttp2_session_want_write(h->client);
}
