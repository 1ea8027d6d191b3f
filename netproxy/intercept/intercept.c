/* The machine of a tunnel netproxy looks into (intercept.h). Each side (the client,
 * the upstream) is a socket, an optional TLS object on memory BIOs (so the first
 * flight the sniffer already read can be fed in, and the upstream's handshake can run
 * while the client's waits in its hello callback) and a buffer of bytes to write.
 * Reading a side stops while the other side's buffer is over HIGH_WATER and resumes
 * under LOW_WATER, so a slow peer holds its fast partner back instead of filling
 * memory. */
#include "intercept.h"

#include "netproxy/audit/audit.h"
#include "netproxy/core/core.h"
#include "creds.h"
#include "h1answer.h"
#include "h1rewrite.h"
#include "h2proxy.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "scrub.h"
#include "tlsca.h"
#include "tlsctx.h"
#include "upool.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_CHUNK 16384
#define READ_BURST (4 * READ_CHUNK) /* per event, so that one tunnel cannot hog the loop */
#define HIGH_WATER (256 * 1024)
#define LOW_WATER (64 * 1024)
/* What the client may have sent before its handshake goes on (one ClientHello, which
 * OpenSSL bounds by a record or two): more waits in the socket, not in our memory. */
#define HELLO_MAX (2 * (16384 + 5))
/* How long the tail of a response that may begin a value waits for the next bytes
 * before it is sent as it is (scrub.h): it holds no whole value. */
#define SCRUB_HOLD_US 50000

enum phase {
    P_PEEK,         /* waiting for the client's first byte: TLS, HTTP or other */
    P_CLIENT_HELLO, /* the client's hello is being read (its callback not yet called) */
    P_UPSTREAM_HS,  /* the client waits in its hello callback; our own handshake runs */
    P_CLIENT_HS,    /* the client's handshake resumed */
    P_FLOW,         /* requests */
};

enum proto { PR_H1, PR_H2, PR_OPAQUE };

struct side {
    struct intercept *ic;
    bool is_client;
    int fd;
    SSL *ssl; /* NULL: clear */
    BIO *rbio, *wbio;
    struct evbuffer *out;
    struct event *rev, *wev;
    bool reading, wev_on;
    bool eof;       /* nothing more will come from this side */
    bool shut_want; /* end our writing once out is empty */
    bool shut;
    uint64_t *wire_out; /* the conn's byte count for this direction */
};

struct intercept {
    struct conn *c;
    enum phase phase;
    enum proto proto;
    bool tls;         /* this tunnel's TLS is opened */
    bool refusing;    /* a refusal is being written: the tunnel ends once it is out */
    bool hello_again; /* the client's hello callback is called a second time */
    bool hello_refused;
    bool held;    /* a buffer is over HIGH_WATER: neither side is read (pressure()) */
    bool pool_up; /* the upstream connection goes to the pool when the tunnel ends */
    /* Set when the tunnel is to end: everything unwinds to the event callback, which
     * ends it there (nothing below it is freed under a caller's feet). */
    bool ending;
    enum close_reason end_reason;
    struct side cl, up;
    struct h1rw *h1;
    struct h2proxy *h2;
    struct cred_set *creds; /* the set the request being relayed started with */
    struct scan_carry carry;
    unsigned char alpn[256]; /* the client's ALPN list (wire form, without its length) */
    size_t alpn_len;
    unsigned char chosen[32]; /* the upstream's choice, given to the client */
    size_t chosen_len;
    char *first; /* bytes read before the hand-over (transparent egress's first flight) */
    size_t first_len;
    /* HTTP/1.1 and opaque answers towards the client, scrubbed of the values (scrub.h) */
    struct scrub *scrub;
    struct h1ans *ans; /* HTTP/1.1: the answers' framing, so a split value is found */
    struct evbuffer *scrubbed;
    struct event *hold_ev;
    /* The secrets whose value came back in an answer: one record per tunnel each. */
    char reflected[CRED_MAX_PER_SPOKE][CRED_NAME_MAX + 1];
    size_t n_reflected;
};

static bool side_flush(struct side *s);
static bool deliver(struct intercept *ic, struct side *from, const char *buf, size_t len);
/* A handshake step's outcome: SSL_do_handshake's rc, and when it is 1 (done) the
 * protocol ALPN chose (sel[0..sl), none: sl 0). */
struct hs_step {
    int rc;
    const unsigned char *sel;
    unsigned sl;
};

/* One step of s's handshake: false if its output cannot be flushed. */
static bool handshake_step(struct side *s, struct hs_step *st)
{
    ERR_clear_error();
    st->rc = SSL_do_handshake(s->ssl);
    if (!side_flush(s))
        return false;
    st->sel = NULL;
    st->sl = 0;
    if (st->rc == 1)
        SSL_get0_alpn_selected(s->ssl, &st->sel, &st->sl);
    return true;
}

static bool client_handshake(struct intercept *ic);
static void on_reflected(void *ud, const struct cred *c);

static struct proxy *PX(struct intercept *ic)
{
    return ic->c->px;
}

static struct side *other(struct side *s)
{
    return s->is_client ? &s->ic->up : &s->ic->cl;
}

static void reading(struct side *s, bool on)
{
    if (on == s->reading || !s->rev)
        return;
    if (on)
        event_add(s->rev, NULL);
    else
        event_del(s->rev);
    s->reading = on;
}

/* Back-pressure on both queues, whoever filled them: while either side's buffer is
 * over HIGH_WATER neither side is read, so a client that sends without reading
 * (HTTP/2 PINGs whose ACKs queue for it, requests answered by refusals) holds itself
 * back as well as the upstream; both are read again once both are under LOW_WATER. */
