#include "dnsserver.h"

#include "netproxy/core/core.h"
#include "netproxy/control/control.h"
#include "lib/audit.h"
#include "log.h"
#include "netproxy/audit/audit.h"
#include "netproxy/netproxy.h"
#include "synth.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long a client may keep an answer: the address is the name's for the spoke's
 * life, so the TTL only bounds how long a cache outlives the spoke. */
#define SYNTH_TTL 300
/* Datagrams handled per wake-up, so that one spoke's flood cannot hold the loop. */
#define UDP_BATCH 64

struct dns_udp {
    struct proxy *px;
    struct spoke *s;
    int fd;
    struct event *ev;
    struct sockaddr_in addr;
};

/* ---- the record ---- */

struct dns_event {
    const struct sockaddr *src;
    bool udp;
    const struct dns_query *q; /* NULL when nothing of it could be read */
    enum reason reason;        /* R_ALLOWED for a new synthetic address */
    int rcode;                 /* -1: no answer was sent */
    const struct in_addr *ip;  /* the synthetic address handed out */
    const char *rule, *registered;
    const struct sockaddr_in *dst; /* for a datagram to elsewhere */
    const char *message;
};

static void dns_audit(struct proxy *px, struct spoke *s, const struct dns_event *e)
{
    bool allowed = e->reason == R_ALLOWED;
    /* A refusal spends the spoke's record budget (the rate drop is its own summary). */
    if (!allowed && e->reason != R_DNS_RATE) {
        char dst[REFUSAL_DST_MAX];
        if (e->dst) {
            char ip[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &e->dst->sin_addr, ip, sizeof(ip));
            snprintf(dst, sizeof(dst), "%s:%u (udp)", ip, ntohs(e->dst->sin_port));
        } else {
            snprintf(dst, sizeof(dst), "%.200s (dns)",
                     e->q && e->q->name[0] ? e->q->name : "a query without a name");
        }
        if (!refusal_budget_record(px, s, dst, reason_code(e->reason))) {
            metrics_decision(px->metrics, DECISION_DENY, e->reason);
            return;
        }
    }
    json_t *rec = json_object();
    char id[33];
    audit_new_id(id);
    audit_set_str(rec, "event.kind", "event");
    audit_set(rec, "event.category", json_pack("[s]", "network"));
    audit_set(rec, "event.type", json_pack("[s,s]", "protocol", allowed ? "allowed" : "denied"));
    audit_set_str(rec, "event.action", e->reason == R_UDP ? "udp" : "dns-query");
    audit_set_str(rec, "event.id", id);
    audit_set_str(rec, "event.module", "netproxy");
    audit_set_str(rec, "event.outcome", allowed ? "success" : "failure");
    if (!allowed)
        audit_set_str(rec, "event.reason", reason_code(e->reason));
    char ip[INET6_ADDRSTRLEN];
    sockaddr_format_ip(e->src, ip, sizeof(ip));
    audit_set_str(rec, "source.ip", ip);
    audit_set_int(rec, "source.port", sockaddr_port(e->src));
    audit_set_str(rec, "isolate.spoke", s->name);
    if (s->user)
        audit_set_str(rec, "isolate.user", s->user);
    audit_set_str(rec, "rule.ruleset", s->name);
    if (e->rule)
        audit_set_str(rec, "rule.name", e->rule);
    audit_set_str(rec, "network.transport", e->udp ? "udp" : "tcp");
    if (e->dst) {
        sockaddr_format_ip((const struct sockaddr *)e->dst, ip, sizeof(ip));
        audit_set_str(rec, "destination.ip", ip);
        audit_set_int(rec, "destination.port", ntohs(e->dst->sin_port));
    } else {
        audit_set_str(rec, "network.protocol", "dns");
    }
    if (e->q) {
        char tbuf[16];
        audit_set_int(rec, "dns.id", e->q->id);
        audit_set_str(rec, "dns.type", "query");
        if (e->q->name[0] || e->q->question_len)
            audit_set(rec, "dns.question.name",
                      audit_string(e->q->name, strlen(e->q->name), DNS_NAME_MAX));
        if (e->q->question_len)
            audit_set_str(rec, "dns.question.type", dns_type_name(e->q->qtype, tbuf, sizeof(tbuf)));
        if (e->registered)
            audit_set_str(rec, "dns.question.registered_domain", e->registered);
    }
    if (e->rcode >= 0)
        audit_set_str(rec, "dns.response_code", dns_rcode_name(e->rcode));
    if (e->ip) {
        inet_ntop(AF_INET, e->ip, ip, sizeof(ip));
        audit_set(rec, "dns.resolved_ip", json_pack("[s]", ip));
    }
    if (e->message)
        audit_set(rec, "message", audit_string(e->message, strlen(e->message), 512));
    if (audit_write(px->audit, rec) < 0) {
        int saved = errno;
        metrics_audit_failure(px->metrics);
        log_warnx("audit: cannot write a resolver record to %s: %s", audit_path(px->audit),
                  strerror(saved));
    }
    if (!allowed)
        metrics_decision(px->metrics, DECISION_DENY, e->reason);
}

