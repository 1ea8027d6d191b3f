/* hub serve --http: MCP Streamable HTTP (2025-03-26 .. 2025-11-25) on /mcp with
 * libevent's evhttp.
 *
 *   POST   one JSON-RPC message. A request gets its answer as application/json, or as
 *          an SSE stream when the hub has something to say before the answer (progress,
 *          a question to the user as elicitation/create): the choice is made when the
 *          first message for that request is ready, so a plain call costs no stream.
 *          Notifications and responses get 202. initialize starts a session and the
 *          answer carries its Mcp-Session-Id.
 *   GET    an SSE stream for messages of the session as a whole.
 *   DELETE ends the session.
 *
 * Checked before anything else, in this order: Host (a loopback listener answers only
 * to loopback host names: DNS rebinding), Origin (browsers' cross-site requests: only
 * loopback origins and --allow-origin ones), then the bearer token (401 with
 * WWW-Authenticate). A session belongs to the token that started it; another token
 * gets 404 for it. Bodies, headers, sessions, streams and requests in flight per token
 * are bounded; idle sessions end. Beyond loopback the listener wants TLS (libevent's
 * OpenSSL bufferevents) unless --insecure-http. */
#include "log.h"
#include "mcpver.h"
#include "notify.h"
#include "transport.h"
#include "tokens.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HTTP_READ_TIMEOUT_S 30
#define HTTP_MAX_STREAMS 4096
#define HTTP_MAX_PENDING_OUT (8 * 1024 * 1024) /* unsent bytes on one stream */
#define SWEEP_INTERVAL_S 5

/* A client request waiting for its answer, or a GET stream. */
struct http_stream {
    struct http_server *srv;
    struct http_sess *hs; /* NULL once its session ended */
    LIST_ENTRY(http_stream) link;
    struct evhttp_request *req; /* NULL once the connection closed */
    json_t *id;                 /* the request's id; NULL for a GET stream */
    bool sse;                   /* the reply has started as text/event-stream */
    bool accepts_sse;
    bool counted; /* in its token's requests in flight */
    bool modern;  /* a 2026-07-28 request: closing its stream cancels it */
    /* its connection's peer closing (EPOLLRDHUP): evhttp does not read while the hub
     * works on a request, so it would not see that itself */
    struct event *ev_closed;
    size_t token;
};

struct http_sess {
    struct http_server *srv;
    LIST_ENTRY(http_sess) link;
    struct serve_session *ss;
    size_t token;
    LIST_HEAD(, http_stream) streams;
    struct http_stream *get_stream;
    uint64_t last_active;
    /* A 2026-07-28 request's own session, ended once its answer is out (ev_end). */
    bool ephemeral;
    struct event *ev_end;
};

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                       NULL};

static void ephemeral_done(struct http_sess *hs);
static void sess_end(struct http_sess *hs, const char *reason);
static int modern_error_status(const json_t *msg);

/* ---- replies ---- */

/* A HEAD request gets the headers its GET would, and no body. */
static bool is_head(struct evhttp_request *req)
{
    return evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;
}

static void reply_json(struct evhttp_request *req, int status, const char *reason, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    struct evbuffer *b = evbuffer_new();
    if (text && !is_head(req))
        evbuffer_add(b, text, strlen(text));
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, status, reason, b);
    evbuffer_free(b);
}

/* A transport-level refusal with a JSON-RPC error body, as the SDKs expect. */
static void reply_rpc_error(struct evhttp_request *req, int status, const char *reason, int code,
                            const char *message)
{
    json_t *null_id = json_null();
    reply_json(req, status, reason, jrpc_error(null_id, code, message, NULL));
    json_decref(null_id);
}

/* ---- streams ---- */

/* While a stream is open its connection may be quiet for long (a question the user
 * takes minutes to answer, a session's GET stream): the short timeout for reading a
 * request would cut it. Back to the short one when the stream ends. */
static void stream_timeout(struct evhttp_request *req, int seconds)
{
    struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
    if (evcon)
        evhttp_connection_set_timeout(evcon, seconds);
}

static void stream_free(struct http_stream *s)
{
    struct http_server *srv = s->srv;
    if (s->counted)
        srv->use[s->token].inflight--;
    if (s->hs) {
        LIST_REMOVE(s, link);
        if (s->hs->get_stream == s)
            s->hs->get_stream = NULL;
    }
    if (s->req)
        http_conn_watch(srv, s->req, NULL, NULL);
    srv->n_streams--;
    json_decref(s->id);
    if (s->ev_closed)
        event_free(s->ev_closed);
    struct http_sess *hs = s->hs;
    free(s);
    if (hs && hs->ephemeral && LIST_EMPTY(&hs->streams))
        ephemeral_done(hs);
}

static void on_stream_closed(void *ud)
{
    struct http_stream *s = ud;
    struct evhttp_request *req = s->req;
    s->req = NULL;
    /* 2026-07-28: a request's stream closed before its answer is its cancellation. */
    struct serve_session *cancel = s->modern && s->id && s->hs ? s->hs->ss : NULL;
    json_t *id = cancel ? json_incref(s->id) : NULL;
    stream_free(s);
    if (cancel)
        serve_tools_cancel(cancel, id);
    json_decref(id);
    /* A request the client hung up on before its answer was finished is taken off the
     * connection and left to us (libevent 2.1): ending it frees it. One still on the
     * connection is freed with it. */
    if (req && !evhttp_request_get_connection(req))
        evhttp_send_reply_end(req);
}