static void pressure(struct intercept *ic)
{
    size_t a = evbuffer_get_length(ic->cl.out), b = evbuffer_get_length(ic->up.out);
    if (!ic->held && (a > HIGH_WATER || b > HIGH_WATER)) {
        ic->held = true;
        reading(&ic->cl, false);
        reading(&ic->up, false);
    } else if (ic->held && a < LOW_WATER && b < LOW_WATER) {
        ic->held = false;
        if (ic->phase != P_FLOW || ic->refusing || ic->ending)
            return;
        if (!ic->cl.eof)
            reading(&ic->cl, true);
        if (!ic->up.eof)
            reading(&ic->up, true);
    }
}

/* Marks the tunnel to end (its close record says why, the first reason wins); the
 * event callback ends it once everything has unwound. Returns false for the callers. */
static bool end(struct intercept *ic, enum close_reason r)
{
    if (!ic->ending) {
        ic->ending = true;
        ic->end_reason = r;
        reading(&ic->cl, false);
        reading(&ic->up, false);
    }
    return false;
}

/* The tail of every event callback: ends the tunnel when it was marked. */
static void settle(struct intercept *ic)
{
    if (ic->ending)
        conn_end(ic->c, ic->end_reason);
}

/* Ciphertext the TLS object produced, queued for the socket. */
static void drain_wbio(struct side *s)
{
    if (!s->ssl)
        return;
    char buf[READ_CHUNK];
    int n;
    while ((n = BIO_read(s->wbio, buf, sizeof(buf))) > 0)
        evbuffer_add(s->out, buf, (size_t)n);
}

/* Writes what is queued; arms the write event when the socket is full; ends our
 * writing once everything is out and an end was asked for. false: the tunnel ended. */
static bool side_flush(struct side *s)
{
    struct intercept *ic = s->ic;
    if (ic->ending)
        return false;
    drain_wbio(s);
    while (evbuffer_get_length(s->out)) {
        int n = evbuffer_write(s->out, s->fd);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            /* A peer that had finished and left (curl closes after its close_notify)
             * misses only our goodbye: an ordinary end. */
            if (s->eof && (s->shut_want || ic->proto == PR_H2))
                return end(ic, CLOSE_DONE);
            return end(ic, s->is_client ? CLOSE_CLIENT_RESET : CLOSE_UPSTREAM_RESET);
        }
        *s->wire_out += (uint64_t)n;
        ic->c->last_active = now_mono_ns();
    }
    size_t left = evbuffer_get_length(s->out);
    if (left && !s->wev_on) {
        event_add(s->wev, NULL);
        s->wev_on = true;
    } else if (!left && s->wev_on) {
        event_del(s->wev);
        s->wev_on = false;
    }
    struct side *o = other(s);
    pressure(ic);
    if (!left && s->shut_want && !s->shut) {
        s->shut = true;
        (void)shutdown(s->fd, SHUT_WR);
    }
    if (!left && ic->refusing && s->is_client && s->shut)
        return end(ic, CLOSE_REFUSED);
    if (!left && ic->pool_up && s->is_client && s->shut)
        return end(ic, CLOSE_DONE);
    if (s->shut && o->shut && s->eof && o->eof)
        return end(ic, CLOSE_DONE);
    return true;
}

