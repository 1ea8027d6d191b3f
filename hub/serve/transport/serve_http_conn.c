/* The connections under hub serve --http, from accept on. evhttp (libevent 2.1) reads a
 * request's whole body before it calls us and knows no limit on connections, so each
 * connection is ours from evhttp_set_bevcb on: its bufferevent carries a callback on its
 * input buffer, which sees each piece read before evhttp parses it, and evhttp's close
 * callback tells us its end. With that:
 *
 *   - the header block of a connection's first request is copied as it arrives and, once
 *     whole, put through the gate (serve_http_gate.c: Host, Origin, the token) before
 *     evhttp looks at the body: until a block passes, the connection's body limit is
 *     HTTP_MAX_BODY_ANON, so an anonymous client gets 413 (or its 401/403) and the hub
 *     never holds its body;
 *   - each request must arrive whole within --request-timeout, counted from its first
 *     byte (from accept for the first): one byte every few seconds no longer holds a
 *     connection, as evhttp's inactivity timeout let it;
 *   - connections are capped in total and per source (an IPv4 address, an IPv6 /64): at
 *     a cap the oldest connection that is still anonymous, else the oldest idle
 *     keep-alive one, makes room; one busy with a request is never taken;
 *   - when accept() runs out of descriptors the listener pauses (100 ms) instead of
 *     spinning on the error, the oldest idle or anonymous connection makes room, and a
 *     spare descriptor lets one waiting client be told no at once.
 *
 * Refusals here are audited, at most AUDIT_PER_S records a second; the ones left out are
 * counted in the next record (isolate.serve.suppressed), so that a flood cannot fill the
 * disk through the audit log either. (A filter bufferevent would see the bytes too, but
 * it reports its output written before the socket took it, and evhttp then closes a
 * connection with its last reply unsent.) */
#include "log.h"
#include "netaddr.h"
#include "transport.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define AUDIT_PER_S 10
#define RESUME_MS 100
#define EVICT_ON_EMFILE 8
/* A header block longer than this is passed on for evhttp to refuse (its own limit). */
#define HEAD_SCAN_MAX (HTTP_MAX_HEADERS + 8192)

enum conn_state {
    CONN_HEADERS, /* accepted; the first header block not complete yet */
    CONN_BODY,    /* a request is arriving */
    CONN_ACTIVE,  /* evhttp handed the request over: its reply is ours */
    CONN_IDLE,    /* kept alive between requests */
};

struct http_conn {
    struct http_server *srv;
    TAILQ_ENTRY(http_conn) link;
    struct bufferevent *bev;
    struct evbuffer_cb_entry *on_input;
    struct event *ev_admit, *ev_deadline;
    /* the closing of an open stream's connection (serve_http.c) */
    void (*closed)(void *);
    void *closed_ud;
    char *head; /* the first header block as it arrives, until it is whole */
    size_t head_len;
    enum conn_state state;
    bool closing;         /* being freed by us: no longer counted */
    bool gated;           /* its header block passed the gate: the full body limit */
    bool refusal_audited; /* ... or failed it, and the refusal is on record */
    bool admitted;        /* on_admit() ran: evhttp's close callback is ours */
    size_t token;
    int family;
    uint8_t source[8]; /* the IPv4 address, or the IPv6 /64 */
    char remote[80];
};

static struct evhttp_connection *conn_evcon(const struct http_conn *c)
{
    /* evhttp's callbacks on the bufferevent carry its connection; a freed one has none. */
    void *arg = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, NULL, &arg);
    return arg;
}

/* ---- audit ---- */

void http_conn_audit(struct http_server *srv, const char *remote, const char *reason, int status)
{
    uint64_t now = now_mono_ns();
    if (now - srv->audit_window_ns > 1000000000ULL) {
        srv->audit_window_ns = now;
        srv->audit_in_window = 0;
    }
    if (srv->audit_in_window >= AUDIT_PER_S) {
        srv->audit_suppressed++;
        return;
    }
    srv->audit_in_window++;
    serve_audit_conn(srv->sv, remote, reason, status, srv->audit_suppressed);
    srv->audit_suppressed = 0;
}

/* ---- closing ---- */

static void conn_forget(struct http_conn *c)
{
    struct http_server *srv = c->srv;
    if (!c->closing)
        srv->n_conns--;
    TAILQ_REMOVE(&srv->conns, c, link);
    evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->on_input);
    event_free(c->ev_admit);
    event_free(c->ev_deadline);
    free(c->head);
    free(c);
}