/* Ends the stream: an event stream is closed; a request that got no answer yet gets
 * status (202 after a cancellation: MCP sends no answer then; 404 when its session
 * ended under it). */
static void stream_end_with(struct http_stream *s, int status)
{
    if (s->req) {
        stream_timeout(s->req, HTTP_READ_TIMEOUT_S);
        http_conn_watch(s->srv, s->req, NULL, NULL);
        if (s->sse)
            evhttp_send_reply_end(s->req);
        else if (status == 202)
            evhttp_send_reply(s->req, 202, "Accepted", NULL);
        else
            reply_rpc_error(s->req, status, "Not Found", -32001, "the session has ended");
        s->req = NULL;
    }
    stream_free(s);
}

static void stream_end(struct http_stream *s)
{
    stream_end_with(s, 202);
}

static void sse_start(struct http_stream *s)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(s->req);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_send_reply_start(s->req, 200, "OK");
    s->sse = true;
}

/* false when the stream was ended for not reading. */
static bool sse_event(struct http_stream *s, const char *data)
{
    if (http_conn_pending_out(s->req) > HTTP_MAX_PENDING_OUT) {
        log_warnx("serve: a client does not read its event stream; ending it");
        stream_end(s);
        return false;
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "event: message\ndata: %s\n\n", data);
    evhttp_send_reply_chunk(s->req, b);
    evbuffer_free(b);
    return true;
}

static bool is_answer_to(const json_t *msg, const json_t *id)
{
    return id && (json_object_get(msg, "result") || json_object_get(msg, "error")) &&
           !json_object_get(msg, "method") && json_equal(json_object_get(msg, "id"), (json_t *)id);
}

/* The transport's send: to the stream of the related request, else the GET stream. */
static void http_send(void *t, json_t *msg, const json_t *related)
{
    struct http_sess *hs = t;
    struct http_stream *s = NULL;
    if (related)
        LIST_FOREACH(s, &hs->streams, link)
    if (s->id && s->req && json_equal(s->id, (json_t *)related))
        break;
    bool answer = s && is_answer_to(msg, s->id);
    if (!s || (!answer && !s->sse && !s->accepts_sse)) {
        s = hs->get_stream && hs->get_stream->req ? hs->get_stream : NULL;
        answer = false;
    }
    if (!s) {
        json_decref(msg); /* nowhere to say it: the client keeps no stream open */
        return;
    }
    int status = s->modern && answer ? modern_error_status(msg) : 200;
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return;
    if (answer && !s->sse) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, text, strlen(text));
        evhttp_add_header(evhttp_request_get_output_headers(s->req), "Content-Type",
                          "application/json");
        http_conn_watch(s->srv, s->req, NULL, NULL);
        stream_timeout(s->req, HTTP_READ_TIMEOUT_S);
        evhttp_send_reply(s->req, status,
                          status == 200   ? "OK"
                          : status == 404 ? "Not Found"
                                          : "Bad Request",
                          b);
        evbuffer_free(b);
        s->req = NULL;
        stream_free(s);
    } else {
        if (!s->sse)
            sse_start(s);
        if (sse_event(s, text) && answer)
            stream_end(s);
    }
    free(text);
}

static void http_forget(void *t, const json_t *related)
{
    struct http_sess *hs = t;
    struct http_stream *s;
    LIST_FOREACH(s, &hs->streams, link)
    if (s->id && json_equal(s->id, (json_t *)related)) {
        stream_end(s);
        return;
    }
}

static const struct serve_transport http_transport = {.send = http_send, .forget = http_forget};

/* ---- 2026-07-28: stateless requests ---- */

static void on_ephemeral_end(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    sess_end(ud, "the request was answered");
}

/* A modern request's session is done with its last stream: ended after this turn of
 * the loop (the session may still be on the stack). */
static void ephemeral_done(struct http_sess *hs)
{
    if (!hs->ev_end)
        hs->ev_end = evtimer_new(hs->srv->sv->base, on_ephemeral_end, hs);
    struct timeval now = {0, 0};
    evtimer_add(hs->ev_end, &now);
}

/* A request beyond the token's requests in flight, or beyond the streams open at
 * once, is answered 429 with Retry-After: true when req was answered so. */
static bool refused_over_limit(struct http_server *srv, struct evhttp_request *req, size_t token)
{
    if (srv->use[token].inflight < srv->o->max_inflight_per_token &&
        srv->n_streams < HTTP_MAX_STREAMS)
        return false;
    srv->sv->m.http_limited++;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
    reply_rpc_error(req, 429, "Too Many Requests", -32005, "too many requests in flight");
    return true;
}

/* A header value as sent, or the UTF-8 text of its "=?base64?...?=" form; NULL when
 * that does not decode. */