/* Plaintext for a side: through its TLS, or as it is. */
static bool side_write(struct side *s, const char *buf, size_t len)
{
    if (s->ic->ending)
        return false;
    if (s->shut || s->shut_want)
        return true;
    if (s->ssl) {
        while (len) {
            int n = SSL_write(s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
            if (n <= 0)
                return end(s->ic, CLOSE_TLS);
            buf += n;
            len -= (size_t)n;
        }
    } else {
        evbuffer_add(s->out, buf, len);
    }
    return side_flush(s);
}

/* Nothing more to send to s: a TLS close_notify, then the end of the stream. */
static bool side_close(struct side *s)
{
    if (s->shut_want)
        return true;
    if (s->ssl && SSL_is_init_finished(s->ssl))
        (void)SSL_shutdown(s->ssl);
    s->shut_want = true;
    return side_flush(s);
}

/* ---- records ---- */

static void record(struct intercept *ic, const char *action, enum reason r, const char *secret,
                   const char *method, const char *path, int status, const char *detail)
{
    struct np_request_record rec = {
        .action = action,
        .reason = r,
        .secret = secret,
        .method = method,
        .path = path,
        .status = status,
        .detail = detail,
        .version = ic->proto == PR_H2 ? "2" : "1.1",
        .tls = ic->tls,
    };
    (void)np_audit_request(ic->c, &rec);
}

/* ---- requests (HTTP/1.1 and HTTP/2 share this) ---- */

static struct cred_set *current_creds(struct intercept *ic)
{
    struct proxy *px = PX(ic);
    pthread_mutex_lock(&px->creds_lock);
    struct cred_set *s = cred_set_ref(ic->c->spoke->creds);
    pthread_mutex_unlock(&px->creds_lock);
    return s;
}

/* A request's head: the spoke's secrets as they are now (a rotation counts from the
 * next request), the decision, and a record of each value put in, written before the
 * request goes on. */
static void on_head(void *ud, const struct inject_req *rq, struct inject_result *res)
{
    struct intercept *ic = ud;
    struct conn *c = ic->c;
    cred_set_unref(ic->creds);
    ic->creds = current_creds(ic);
    struct inject_dest d = {.host = c->host.name, .port = c->port, .tls = ic->tls};
    if (ic->creds) {
        inject_request(ic->creds, &d, rq, res);
    } else {
        memset(res, 0, sizeof(*res));
        res->verdict = R_ALLOWED;
    }
    scan_carry_free(&ic->carry);
    char method[16], path[256];
    snprintf(method, sizeof(method), "%.*s", (int)(rq->method_len < 15 ? rq->method_len : 15),
             rq->method);
    const char *q = memchr(rq->target, '?', rq->target_len);
    size_t pl = q ? (size_t)(q - rq->target) : rq->target_len;
    snprintf(path, sizeof(path), "%.*s", (int)(pl < 255 ? pl : 255), rq->target);
    if (res->verdict != R_ALLOWED) {
        record(ic, "request", res->verdict, res->wrong ? res->wrong->name : NULL, method, path,
               reason_status(res->verdict), res->detail);
        return;
    }
    if (ic->ans)
        h1ans_request(ic->ans, rq->method, rq->method_len);
    for (size_t i = 0; i < res->n_injected; i++)
        if (np_audit_request(
                c, &(struct np_request_record){.action = "credential-inject",
                                               .reason = R_ALLOWED,
                                               .secret = res->injected[i]->name,
                                               .method = method,
                                               .path = path,
                                               .version = ic->proto == PR_H2 ? "2" : "1.1",
                                               .tls = true}) < 0) {
            /* Not on record, not sent. */
            inject_result_free(res);
            memset(res, 0, sizeof(*res));
            res->verdict = R_AUDIT;
            snprintf(res->detail, sizeof(res->detail),
                     "the audit log cannot be written; the request is not sent with a secret "
                     "in it unlogged");
            return;
        }
}

static enum reason on_body(void *ud, const char *buf, size_t len, char *detail, size_t dlen)
{
    struct intercept *ic = ud;
    const struct cred *w = inject_scan_stream(&ic->carry, ic->creds, ic->c->host.name, buf, len);
    if (!w)
        return R_ALLOWED;
    snprintf(detail, dlen,
             "the stand-in of secret %s is in the body of a request to %s, a host it is not for",
             w->name, ic->c->host.name);
    record(ic, "request", R_CRED_WRONG_HOST, w->name, ic->h1 ? h1rw_method(ic->h1) : "",
           ic->h1 ? h1rw_path(ic->h1) : "", 403, detail);
    return R_CRED_WRONG_HOST;
}

/* A piece of a request outside its body's stream (a chunk extension): scanned whole. */
static enum reason on_piece(void *ud, const char *buf, size_t len, char *detail, size_t dlen)
{
    struct intercept *ic = ud;
    const struct cred *w =
        ic->creds ? inject_wrong_host(ic->creds, ic->c->host.name, buf, len) : NULL;
    if (!w)
        return R_ALLOWED;
    snprintf(detail, dlen,
             "the stand-in of secret %s is in a chunk extension of a request to %s, a host it "
             "is not for",
             w->name, ic->c->host.name);
    record(ic, "request", R_CRED_WRONG_HOST, w->name, ic->h1 ? h1rw_method(ic->h1) : "",
           ic->h1 ? h1rw_path(ic->h1) : "", 403, detail);
    return R_CRED_WRONG_HOST;
}

static int h1_out(void *ud, const char *buf, size_t len)
{
    struct intercept *ic = ud;
    return side_write(&ic->up, buf, len) ? 0 : -1;
}

static bool h2_out(void *ud, bool to_client, const char *buf, size_t len)
{
    struct intercept *ic = ud;
    return side_write(to_client ? &ic->cl : &ic->up, buf, len);
}

static struct scrub *h2_scrub(void *ud)
{
    struct intercept *ic = ud;
    return scrub_new(ic->creds, on_reflected, ic);
}

static size_t h2_backlog(void *ud, bool to_client)
{
    struct intercept *ic = ud;
    return evbuffer_get_length(to_client ? ic->cl.out : ic->up.out);
}

/* Answers a refused request on the client's side and ends the tunnel once it is out:
 * whatever came after it in the stream is not sent on. */
static bool refuse(struct intercept *ic, enum reason r, int status, const char *detail)
{
    ic->refusing = true;
    reading(&ic->cl, false);
    reading(&ic->up, false);
    if (!status) {
        return end(ic, CLOSE_REFUSED);
    }
    char body[400];
    int bl = snprintf(body, sizeof(body), "netproxy: %s\n", detail);
    if (bl < 0 || (size_t)bl >= sizeof(body))
        bl = (int)strlen(body);
    char head[300];
    int hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nX-Proxy-Error: %s\r\nContent-Type: text/plain; "
                      "charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
                      status, http_status_text(status), reason_code(r), bl);
    ic->up.shut = true; /* nothing more goes upstream */
    if (!side_write(&ic->cl, head, (size_t)hl) || !side_write(&ic->cl, body, (size_t)bl))
        return false;
    return side_close(&ic->cl);
}

/* ---- answers to the client, scrubbed of the values ---- */

/* A value came back in an answer: replaced by its mask (scrub.h); on record once per
 * tunnel and secret, by name. */
static void on_reflected(void *ud, const struct cred *c)
{
    struct intercept *ic = ud;
    for (size_t i = 0; i < ic->n_reflected; i++)
        if (strcmp(ic->reflected[i], c->name) == 0)
            return;
    if (ic->n_reflected < CRED_MAX_PER_SPOKE)
        str_copy(ic->reflected[ic->n_reflected++], c->name, CRED_NAME_MAX + 1);
    char detail[512];
    snprintf(detail, sizeof(detail),
             "the value of secret %.64s came back in an answer from %.253s: the client got "
             "its stand-in instead",
             c->name, ic->c->host.name);
    record(ic, "credential-reflected", R_ALLOWED, c->name, ic->h1 ? h1rw_method(ic->h1) : "",
           ic->h1 ? h1rw_path(ic->h1) : "", 0, detail);
}