/* ---- the budget ---- */

/* One token per query or stray datagram. A burst starts with the first drop after the
 * budget was healthy and ends only once the bucket is half full again, so that a
 * sustained flood (which the refill keeps just at empty) is one burst and one record,
 * not one per refilled token. */
static bool budget_take(struct proxy *px, struct spoke *s, const struct sockaddr *src, bool udp)
{
    const struct np_config *cfg = px->cfg;
    uint64_t now = now_mono_ns();
    bool ok, burst_start = false;
    uint64_t dropped_before = 0;
    pthread_mutex_lock(&px->lock);
    if (s->dns_refill_ns == 0) {
        s->dns_tokens = cfg->dns_burst;
        s->dns_refill_ns = now;
    }
    s->dns_tokens += (double)(now - s->dns_refill_ns) * cfg->dns_rate / 1e9;
    if (s->dns_tokens > cfg->dns_burst)
        s->dns_tokens = cfg->dns_burst;
    s->dns_refill_ns = now;
    if (s->dns_limited && s->dns_tokens >= cfg->dns_burst / 2.0)
        s->dns_limited = false;
    ok = s->dns_tokens >= 1;
    if (ok) {
        s->dns_tokens -= 1;
    } else {
        s->dns_dropped++;
        if (!s->dns_limited) {
            s->dns_limited = true;
            burst_start = true;
            dropped_before = s->dns_dropped - 1;
        }
    }
    pthread_mutex_unlock(&px->lock);
    if (burst_start) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "spoke %s sends more than %u queries or datagrams per second (%u at once): "
                 "dropping them until it slows down (%llu dropped before this burst)",
                 s->name, cfg->dns_rate, cfg->dns_burst, (unsigned long long)dropped_before);
        struct dns_event e = {
            .src = src, .udp = udp, .reason = R_DNS_RATE, .rcode = -1, .message = msg};
        dns_audit(px, s, &e);
    } else if (!ok) {
        metrics_decision(px->metrics, DECISION_DENY, R_DNS_RATE);
    }
    return ok;
}

/* ---- answering ---- */