static char *header_value(const char *v)
{
    size_t n = strlen(v);
    if (n < 12 || strncmp(v, "=?base64?", 9) != 0 || strcmp(v + n - 2, "?=") != 0)
        return xstrdup(v);
    size_t blen = n - 11;
    unsigned char *out = xmalloc(blen + 1);
    int len = EVP_DecodeBlock(out, (const unsigned char *)v + 9, (int)blen);
    if (len < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding's zero bytes in. */
    for (size_t i = blen; i > 0 && v[9 + i - 1] == '='; i--)
        len--;
    out[len] = '\0';
    if (strlen((char *)out) != (size_t)len) { /* a NUL inside: never a name */
        free(out);
        return NULL;
    }
    return (char *)out;
}

/* The request metadata headers against the body (the 2026-07-28 transport): false
 * after answering 400 with HeaderMismatch, or -32602 for a _meta without what it must
 * carry. */
static bool modern_headers_ok(struct evhttp_request *req, const struct jrpc_msg *msg)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *pv = evhttp_find_header(in, "MCP-Protocol-Version");
    json_t *meta = json_object_get(msg->params, "_meta");
    const char *body_pv = json_string_value(json_object_get(meta, MCP_META_PROTOCOL_VERSION));
    char why[300] = "";
    if (!body_pv || !json_is_object(json_object_get(meta, MCP_META_CLIENT_CAPABILITIES))) {
        reply_json(req, 400, "Bad Request",
                   jrpc_error(msg->id, JRPC_INVALID_PARAMS,
                              "the request's _meta must carry " MCP_META_PROTOCOL_VERSION
                              " and " MCP_META_CLIENT_CAPABILITIES,
                              NULL));
        return false;
    }
    const char *method = evhttp_find_header(in, "Mcp-Method");
    if (!pv || strcmp(pv, body_pv) != 0)
        snprintf(why, sizeof(why), "Header mismatch: MCP-Protocol-Version %.40s, the body's %.40s",
                 pv ? pv : "(none)", body_pv);
    else if (!method || strcmp(method, msg->method) != 0)
        snprintf(why, sizeof(why), "Header mismatch: Mcp-Method %.60s, the body's %.60s",
                 method ? method : "(none)", msg->method);
    else if (strcmp(msg->method, "tools/call") == 0 || strcmp(msg->method, "prompts/get") == 0 ||
             strcmp(msg->method, "resources/read") == 0) {
        const char *body_name =
            json_string_value(json_object_get(msg->params, msg->method[0] == 'r' ? "uri" : "name"));
        const char *raw = evhttp_find_header(in, "Mcp-Name");
        char *name = raw ? header_value(raw) : NULL;
        if (!name || !body_name || strcmp(name, body_name) != 0)
            snprintf(why, sizeof(why), "Header mismatch: Mcp-Name %.80s, the body's %.80s",
                     raw ? raw : "(none)", body_name ? body_name : "(none)");
        free(name);
    }
    if (!why[0])
        return true;
    reply_json(req, 400, "Bad Request", jrpc_error(msg->id, MCP_ERR_HEADER_MISMATCH, why, NULL));
    return false;
}

/* The client hung up on a modern request: that is its cancellation (the transport's
 * rule); the cancellation ends the stream (forget). */
static void on_peer_closed(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct http_stream *s = ud;
    event_free(s->ev_closed);
    s->ev_closed = NULL;
    if (!s->hs || !s->hs->ss || !s->id)
        return;
    json_t *id = json_incref(s->id);
    serve_tools_cancel(s->hs->ss, id);
    json_decref(id);
}

/* A modern request: served on a session of its own, which ends with its answer; the
 * Mcp-Session-Id header is ignored. */
static void modern_post(struct http_server *srv, struct evhttp_request *req, struct jrpc_msg *msg,
                        size_t token, const char *user, const json_t *apps, const char *remote,
                        bool sse_ok)
{
    if (msg->kind != JRPC_REQUEST) {
        evhttp_send_reply(req, 202, "Accepted", NULL); /* none is defined over HTTP */
        return;
    }
    if (!modern_headers_ok(req, msg))
        return;
    if (refused_over_limit(srv, req, token))
        return;
    struct http_sess *hs = xcalloc(1, sizeof(*hs));
    hs->srv = srv;
    hs->token = token;
    hs->ephemeral = true;
    hs->last_active = now_mono_ns();
    LIST_INIT(&hs->streams);
    LIST_INSERT_HEAD(&srv->ephemeral, hs, link);
    hs->ss = serve_session_new(srv->sv, &http_transport, hs, user, remote, "http");
    hs->ss->apps = json_incref((json_t *)apps);
    struct http_stream *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    s->hs = hs;
    s->req = req;
    s->id = json_deep_copy(msg->id);
    s->accepts_sse = sse_ok;
    s->modern = true;
    s->token = token;
    s->counted = true;
    srv->use[token].inflight++;
    srv->n_streams++;
    LIST_INSERT_HEAD(&hs->streams, s, link);
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    http_conn_watch(srv, req, on_stream_closed, s);
    evutil_socket_t fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
    if (fd >= 0 && (event_base_get_features(srv->sv->base) & EV_FEATURE_EARLY_CLOSE)) {
        s->ev_closed = event_new(srv->sv->base, fd, EV_CLOSED, on_peer_closed, s);
        event_add(s->ev_closed, NULL);
    }
    stream_timeout(req, (int)srv->o->idle_timeout_s);
    serve_session_on_message(hs->ss, msg);
}

