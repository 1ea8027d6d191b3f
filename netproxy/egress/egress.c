#include "egress.h"

#include "netproxy/core/core.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "synth.h"
#include "util.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum conn_mode egress_classify(struct conn *c, const struct listener *l)
{
    if (l->forward)
        return MODE_TRANSPARENT;
    if (!l->transparent)
        return MODE_PROXY;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(c->cfd, (struct sockaddr *)&ss, &len) < 0 || ss.ss_family != AF_INET)
        return MODE_PROXY;
    memcpy(&c->orig_dst, &ss, sizeof(c->orig_dst));
    const struct sockaddr_in *own = (const struct sockaddr_in *)&l->addr;
    if (own->sin_family == AF_INET && own->sin_addr.s_addr == c->orig_dst.sin_addr.s_addr) {
        if (own->sin_port == c->orig_dst.sin_port)
            return MODE_PROXY;
        if (ntohs(c->orig_dst.sin_port) == 53 && l->spoke->dns)
            return MODE_DNS;
    }
    return MODE_TRANSPARENT;
}

/* url.original: "host:port", as a CONNECT target would say it. */
static void set_target(struct conn *c)
{
    snprintf(c->target, sizeof(c->target), "%s:%u", c->host.name, c->port);
    c->have_target = true;
}

static void start_forward(struct conn *c, const struct listener *l)
{
    struct authority a;
    const char *why = NULL;
    /* The grant was checked when the hub added the listener (control.c). */
    if (!authority_parse(l->forward, strlen(l->forward), &a, &why) ||
        !host_canonicalise(a.host, a.host_len, a.bracketed, &c->host, &why)) {
        conn_deny(c, R_INTERNAL, "the forward listener's destination is not HOST:PORT");
        return;
    }
    c->have_host = true;
    c->port = a.port;
    set_target(c);
    if (!conn_take_grant(c)) {
        conn_deny(c, R_IP_LITERAL, "the forward listener's destination is no longer granted");
        return;
    }
    conn_admit(c);
}

void egress_start(struct conn *c, const struct listener *l)
{
    struct spoke *s = c->spoke;
    char detail[800];
    if (l->forward) {
        start_forward(c, l);
        return;
    }
    c->port = ntohs(c->orig_dst.sin_port);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &c->orig_dst.sin_addr, ip, sizeof(ip));
    if (s->synth && synth_in_range(s->synth, c->orig_dst.sin_addr)) {
        char name[HOST_NAME_MAX_LEN + 1];
        const char *why = NULL;
        c->synthetic = true;
        if (!synth_lookup(s->synth, c->orig_dst.sin_addr, name, sizeof(name))) {
            snprintf(c->target, sizeof(c->target), "%s:%u", ip, c->port);
            c->have_target = true;
            snprintf(detail, sizeof(detail),
                     "%s is a synthetic address that spoke %s's resolver never handed out", ip,
                     s->name);
            conn_deny(c, R_SYNTHETIC_UNKNOWN, detail);
            return;
        }
        if (!host_canonicalise(name, strlen(name), false, &c->host, &why)) {
            conn_deny(c, R_BAD_HOST, why);
            return;
        }
    } else {
        const char *why = NULL;
        if (!host_canonicalise(ip, strlen(ip), false, &c->host, &why)) {
            conn_deny(c, R_BAD_HOST, why);
            return;
        }
    }
    c->have_host = true;
    set_target(c);

    /* A raw TCP grant for this destination: relayed unread (a database, redis...). */
    if (conn_take_grant(c)) {
        conn_admit(c);
        return;
    }
    enum reason r = policy_check_host(s->policy, &c->host, &c->rule, &c->registered);
    if (r == R_ALLOWED && !policy_port_allowed(s->policy, c->port))
        r = R_PORT;
    if (r != R_ALLOWED) {
        if (r == R_IP_LITERAL)
            snprintf(detail, sizeof(detail),
                     "a direct connection to %s port %u: spoke %s reaches names through its "
                     "resolver, and an address only when its allowlist or a tcp grant lists it",
                     ip, c->port, s->name);
        else if (r == R_PORT)
            snprintf(detail, sizeof(detail), "port %u is not allowed for spoke %s (%s)", c->port,
                     s->name, c->host.name);
        else
            snprintf(detail, sizeof(detail),
                     "%s (registrable domain %s) is not in the allowlist of spoke %s", c->host.name,
                     c->registered ? c->registered : c->host.name, s->name);
        if (!s->report_only) {
            conn_deny(c, r, detail);
            return;
        }
        c->would_deny = r;
    }
    if (c->host.kind == HOST_IP) {
        /* An address the allowlist names: as CONNECT to it, the bytes are not read. */
        conn_admit(c);
        return;
    }
    /* A name: the client's first bytes must say the same name. */
    c->sniff = xmalloc(sizeof(*c->sniff));
    sniff_init(c->sniff, &c->px->cfg->req);
    conn_read_first(c);
}

bool egress_feed(struct conn *c)
{
    struct sniff *sn = c->sniff;
    enum sniff_status st = sniff_feed(sn, (const uint8_t *)c->buf, c->len);
    if (st == SNIFF_MORE)
        return true;
    c->proto = sn->proto;
    if (st == SNIFF_ERROR) {
        conn_deny(c, sn->error, sn->why);
        return false;
    }
    char detail[1000];
    if (!sn->have_name) {
        snprintf(detail, sizeof(detail),
                 "the ClientHello has no server_name: a connection to %s must name it (SNI)",
                 c->host.name);
        conn_deny(c, R_SNI_MISSING, detail);
        return false;
    }
    struct host h;
    const char *why = NULL;
    bool ok = host_canonicalise(sn->name, strlen(sn->name), false, &h, &why);
    str_copy(c->named, ok ? h.name : sn->name, sizeof(c->named));
    if (!ok || h.kind != HOST_NAME || strcmp(h.name, c->host.name) != 0) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &c->orig_dst.sin_addr, ip, sizeof(ip));
        snprintf(detail, sizeof(detail), "the %s names %.253s, but %s stands for %s",
                 sn->proto == SNIFF_TLS ? "ClientHello (SNI)" : "HTTP request's Host", c->named, ip,
                 c->host.name);
        conn_deny(c, R_SNI_MISMATCH, detail);
        return false;
    }
    /* A server takes the host from an absolute-form target over Host's. */
    if (sn->have_target_name &&
        (!host_canonicalise(sn->target_name, strlen(sn->target_name), false, &h, &why) ||
         h.kind != HOST_NAME || strcmp(h.name, c->host.name) != 0)) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &c->orig_dst.sin_addr, ip, sizeof(ip));
        snprintf(detail, sizeof(detail),
                 "the HTTP request's target names %.253s (its Host %.253s), but %s stands for "
                 "%s",
                 sn->target_name, c->named, ip, c->host.name);
        str_copy(c->named, sn->target_name, sizeof(c->named));
        conn_deny(c, R_SNI_MISMATCH, detail);
        return false;
    }
    sniff_free(sn);
    conn_admit(c);
    return false;
}