size_t dns_answer(struct proxy *px, struct spoke *s, const struct sockaddr *src, bool udp,
                  const uint8_t *query, size_t len, uint8_t *out, size_t cap)
{
    if (!budget_take(px, s, src, udp))
        return 0;
    struct dns_query q;
    enum dns_parse pr = dns_parse_query(query, len, &q);
    if (pr == DNS_PARSE_DROP)
        return 0;
    if (udp && dns_udp_limit(&q) < cap)
        cap = dns_udp_limit(&q);
    struct dns_event e = {.src = src, .udp = udp, .q = &q, .rcode = DNS_NOERROR};
    char msg[800];
    if (pr == DNS_PARSE_FORMERR || pr == DNS_PARSE_NOTIMP) {
        e.rcode = pr == DNS_PARSE_FORMERR ? DNS_FORMERR : DNS_NOTIMP;
        e.reason = pr == DNS_PARSE_FORMERR ? R_DNS_MALFORMED : R_DNS_NOT_IMPLEMENTED;
        e.message = q.why;
        dns_audit(px, s, &e);
        return dns_build_answer(query, &q, e.rcode, NULL, 0, DNS_EDE_NONE, NULL, out, cap);
    }
    struct host h;
    const char *why = NULL;
    bool named =
        q.name_ok && q.name[0] && host_canonicalise(q.name, strlen(q.name), false, &h, &why);
    if (named && h.kind != HOST_NAME) {
        named = false;
        why = "an address is not a name to resolve";
    }
    if (!named) {
        e.rcode = DNS_NXDOMAIN;
        e.reason = R_BAD_HOST;
        snprintf(msg, sizeof(msg), "%s is not a host name: %s", q.name[0] ? q.name : "the root",
                 why ? why : "it has characters a host name cannot have");
        e.message = msg;
        dns_audit(px, s, &e);
        return dns_build_answer(query, &q, DNS_NXDOMAIN, NULL, 0, DNS_EDE_PROHIBITED,
                                "not a host name", out, cap);
    }
    /* The name may be reached when the allowlist covers it (on some port) or a raw TCP
     * grant names it; the connection itself is checked again. */
    const char *rule = NULL, *registered = NULL;
    enum reason r = policy_check_host(s->policy, &h, &rule, &registered);
    if (r != R_ALLOWED && policy_tcp_names(s->policy, h.name, &rule))
        r = R_ALLOWED;
    e.rule = rule;
    e.registered = registered;
    if (r != R_ALLOWED && !s->report_only) {
        e.rcode = DNS_NXDOMAIN;
        e.reason = r;
        if (r == R_PUBLIC_SUFFIX)
            snprintf(msg, sizeof(msg), "%s is a public suffix, not a name spoke %s may reach",
                     h.name, s->name);
        else
            snprintf(msg, sizeof(msg),
                     "%s (registrable domain %s) is not in the allowlist of spoke %s", h.name,
                     registered ? registered : h.name, s->name);
        e.message = msg;
        dns_audit(px, s, &e);
        return dns_build_answer(query, &q, DNS_NXDOMAIN, NULL, 0, DNS_EDE_PROHIBITED,
                                "not in the spoke's allowlist", out, cap);
    }
    if (q.qtype != DNS_T_A) /* NODATA: the jail has no IPv6, nor anything but A */
        return dns_build_answer(query, &q, DNS_NOERROR, NULL, 0, DNS_EDE_NONE, NULL, out, cap);
    struct in_addr a;
    bool fresh = false;
    if (!s->synth || synth_assign(s->synth, h.name, &a, &fresh) < 0) {
        e.rcode = DNS_REFUSED;
        e.reason = R_SYNTHETIC_FULL;
        snprintf(msg, sizeof(msg),
                 "spoke %s has used all of its %u synthetic addresses; %s gets none", s->name,
                 px->cfg->synthetic_max, h.name);
        e.message = msg;
        dns_audit(px, s, &e);
        return dns_build_answer(query, &q, DNS_REFUSED, NULL, 0, DNS_EDE_OTHER,
                                "out of synthetic addresses", out, cap);
    }
    if (fresh) {
        /* The hub keeps it, so that a restarted proxy gives the name the same address. */
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a, ip, sizeof(ip));
        control_notify_synthetic(px, s->name, h.name, ip);
        e.reason = R_ALLOWED;
        e.ip = &a;
        snprintf(msg, sizeof(msg), "%s stands for %s for spoke %s", ip, h.name, s->name);
        e.message = msg;
        dns_audit(px, s, &e);
    }
    return dns_build_answer(query, &q, DNS_NOERROR, &a, SYNTH_TTL, DNS_EDE_NONE, NULL, out, cap);
}

/* ---- UDP ---- */

/* Where a datagram was going: the transparent socket gets everything the spoke sends
 * over UDP (tproxy), with the original destination in IP_ORIGDSTADDR. */
static void original_dst(struct msghdr *mh, const struct sockaddr_in *own, struct sockaddr_in *dst)
{
    *dst = *own;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
        if (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_ORIGDSTADDR &&
            cm->cmsg_len >= CMSG_LEN(sizeof(*dst)))
            memcpy(dst, CMSG_DATA(cm), sizeof(*dst));
}

static void stray_datagram(struct dns_udp *d, const struct sockaddr_in *peer,
                           const struct sockaddr_in *dst)
{
    if (!budget_take(d->px, d->s, (const struct sockaddr *)peer, true))
        return;
    char ip[INET_ADDRSTRLEN], name[DNS_NAME_MAX + 1], msg[800];
    inet_ntop(AF_INET, &dst->sin_addr, ip, sizeof(ip));
    bool synthetic = d->s->synth && synth_lookup(d->s->synth, dst->sin_addr, name, sizeof(name));
    snprintf(msg, sizeof(msg),
             "a UDP datagram to %s%s%s%s port %u: spoke %s may send UDP to its resolver only "
             "(QUIC falls back to TCP)",
             ip, synthetic ? " (" : "", synthetic ? name : "", synthetic ? ")" : "",
             ntohs(dst->sin_port), d->s->name);
    struct dns_event e = {.src = (const struct sockaddr *)peer,
                          .udp = true,
                          .reason = R_UDP,
                          .rcode = -1,
                          .dst = dst,
                          .message = msg};
    dns_audit(d->px, d->s, &e);
}