/* The status of a modern request's error answer: the transport's (404 for a method it
 * does not have, 400 for the protocol's own errors), else 200. */
static int modern_error_status(const json_t *msg)
{
    json_int_t code = json_integer_value(json_object_get(json_object_get(msg, "error"), "code"));
    if (code == JRPC_METHOD_NOT_FOUND)
        return 404;
    if (code == MCP_ERR_HEADER_MISMATCH || code == MCP_ERR_MISSING_CLIENT_CAPABILITY ||
        code == MCP_ERR_UNSUPPORTED_PROTOCOL_VERSION)
        return 400;
    return 200;
}

/* ---- sessions ---- */

static void sess_end(struct http_sess *hs, const char *reason)
{
    struct http_server *srv = hs->srv;
    bool ephemeral = hs->ephemeral;
    hs->ephemeral = false; /* its streams' ends must not schedule it again */
    while (!LIST_EMPTY(&hs->streams))
        stream_end_with(LIST_FIRST(&hs->streams), 404);
    if (hs->ss)
        serve_session_close(hs->ss, reason);
    LIST_REMOVE(hs, link);
    if (hs->ev_end)
        event_free(hs->ev_end);
    if (!ephemeral) {
        srv->n_sessions--;
        srv->use[hs->token].sessions--;
    }
    free(hs);
    /* The last session gone: what the busy time took from the heap goes back to the
     * system, so that a burst does not leave a hub at its peak size. */
    if (srv->n_sessions == 0)
        malloc_trim(0);
}

static struct http_sess *sess_find(struct http_server *srv, const char *id, size_t token)
{
    struct http_sess *hs;
    LIST_FOREACH(hs, &srv->sessions, link)
    if (strcmp(hs->ss->id, id) == 0)
        return hs->token == token ? hs : NULL;
    return NULL;
}

void http_sessions_remap(struct http_server *srv, const size_t *map, size_t n_old)
{
    struct http_sess *hs = LIST_FIRST(&srv->sessions), *next;
    for (; hs; hs = next) {
        next = LIST_NEXT(hs, link);
        if (hs->token < n_old && map[hs->token] == SIZE_MAX)
            sess_end(hs, "its token was removed from the tokens file");
    }
    /* The counters follow the tokens to their new lines. */
    memset(srv->use, 0, HTTP_TOKEN_SLOTS * sizeof(*srv->use));
    LIST_FOREACH(hs, &srv->sessions, link)
    {
        if (hs->token < n_old)
            hs->token = map[hs->token];
        srv->use[hs->token].sessions++;
        struct http_stream *s;
        LIST_FOREACH(s, &hs->streams, link)
        {
            s->token = hs->token;
            if (s->counted)
                srv->use[s->token].inflight++;
        }
    }
}

static void on_sweep(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct http_server *srv = ud;
    uint64_t now = now_mono_ns();
    struct http_sess *hs = LIST_FIRST(&srv->sessions), *next;
    for (; hs; hs = next) {
        next = LIST_NEXT(hs, link);
        /* A stream open, or a call running, is activity. */
        bool busy = !LIST_EMPTY(&hs->streams) || hs->ss->n_calls > 0;
        if (busy)
            hs->last_active = now;
        else if (now - hs->last_active > srv->o->idle_timeout_s * 1000000000ULL)
            sess_end(hs, "idle");
        else if (hs->get_stream && hs->get_stream->req && hs->get_stream->sse) {
            /* An SSE comment keeps proxies from timing the stream out. */
            struct evbuffer *b = evbuffer_new();
            evbuffer_add_printf(b, ": keepalive\n\n");
            evhttp_send_reply_chunk(hs->get_stream->req, b);
            evbuffer_free(b);
        }
    }
}

/* ---- checks ---- */

static bool accepts(const char *accept, const char *type)
{
    return accept && (strstr(accept, type) || strstr(accept, "*/*"));
}

static void peer(struct evhttp_request *req, char *out, size_t len)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    char *addr = NULL;
    ev_uint16_t port = 0;
    if (evcon)
        evhttp_connection_get_peer(evcon, &addr, &port);
    snprintf(out, len, "%s:%u", addr ? addr : "?", (unsigned)port);
}

/* A request the gate refused: 403 for Host and Origin, 401 with WWW-Authenticate and how
 * to send a token; audited unless the connection's gate did it already. */
/* --oauth's 401 and 403 (RFC 6750, RFC 9728): where the resource's metadata is, the
 * scope it wants, and why a token was refused. */
static void oauth_refuse(struct http_server *srv, struct evhttp_request *req, enum gate_result r,
                         const char *why)
{
    if (!why || !*why)
        why = http_gate_reason(r);
    /* The description in a quoted-string: its quotes, backslashes and controls left out. */
    char d[300];
    size_t o = 0;
    for (const char *p = why; *p && o < sizeof(d) - 1; p++)
        if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
            d[o++] = *p;
    d[o] = '\0';
    char hdr[1024];
    if (r == GATE_NO_TOKEN) /* RFC 6750: no error code when no credentials came */
        snprintf(hdr, sizeof(hdr), "Bearer resource_metadata=\"%s\", scope=\"app:*\"",
                 oauth_metadata_url(srv->oauth));
    else
        snprintf(hdr, sizeof(hdr),
                 "Bearer resource_metadata=\"%s\", scope=\"app:*\", error=\"%s\", "
                 "error_description=\"%s\"",
                 oauth_metadata_url(srv->oauth),
                 r == GATE_SCOPE ? "insufficient_scope" : "invalid_token", d);
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", hdr);
    reply_rpc_error(req, http_gate_status(r), r == GATE_SCOPE ? "Forbidden" : "Unauthorized",
                    -32001,
                    r == GATE_NO_TOKEN ? "no bearer token: this hub takes OAuth access tokens of "
                                         "its authorization server (see resource_metadata)"
                                       : why);
}