/* The scrubber for the set requests go out with now (made again after a rotation). */
static struct scrub *answer_scrub(struct intercept *ic)
{
    if (ic->scrub && scrub_set(ic->scrub) == ic->creds)
        return ic->scrub;
    /* Not in the middle of a body or of a tail it holds. */
    if (ic->scrub && (scrub_held(ic->scrub) || (ic->ans && !h1ans_between(ic->ans))))
        return ic->scrub;
    scrub_free(ic->scrub);
    ic->scrub = scrub_new(ic->creds, on_reflected, ic);
    return ic->scrub;
}

static bool write_scrubbed(struct intercept *ic)
{
    size_t n = evbuffer_get_length(ic->scrubbed);
    if (!n)
        return true;
    char *p = (char *)evbuffer_pullup(ic->scrubbed, -1);
    bool ok = side_write(&ic->cl, p, n);
    evbuffer_drain(ic->scrubbed, n);
    return ok;
}

/* The held tail waited long enough, or the answer's stream ended. */
static bool release_hold(struct intercept *ic)
{
    if (ic->hold_ev)
        evtimer_del(ic->hold_ev);
    scrub_flush(ic->scrub, ic->scrubbed);
    return write_scrubbed(ic);
}

static void on_hold(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct intercept *ic = arg;
    (void)release_hold(ic);
    settle(ic);
}

/* Whether the upstream connection may carry another tunnel's requests (upool.h): TLS
 * that netproxy verified, HTTP/1.1, every answer read whole, nothing pending or held
 * either way, no close announced by either side. */
static bool poolable(const struct intercept *ic)
{
    const struct side *u = &ic->up;
    return ic->tls && ic->proto == PR_H1 && ic->phase == P_FLOW && !ic->refusing && ic->h1 &&
           h1rw_idle(ic->h1) && ic->ans && h1ans_idle(ic->ans) && !scrub_held(ic->scrub) &&
           !evbuffer_get_length(ic->scrubbed) && u->ssl && SSL_is_init_finished(u->ssl) &&
           !u->eof && !u->shut && !u->shut_want && !evbuffer_get_length(u->out) &&
           !SSL_pending(u->ssl) && !BIO_ctrl_pending(u->rbio) && !BIO_ctrl_pending(u->wbio) &&
           (ic->chosen_len == 0 || (ic->chosen_len == 8 && memcmp(ic->chosen, "http/1.1", 8) == 0));
}

/* The client is done (it closed, or asked to close and has its answer): the upstream
 * connection is kept if it may be, and the client's side ends. */
static bool client_done(struct intercept *ic)
{
    if (poolable(ic)) {
        ic->pool_up = true;
        reading(&ic->up, false); /* anything it sends now drops it from the pool */
        return side_close(&ic->cl);
    }
    return side_close(&ic->cl) && side_close(&ic->up);
}

static bool to_client(struct intercept *ic, const char *buf, size_t len)
{
    struct scrub *sc = answer_scrub(ic);
    if (ic->ans)
        h1ans_feed(ic->ans, sc, buf, len, ic->scrubbed);
    else
        scrub_feed(sc, buf, len, ic->scrubbed);
    if (!write_scrubbed(ic))
        return false;
    /* The client asked to close (its Connection: close was not sent on): done once it
     * has every answer. */
    if (ic->h1 && ic->tls && h1rw_client_close(ic->h1) && h1ans_idle(ic->ans) && !ic->cl.shut_want)
        return client_done(ic);
    /* A framed body lets its tail go when it ends; a stream, after a moment. */
    if (scrub_held(sc) && (!ic->ans || h1ans_raw(ic->ans))) {
        if (!ic->hold_ev)
            ic->hold_ev = evtimer_new(ic->c->w->base, on_hold, ic);
        struct timeval tv = {0, SCRUB_HOLD_US};
        evtimer_add(ic->hold_ev, &tv);
    }
    return true;
}

/* ---- the stream after the handshakes ---- */

static bool deliver(struct intercept *ic, struct side *from, const char *buf, size_t len)
{
    if (!len || ic->refusing)
        return true;
    ic->c->last_active = now_mono_ns();
    if (ic->proto == PR_H2) {
        if (h2proxy_feed(ic->h2, from->is_client, buf, len) == 0)
            return true;
        return end(ic, from->is_client ? CLOSE_CLIENT_RESET : CLOSE_UPSTREAM_RESET);
    }
    if (!from->is_client)
        return to_client(ic, buf, len);
    if (ic->proto == PR_OPAQUE) {
        char detail[300];
        if (on_body(ic, buf, len, detail, sizeof(detail)) != R_ALLOWED)
            return end(ic, CLOSE_REFUSED);
        return side_write(&ic->up, buf, len);
    }
    enum h1_status st = h1rw_feed(ic->h1, buf, len);
    if (st == H1_OK)
        return true;
    if (st == H1_OUT)
        return false; /* side_write ended the tunnel */
    const char *detail;
    int status;
    enum reason r = h1rw_refusal(ic->h1, &detail, &status);
    if (st == H1_ERROR)
        record(ic, "request", r, NULL, h1rw_method(ic->h1), h1rw_path(ic->h1), status, detail);
    return refuse(ic, r, status, detail);
}

/* The end of a side's input: passed on to the other side. */
static bool side_eof(struct side *s)
{
    if (s->eof)
        return true;
    s->eof = true;
    reading(s, false);
    struct side *o = other(s);
    if (!s->is_client && s->ic->proto != PR_H2 && !release_hold(s->ic))
        return false;
    /* A client that leaves between answers: its upstream connection may be kept. */
    if (s->is_client && poolable(s->ic)) {
        if (!client_done(s->ic))
            return false;
        return side_flush(s);
    }
    if (s->ic->proto == PR_H2 && s->ic->phase == P_FLOW && s->ic->h2)
        h2proxy_eof(s->ic->h2, s->is_client);
    if (!side_close(o))
        return false;
    return side_flush(s);
}

