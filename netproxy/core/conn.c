#include "conn.h"

#include "addrguard.h"
#include "netproxy/audit/audit.h"
#include "dial.h"
#include "netproxy/intercept/intercept.h"
#include "netproxy/egress/egress.h"
#include "lib/audit.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "response.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How much a refused client may still send while we linger before closing; past it
 * the connection is closed at once (the kernel may then reset it). */
#define LINGER_MAX_BYTES (256 * 1024)
#define READ_CHUNK 4096

static void on_client_read(evutil_socket_t fd, short what, void *arg);
static void on_client_write(evutil_socket_t fd, short what, void *arg);
static void on_upstream_read(evutil_socket_t fd, short what, void *arg);
static void on_upstream_write(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);
static void conn_free(struct conn *c);
static void deny(struct conn *c, enum reason r, const char *detail);
static void dial_next(struct conn *c);
static void read_request(struct conn *c);
static void cread_arm(struct conn *c, bool on);
static void admit(struct conn *c);

static struct event *new_event(struct conn *c, int fd, short what, event_callback_fn cb)
{
    struct event *ev = event_new(c->w->base, fd, what, cb, c);
    if (!ev)
        fatalx("out of memory creating an event");
    return ev;
}

void conn_arm_timer(struct conn *c, uint64_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

/* The counts are shared by every worker: changed under px->lock. */
static void uncount_pending(struct conn *c)
{
    if (!c->counted_pending)
        return;
    c->counted_pending = false;
    pthread_mutex_lock(&c->px->lock);
    c->px->pending--;
    c->spoke->pending--;
    pthread_mutex_unlock(&c->px->lock);
}

static void uncount_tunnel(struct conn *c)
{
    if (!c->counted_tunnel)
        return;
    c->counted_tunnel = false;
    pthread_mutex_lock(&c->px->lock);
    c->px->tunnels--;
    c->spoke->tunnels--;
    pthread_mutex_unlock(&c->px->lock);
}

static void free_request(struct conn *c)
{
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

static void close_upstream(struct conn *c)
{
    if (c->uread) {
        event_free(c->uread);
        c->uread = NULL;
    }
    if (c->uwrite) {
        event_free(c->uwrite);
        c->uwrite = NULL;
    }
    if (c->ufd >= 0) {
        close(c->ufd);
        c->ufd = -1;
    }
}

/* Whether spoke s may hold one more connection still sending its first bytes (under
 * px->lock). Beyond its own limit, a spoke may never hold more than what would still be
 * free of the global limit after it took one: so a few spokes, each under its own limit,
 * cannot hold the whole pool between them (each next one gets about half of what is
 * left), and a spoke that holds none gets a slot while two are free. */
static bool pending_slot_free(const struct proxy *px, const struct spoke *s)
{
    unsigned max = px->cfg->max_pending;
    if (px->pending >= max || s->pending >= s->max_pending)
        return false;
    unsigned free_after = max - px->pending - 1;
    return s->pending + 1 <= free_after || px->pending == 0;
}

/* "ADDR:PORT" of an address ([v6]:port). */
static void format_endpoint(const struct sockaddr *sa, char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN];
    sockaddr_format_ip(sa, ip, sizeof(ip));
    snprintf(buf, size, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, sockaddr_port(sa));
}

/* Where a refusal was going, for the budget's summary: the name and port once known,
 * else the address the client connected to. */
static void refusal_destination(const struct conn *c, char *buf, size_t size)
{
    if (c->have_host)
        snprintf(buf, size,
                 c->host.kind == HOST_IP && c->host.addr.ss_family == AF_INET6 ? "[%s]:%u"
                                                                               : "%s:%u",
                 c->host.name, c->port);
    else if (c->mode != MODE_PROXY && c->orig_dst.sin_family == AF_INET)
        format_endpoint((const struct sockaddr *)&c->orig_dst, buf, size);
    else
        snprintf(buf, size, "the proxy (no request yet)");
}

/* Past the spoke's connection budget: reset at once, unread and unrecorded one by one
 * (refusalbudget.h counts it for the summary). False when the connection may go on. */
static bool over_connection_budget(struct proxy *px, struct spoke *s, int fd)
{
    if (!s->budget.conns_on)
        return false;
    struct sockaddr_storage own;
    socklen_t len = sizeof(own);
    char dst[REFUSAL_DST_MAX] = "?";
    if (getsockname(fd, (struct sockaddr *)&own, &len) == 0)
        format_endpoint((const struct sockaddr *)&own, dst, sizeof(dst));
    if (refusal_budget_connection(px, s, dst))
        return false;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
    return true;
}

void conn_accept(struct worker *w, struct listener *l, int fd, const struct sockaddr *sa,
                 socklen_t salen)
{
    struct proxy *px = w->px;
    struct spoke *s = l->spoke;
    if (over_connection_budget(px, s, fd))
        return;
    struct conn *c = xcalloc(1, sizeof(*c));
    c->px = px;
    c->w = w;
    c->spoke = s;
    spoke_ref(s);
    c->cfd = fd;
    c->ufd = -1;
    if (salen <= sizeof(c->src))
        memcpy(&c->src, sa, salen);
    c->t_accept = now_mono_ns();
    c->t_accept_real = now_real_ns();
    audit_new_id(c->id);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    c->timer = evtimer_new(w->base, on_timer, c);
    if (!c->timer)
        fatalx("out of memory creating a timer");
    c->state = C_HEADER;
    req_init(&c->rp, &px->cfg->req);
    /* Where it was going decides what the client will send: a CONNECT request, its
     * own protocol, or DNS queries. */
    c->mode = egress_classify(c, l);
    pthread_mutex_lock(&px->lock);
    bool full = !pending_slot_free(px, s);
    if (!full) {
        px->pending++;
        s->pending++;
    }
    pthread_mutex_unlock(&px->lock);
    if (full) {
        /* Under a flood of slow clients: answer at once, do not read. */
        c->no_linger = true;
        deny(c, R_LIMIT_PENDING, "too many connections are still sending their request; retry");
        return;
    }
    c->counted_pending = true;
    c->cread = new_event(c, fd, EV_READ | EV_PERSIST, on_client_read);
    conn_arm_timer(c, px->cfg->header_timeout_ms);
    if (c->mode == MODE_TRANSPARENT) {
        egress_start(c, l);
        return;
    }
    /* The request usually arrives before we get to accept(): read it now rather than
     * after another trip through the event loop. */
    read_request(c);
}

void conn_read_first(struct conn *c)
{
    read_request(c);
}

static void cread_arm(struct conn *c, bool on)
{
    if (on == c->cread_on)
        return;
    if (on)
        event_add(c->cread, NULL);
    else
        event_del(c->cread);
    c->cread_on = on;
}

/* Copies the request line's parts for the records, before the buffer goes away. */
static void capture_request(struct conn *c)
{
    const struct req_parser *p = &c->rp;
    if (!c->buf || c->mode != MODE_PROXY)
        return;
    size_t n = p->method.len < sizeof(c->method) - 1 ? p->method.len : sizeof(c->method) - 1;
    memcpy(c->method, c->buf + p->method.off, n);
    c->method[n] = '\0';
    if (p->target.len)
        target_redact(c->buf + p->target.off, p->target.len, c->target, sizeof(c->target));
    if (p->user_agent.len) {
        n = p->user_agent.len < sizeof(c->user_agent) - 1 ? p->user_agent.len
                                                          : sizeof(c->user_agent) - 1;
        memcpy(c->user_agent, c->buf + p->user_agent.off, n);
        c->user_agent[n] = '\0';
    }
    c->have_target = p->method.len > 0;
}

static void start_relay(struct conn *c);
static bool pump(struct conn *c, struct half *h, bool from_is_client);
static void check_and_dial(struct conn *c, const struct addr_list *addrs);

static void on_resolved(void *arg, int error, const struct addr_list *addrs)
{
    struct conn *c = arg;
    c->lookup = NULL;
    c->t_dns_end = now_mono_ns();
    metrics_dns(c->px->metrics, c->t_dns_end - c->t_dns_start);
    evtimer_del(c->timer);
    if (error) {
        char detail[400];
        snprintf(detail, sizeof(detail), "cannot resolve %s: %s", c->host.name,
                 resolver_strerror(error));
        deny(c, R_DNS_FAIL, detail);
        return;
    }
    check_and_dial(c, addrs);
}

/* After the request head: everything that decides without touching the network. */
static void decide(struct conn *c)
{
    struct proxy *px = c->px;
    struct spoke *s = c->spoke;
    const char *why = NULL;
    char detail[400];
    uncount_pending(c);
    /* cread stays armed: the relay needs it next, and a client that speaks before
     * its 200 is parked in on_client_read. */
    evtimer_del(c->timer);
    capture_request(c);
    if (!req_is_connect(&c->rp, c->buf)) {
        deny(c, R_METHOD, "only CONNECT is served by this proxy");
        return;
    }
    if (intercept_head_refused(c, c->buf, c->rp.pos, detail, sizeof(detail))) {
        deny(c, R_CRED_WRONG_HOST, detail);
        return;
    }
    struct authority a;
    if (!authority_parse(c->buf + c->rp.target.off, c->rp.target.len, &a, &why)) {
        deny(c, R_BAD_REQUEST, why);
        return;
    }
    if (!host_canonicalise(a.host, a.host_len, a.bracketed, &c->host, &why)) {
        deny(c, R_BAD_HOST, why);
        return;
    }
    c->have_host = true;
    c->port = a.port;

    /* A raw TCP grant names this exact destination: no more to check. */
    if (conn_take_grant(c)) {
        admit(c);
        return;
    }
    enum reason r = policy_check_host(s->policy, &c->host, &c->rule, &c->registered);
    if (r == R_ALLOWED && !policy_port_allowed(s->policy, c->port))
        r = R_PORT;
    if (r != R_ALLOWED) {
        switch (r) {
        case R_NOT_ALLOWED:
            snprintf(detail, sizeof(detail),
                     "%s (registrable domain %s) is not in the allowlist of spoke %s", c->host.name,
                     c->registered, s->name);
            break;
        case R_PUBLIC_SUFFIX:
            snprintf(detail, sizeof(detail), "%s is a public suffix, not a registrable domain",
                     c->host.name);
            break;
        case R_IP_LITERAL:
            snprintf(detail, sizeof(detail),
                     "IP literal %s is not listed for spoke %s; use a host name", c->host.name,
                     s->name);
            break;
        default:
            snprintf(detail, sizeof(detail), "port %u is not allowed for spoke %s", c->port,
                     s->name);
            break;
        }
        if (!s->report_only) {
            deny(c, r, detail);
            return;
        }
        c->would_deny = r;
        metrics_decision(px->metrics, DECISION_WOULD_DENY, r);
    }
    admit(c);
}

bool conn_take_grant(struct conn *c)
{
    const char *grant = policy_tcp_grant(c->spoke->policy, &c->host, c->port);
    if (!grant)
        return false;
    c->raw = true;
    c->rule = grant;
    if (c->host.kind == HOST_NAME)
        c->registered = policy_registrable_domain(c->host.name);
    return true;
}

void conn_admit(struct conn *c)
{
    admit(c);
}

/* The destination is decided: the tunnel limits, the client's early bytes, then the
 * address (an IP literal, a --resolve override, or DNS). */
static void admit(struct conn *c)
{
    struct proxy *px = c->px;
    struct spoke *s = c->spoke;
    char detail[400];
    uncount_pending(c);
    evtimer_del(c->timer);
    pthread_mutex_lock(&px->lock);
    enum reason limit = px->tunnels >= px->cfg->max_tunnels ? R_LIMIT_GLOBAL
                        : s->tunnels >= s->max_tunnels      ? R_LIMIT_SPOKE
                                                            : R_ALLOWED;
    if (limit == R_ALLOWED) {
        px->tunnels++;
        s->tunnels++;
    }
    pthread_mutex_unlock(&px->lock);
    if (limit == R_LIMIT_GLOBAL) {
        deny(c, R_LIMIT_GLOBAL, "the proxy is at its tunnel limit; retry later");
        return;
    }
    if (limit == R_LIMIT_SPOKE) {
        snprintf(detail, sizeof(detail), "spoke %s is at its limit of %u tunnels; retry later",
                 s->name, s->max_tunnels);
        deny(c, R_LIMIT_SPOKE, detail);
        return;
    }
    c->counted_tunnel = true;

    /* Bytes the client sent after its request head are tunnel payload; in transparent
     * mode every byte read so far (the first flight) is. */
    if (c->mode != MODE_PROXY && c->len > 0) {
        c->c2u.pre_len = c->len;
        c->c2u.pre = xmalloc(c->c2u.pre_len);
        memcpy(c->c2u.pre, c->buf, c->c2u.pre_len);
        c->c2u.pre_counts = true;
    } else if (c->mode == MODE_PROXY && c->rp.pos < c->len) {
        c->c2u.pre_len = c->len - c->rp.pos;
        c->c2u.pre = xmalloc(c->c2u.pre_len);
        memcpy(c->c2u.pre, c->buf + c->rp.pos, c->c2u.pre_len);
        c->c2u.pre_counts = true;
    }
    free_request(c);

    struct addr_list one;
    if (c->host.kind == HOST_IP) {
        memset(&one, 0, sizeof(one));
        one.a[0] = c->host.addr;
        if (one.a[0].ss_family == AF_INET)
            ((struct sockaddr_in *)&one.a[0])->sin_port = htons(c->port);
        else
            ((struct sockaddr_in6 *)&one.a[0])->sin6_port = htons(c->port);
        one.n = one.total = 1;
        check_and_dial(c, &one);
        return;
    }
    if (resolver_override(c->w->resolver, c->host.name, c->port, &one)) {
        check_and_dial(c, &one);
        return;
    }
    c->state = C_RESOLVE;
    c->t_dns_start = now_mono_ns();
    conn_arm_timer(c, px->cfg->dns_timeout_ms);
    c->lookup = resolver_lookup(c->w->resolver, c->host.name, c->port, on_resolved, c);
}

/* Every answer must pass the guard before any is dialled: a name that resolves to a
 * public and a private address is refused, not half-trusted. */
static void check_and_dial(struct conn *c, const struct addr_list *addrs)
{
    for (unsigned i = 0; i < addrs->n; i++) {
        enum addr_class cls;
        enum guard_verdict v =
            addrguard_check(c->px->guard, (const struct sockaddr *)&addrs->a[i], &cls);
        /* A raw TCP grant may name a loopback or private destination (the operator
         * listed it); never one of the proxy's own listeners. */
        if (guard_allows(v) || (c->raw && v != GUARD_DENY_LOOP))
            continue;
        c->have_dst = true;
        c->dst = addrs->a[i];
        c->dst_class = cls;
        c->guard = guard_verdict_name(v, cls);
        char ip[INET6_ADDRSTRLEN], detail[400];
        sockaddr_format_ip((const struct sockaddr *)&addrs->a[i], ip, sizeof(ip));
        if (v == GUARD_DENY_LOOP) {
            snprintf(detail, sizeof(detail), "%s:%u is this proxy itself", ip, c->port);
            deny(c, R_LOOP, detail);
        } else {
            snprintf(detail, sizeof(detail), "%s resolves to %s, a %s address, which is refused",
                     c->host.name, ip, c->guard);
            deny(c, R_ADDRESS, detail);
        }
        return;
    }
    c->addrs = xmalloc(sizeof(*c->addrs));
    *c->addrs = *addrs;
    c->next_addr = 0;
    c->state = C_CONNECT;
    c->t_connect_start = now_mono_ns();
    conn_arm_timer(c, c->px->cfg->connect_timeout_ms);
    dial_next(c);
}

/* The host's own addresses are learned at start, so one added since (a VPN, a bridge, an
 * address a local service listens on) passes the guard as public. The kernel knows
 * better: a connection delivered on this host has the destination itself as its source.
 * The handshake has happened by then, but not a byte of the client's. */
static bool reached_this_host(const struct conn *c)
{
    struct sockaddr_storage local, peer;
    socklen_t ll = sizeof(local), pl = sizeof(peer);
    if (getsockname(c->ufd, (struct sockaddr *)&local, &ll) < 0 ||
        getpeername(c->ufd, (struct sockaddr *)&peer, &pl) < 0)
        return false;
    return host_addr_equal((const struct sockaddr *)&local, (const struct sockaddr *)&peer);
}

static void connected(struct conn *c)
{
    if (c->guard && strcmp(c->guard, "public") == 0 && reached_this_host(c)) {
        char ip[INET6_ADDRSTRLEN], detail[400];
        sockaddr_format_ip((const struct sockaddr *)&c->dst, ip, sizeof(ip));
        c->guard = guard_verdict_name(GUARD_DENY_OWN, c->dst_class);
        snprintf(detail, sizeof(detail),
                 "%s resolves to %s, an address of this host (added since the proxy started), "
                 "which is refused",
                 c->host.name, ip);
        deny(c, R_ADDRESS, detail); /* closes the upstream: nothing is relayed */
        return;
    }
    c->t_connected = now_mono_ns();
    metrics_connect(c->px->metrics, c->t_connected - c->t_connect_start);
    evtimer_del(c->timer);
    free(c->addrs);
    c->addrs = NULL;
    if (c->uwrite)
        event_del(c->uwrite);
    if (np_audit_decision(c, R_ALLOWED,
                          c->would_deny ? "report-only: allowed what the policy "
                                          "would refuse"
                                        : NULL,
                          200) < 0) {
        char detail[300];
        snprintf(detail, sizeof(detail),
                 "the audit log cannot be written (%s); refusing the tunnel rather than "
                 "allowing it unlogged",
                 strerror(errno));
        close_upstream(c);
        deny(c, R_AUDIT, detail);
        return;
    }
    metrics_decision(c->px->metrics, DECISION_ALLOW, R_ALLOWED);
    /* Plain HTTP straight to a name: only its first request was read so far, and a
     * kept-alive connection may carry more, each naming any host the server answers
     * for. intercept.c reads every request's head, and inject.h refuses (421
     * host-mismatch, on record) one whose Host or absolute target is not this name. */
    bool plain_http = c->mode == MODE_TRANSPARENT && c->proto == SNIFF_HTTP && !c->raw &&
                      c->host.kind == HOST_NAME;
    if (plain_http || intercept_wanted(c)) {
        /* intercept.c owns the client's reads from here. */
        cread_arm(c, false);
        intercept_start(c);
        return;
    }
    start_relay(c);
}

static void dial_next(struct conn *c)
{
    while (c->next_addr < c->addrs->n) {
        const struct sockaddr *sa = (const struct sockaddr *)&c->addrs->a[c->next_addr++];
        c->have_dst = true;
        memcpy(&c->dst, sa, sockaddr_len(sa));
        enum addr_class cls;
        /* Two statements: an argument list has no order, and cls is set by the check. */
        enum guard_verdict v = addrguard_check(c->px->guard, sa, &cls);
        c->guard = guard_verdict_name(v, cls);
        c->dst_class = cls;
        int fd;
        int rc = dial_start(sa, &fd);
        if (rc < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
            /* The proxy's own limit, not the upstream's failure: answered like the
             * tunnel limit (503, Retry-After) and audited as such, so that neither the
             * client nor the log blames the destination. */
            char detail[160];
            snprintf(detail, sizeof(detail),
                     "the proxy is out of descriptors or memory for a new tunnel (%s); retry "
                     "later",
                     strerror(errno));
            deny(c, R_LIMIT_GLOBAL, detail);
            return;
        }
        if (rc < 0) {
            c->connect_errno = errno;
            continue;
        }
        c->ufd = fd;
        if (rc == 0) {
            connected(c);
            return;
        }
        if (!c->uwrite)
            c->uwrite = new_event(c, fd, EV_WRITE | EV_PERSIST, on_upstream_write);
        event_add(c->uwrite, NULL);
        return;
    }
    char ip[INET6_ADDRSTRLEN], detail[400];
    sockaddr_format_ip((const struct sockaddr *)&c->dst, ip, sizeof(ip));
    snprintf(detail, sizeof(detail), "cannot connect to %s (%s) port %u: %s", c->host.name, ip,
             c->port, strerror(c->connect_errno));
    deny(c, R_CONNECT_FAIL, detail);
}

void conn_arm_relay_timer(struct conn *c)
{
    uint64_t first = c->px->cfg->idle_timeout_ms;
    if (c->px->cfg->max_lifetime_ms && c->px->cfg->max_lifetime_ms < first)
        first = c->px->cfg->max_lifetime_ms;
    conn_arm_timer(c, first);
}

void conn_end(struct conn *c, enum close_reason r)
{
    c->close_reason = r;
    conn_free(c);
}

void conn_relay(struct conn *c, char *early, size_t early_len, char *answer, size_t answer_len)
{
    free(c->c2u.pre);
    c->c2u.pre = early;
    c->c2u.pre_len = early_len;
    c->c2u.pre_counts = true;
    start_relay(c);
    if (answer_len) {
        /* Before anything the upstream sends. */
        free(c->u2c.pre);
        c->u2c.pre = answer;
        c->u2c.pre_len = answer_len;
        c->u2c.pre_off = 0;
        c->u2c.pre_counts = false;
        pump(c, &c->u2c, false);
    } else {
        free(answer);
    }
}

static void start_relay(struct conn *c)
{
    c->state = C_RELAY;
    c->relaying = true;
    c->last_active = now_mono_ns();
    if (!c->cwrite)
        c->cwrite = new_event(c, c->cfd, EV_WRITE | EV_PERSIST, on_client_write);
    if (!c->uread)
        c->uread = new_event(c, c->ufd, EV_READ | EV_PERSIST, on_upstream_read);
    if (!c->uwrite)
        c->uwrite = new_event(c, c->ufd, EV_WRITE | EV_PERSIST, on_upstream_write);
    /* half_init leaves pre alone: c2u may already hold the client's early bytes. */
    half_init(&c->c2u, c->cfd, c->ufd, c->cread, c->uwrite);
    c->c2u.rev_on = c->cread_on; /* still armed from the request */
    struct half *u2c = &c->u2c;
    half_init(u2c, c->ufd, c->cfd, c->uread, c->cwrite);
    c->c2u.other = u2c;
    u2c->other = &c->c2u;
    if (c->mode == MODE_PROXY && !c->answered) {
        u2c->pre = xstrdup(RESPONSE_ESTABLISHED);
        u2c->pre_len = strlen(RESPONSE_ESTABLISHED);
        u2c->pre_off = 0;
        u2c->pre_counts = false;
    }
    conn_arm_relay_timer(c);
    /* The answer goes out first; the client's early bytes follow to the upstream. */
    if (pump(c, &c->u2c, false))
        pump(c, &c->c2u, true);
}

static void tunnel_close(struct conn *c, enum close_reason r)
{
    c->close_reason = r;
    conn_free(c);
}

/* Runs a half and turns its result into the tunnel's fate. from_is_client tells which
 * side a read error came from. */
static bool pump(struct conn *c, struct half *h, bool from_is_client)
{
    uint64_t moved;
    enum pump_result res = half_pump(h, c->w->pipes, &moved);
    if (moved) {
        c->last_active = now_mono_ns();
        if (from_is_client)
            metrics_bytes(c->px->metrics, moved, 0);
        else
            metrics_bytes(c->px->metrics, 0, moved);
    }
    switch (res) {
    case PUMP_WAIT:
        return true;
    case PUMP_DONE:
        if (!(c->c2u.done && c->u2c.done))
            return true;
        tunnel_close(c, CLOSE_DONE);
        return false;
    case PUMP_ERR_FROM:
        tunnel_close(c, from_is_client ? CLOSE_CLIENT_RESET : CLOSE_UPSTREAM_RESET);
        return false;
    case PUMP_ERR_TO:
        tunnel_close(c, from_is_client ? CLOSE_UPSTREAM_RESET : CLOSE_CLIENT_RESET);
        return false;
    case PUMP_ERR_NO_PIPE:
        log_warn("tunnel %s: cannot create a pipe", c->id);
        tunnel_close(c, CLOSE_INTERNAL);
        return false;
    }
    return true;
}

/* What each mode's parser needs at most before it decides. */
static size_t read_limit(const struct conn *c)
{
    const struct req_limits *lim = &c->px->cfg->req;
    /* One byte past both limits is enough for the HTTP parser to refuse. */
    size_t http = lim->max_line + lim->max_header_bytes + 1;
    switch (c->mode) {
    case MODE_TRANSPARENT:
        return c->proto == SNIFF_HTTP || http > SNIFF_TLS_BUFFER ? http : SNIFF_TLS_BUFFER;
    case MODE_DNS:
        return DNS_TCP_BUFFER;
    default:
        return http;
    }
}

/* Feeds what was read to the mode's parser; false once the connection was decided
 * (or freed). */
static bool feed(struct conn *c)
{
    if (c->mode == MODE_DNS)
        return dns_tcp_feed(c);
    if (c->mode == MODE_TRANSPARENT)
        return egress_feed(c);
    enum req_status st = req_feed(&c->rp, c->buf, c->len);
    if (st == REQ_ERROR) {
        capture_request(c);
        deny(c, c->rp.error, c->rp.detail);
        return false;
    }
    if (st == REQ_DONE) {
        decide(c);
        return false;
    }
    return true;
}

static void read_request(struct conn *c)
{
    /* Queries a DNS client pipelined are answered before reading more. */
    if (c->mode == MODE_DNS && c->len > 0 && !dns_tcp_feed(c))
        return;
    size_t max = read_limit(c);
    for (;;) {
        if (c->len == c->cap) {
            /* 512 first: a CONNECT head is ~100 bytes, and staying under glibc's
             * large-chunk size spares a malloc_consolidate() per connection. */
            size_t ncap = c->cap ? c->cap * 2 : 512;
            if (ncap > max)
                ncap = max;
            if (ncap == c->cap)
                return; /* full: the parser has decided by now */
            c->buf = xrealloc(c->buf, ncap);
            c->cap = ncap;
        }
        ssize_t n = recv(c->cfd, c->buf + c->len, c->cap - c->len, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            c->no_linger = true;
            if (c->mode == MODE_DNS) {
                conn_free(c); /* the client is done asking */
                return;
            }
            deny(c, R_INCOMPLETE,
                 n == 0 ? "the client closed the connection before finishing its request"
                        : "the connection failed before the request was complete");
            return;
        }
        if (n < 0)
            break;
        c->len += (size_t)n;
        if (!feed(c))
            return;
        if (c->len < c->cap)
            break; /* short read: the socket is drained */
    }
    cread_arm(c, true);
}

static void linger_read(struct conn *c)
{
    char sink[READ_CHUNK];
    for (;;) {
        ssize_t n = recv(c->cfd, sink, sizeof(sink), 0);
        if (n > 0) {
            c->lingered += (size_t)n;
            if (c->lingered > LINGER_MAX_BYTES) {
                conn_free(c);
                return;
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_free(c); /* EOF or error: done */
        return;
    }
}

static void write_response(struct conn *c)
{
    while (c->resp_off < c->resp_len) {
        ssize_t n = send(c->cfd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                if (c->no_linger) {
                    conn_free(c);
                    return;
                }
                if (!c->cwrite)
                    c->cwrite = new_event(c, c->cfd, EV_WRITE | EV_PERSIST, on_client_write);
                event_add(c->cwrite, NULL);
                return;
            }
            conn_free(c);
            return;
        }
        c->resp_off += (size_t)n;
    }
    if (c->cwrite)
        event_del(c->cwrite);
    if (c->mode == MODE_DNS) {
        /* The answer is out: the next query, within the header timeout. */
        free(c->resp);
        c->resp = NULL;
        c->state = C_HEADER;
        conn_arm_timer(c, c->px->cfg->header_timeout_ms);
        cread_arm(c, true);
        /* From the loop, not from here: a client that pipelines many queries must not
         * make this a recursion. */
        event_active(c->cread, EV_READ, 0);
        return;
    }
    if (c->no_linger) {
        conn_free(c);
        return;
    }
    /* Half-close, then read until the client closes, so that the answer is not lost
     * to a reset caused by unread request bytes. */
    (void)shutdown(c->cfd, SHUT_WR);
    c->state = C_LINGER;
    if (!c->cread)
        c->cread = new_event(c, c->cfd, EV_READ | EV_PERSIST, on_client_read);
    cread_arm(c, true);
    conn_arm_timer(c, c->px->cfg->linger_ms);
    linger_read(c);
}

static void deny(struct conn *c, enum reason r, const char *detail)
{
    struct proxy *px = c->px;
    uncount_pending(c);
    uncount_tunnel(c);
    free(c->addrs);
    c->addrs = NULL;
    lookup_cancel(c->lookup);
    c->lookup = NULL;
    close_upstream(c);
    evtimer_del(c->timer);
    if (c->cread)
        cread_arm(c, false);
    /* Only a CONNECT client reads an HTTP answer: any other is reset. */
    int status = c->mode == MODE_PROXY ? reason_status(r) : 0;
    char dst[REFUSAL_DST_MAX];
    refusal_destination(c, dst, sizeof(dst));
    if (r != R_AUDIT && refusal_budget_record(px, c->spoke, dst, reason_code(r)))
        (void)np_audit_decision(c, r, detail, status);
    metrics_decision(px->metrics, DECISION_DENY, r);
    if (log_debug_enabled())
        log_debug("%s %s: %s", c->id, reason_code(r), detail);
    free_request(c);
    if (status == 0) {
        if (c->mode == MODE_TRANSPARENT) {
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            (void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        }
        conn_free(c);
        return;
    }
    c->state = C_RESPOND;
    c->resp = response_build(r, detail, px->cfg->retry_after_s, &c->resp_len);
    c->resp_off = 0;
    write_response(c);
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    switch (c->state) {
    case C_HEADER:
        read_request(c);
        break;
    case C_RELAY:
        if (c->relaying)
            pump(c, &c->c2u, true);
        break;
    case C_LINGER:
        linger_read(c);
        break;
    case C_RESOLVE:
    case C_CONNECT:
        /* Early bytes (or an early close) before the 200: leave them in the socket
         * until the relay starts. */
        cread_arm(c, false);
        break;
    default:
        break;
    }
}

static void on_client_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (c->state == C_RELAY && c->relaying)
        pump(c, &c->u2c, false);
    else if (c->state == C_RESPOND)
        write_response(c);
}

static void on_upstream_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (c->state == C_RELAY && c->relaying)
        pump(c, &c->u2c, false);
}

static void on_upstream_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (c->state == C_RELAY) {
        if (c->relaying)
            pump(c, &c->c2u, true);
        return;
    }
    if (c->state != C_CONNECT)
        return;
    int err = dial_finish(c->ufd);
    if (err == 0) {
        connected(c);
        return;
    }
    c->connect_errno = err;
    event_del(c->uwrite);
    close_upstream(c);
    dial_next(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    char detail[400];
    switch (c->state) {
    case C_HEADER:
        if (c->mode == MODE_DNS) {
            conn_free(c); /* an idle resolver connection */
            return;
        }
        capture_request(c);
        deny(c, R_HEADER_TIMEOUT,
             c->mode == MODE_PROXY ? "the request head was not complete in time"
                                   : "the client did not send its first bytes (a TLS "
                                     "ClientHello or an HTTP request) in time");
        return;
    case C_RESOLVE:
        snprintf(detail, sizeof(detail), "resolving %s took longer than %llu ms", c->host.name,
                 (unsigned long long)c->px->cfg->dns_timeout_ms);
        c->t_dns_end = now_mono_ns();
        deny(c, R_DNS_TIMEOUT, detail);
        return;
    case C_CONNECT:
        snprintf(detail, sizeof(detail), "connecting to %s port %u took longer than %llu ms",
                 c->host.name, c->port, (unsigned long long)c->px->cfg->connect_timeout_ms);
        deny(c, R_CONNECT_TIMEOUT, detail);
        return;
    case C_RESPOND:
    case C_LINGER:
        conn_free(c);
        return;
    case C_RELAY:
        break;
    }
    const struct np_config *cfg = c->px->cfg;
    uint64_t now = now_mono_ns();
    uint64_t idle_end = c->last_active + cfg->idle_timeout_ms * 1000000ull;
    uint64_t life_end =
        cfg->max_lifetime_ms ? c->t_connected + cfg->max_lifetime_ms * 1000000ull : UINT64_MAX;
    if (now >= life_end) {
        tunnel_close(c, CLOSE_LIFETIME);
        return;
    }
    if (now >= idle_end) {
        tunnel_close(c, CLOSE_IDLE);
        return;
    }
    uint64_t next = idle_end < life_end ? idle_end : life_end;
    /* Round up so that the timer does not fire a hair early and spin. */
    conn_arm_timer(c, (next - now + 999999) / 1000000);
}

void conn_deny(struct conn *c, enum reason r, const char *detail)
{
    deny(c, r, detail);
}

void conn_close(struct conn *c)
{
    conn_free(c);
}

void conn_dns_reply(struct conn *c, uint8_t *answer, size_t len)
{
    free(c->resp);
    c->resp = (char *)answer;
    c->resp_len = len;
    c->resp_off = 0;
    c->state = C_RESPOND;
    cread_arm(c, false); /* the next query waits until this answer is out */
    evtimer_del(c->timer);
    conn_arm_timer(c, c->px->cfg->header_timeout_ms);
    write_response(c);
}

void conn_abort(struct conn *c)
{
    if (c->mode == MODE_DNS) {
        conn_free(c);
        return;
    }
    switch (c->state) {
    case C_RELAY:
        tunnel_close(c, CLOSE_SHUTDOWN);
        return;
    case C_HEADER:
    case C_RESOLVE:
    case C_CONNECT:
        c->no_linger = true;
        if (c->state == C_HEADER)
            capture_request(c);
        deny(c, R_SHUTDOWN, "the proxy is shutting down");
        return;
    case C_RESPOND:
    case C_LINGER:
        conn_free(c);
        return;
    }
}

static void conn_free(struct conn *c)
{
    struct proxy *px = c->px;
    if (c->state == C_RELAY) {
        (void)np_audit_close(c);
        metrics_closed(px->metrics, c->close_reason);
        if (c->relaying) {
            half_release(&c->c2u, c->w->pipes);
            half_release(&c->u2c, c->w->pipes);
        }
        intercept_free(c->ic);
        c->ic = NULL;
        if (!c->relaying) {
            free(c->c2u.pre);
            free(c->u2c.pre);
        }
    } else {
        free(c->c2u.pre); /* early data of a request refused after the decision */
        free(c->u2c.pre);
    }
    uncount_pending(c);
    uncount_tunnel(c);
    lookup_cancel(c->lookup);
    free(c->addrs);
    free_request(c);
    free(c->resp);
    if (c->sniff) {
        sniff_free(c->sniff);
        free(c->sniff);
    }
    close_upstream(c);
    if (c->cread)
        event_free(c->cread);
    if (c->cwrite)
        event_free(c->cwrite);
    if (c->timer)
        event_free(c->timer);
    if (c->cfd >= 0)
        close(c->cfd);
    struct worker *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    spoke_unref(c->spoke);
    free(c);
    worker_conn_gone(w);
}