static void refuse(struct http_server *srv, struct evhttp_request *req, enum gate_result r,
                   const char *remote, bool audited, const char *why)
{
    int status = http_gate_status(r);
    if (status == 403)
        srv->sv->m.http_forbidden++;
    else
        srv->sv->m.http_unauthorized++;
    if (!audited)
        serve_audit_http(srv->sv, remote, "failure", why && *why ? why : http_gate_reason(r),
                         status);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Connection", "close");
    if (r == GATE_HOST) {
        reply_rpc_error(req, 403, "Forbidden", -32000,
                        "Host must name this machine's loopback (DNS rebinding protection)");
        return;
    }
    if (r == GATE_ORIGIN) {
        reply_rpc_error(req, 403, "Forbidden", -32000, "Origin not allowed");
        return;
    }
    if (srv->oauth) {
        oauth_refuse(srv, req, r, why);
        return;
    }
    /* RFC 6750: no error code when no credentials came; the text says what to do. */
    evhttp_add_header(out, "WWW-Authenticate",
                      r == GATE_BAD_TOKEN ? "Bearer realm=\"isolategpt\", error=\"invalid_token\", "
                                            "error_description=\"the bearer token is not valid\""
                                          : "Bearer realm=\"isolategpt\"");
    reply_rpc_error(req, 401, "Unauthorized", -32001,
                    r == GATE_BAD_TOKEN
                        ? "the bearer token is not valid (mistyped, or removed from the hub's "
                          "tokens file): send 'Authorization: Bearer TOKEN' with a token the "
                          "hub's operator made with 'hub serve token add USER --tokens FILE'"
                        : "no bearer token: send the header 'Authorization: Bearer TOKEN' with a "
                          "token the hub's operator made with 'hub serve token add USER --tokens "
                          "FILE' (this hub takes static tokens, not OAuth)");
}

/* ---- methods ---- */

static bool sess_idle(const struct http_sess *hs)
{
    return LIST_EMPTY(&hs->streams) && hs->ss->n_calls == 0 && hs->ss->n_asks == 0;
}

/* At the limits, the token's own oldest idle session ends to make room: clients that
 * never send DELETE (most do not) would otherwise lock their token out until the idle
 * timeout. A token never ends another token's sessions; false when nothing is idle. */
static bool room_for_session(struct http_server *srv, size_t token)
{
    if (srv->n_sessions < srv->o->max_sessions &&
        srv->use[token].sessions < srv->o->max_sessions_per_token)
        return true;
    struct http_sess *hs, *oldest = NULL;
    LIST_FOREACH(hs, &srv->sessions, link)
    if (hs->token == token && sess_idle(hs) && (!oldest || hs->last_active <= oldest->last_active))
        oldest = hs;
    if (!oldest)
        return false;
    sess_end(oldest, "replaced by a new session of the same token (its oldest idle one, at the "
                     "session limit)");
    return true;
}

