#include "resolve.h"

#include "host.h"
#include "log.h"
#include "netaddr.h"
#include "util.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct override {
    char host[HOST_NAME_MAX_LEN + 1];
    uint16_t port;
    struct addr_list addrs;
};

struct resolver {
    struct event_base *base;
    struct evdns_base *dns;
    struct override *overrides;
    size_t noverrides;
};

/* One lookup. evdns calls back after a cancel too (asynchronously), so the request
 * object outlives the connection that asked: cb is cleared on cancel, and the object
 * is freed when evdns is done with it. */
struct lookup {
    struct resolver *r;
    struct evdns_getaddrinfo_request *req;
    struct event *deliver; /* for answers evdns gives synchronously */
    resolve_cb cb;
    void *arg;
    uint16_t port;
    bool in_start;
    bool evdns_done;
    int error;
    struct addr_list addrs;
};

struct resolver *resolver_new(struct event_base *base, const struct resolver_config *cfg, char *err,
                              size_t errlen)
{
    struct resolver *r = xcalloc(1, sizeof(*r));
    r->base = base;
    r->dns = evdns_base_new(base, 0);
    if (!r->dns) {
        snprintf(err, errlen, "cannot create the DNS resolver");
        free(r);
        return NULL;
    }
    if (cfg->ndns_servers > 0) {
        for (size_t i = 0; i < cfg->ndns_servers; i++) {
            struct sockaddr_storage ss;
            socklen_t len;
            if (!sockaddr_parse_hostport(cfg->dns_servers[i], &ss, &len) ||
                evdns_base_nameserver_sockaddr_add(r->dns, (struct sockaddr *)&ss, len, 0) != 0) {
                snprintf(err, errlen, "--dns-server %s: expected ADDR:PORT", cfg->dns_servers[i]);
                resolver_free(r);
                return NULL;
            }
        }
    } else {
        const char *path = cfg->resolv_conf ? cfg->resolv_conf : "/etc/resolv.conf";
        /* Nameservers and options only: search domains would turn "intranet" into
         * "intranet.corp.example", a name the policy never saw. */
        int rc =
            evdns_base_resolv_conf_parse(r->dns, DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC, path);
        if (rc != 0)
            log_warnx("%s: cannot use it (evdns error %d); asking 127.0.0.1:53", path, rc);
    }
    evdns_base_search_clear(r->dns);
    /* Several tries inside the caller's deadline, which ends the lookup itself. */
    char val[32];
    uint64_t per_try = cfg->timeout_ms / 3 ? cfg->timeout_ms / 3 : 1;
    snprintf(val, sizeof(val), "%llu.%03llu", (unsigned long long)(per_try / 1000),
             (unsigned long long)(per_try % 1000));
    evdns_base_set_option(r->dns, "timeout:", val);
    evdns_base_set_option(r->dns, "attempts:", "5");
    evdns_base_set_option(r->dns, "getaddrinfo-allow-skew:", val);
    return r;
}

void resolver_free(struct resolver *r)
{
    if (!r)
        return;
    if (r->dns)
        evdns_base_free(r->dns, 1);
    free(r->overrides);
    free(r);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static bool parse_override_addr(const char *s, size_t len, struct sockaddr_storage *out)
{
    char buf[INET6_ADDRSTRLEN + 2];
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    memset(out, 0, sizeof(*out));
    struct sockaddr_in *in = (struct sockaddr_in *)out;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, buf, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        return true;
    }
    return false;
}