/* Reads the socket into the TLS object (or straight through when clear). 1 more may
 * come, 0 end of stream, -1 error. */
static int side_read_socket(struct side *s, bool *fed)
{
    char buf[READ_CHUNK];
    size_t total = 0;
    *fed = false;
    while (total < READ_BURST) {
        size_t want = sizeof(buf);
        if (s->is_client && s->ssl && s->ic->phase != P_FLOW) {
            /* The client's handshake waits (on ours with the upstream, or for its own
             * next flight): no more than a hello's worth is taken meanwhile. */
            size_t pending = BIO_ctrl_pending(s->rbio);
            if (pending >= HELLO_MAX) {
                reading(s, false);
                return 1;
            }
            if (want > HELLO_MAX - pending)
                want = HELLO_MAX - pending;
        }
        ssize_t n = recv(s->fd, buf, want, 0);
        if (n > 0) {
            total += (size_t)n;
            *fed = true;
            if (s->ssl) {
                BIO_write(s->rbio, buf, (int)n);
            } else if (!deliver(s->ic, s, buf, (size_t)n)) {
                return -2; /* the tunnel ended */
            }
            continue;
        }
        if (n == 0)
            return 0;
        if (errno == EAGAIN || errno == EINTR)
            return 1;
        return -1;
    }
    return 1;
}

/* Plaintext out of a side's TLS, delivered. false: the tunnel ended. */
static bool side_pull(struct side *s)
{
    char buf[READ_CHUNK];
    for (;;) {
        int n = SSL_read(s->ssl, buf, sizeof(buf));
        if (n > 0) {
            if (!deliver(s->ic, s, buf, (size_t)n))
                return false;
            if (s->ic->refusing)
                return true;
            continue;
        }
        int e = SSL_get_error(s->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return side_flush(s); /* a key update or ticket may want out */
        if (e == SSL_ERROR_ZERO_RETURN)
            return side_eof(s);
        return end(s->ic, CLOSE_TLS);
    }
}

static bool upstream_handshake(struct intercept *ic);

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct side *s = arg;
    struct intercept *ic = s->ic;
    bool fed;
    int rc = side_read_socket(s, &fed);
    if (rc == -1)
        end(ic, s->is_client ? CLOSE_CLIENT_RESET : CLOSE_UPSTREAM_RESET);
    if (ic->ending) {
        settle(ic);
        return;
    }
    bool ok = true;
    if (s->ssl) {
        if (ic->phase == P_CLIENT_HELLO || ic->phase == P_CLIENT_HS) {
            if (s->is_client)
                ok = client_handshake(ic);
        } else if (ic->phase == P_UPSTREAM_HS) {
            if (!s->is_client)
                ok = upstream_handshake(ic);
        }
        if (ok && ic->phase == P_FLOW)
            ok = side_pull(s);
    }
    if (ok && rc == 0 && !ic->ending) {
        if (ic->phase != P_FLOW)
            end(ic, s->is_client ? CLOSE_CLIENT_RESET : CLOSE_UPSTREAM_RESET);
        else
            side_eof(s);
    }
    settle(ic);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct side *s = arg;
    struct intercept *ic = s->ic;
    /* Room again: what HTTP/2 held back for this side (h2proxy.h). */
    if (side_flush(s) && ic->proto == PR_H2 && ic->h2 && ic->phase == P_FLOW &&
        evbuffer_get_length(s->out) < LOW_WATER && h2proxy_flush(ic->h2) < 0)
        end(ic, CLOSE_INTERNAL);
    settle(ic);
}

static void side_init(struct intercept *ic, struct side *s, bool is_client, int fd,
                      uint64_t *wire_out)
{
    s->ic = ic;
    s->is_client = is_client;
    s->fd = fd;
    s->out = evbuffer_new();
    s->wire_out = wire_out;
    s->rev = event_new(ic->c->w->base, fd, EV_READ | EV_PERSIST, on_read, s);
    s->wev = event_new(ic->c->w->base, fd, EV_WRITE | EV_PERSIST, on_write, s);
    if (!s->out || !s->rev || !s->wev)
        fatalx("out of memory for a tunnel");
}

static void side_free(struct side *s)
{
    if (s->rev)
        event_free(s->rev);
    if (s->wev)
        event_free(s->wev);
    if (s->out)
        evbuffer_free(s->out);
    SSL_free(s->ssl); /* and its BIOs */
    memset(s, 0, sizeof(*s));
}

static bool side_tls(struct side *s, SSL_CTX *ctx)
{
    s->ssl = SSL_new(ctx);
    s->rbio = BIO_new(BIO_s_mem());
    s->wbio = BIO_new(BIO_s_mem());
    if (!s->ssl || !s->rbio || !s->wbio) {
        BIO_free(s->rbio);
        BIO_free(s->wbio);
        return false;
    }
    SSL_set_bio(s->ssl, s->rbio, s->wbio);
    SSL_set_app_data(s->ssl, s->ic);
    return true;
}

/* ---- the handshakes ---- */

/* The client's hello: its ALPN list kept for the upstream, and its server_name, which
 * must be the tunnel's host. The first call waits (RETRY) for the upstream's handshake;
 * the second, after it, lets the client's go on. */