static void on_post(struct http_server *srv, struct evhttp_request *req, size_t token,
                    const char *user, const json_t *apps, const char *remote)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *ctype = evhttp_find_header(in, "Content-Type");
    if (!ctype || strncasecmp(ctype, "application/json", 16) != 0) {
        reply_rpc_error(req, 415, "Unsupported Media Type", JRPC_INVALID_REQUEST,
                        "Content-Type must be application/json");
        return;
    }
    const char *accept = evhttp_find_header(in, "Accept");
    bool json_ok = accepts(accept, "application/json");
    bool sse_ok = accepts(accept, "text/event-stream");
    if (!json_ok || !sse_ok) {
        reply_rpc_error(req, 406, "Not Acceptable", JRPC_INVALID_REQUEST,
                        "Accept must list application/json and text/event-stream");
        return;
    }
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(body);
    const char *text = (const char *)evbuffer_pullup(body, -1);
    struct jrpc_msg msg;
    int code;
    char err[256];
    if (len == 0 || !text || jrpc_parse(text, len, &msg, &code, err, sizeof(err)) < 0) {
        reply_rpc_error(req, 400, "Bad Request", len ? code : JRPC_PARSE_ERROR,
                        len ? err : "empty body");
        return;
    }
    const char *pv_header = evhttp_find_header(in, "MCP-Protocol-Version");
    if ((msg.kind == JRPC_REQUEST && serve_modern_meta(msg.params)) ||
        (pv_header && mcpver_modern(mcpver_parse(pv_header)))) {
        modern_post(srv, req, &msg, token, user, apps, remote, sse_ok);
        jrpc_msg_free(&msg);
        return;
    }
    const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
    bool init = msg.kind == JRPC_REQUEST && strcmp(msg.method, "initialize") == 0;
    struct http_sess *hs = NULL;
    if (init && !sid) {
        if (!room_for_session(srv, token)) {
            srv->sv->m.http_limited++;
            evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "10");
            reply_rpc_error(req, 429, "Too Many Requests", -32005, "too many sessions");
            jrpc_msg_free(&msg);
            return;
        }
        hs = xcalloc(1, sizeof(*hs));
        hs->srv = srv;
        hs->token = token;
        LIST_INIT(&hs->streams);
        hs->ss = serve_session_new(srv->sv, &http_transport, hs, user, remote, "http");
        hs->ss->apps = json_incref((json_t *)apps);
        LIST_INSERT_HEAD(&srv->sessions, hs, link);
        srv->n_sessions++;
        srv->use[token].sessions++;
        evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", hs->ss->id);
    } else {
        if (!sid) {
            reply_rpc_error(req, 400, "Bad Request", JRPC_INVALID_REQUEST,
                            "Mcp-Session-Id header required (initialize first)");
            jrpc_msg_free(&msg);
            return;
        }
        hs = sess_find(srv, sid, token);
        if (!hs) {
            reply_rpc_error(req, 404, "Not Found", -32001, "no such session");
            jrpc_msg_free(&msg);
            return;
        }
        const char *pv = evhttp_find_header(in, "MCP-Protocol-Version");
        bool known = !pv;
        for (size_t i = 0; pv && versions[i]; i++)
            if (strcmp(pv, versions[i]) == 0)
                known = true;
        if (!known) {
            reply_rpc_error(req, 400, "Bad Request", JRPC_INVALID_REQUEST,
                            "unsupported MCP-Protocol-Version");
            jrpc_msg_free(&msg);
            return;
        }
    }
    hs->last_active = now_mono_ns();
    if (msg.kind != JRPC_REQUEST) {
        serve_session_on_message(hs->ss, &msg);
        jrpc_msg_free(&msg);
        evhttp_send_reply(req, 202, "Accepted", NULL);
        return;
    }
    if (refused_over_limit(srv, req, token)) {
        jrpc_msg_free(&msg);
        return;
    }
    struct http_stream *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    s->hs = hs;
    s->req = req;
    s->id = json_deep_copy(msg.id);
    s->accepts_sse = sse_ok;
    s->token = token;
    s->counted = true;
    srv->use[token].inflight++;
    srv->n_streams++;
    LIST_INSERT_HEAD(&hs->streams, s, link);
    http_conn_watch(srv, req, on_stream_closed, s);
    stream_timeout(req, (int)srv->o->idle_timeout_s);
    struct serve_session *ss = hs->ss;
    serve_session_on_message(ss, &msg);
    jrpc_msg_free(&msg);
    if (init && ss->state != SS_READY)
        sess_end(hs, "initialize failed"); /* its stream answered the error already */
}

/* GET opens the session's event stream; HEAD answers as GET would, without opening it. */
static void on_get(struct http_server *srv, struct evhttp_request *req, size_t token, bool head)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    if (!accepts(evhttp_find_header(in, "Accept"), "text/event-stream")) {
        reply_rpc_error(req, 406, "Not Acceptable", JRPC_INVALID_REQUEST,
                        "Accept must list text/event-stream");
        return;
    }
    const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
    struct http_sess *hs = sid ? sess_find(srv, sid, token) : NULL;
    if (!sid) {
        reply_rpc_error(req, 400, "Bad Request", JRPC_INVALID_REQUEST,
                        "Mcp-Session-Id header required");
        return;
    }
    if (!hs) {
        reply_rpc_error(req, 404, "Not Found", -32001, "no such session");
        return;
    }
    if (hs->get_stream) {
        reply_rpc_error(req, 409, "Conflict", JRPC_INVALID_REQUEST,
                        "this session has an event stream open already");
        return;
    }
    if (srv->n_streams >= HTTP_MAX_STREAMS) {
        reply_rpc_error(req, 429, "Too Many Requests", -32005, "too many streams");
        return;
    }
    if (head) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        evhttp_add_header(h, "Content-Type", "text/event-stream");
        evhttp_add_header(h, "Cache-Control", "no-cache");
        evhttp_send_reply(req, 200, "OK", NULL);
        return;
    }
    struct http_stream *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    s->hs = hs;
    s->req = req;
    s->accepts_sse = true;
    s->token = token;
    srv->n_streams++;
    LIST_INSERT_HEAD(&hs->streams, s, link);
    hs->get_stream = s;
    http_conn_watch(srv, req, on_stream_closed, s);
    stream_timeout(req, (int)srv->o->idle_timeout_s);
    sse_start(s);
}

static void on_delete(struct http_server *srv, struct evhttp_request *req, size_t token)
{
    const char *sid = evhttp_find_header(evhttp_request_get_input_headers(req), "Mcp-Session-Id");
    struct http_sess *hs = sid ? sess_find(srv, sid, token) : NULL;
    if (!hs) {
        if (sid)
            reply_rpc_error(req, 404, "Not Found", -32001, "no such session");
        else
            reply_rpc_error(req, 400, "Bad Request", JRPC_INVALID_REQUEST,
                            "Mcp-Session-Id header required");
        return;
    }
    sess_end(hs, "the client ended the session");
    evhttp_send_reply(req, 200, "OK", NULL);
}