/* evhttp frees every incoming connection through evhttp_connection_free(), which calls
 * this first: the connection's end, whoever ends it. */
static void on_conn_closed(struct evhttp_connection *evcon, void *ud)
{
    (void)evcon;
    struct http_conn *c = ud;
    void (*closed)(void *) = c->closed;
    void *closed_ud = c->closed_ud;
    conn_forget(c);
    if (closed)
        closed(closed_ud);
}

static void conn_close(struct http_conn *c, const char *reason, int status)
{
    struct evhttp_connection *evcon = conn_evcon(c);
    if (c->closing || !evcon)
        return;
    struct http_server *srv = c->srv;
    if (reason) {
        srv->sv->m.http_limited++;
        http_conn_audit(srv, c->remote, reason, status);
    }
    c->closing = true;
    srv->n_conns--;
    evhttp_connection_free(evcon); /* on_conn_closed() frees c */
}

static void arm_deadline(struct http_conn *c)
{
    struct timeval tv = {.tv_sec = (time_t)c->srv->o->request_timeout_s};
    event_add(c->ev_deadline, &tv);
}

static void on_deadline(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct http_conn *c = ud;
    if (c->state == CONN_ACTIVE)
        return;
    if (c->state == CONN_IDLE) {
        conn_close(c, NULL, 0); /* a kept-alive connection nobody used: no refusal */
        return;
    }
    char why[120];
    snprintf(why, sizeof(why), "the request did not arrive whole within %llu s",
             (unsigned long long)c->srv->o->request_timeout_s);
    conn_close(c, why, 408);
}

/* ---- admission ---- */

static bool same_source(const struct http_conn *a, const struct http_conn *b)
{
    return a->family == b->family && memcmp(a->source, b->source, sizeof(a->source)) == 0;
}

static bool anonymous(const struct http_conn *c)
{
    return c->state == CONN_HEADERS || (c->state == CONN_BODY && !c->gated);
}

/* The connection to end to make room: the oldest anonymous one, else the oldest idle one
 * (from source's address when given); NULL when every one is busy with a request. */
static struct http_conn *victim(struct http_server *srv, const struct http_conn *source,
                                const struct http_conn *except)
{
    struct http_conn *c, *idle = NULL;
    TAILQ_FOREACH(c, &srv->conns, link)
    {
        if (c == except || c->closing || !c->admitted || (source && !same_source(c, source)))
            continue;
        if (anonymous(c))
            return c;
        if (c->state == CONN_IDLE && !idle)
            idle = c;
    }
    return idle;
}

static size_t from_source(struct http_server *srv, const struct http_conn *source)
{
    size_t n = 0;
    struct http_conn *c;
    TAILQ_FOREACH(c, &srv->conns, link)
    if (!c->closing && c->admitted && same_source(c, source))
        n++;
    return n;
}

/* At a cap: room made by the oldest anonymous or idle connection, else c is refused.
 * false when c was refused. */
static bool make_room(struct http_conn *c, bool per_source)
{
    struct http_server *srv = c->srv;
    struct http_conn *v = victim(srv, per_source ? c : NULL, c);
    char why[120];
    snprintf(why, sizeof(why), "too many connections%s (%zu)", per_source ? " from one source" : "",
             per_source ? srv->max_conns_per_source : srv->max_conns);
    if (!v) {
        conn_close(c, why, 503);
        return false;
    }
    char vwhy[200];
    snprintf(vwhy, sizeof(vwhy), "%s: the oldest %s connection makes room", why,
             anonymous(v) ? "anonymous" : "idle");
    conn_close(v, vwhy, 503);
    return true;
}

static void source_of(struct http_conn *c, const struct sockaddr *sa)
{
    c->family = sa ? sa->sa_family : AF_UNSPEC;
    if (!sa)
        return;
    if (sa->sa_family == AF_INET) {
        memcpy(c->source, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            c->family = AF_INET;
            memcpy(c->source, &a->s6_addr[12], 4);
        } else {
            memcpy(c->source, a->s6_addr, 8); /* one site's /64 is one source */
        }
    }
    char ip[INET6_ADDRSTRLEN];
    sockaddr_format_ip(sa, ip, sizeof(ip));
    snprintf(c->remote, sizeof(c->remote), "%s:%u", ip, (unsigned)sockaddr_port(sa));
}

/* Right after accept, once evhttp has set the connection up (its peer known). Until
 * then a reference of ours keeps the bufferevent: evhttp may have freed it already. */