static void on_udp(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct dns_udp *d = arg;
    for (int i = 0; i < UDP_BATCH; i++) {
        uint8_t query[DNS_MSG_MAX + 1];
        struct sockaddr_in peer;
        union {
            char buf[CMSG_SPACE(sizeof(struct sockaddr_in))];
            struct cmsghdr align;
        } control;
        struct iovec iov = {.iov_base = query, .iov_len = sizeof(query)};
        struct msghdr mh = {.msg_name = &peer,
                            .msg_namelen = sizeof(peer),
                            .msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = control.buf,
                            .msg_controllen = sizeof(control.buf)};
        ssize_t n = recvmsg((int)fd, &mh, MSG_DONTWAIT);
        if (n < 0)
            return; /* EAGAIN, or an ICMP error queued by an earlier answer */
        if (peer.sin_family != AF_INET)
            continue;
        struct sockaddr_in dst;
        original_dst(&mh, &d->addr, &dst);
        if (dst.sin_addr.s_addr != d->addr.sin_addr.s_addr || dst.sin_port != d->addr.sin_port) {
            stray_datagram(d, &peer, &dst);
            continue;
        }
        uint8_t answer[DNS_UDP_EDNS];
        size_t len = dns_answer(d->px, d->s, (const struct sockaddr *)&peer, true, query,
                                (mh.msg_flags & MSG_TRUNC) ? sizeof(query) : (size_t)n, answer,
                                sizeof(answer));
        if (len)
            (void)sendto((int)fd, answer, len, MSG_DONTWAIT, (struct sockaddr *)&peer,
                         sizeof(peer));
    }
}

struct dns_udp *dns_udp_add(struct proxy *px, struct spoke *s, int fd, char *err, size_t errlen)
{
    int type = 0, one = 1;
    socklen_t tlen = sizeof(type);
    struct sockaddr_in addr;
    socklen_t alen = sizeof(addr);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0 || type != SOCK_DGRAM ||
        getsockname(fd, (struct sockaddr *)&addr, &alen) < 0 || addr.sin_family != AF_INET ||
        addr.sin_port == 0) {
        snprintf(err, errlen, "the resolver's descriptor is not a bound IPv4 UDP socket");
        close(fd);
        return NULL;
    }
    /* Harmless without IP_TRANSPARENT; with it, says where each datagram was going. */
    (void)setsockopt(fd, SOL_IP, IP_RECVORIGDSTADDR, &one, sizeof(one));
    if (set_nonblock(fd, true) < 0 || set_cloexec(fd, true) < 0) {
        snprintf(err, errlen, "cannot configure the resolver's socket: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    struct dns_udp *d = xcalloc(1, sizeof(*d));
    d->px = px;
    d->s = s;
    d->fd = fd;
    d->addr = addr;
    d->ev = event_new(px->base, fd, EV_READ | EV_PERSIST, on_udp, d);
    if (!d->ev || event_add(d->ev, NULL) < 0) {
        snprintf(err, errlen, "cannot watch the resolver's socket");
        dns_udp_free(d);
        return NULL;
    }
    return d;
}

void dns_udp_free(struct dns_udp *d)
{
    if (!d)
        return;
    if (d->ev)
        event_free(d->ev);
    close(d->fd);
    free(d);
}

/* ---- TCP ---- */

bool dns_tcp_feed(struct conn *c)
{
    if (c->len < 2)
        return true;
    const uint8_t *b = (const uint8_t *)c->buf;
    size_t qlen = ((size_t)b[0] << 8) | b[1];
    if (qlen < DNS_HEADER_LEN || qlen > DNS_MSG_MAX) {
        conn_deny(c, R_DNS_MALFORMED,
                  "a DNS-over-TCP message shorter than a header or "
                  "longer than 4096 bytes");
        return false;
    }
    if (c->len < 2 + qlen)
        return true;
    /* The largest answer: the question (at most the query) plus an A record and an OPT
     * record with its extended error. */
    size_t cap = qlen + 16 + 11 + 6 + 200;
    uint8_t *out = xmalloc(2 + cap);
    size_t n = dns_answer(c->px, c->spoke, (const struct sockaddr *)&c->src, false, b + 2, qlen,
                          out + 2, cap);
    memmove(c->buf, c->buf + 2 + qlen, c->len - 2 - qlen);
    c->len -= 2 + qlen;
    if (n == 0) {
        free(out);
        conn_close(c); /* over budget or not a query: nothing to wait for */
        return false;
    }
    out[0] = (uint8_t)(n >> 8);
    out[1] = (uint8_t)n;
    conn_dns_reply(c, out, n + 2);
    return false;
}