#define ALLOWED_METHODS "GET, HEAD, POST, DELETE, OPTIONS"

/* OPTIONS, a browser's CORS preflight among them: it carries no token, so it is answered
 * after the Host and Origin checks alone; the request it announces is checked whole. */
static void on_options(struct evhttp_request *req, const char *origin)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Allow", ALLOWED_METHODS);
    if (origin) {
        evhttp_add_header(out, "Access-Control-Allow-Methods", ALLOWED_METHODS);
        evhttp_add_header(out, "Access-Control-Allow-Headers",
                          "Authorization, Content-Type, Accept, Mcp-Session-Id, "
                          "MCP-Protocol-Version, Last-Event-ID");
        evhttp_add_header(out, "Access-Control-Max-Age", "600");
    }
    evhttp_send_reply(req, 204, "No Content", NULL);
}

/* OAuth clients look for these after a 401 (RFC 9728 protected-resource metadata, RFC
 * 8414 and OpenID discovery, RFC 7591 registration): a JSON 404 tells them this hub has
 * no authorization server, and they fall back to the token configured for them. */
static bool oauth_path(const char *path)
{
    static const char *const prefixes[] = {"/.well-known/oauth-protected-resource",
                                           "/.well-known/oauth-authorization-server",
                                           "/.well-known/openid-configuration",
                                           "/register",
                                           "/authorize",
                                           "/token",
                                           NULL};
    for (const char *const *p = prefixes; *p; p++) {
        size_t n = strlen(*p);
        if (strncmp(path, *p, n) == 0 && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    /* RFC 8414's form for a path-bearing issuer: /mcp/.well-known/openid-configuration */
    return strncmp(path, "/mcp/.well-known/", 17) == 0;
}

static void not_found(struct evhttp_request *req, const char *path)
{
    json_t *body = json_pack(
        "{s:s, s:s}", "error", "not_found", "error_description",
        oauth_path(path) ? "this hub takes a static bearer token, not OAuth: configure the client "
                           "to send 'Authorization: Bearer TOKEN' to /mcp"
                         : "the MCP endpoint is /mcp");
    reply_json(req, 404, "Not Found", body);
}

static void on_request(struct evhttp_request *req, void *ud)
{
    struct http_server *srv = ud;
    bool audited;
    bool gated = http_conn_request(srv, req, &audited);
    char remote[80];
    peer(req, remote, sizeof(remote));
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const char *host = evhttp_find_header(in, "Host");
    const char *origin = evhttp_find_header(in, "Origin");
    /* A connection whose header block did not pass the gate gets this one answer. */
    if (!gated)
        evhttp_add_header(out, "Connection", "close");
    enum gate_result g = http_gate_origin(srv, host, origin);
    if (g != GATE_OK) {
        refuse(srv, req, g, remote, audited, NULL);
        return;
    }
    if (origin) {
        evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
        evhttp_add_header(out, "Vary", "Origin");
        evhttp_add_header(out, "Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate");
    }
    if (cmd == EVHTTP_REQ_OPTIONS) {
        on_options(req, origin);
        return;
    }
    /* RFC 9728's document: at the well-known path, and under it the resource's path. */
    if (srv->oauth && path &&
        (strcmp(path, "/.well-known/oauth-protected-resource") == 0 ||
         strcmp(path, "/.well-known/oauth-protected-resource/mcp") == 0) &&
        (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD)) {
        reply_json(req, 200, "OK", oauth_metadata(srv->oauth, srv->sv->ms));
        return;
    }
    if (!path || strcmp(path, "/mcp") != 0) {
        not_found(req, path ? path : "");
        return;
    }
    struct gate_verdict v;
    http_gate(srv, host, origin, evhttp_find_header(in, "Authorization"), &v);
    if (v.result != GATE_OK) {
        refuse(srv, req, v.result, remote, audited && !srv->oauth, v.why);
        return;
    }
    switch (cmd) {
    case EVHTTP_REQ_POST:
        on_post(srv, req, v.token, v.user, v.apps, remote);
        break;
    case EVHTTP_REQ_GET:
    case EVHTTP_REQ_HEAD:
        on_get(srv, req, v.token, cmd == EVHTTP_REQ_HEAD);
        break;
    case EVHTTP_REQ_DELETE:
        on_delete(srv, req, v.token);
        break;
    default:
        evhttp_add_header(out, "Allow", ALLOWED_METHODS);
        reply_rpc_error(req, 405, "Method Not Allowed", JRPC_INVALID_REQUEST,
                        "the MCP endpoint takes " ALLOWED_METHODS);
    }
    gate_verdict_done(&v);
}

/* ---- TLS ---- */

static SSL_CTX *tls_context(const char *cert, const char *key, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: cannot create a context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(err, errlen, "--tls-cert %s: %s", cert, ERR_reason_error_string(ERR_get_error()));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "--tls-key %s: %s", key, ERR_reason_error_string(ERR_get_error()));
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- the server ---- */

int serve_http(struct serve *sv, const struct serve_http_opts *o)
{
    struct http_server srv = {.sv = sv, .o = o};
    LIST_INIT(&srv.sessions);
    LIST_INIT(&srv.ephemeral);
    http_conns_init(&srv);
    char err[512];
    int rc = -1;
    bool secure = o->tls_cert || o->insecure_http;
    bool authenticated = o->tokens_file || o->oauth_issuer;
    srv.loopback = true; /* until the address parses: its errors are said as such */
    int fd =
        serve_listen_socket(o->listen, secure && authenticated, &srv.loopback, err, sizeof(err));
    if (fd < 0 && !srv.loopback && !secure) {
        log_warnx("--http %s is beyond loopback: give --tls-cert/--tls-key, or --insecure-http "
                  "if a TLS proxy in front of it is your choice",
                  o->listen);
        return -1;
    }
    if (fd < 0 && !srv.loopback && !authenticated) {
        log_warnx("--http %s is beyond loopback: --tokens FILE is required (or --oauth ISSUER)",
                  o->listen);
        return -1;
    }
    if (fd < 0) {
        log_warnx("--http %s: %s", o->listen, err);
        return -1;
    }
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    getsockname(fd, (struct sockaddr *)&bound, &blen);
    srv.port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                 : ((struct sockaddr_in *)&bound)->sin_port);
    if (o->tokens_file && http_tokens_load(&srv, err, sizeof(err)) < 0) {
        log_warnx("--tokens: %s", err);
        close(fd);
        return -1;
    }
    if (o->oauth_issuer) {
        /* The resource's URI, the tokens' audience: as given, else as this listener
         * would be named. */
        char aud[300];
        snprintf(aud, sizeof(aud), "%s://%s/mcp", o->tls_cert ? "https" : "http", o->listen);
        struct oauth_opts oo = {.issuer = o->oauth_issuer,
                                .audience = o->oauth_audience ? o->oauth_audience : aud,
                                .jwks_uri = o->oauth_jwks,
                                .user_claim = o->oauth_user_claim,
                                .max_users = HTTP_TOKEN_SLOTS - 1,
                                .refresh_s = sv->cfg->oauth_jwks_refresh_s,
                                .max_lifetime_s = sv->cfg->oauth_max_token_lifetime_s};
        if (!(srv.oauth = oauth_new(&oo, err, sizeof(err)))) {
            log_warnx("--oauth: %s", err);
            close(fd);
            return -1;
        }
    }
    srv.use = xcalloc(HTTP_TOKEN_SLOTS, sizeof(*srv.use));
    if (o->tls_cert) {
        srv.ssl = tls_context(o->tls_cert, o->tls_key, err, sizeof(err));
        if (!srv.ssl) {
            log_warnx("%s", err);
            close(fd);
            goto out;
        }
    }
    srv.http = evhttp_new(sv->base);
    evhttp_set_allowed_methods(srv.http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                             EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                             EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH);
    /* Raised per connection once its header block passes the gate (serve_http_conn.c). */
    evhttp_set_max_body_size(srv.http, HTTP_MAX_BODY_ANON);
    evhttp_set_max_headers_size(srv.http, HTTP_MAX_HEADERS);
    evhttp_set_timeout(srv.http, HTTP_READ_TIMEOUT_S);
    /* No text/html on replies without a body (202, DELETE's 200): each reply names its
     * own type. */
    evhttp_set_default_content_type(srv.http, NULL);
    evhttp_set_gencb(srv.http, on_request, &srv);
    if (http_conns_listen(&srv, fd, err, sizeof(err)) < 0) {
        log_warnx("--http %s: %s", o->listen, err);
        close(fd);
        goto out;
    }
    http_tokens_follow(&srv);
    srv.ev_sweep = event_new(sv->base, -1, EV_PERSIST, on_sweep, &srv);
    struct timeval tv = {.tv_sec = o->idle_timeout_s < 2 * SWEEP_INTERVAL_S ? 1 : SWEEP_INTERVAL_S};
    event_add(srv.ev_sweep, &tv);
    log_info("serving MCP on %s://%s/mcp", srv.ssl ? "https" : "http", o->listen);
    if (!srv.tokens && !srv.oauth)
        log_info("sessions without a token act as user %s", o->user);
    char status[300];
    snprintf(status, sizeof(status), "serving MCP on %s://%s/mcp", srv.ssl ? "https" : "http",
             o->listen);
    notify_ready(status);
    while (!hub_quit_requested(sv->hub))
        event_base_loop(sv->base, EVLOOP_ONCE);
    notify_stopping();
    rc = 0;
out:
    while (!LIST_EMPTY(&srv.sessions))
        sess_end(LIST_FIRST(&srv.sessions), "the hub is shutting down");
    while (!LIST_EMPTY(&srv.ephemeral))
        sess_end(LIST_FIRST(&srv.ephemeral), "the hub is shutting down");
    if (srv.ev_sweep)
        event_free(srv.ev_sweep);
    http_tokens_unfollow(&srv);
    if (srv.http)
        evhttp_free(srv.http);
    http_conns_free(&srv);
    if (srv.ssl)
        SSL_CTX_free(srv.ssl);
    tokens_free(srv.tokens);
    oauth_free(srv.oauth);
    free(srv.use);
    return rc;
}