bool resolver_add_override(struct resolver *r, const char *spec, char *err, size_t errlen)
{
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    struct override o;
    memset(&o, 0, sizeof(o));
    struct host h;
    const char *why = "missing HOST";
    uint64_t port;
    char portbuf[8];
    if (!c1 || !c2 || (size_t)(c2 - c1 - 1) >= sizeof(portbuf)) {
        snprintf(err, errlen, "--resolve %s: expected HOST:PORT:ADDR[,ADDR...]", spec);
        return false;
    }
    memcpy(portbuf, c1 + 1, (size_t)(c2 - c1 - 1));
    portbuf[c2 - c1 - 1] = '\0';
    h.kind = HOST_NAME;
    if (c1 == spec || !host_canonicalise(spec, (size_t)(c1 - spec), false, &h, &why) ||
        h.kind != HOST_NAME) {
        snprintf(err, errlen, "--resolve %s: HOST: %s", spec,
                 c1 == spec ? "missing" : (h.kind == HOST_IP ? "an address, not a name" : why));
        return false;
    }
    if (!parse_u64(portbuf, 1, 65535, &port)) {
        snprintf(err, errlen, "--resolve %s: PORT must be 1-65535", spec);
        return false;
    }
    str_copy(o.host, h.name, sizeof(o.host));
    o.port = (uint16_t)port;
    const char *p = c2 + 1;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (o.addrs.n == RESOLVE_MAX_ADDRS || !parse_override_addr(p, len, &o.addrs.a[o.addrs.n])) {
            snprintf(err, errlen, "--resolve %s: bad or too many addresses", spec);
            return false;
        }
        set_port(&o.addrs.a[o.addrs.n], o.port);
        o.addrs.n++;
        p += len + (comma ? 1 : 0);
        if (comma && !*p)
            break;
    }
    if (o.addrs.n == 0) {
        snprintf(err, errlen, "--resolve %s: no address", spec);
        return false;
    }
    o.addrs.total = o.addrs.n;
    r->overrides = xrealloc(r->overrides, (r->noverrides + 1) * sizeof(*r->overrides));
    r->overrides[r->noverrides++] = o;
    return true;
}

bool resolver_override(const struct resolver *r, const char *host, uint16_t port,
                       struct addr_list *out)
{
    for (size_t i = 0; i < r->noverrides; i++)
        if (r->overrides[i].port == port && strcmp(r->overrides[i].host, host) == 0) {
            *out = r->overrides[i].addrs;
            return true;
        }
    return false;
}

static void lookup_free(struct lookup *lk)
{
    if (lk->deliver)
        event_free(lk->deliver);
    free(lk);
}

static void deliver(struct lookup *lk)
{
    resolve_cb cb = lk->cb;
    lk->cb = NULL;
    if (cb)
        cb(lk->arg, lk->error, &lk->addrs);
}

static void deliver_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct lookup *lk = arg;
    deliver(lk);
    lookup_free(lk);
}

static void on_answer(int result, struct evutil_addrinfo *res, void *arg)
{
    struct lookup *lk = arg;
    lk->evdns_done = true;
    lk->req = NULL;
    lk->error = result;
    if (result == 0) {
        for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next) {
            if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
                continue;
            lk->addrs.total++;
            bool dup = false;
            for (unsigned i = 0; i < lk->addrs.n; i++)
                dup = dup || host_addr_equal((struct sockaddr *)&lk->addrs.a[i], ai->ai_addr);
            if (dup || lk->addrs.n == RESOLVE_MAX_ADDRS)
                continue;
            struct sockaddr_storage *ss = &lk->addrs.a[lk->addrs.n++];
            memset(ss, 0, sizeof(*ss));
            memcpy(ss, ai->ai_addr, sockaddr_len(ai->ai_addr));
            set_port(ss, lk->port);
        }
        if (lk->addrs.n == 0)
            lk->error = EVUTIL_EAI_NONAME;
    }
    if (res)
        evutil_freeaddrinfo(res);
    if (lk->in_start) {
        /* Answered inside evdns_getaddrinfo(): hand it over from the loop instead. */
        lk->deliver = evtimer_new(lk->r->base, deliver_later, lk);
        struct timeval zero = {0, 0};
        if (!lk->deliver || evtimer_add(lk->deliver, &zero) != 0)
            fatalx("cannot schedule a DNS answer");
        return;
    }
    deliver(lk);
    lookup_free(lk);
}

struct lookup *resolver_lookup(struct resolver *r, const char *host, uint16_t port, resolve_cb cb,
                               void *arg)
{
    struct lookup *lk = xcalloc(1, sizeof(*lk));
    lk->r = r;
    lk->cb = cb;
    lk->arg = arg;
    lk->port = port;
    struct evutil_addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    lk->in_start = true;
    lk->req = evdns_getaddrinfo(r->dns, host, NULL, &hints, on_answer, lk);
    lk->in_start = false;
    return lk;
}

void lookup_cancel(struct lookup *lk)
{
    if (!lk)
        return;
    lk->cb = NULL;
    if (lk->deliver) {
        /* The answer is already here, waiting in the loop: drop it now. */
        lookup_free(lk);
        return;
    }
    if (!lk->evdns_done && lk->req)
        evdns_getaddrinfo_cancel(lk->req); /* on_answer frees lk, later */
}

const char *resolver_strerror(int error)
{
    return evutil_gai_strerror(error);
}