static void on_admit(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct http_conn *c = ud;
    struct http_server *srv = c->srv;
    struct evhttp_connection *evcon = conn_evcon(c);
    struct bufferevent *bev = c->bev;
    if (!evcon) {
        c->closing = true; /* evhttp gave it up before it began */
        conn_forget(c);
        bufferevent_decref(bev);
        return;
    }
    bufferevent_decref(bev);
    c->admitted = true;
    evhttp_connection_set_closecb(evcon, on_conn_closed, c);
    source_of(c, evhttp_connection_get_addr(evcon));
    arm_deadline(c);
    if (srv->n_conns > srv->max_conns && !make_room(c, false))
        return;
    if (from_source(srv, c) > srv->max_conns_per_source)
        make_room(c, true);
}

/* ---- the header block ---- */

struct head {
    char host[257], origin[513], auth[601];
    bool has_host, has_origin, has_auth, chunked, bad;
    uint64_t length;
};

/* One header line's value, trimmed as evhttp trims it; the first of each name counts. */
static void head_field(struct head *h, const char *name, size_t nlen, const char *v, size_t vlen)
{
    char *dst = NULL;
    size_t cap = 0;
    bool *seen = NULL;
    if (nlen == 4 && strncasecmp(name, "host", 4) == 0)
        dst = h->host, cap = sizeof(h->host), seen = &h->has_host;
    else if (nlen == 6 && strncasecmp(name, "origin", 6) == 0)
        dst = h->origin, cap = sizeof(h->origin), seen = &h->has_origin;
    else if (nlen == 13 && strncasecmp(name, "authorization", 13) == 0)
        dst = h->auth, cap = sizeof(h->auth), seen = &h->has_auth;
    else if (nlen == 14 && strncasecmp(name, "content-length", 14) == 0) {
        char num[24];
        if (vlen == 0 || vlen >= sizeof(num)) {
            h->bad = true;
            return;
        }
        memcpy(num, v, vlen);
        num[vlen] = '\0';
        if (!parse_u64(num, 0, UINT64_MAX, &h->length))
            h->bad = true;
        return;
    } else if (nlen == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) {
        h->chunked = true; /* any coding: its length is not known ahead */
        return;
    }
    if (!dst || *seen)
        return;
    if (vlen >= cap || memchr(v, '\0', vlen)) {
        h->bad = true;
        return;
    }
    memcpy(dst, v, vlen);
    dst[vlen] = '\0';
    *seen = true;
}

/* The lines after the request line, up to the blank one. */
static void head_parse(const char *p, size_t len, struct head *h)
{
    const char *end = p + len;
    const char *line = memchr(p, '\n', len);
    line = line ? line + 1 : end;
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        if (stop > line && stop[-1] == '\r')
            stop--;
        if (stop == line)
            break;
        if (*line == ' ' || *line == '\t') {
            h->bad = true; /* a folded value: not read here, the request gets the small limit */
        } else {
            const char *colon = memchr(line, ':', (size_t)(stop - line));
            if (colon) {
                const char *v = colon + 1, *ve = stop;
                while (v < ve && (*v == ' ' || *v == '\t'))
                    v++;
                while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                    ve--;
                head_field(h, line, (size_t)(colon - line), v, (size_t)(ve - v));
            }
        }
        line = nl ? nl + 1 : end;
    }
}

/* The length of the header block up to its blank line, or 0 while it is incomplete;
 * the first from bytes were searched already. */