static int on_client_hello(SSL *ssl, int *alert, void *arg)
{
    (void)arg;
    struct intercept *ic = SSL_get_app_data(ssl);
    if (ic->hello_again)
        return SSL_CLIENT_HELLO_SUCCESS;
    const unsigned char *p;
    size_t len;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p,
                                  &len) &&
        len >= 2 && (size_t)(p[0] << 8 | p[1]) == len - 2 && len - 2 <= sizeof(ic->alpn)) {
        memcpy(ic->alpn, p + 2, len - 2);
        ic->alpn_len = len - 2;
    }
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len)) {
        /* list length (2), type 0 (1), name length (2), name */
        size_t nl = len >= 5 ? (size_t)(p[3] << 8 | p[4]) : 0;
        if (len < 5 || p[2] != 0 || nl + 5 > len || nl != strlen(ic->c->host.name) ||
            strncasecmp((const char *)p + 5, ic->c->host.name, nl) != 0) {
            char name[256];
            snprintf(name, sizeof(name), "%.*s", (int)(nl < 253 ? nl : 253),
                     len >= 5 ? (const char *)p + 5 : "");
            char detail[700];
            snprintf(detail, sizeof(detail),
                     "the ClientHello names %.253s, but the tunnel goes to %.253s: netproxy "
                     "opens TLS only for the host a secret is for",
                     name, ic->c->host.name);
            record(ic, "tls", R_SNI_MISMATCH, NULL, "", "", 0, detail);
            ic->hello_refused = true;
            *alert = SSL_AD_UNRECOGNIZED_NAME;
            return SSL_CLIENT_HELLO_ERROR;
        }
    }
    return SSL_CLIENT_HELLO_RETRY;
}

static bool alpn_has(const unsigned char *list, size_t len, const char *proto)
{
    size_t pl = strlen(proto);
    for (size_t i = 0; i < len;) {
        size_t n = list[i];
        if (i + 1 + n > len)
            return false;
        if (n == pl && memcmp(list + i + 1, proto, n) == 0)
            return true;
        i += 1 + n;
    }
    return false;
}

/* The client gets what the upstream chose (or HTTP/1.1 when it chose nothing). */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg)
{
    (void)arg;
    struct intercept *ic = SSL_get_app_data(ssl);
    const char *want = ic->chosen_len ? (const char *)ic->chosen : "http/1.1";
    size_t wl = strlen(want);
    for (unsigned i = 0; i < inlen;) {
        unsigned n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (n == wl && memcmp(in + i + 1, want, n) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)n;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

static bool start_flow(struct intercept *ic)
{
    ic->phase = P_FLOW;
    if (!ic->creds)
        ic->creds = current_creds(ic); /* answers are scrubbed before any request */
    if (ic->proto == PR_H1) {
        ic->ans = h1ans_new();
        struct h1rw_ops ops = {.out = h1_out,
                               .head = on_head,
                               .body = on_body,
                               .piece = on_piece,
                               .keep_upstream = ic->tls,
                               .ud = ic};
        ic->h1 = h1rw_new(&ops);
    } else if (ic->proto == PR_H2) {
        struct h2proxy_ops ops = {.head = on_head,
                                  .body = on_body,
                                  .out = h2_out,
                                  .backlog = h2_backlog,
                                  .scrub_new = h2_scrub,
                                  .ud = ic};
        ic->h2 = h2proxy_new(&ops);
        if (!ic->h2 || h2proxy_start(ic->h2) < 0)
            return end(ic, CLOSE_INTERNAL);
    }
    reading(&ic->cl, true);
    reading(&ic->up, true);
    /* Plaintext already decrypted on either side. */
    if (ic->cl.ssl && !side_pull(&ic->cl))
        return false;
    if (ic->up.ssl && SSL_pending(ic->up.ssl) && !side_pull(&ic->up))
        return false;
    return true;
}

static bool client_handshake(struct intercept *ic)
{
    struct side *s = &ic->cl;
    struct hs_step st;
    if (!handshake_step(s, &st))
        return false;
    if (st.rc == 1) {
        ic->proto = st.sl == 2 && memcmp(st.sel, "h2", 2) == 0 ? PR_H2 : PR_H1;
        return start_flow(ic);
    }
    int e = SSL_get_error(s->ssl, st.rc);
    if (e == SSL_ERROR_WANT_READ) {
        reading(s, true); /* it took what it had (side_read_socket's cap) */
        return true;
    }
    if (e == SSL_ERROR_WANT_CLIENT_HELLO_CB && ic->phase == P_CLIENT_HELLO) {
        ic->phase = P_UPSTREAM_HS;
        return upstream_handshake(ic);
    }
    if (ic->hello_refused) {
        /* The hello callback refused (its record is written). */
        (void)side_flush(s);
        return end(ic, CLOSE_REFUSED);
    }
    char detail[300];
    unsigned long err = ERR_get_error();
    snprintf(detail, sizeof(detail), "the client's TLS handshake failed: %s",
             err ? ERR_reason_error_string(err) : "the connection ended");
    record(ic, "tls", R_CLIENT_TLS, NULL, "", "", 0, detail);
    ERR_clear_error();
    return end(ic, CLOSE_TLS);
}

/* Our handshake with the upstream, as a client that checks the certificate: the
 * client's protocols offered (those relayed: h2, http/1.1). */
/* An idle connection this spoke's earlier tunnel to the host left (upool.h), in place
 * of the one just dialled: no handshake; HTTP/1.1 to a client that offered it. */
static bool take_pooled(struct intercept *ic)
{
    struct side *s = &ic->up;
    struct conn *c = ic->c;
    int fd;
    SSL *ssl;
    /* A client that offers h2 gets what a new handshake gives (no h2 connection kept). */
    if (!ic->tls || (ic->alpn_len && !alpn_has(ic->alpn, ic->alpn_len, "http/1.1")) ||
        alpn_has(ic->alpn, ic->alpn_len, "h2") ||
        !upool_take(c->spoke, c->host.name, c->port, &fd, &ssl))
        return false;
    event_free(s->rev);
    event_free(s->wev);
    close(c->ufd);
    c->ufd = s->fd = fd;
    s->rev = event_new(c->w->base, fd, EV_READ | EV_PERSIST, on_read, s);
    s->wev = event_new(c->w->base, fd, EV_WRITE | EV_PERSIST, on_write, s);
    if (!s->rev || !s->wev)
        fatalx("out of memory for a tunnel");
    s->reading = s->wev_on = false;
    s->ssl = ssl;
    s->rbio = SSL_get_rbio(ssl);
    s->wbio = SSL_get_wbio(ssl);
    SSL_set_app_data(ssl, ic);
    socklen_t dl = sizeof(c->dst);
    if (getpeername(fd, (struct sockaddr *)&c->dst, &dl) == 0)
        c->have_dst = true;
    memcpy(ic->chosen, "http/1.1", 9);
    ic->chosen_len = 8;
    record(ic, "upstream-reuse", R_ALLOWED, NULL, "", "", 0,
           "an idle connection to the host that an earlier tunnel of this spoke verified and "
           "left is used again: no new handshake");
    return true;
}

static bool upstream_handshake(struct intercept *ic)
{
    struct side *s = &ic->up;
    struct conn *c = ic->c;
    if (!s->ssl && take_pooled(ic)) {
        ic->hello_again = true;
        ic->phase = P_CLIENT_HS;
        return client_handshake(ic);
    }
    if (!s->ssl) {
        if (!side_tls(s, tlsctx_client(PX(ic)->tls)))
            return end(ic, CLOSE_INTERNAL);
        SSL_set_connect_state(s->ssl);
        /* A session this spoke's tunnel to the host kept, to resume (tlssess.h). */
        if (!tlsctx_client_begin(PX(ic)->tls, s->ssl, c->host.name, c->port, c->spoke->name))
            return end(ic, CLOSE_INTERNAL);
        SSL_set_tlsext_host_name(s->ssl, c->host.name);
        SSL_set_hostflags(s->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set1_host(s->ssl, c->host.name) != 1)
            return end(ic, CLOSE_INTERNAL);
        unsigned char offer[32];
        size_t ol = 0;
        if (alpn_has(ic->alpn, ic->alpn_len, "h2")) {
            memcpy(offer + ol, "\x02h2", 3);
            ol += 3;
        }
        if (alpn_has(ic->alpn, ic->alpn_len, "http/1.1") || !ic->alpn_len) {
            memcpy(offer + ol, "\x08http/1.1", 9);
            ol += 9;
        }
        SSL_set_alpn_protos(s->ssl, offer, (unsigned)ol);
        reading(s, true);
    }
    struct hs_step st;
    if (!handshake_step(s, &st))
        return false;
    if (st.rc == 1) {
        if (st.sl && st.sl < sizeof(ic->chosen)) {
            memcpy(ic->chosen, st.sel, st.sl);
            ic->chosen[st.sl] = '\0';
            ic->chosen_len = st.sl;
        }
        /* An upstream that only speaks h2 to a client that did not offer it. */
        if (ic->chosen_len == 2 && !alpn_has(ic->alpn, ic->alpn_len, "h2"))
            return end(ic, CLOSE_TLS);
        reading(s, false); /* until the client's handshake is done */
        ic->hello_again = true;
        ic->phase = P_CLIENT_HS;
        return client_handshake(ic);
    }
    int e = SSL_get_error(s->ssl, st.rc);
    if (e == SSL_ERROR_WANT_READ)
        return true;
    char detail[400];
    long vr = SSL_get_verify_result(s->ssl);
    unsigned long err = ERR_get_error();
    if (vr != X509_V_OK)
        snprintf(detail, sizeof(detail), "%s's certificate is not trusted: %s", c->host.name,
                 X509_verify_cert_error_string(vr));
    else
        snprintf(detail, sizeof(detail), "the TLS handshake with %s failed: %s", c->host.name,
                 err ? ERR_reason_error_string(err) : "the connection ended");
    ERR_clear_error();
    tlsctx_client_failed(PX(ic)->tls, s->ssl);
    record(ic, "tls", R_UPSTREAM_TLS, NULL, "", "", 502, detail);
    return end(ic, CLOSE_TLS);
}

/* The first byte says what the client speaks. */
static bool decide_first(struct intercept *ic, unsigned char b)
{
    struct conn *c = ic->c;
    bool secret_host = false;
    struct cred_set *cs = current_creds(ic);
    secret_host = cred_set_for_host(cs, c->host.name);
    cred_set_unref(cs);
    if (b == 0x16 && !secret_host) {
        /* TLS to a host no secret is for: never opened; the ordinary relay. */
        char *first = ic->first;
        size_t first_len = ic->first_len;
        ic->first = NULL;
        /* The 200 may still be partly queued: the relay sends the rest first. */
        size_t unsent = evbuffer_get_length(ic->cl.out);
        char *answer = unsent ? xmalloc(unsent) : NULL;
        if (unsent)
            evbuffer_remove(ic->cl.out, answer, unsent);
        c->ic = NULL;
        intercept_free(ic);
        conn_relay(c, first, first_len, answer, unsent);
        return false;
    }
    if (b == 0x16) {
        struct tlsca *ca = __atomic_load_n(&PX(ic)->ca, __ATOMIC_ACQUIRE);
        if (!ca || !PX(ic)->tls) {
            record(ic, "tls", R_CLIENT_TLS, NULL, "", "", 0,
                   "no CA to answer for the host with (the hub has not sent one)");
            return end(ic, CLOSE_TLS);
        }
        ic->tls = true;
        struct side *s = &ic->cl;
        char err[300];
        if (!side_tls(s, tlsctx_server(PX(ic)->tls)) ||
            !tlsca_use_for(ca, s->ssl, c->host.name, err, sizeof(err))) {
            log_warnx("tunnel %s: %s", c->id, err);
            return end(ic, CLOSE_INTERNAL);
        }
        SSL_set_accept_state(s->ssl);
        ic->phase = P_CLIENT_HELLO;
        if (ic->first_len)
            BIO_write(s->rbio, ic->first, (int)ic->first_len);
        free(ic->first);
        ic->first = NULL;
        reading(s, true);
        return client_handshake(ic);
    }
    /* In clear: HTTP when it starts like a method, else bytes scanned as they pass. */
    bool token = (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
    ic->proto = token ? PR_H1 : PR_OPAQUE;
    if (!start_flow(ic))
        return false;
    if (ic->first_len) {
        char *first = ic->first;
        ic->first = NULL;
        bool ok = deliver(ic, &ic->cl, first, ic->first_len);
        free(first);
        return ok;
    }
    return true;
}

static void on_peek(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct intercept *ic = arg;
    unsigned char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK);
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            end(ic, n == 0 ? CLOSE_DONE : CLOSE_CLIENT_RESET);
            settle(ic);
        }
        return;
    }
    reading(&ic->cl, false);
    event_assign(ic->cl.rev, ic->c->w->base, ic->cl.fd, EV_READ | EV_PERSIST, on_read, &ic->cl);
    struct conn *c = ic->c;
    if (!decide_first(ic, b) && c->ic == ic)
        settle(ic);
}