static size_t head_end(const char *p, size_t len, size_t from)
{
    for (size_t i = from; i < len; i++) {
        if (p[i] != '\n')
            continue;
        if (i + 1 < len && p[i + 1] == '\n')
            return i + 2;
        if (i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

static void gate_head(struct http_conn *c, const char *block, size_t len)
{
    struct http_server *srv = c->srv;
    struct head h = {0};
    if (block)
        head_parse(block, len, &h);
    else
        h.bad = true;
    struct gate_verdict v = {.result = GATE_NO_TOKEN};
    if (!h.bad)
        http_gate(srv, h.has_host ? h.host : NULL, h.has_origin ? h.origin : NULL,
                  h.has_auth ? h.auth : NULL, &v);
    gate_verdict_done(&v); /* the request's own gate gives its apps */
    struct evhttp_connection *evcon = conn_evcon(c);
    if (v.result == GATE_OK) {
        c->gated = true;
        c->token = v.token;
        if (evcon)
            evhttp_connection_set_max_body_size(evcon, HTTP_MAX_BODY);
        return;
    }
    /* Refused: the request still reaches serve_http.c (its 401 or 403 says how to get
     * in) unless its body is over the small limit: then evhttp answers 413 without
     * reading it, and this is the refusal's record. */
    if (!h.bad && (h.chunked || h.length > HTTP_MAX_BODY_ANON)) {
        char why[400];
        snprintf(why, sizeof(why), "%s, with a body %s (%u bytes before authentication)",
                 http_gate_reason(v.result), h.chunked ? "of unknown length" : "over the limit",
                 HTTP_MAX_BODY_ANON);
        if (v.result == GATE_HOST || v.result == GATE_ORIGIN)
            srv->sv->m.http_forbidden++;
        else
            srv->sv->m.http_unauthorized++;
        serve_audit_http(srv->sv, c->remote, "failure", why,
                         h.chunked ? http_gate_status(v.result) : 413);
        c->refusal_audited = true;
    }
}

/* Each piece read, before evhttp parses it (evbuffer callbacks run as the data is added,
 * evhttp's read callback after). */
static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *ud)
{
    struct http_conn *c = ud;
    if (info->n_added == 0 || c->closing)
        return;
    if (c->state == CONN_IDLE) {
        c->state = CONN_BODY; /* the next request: its own deadline from its first byte */
        arm_deadline(c);
        return;
    }
    if (c->state != CONN_HEADERS)
        return;
    size_t room = HEAD_SCAN_MAX - c->head_len;
    size_t n = info->n_added < room ? info->n_added : room;
    if (!c->head)
        c->head = xmalloc(HEAD_SCAN_MAX);
    struct evbuffer_ptr at;
    evbuffer_ptr_set(buf, &at, evbuffer_get_length(buf) - info->n_added, EVBUFFER_PTR_SET);
    evbuffer_copyout_from(buf, &at, c->head + c->head_len, n);
    size_t from = c->head_len > 2 ? c->head_len - 2 : 0;
    c->head_len += n;
    size_t end = head_end(c->head, c->head_len, from);
    if (end == 0 && c->head_len < HEAD_SCAN_MAX)
        return;
    /* A block too long for the copy is evhttp's to refuse (its own header limit). */
    gate_head(c, end ? c->head : NULL, end);
    free(c->head);
    c->head = NULL;
    c->state = CONN_BODY;
}

/* evhttp asks for each accepted connection's bufferevent, before it sets the socket. */
static struct bufferevent *conn_bev(struct event_base *base, void *ud)
{
    struct http_server *srv = ud;
    struct bufferevent *bev;
    if (srv->ssl) {
        SSL *ssl = SSL_new(srv->ssl);
        if (!ssl)
            return NULL;
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE);
    } else {
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!bev)
        return NULL;
    struct http_conn *c = xcalloc(1, sizeof(*c));
    c->srv = srv;
    c->bev = bev;
    c->state = CONN_HEADERS;
    str_copy(c->remote, "?", sizeof(c->remote));
    c->on_input = evbuffer_add_cb(bufferevent_get_input(bev), on_input, c);
    c->ev_admit = event_new(base, -1, 0, on_admit, c);
    c->ev_deadline = evtimer_new(base, on_deadline, c);
    TAILQ_INSERT_TAIL(&srv->conns, c, link);
    srv->n_conns++;
    bufferevent_incref(bev); /* until on_admit() */
    event_active(c->ev_admit, EV_TIMEOUT, 1);
    return bev;
}

static struct http_conn *conn_of(struct http_server *srv, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    struct http_conn *c;
    if (bev)
        TAILQ_FOREACH(c, &srv->conns, link)
    if (c->bev == bev)
        return c;
    return NULL;
}

static void on_reply_done(struct evhttp_request *req, void *ud)
{
    (void)req;
    struct http_conn *c = ud;
    if (!c->closing) {
        c->state = CONN_IDLE;
        arm_deadline(c);
    }
}

bool http_conn_request(struct http_server *srv, struct evhttp_request *req, bool *refusal_audited)
{
    struct http_conn *c = conn_of(srv, req);
    *refusal_audited = false;
    if (!c)
        return false;
    c->state = CONN_ACTIVE;
    event_del(c->ev_deadline);
    evhttp_request_set_on_complete_cb(req, on_reply_done, c);
    *refusal_audited = c->refusal_audited;
    c->refusal_audited = false;
    return c->gated;
}

void http_conn_watch(struct http_server *srv, struct evhttp_request *req, void (*closed)(void *),
                     void *ud)
{
    struct http_conn *c = conn_of(srv, req);
    if (c) {
        c->closed = closed;
        c->closed_ud = ud;
    }
}

size_t http_conn_pending_out(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

void http_conns_revoke(struct http_server *srv, const size_t *map, size_t n_old)
{
    struct http_conn *c, *next;
    for (c = TAILQ_FIRST(&srv->conns); c; c = next) {
        next = TAILQ_NEXT(c, link);
        if (c->closing || !c->gated || c->token >= n_old)
            continue;
        if (map[c->token] != SIZE_MAX) {
            c->token = map[c->token];
            continue;
        }
        c->gated = false; /* its next request is gated again by serve_http.c */
        if (c->state == CONN_IDLE)
            conn_close(c, NULL, 0);
    }
}

/* ---- the listener ---- */

static void on_resume(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct http_server *srv = ud;
    evconnlistener_enable(srv->listener);
}

/* libevent calls a listener's error callback with the listener's argument, which evhttp
 * took for itself: the server is found here instead (one per process). */
static struct http_server *listening;

static void on_accept_error(struct evconnlistener *l, void *ud)
{
    (void)ud;
    struct http_server *srv = listening;
    if (!srv)
        return;
    int err = EVUTIL_SOCKET_ERROR();
    evconnlistener_disable(l);
    uint64_t now = now_mono_ns();
    srv->accept_errors++;
    if (now - srv->accept_error_said_ns > 10000000000ULL) {
        log_warnx("serve: accept: %s (%llu times since the last report); pausing %d ms each time",
                  strerror(err), (unsigned long long)srv->accept_errors, RESUME_MS);
        srv->accept_error_said_ns = now;
        srv->accept_errors = 0;
    }
    if (err == EMFILE || err == ENFILE) {
        /* Descriptors back from the oldest anonymous or idle connections (closed at the
         * loop's next turn), a few at a time so that the backlog drains quickly. */
        for (int i = 0; i < EVICT_ON_EMFILE; i++) {
            struct http_conn *v = victim(srv, NULL, NULL);
            if (!v)
                break;
            conn_close(v,
                       "out of file descriptors: the oldest anonymous or idle connection "
                       "makes room",
                       503);
        }
        if (srv->spare_fd >= 0) {
            close(srv->spare_fd);
            int fd = accept4(evconnlistener_get_fd(l), NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                close(fd);
                srv->sv->m.http_limited++;
                http_conn_audit(srv, NULL, "out of file descriptors: a new connection refused",
                                503);
            }
            srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
    }
    struct timeval tv = {.tv_usec = RESUME_MS * 1000};
    evtimer_add(srv->ev_resume, &tv);
}

void http_conns_init(struct http_server *srv)
{
    TAILQ_INIT(&srv->conns);
    srv->spare_fd = -1;
    struct rlimit rl;
    size_t by_files = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        by_files = rl.rlim_cur / 2 < 8 ? 8 : (size_t)rl.rlim_cur / 2;
    srv->max_conns =
        srv->o->max_connections ? srv->o->max_connections : (by_files < 1024 ? by_files : 1024);
    srv->max_conns_per_source = srv->o->max_connections_per_source
                                    ? srv->o->max_connections_per_source
                                    : (srv->max_conns < 64 ? srv->max_conns : 64);
}

int http_conns_listen(struct http_server *srv, evutil_socket_t fd, char *err, size_t errlen)
{
    evhttp_set_bevcb(srv->http, conn_bev, srv);
    struct evhttp_bound_socket *bound = evhttp_accept_socket_with_handle(srv->http, fd);
    if (!bound) {
        snprintf(err, errlen, "cannot serve");
        return -1;
    }
    srv->listener = evhttp_bound_socket_get_listener(bound);
    listening = srv;
    evconnlistener_set_error_cb(srv->listener, on_accept_error);
    srv->ev_resume = evtimer_new(srv->sv->base, on_resume, srv);
    srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return 0;
}

void http_conns_free(struct http_server *srv)
{
    /* evhttp_free() has ended every connection (on_conn_closed); none that evhttp gave up
     * before admitting it is left, as on_admit() runs within the loop's turn. */
    while (!TAILQ_EMPTY(&srv->conns)) {
        struct http_conn *c = TAILQ_FIRST(&srv->conns);
        struct bufferevent *bev = c->bev;
        bool held = !c->admitted;
        conn_forget(c);
        if (held)
            bufferevent_decref(bev);
    }
    if (listening == srv)
        listening = NULL;
    if (srv->ev_resume)
        event_free(srv->ev_resume);
    if (srv->spare_fd >= 0)
        close(srv->spare_fd);
}