struct tlsctx *intercept_tls_new(const char *ca_file, char *err, size_t errlen)
{
    return tlsctx_new(ca_file, on_client_hello, on_alpn, err, errlen);
}

/* ---- the hand-over ---- */

bool intercept_head_refused(struct conn *c, const char *buf, size_t len, char *detail, size_t dlen)
{
    struct proxy *px = c->px;
    pthread_mutex_lock(&px->creds_lock);
    struct cred_set *s = cred_set_ref(c->spoke->creds);
    pthread_mutex_unlock(&px->creds_lock);
    size_t at;
    const struct cred *found = cred_set_find(s, buf, len, NULL, NULL, &at);
    if (found)
        snprintf(detail, dlen,
                 "the stand-in of secret %s is in the CONNECT request itself, which goes to "
                 "the proxy and is for no host",
                 found->name);
    cred_set_unref(s);
    return found != NULL;
}

bool intercept_wanted(struct conn *c)
{
    struct proxy *px = c->px;
    if (c->raw || c->mode == MODE_DNS || c->host.kind != HOST_NAME)
        return false;
    pthread_mutex_lock(&px->creds_lock);
    bool any = c->spoke->creds && c->spoke->creds->n > 0;
    pthread_mutex_unlock(&px->creds_lock);
    return any;
}

void intercept_start(struct conn *c)
{
    struct intercept *ic = xcalloc(1, sizeof(*ic));
    ic->c = c;
    ic->scrubbed = evbuffer_new();
    c->ic = ic;
    c->state = C_RELAY;
    c->last_active = now_mono_ns();
    side_init(ic, &ic->cl, true, c->cfd, &c->u2c.bytes);
    side_init(ic, &ic->up, false, c->ufd, &c->c2u.bytes);
    /* What the client sent before the tunnel was decided. */
    ic->first = c->c2u.pre;
    ic->first_len = c->c2u.pre_len;
    c->c2u.pre = NULL;
    c->c2u.pre_len = 0;
    conn_arm_relay_timer(c);
    if (c->mode == MODE_PROXY) {
        /* The answer to CONNECT, in clear, before anything else. */
        evbuffer_add(ic->cl.out, RESPONSE_ESTABLISHED, strlen(RESPONSE_ESTABLISHED));
        c->answered = true;
        if (!side_flush(&ic->cl)) {
            settle(ic);
            return;
        }
    }
    ic->phase = P_PEEK;
    if (ic->first_len) {
        if (!decide_first(ic, (unsigned char)ic->first[0]) && c->ic == ic)
            settle(ic);
        return;
    }
    /* Peek, so that a TLS tunnel handed back to the relay loses nothing. */
    event_assign(ic->cl.rev, c->w->base, c->cfd, EV_READ | EV_PERSIST, on_peek, ic);
    reading(&ic->cl, true);
}

void intercept_free(struct intercept *ic)
{
    if (!ic)
        return;
    /* Kept only from a tunnel that ended in order, at the client's side. */
    if (ic->pool_up && ic->ending &&
        (ic->end_reason == CLOSE_DONE || ic->end_reason == CLOSE_CLIENT_RESET) && poolable(ic)) {
        struct conn *c = ic->c;
        upool_put(c->w->base, c->spoke, c->host.name, c->port, c->ufd, ic->up.ssl);
        c->ufd = -1;
        ic->up.ssl = NULL;
    }
    h1rw_free(ic->h1);
    h2proxy_free(ic->h2);
    side_free(&ic->cl);
    side_free(&ic->up);
    cred_set_unref(ic->creds);
    scan_carry_free(&ic->carry);
    free(ic->first);
    scrub_free(ic->scrub);
    h1ans_free(ic->ans);
    if (ic->scrubbed)
        evbuffer_free(ic->scrubbed);
    if (ic->hold_ev)
        event_free(ic->hold_ev);
    free(ic);
}
