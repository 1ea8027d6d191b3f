#include "control.h"
#include "lib/traceparent.h"

#include "netproxy/audit/audit.h"
#include "netproxy/core/core.h"
#include "netproxy/intercept/intercept.h"
#include "ctl.h"
#include "netproxy/egress/egress.h"
#include "jsonfile.h"
#include "log.h"
#include "netaddr.h"
#include "netproxy/netproxy.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct control {
    struct proxy *px;
    int fd;
    struct event *ev;
};

static json_t *reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_t *reply_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:b,s:s}", "ok", 0, "error", msg);
}

static json_t *reply_ok(void)
{
    return json_pack("{s:b}", "ok", 1);
}

static bool parse_ports(struct jf_ctx *jc, const json_t *msg, uint16_t *ports, size_t *n)
{
    const json_t *arr = json_object_get(msg, "ports");
    if (!arr)
        return true;
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > POLICY_MAX_PORTS)
        return jf_fail(jc, "", "ports", "must be an array of 1 to %d ports", POLICY_MAX_PORTS);
    *n = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        json_int_t p = json_is_integer(v) ? json_integer_value(v) : 0;
        if (p < 1 || p > 65535)
            return jf_fail(jc, "", "ports", "each port must be an integer from 1 to 65535");
        ports[(*n)++] = (uint16_t)p;
    }
    return true;
}

/* Checks the "listen" key against where the socket really is bound. */
static bool listen_matches(const char *listen, int fd, char *why, size_t whylen)
{
    if (fd < 0) {
        snprintf(why, whylen, "%s: no socket attached for it", listen);
        return false;
    }
    struct sockaddr_storage want, got;
    socklen_t wlen, glen = sizeof(got);
    if (!sockaddr_parse_hostport(listen, &want, &wlen)) {
        snprintf(why, whylen, "listen: expected ADDR:PORT");
        return false;
    }
    if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
        snprintf(why, whylen, "the passed descriptor is not a socket");
        return false;
    }
    if (got.ss_family != want.ss_family ||
        sockaddr_port((struct sockaddr *)&got) != sockaddr_port((struct sockaddr *)&want) ||
        memcmp(got.ss_family == AF_INET ? (const void *)&((struct sockaddr_in *)&got)->sin_addr
                                        : (const void *)&((struct sockaddr_in6 *)&got)->sin6_addr,
               want.ss_family == AF_INET ? (const void *)&((struct sockaddr_in *)&want)->sin_addr
                                         : (const void *)&((struct sockaddr_in6 *)&want)->sin6_addr,
               got.ss_family == AF_INET ? 4 : 16) != 0) {
        char ip[INET6_ADDRSTRLEN];
        sockaddr_format_ip((struct sockaddr *)&got, ip, sizeof(ip));
        snprintf(why, whylen, "listen is %s but the socket is bound to %s port %u", listen, ip,
                 sockaddr_port((struct sockaddr *)&got));
        return false;
    }
    return true;
}

/* "synthetic": {"name": "ip", ...} into the spoke's map (a restart's handover). */
static bool preset_synthetic(struct spoke *s, const json_t *obj, char *why, size_t whylen)
{
    if (!obj)
        return true;
    if (!json_is_object(obj) || json_object_size(obj) > SYNTH_MAX_NAMES) {
        snprintf(why, whylen, "synthetic: an object of at most %d names", SYNTH_MAX_NAMES);
        return false;
    }
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        struct in_addr a;
        struct host h;
        const char *bad = NULL;
        if (!json_is_string(v) || inet_pton(AF_INET, json_string_value(v), &a) != 1 ||
            !host_canonicalise(name, strlen(name), false, &h, &bad) || h.kind != HOST_NAME ||
            strcmp(h.name, name) != 0 || synth_preset(s->synth, name, a) < 0) {
            snprintf(why, whylen,
                     "synthetic: \"%.64s\" must be a canonical name with a free address of "
                     "the synthetic range",
                     name);
            return false;
        }
    }
    return true;
}

/* The spoke a message names in "spoke", once the message has only the keys given:
 * NULL with *reply the error otherwise. */
static struct spoke *msg_spoke(struct proxy *px, const json_t *msg, const char *op,
                               const char *const *keys, json_t **reply)
{
    char err[512] = "";
    struct jf_ctx jc = {.file = op, .err = err, .errlen = sizeof(err)};
    const char *name = NULL;
    if (!jf_object(&jc, msg, "", keys) || !jf_string(&jc, msg, "", "spoke", true, 64, &name)) {
        *reply = reply_error("%s", err);
        return NULL;
    }
    struct spoke *s = spoke_find(px, name);
    if (!s)
        *reply = reply_error("no spoke named %.64s", name);
    return s;
}

/* The call a spoke runs now, alone, for its tunnels' records (netproxy.h): a
 * traceparent, or none to clear it. */
static json_t *op_trace(struct proxy *px, const json_t *msg)
{
    static const char *const keys[] = {"op", "spoke", "traceparent", "spans", NULL};
    json_t *reply = NULL;
    struct spoke *s = msg_spoke(px, msg, "trace", keys, &reply);
    if (!s)
        return reply;
    char err[512] = "";
    struct jf_ctx jc = {.file = "trace", .err = err, .errlen = sizeof(err)};
    const char *tp = NULL;
    if (!jf_string(&jc, msg, "", "traceparent", false, 55, &tp))
        return reply_error("%s", err);
    struct trace_ctx t;
    if (tp && !trace_begin(&t, tp))
        return reply_error("traceparent: not a W3C traceparent");
    pthread_mutex_lock(&px->lock);
    snprintf(s->trace, sizeof(s->trace), "%s", tp ? tp : "");
    s->trace_spans = tp && json_is_true(json_object_get(msg, "spans"));
    pthread_mutex_unlock(&px->lock);
    return reply_ok();
}

static json_t *control_dispatch(struct proxy *px, const json_t *msg, int *fds, size_t nfds);

static json_t *op_add(struct proxy *px, const json_t *msg, int *fds, size_t nfds)
{
    static const char *const keys[] = {
        "op",          "spoke",        "user",          "allow",     "ports",      "listen",
        "max_tunnels", "max_pending",  "report_only",   "tcp",       "dns_listen", "synthetic",
        "secrets",     "refusal_rate", "refusal_burst", "conn_rate", "conn_burst", NULL};
    char err[512] = "";
    struct jf_ctx jc = {.file = "add", .err = err, .errlen = sizeof(err)};
    const char *name = NULL, *user = NULL, *listen = NULL, *dns_listen = NULL;
    char **allow = NULL, **tcp = NULL;
    size_t nallow = 0, ntcp = 0;
    int *fd = &fds[0], *dns_fd = nfds > 1 ? &fds[1] : NULL;
    int64_t max_tunnels = px->cfg->max_tunnels_per_spoke;
    int64_t max_pending = px->cfg->max_pending_per_spoke;
    int64_t refusal_rate = px->cfg->refusal_rate, refusal_burst = px->cfg->refusal_burst;
    int64_t conn_rate = px->cfg->conn_rate, conn_burst = px->cfg->conn_burst;
    bool report_only = px->cfg->report_only;
    uint16_t ports[POLICY_MAX_PORTS];
    size_t nports = px->cfg->nports;
    memcpy(ports, px->cfg->ports, nports * sizeof(*ports));

    if (px->draining)
        return reply_error("the proxy is shutting down");
    if (!jf_object(&jc, msg, "", keys) || !jf_string(&jc, msg, "", "spoke", true, 64, &name) ||
        !jf_string(&jc, msg, "", "user", false, 128, &user) ||
        !jf_string(&jc, msg, "", "listen", false, 64, &listen) ||
        !jf_strings(&jc, msg, "", "allow", true, POLICY_MAX_ENTRIES, 1024, &allow, &nallow) ||
        !jf_strings(&jc, msg, "", "tcp", false, POLICY_MAX_TCP, 300, &tcp, &ntcp) ||
        !jf_string(&jc, msg, "", "dns_listen", false, 64, &dns_listen) ||
        !parse_ports(&jc, msg, ports, &nports) ||
        !jf_int(&jc, msg, "", "max_tunnels", false, 1, 1000000, &max_tunnels) ||
        !jf_int(&jc, msg, "", "max_pending", false, 1, 1000000, &max_pending) ||
        !jf_int(&jc, msg, "", "refusal_rate", false, 0, 1000000, &refusal_rate) ||
        !jf_int(&jc, msg, "", "refusal_burst", false, 1, 10000000, &refusal_burst) ||
        !jf_int(&jc, msg, "", "conn_rate", false, 0, 1000000, &conn_rate) ||
        !jf_int(&jc, msg, "", "conn_burst", false, 1, 10000000, &conn_burst) ||
        !jf_bool(&jc, msg, "", "report_only", false, &report_only)) {
        jf_strv_free(allow);
        jf_strv_free(tcp);
        return reply_error("%s", err);
    }
    json_t *reply = NULL;
    struct policy *pol = NULL;
    char why[300];
    if (!spoke_name_valid(name)) {
        reply = reply_error("spoke: 1 to 64 characters of A-Z a-z 0-9 _ . -");
    } else if (spoke_find(px, name)) {
        reply = reply_error("spoke %s already exists", name);
    } else if (*fd < 0) {
        reply = reply_error("add needs the spoke's listening socket attached (SCM_RIGHTS)");
    } else if (listen && !listen_matches(listen, *fd, why, sizeof(why))) {
        reply = reply_error("%s", why);
    } else if (dns_listen && !listen_matches(dns_listen, dns_fd ? *dns_fd : -1, why, sizeof(why))) {
        reply = reply_error("dns_listen: %s", why);
    } else if (!dns_listen && dns_fd && *dns_fd >= 0) {
        reply = reply_error("a second socket needs dns_listen to say what it is");
    } else if (!(pol = policy_new((const char *const *)allow, nallow, ports, nports, err,
                                  sizeof(err)))) {
        reply = reply_error("allow: %s", err);
    }
    for (size_t i = 0; !reply && i < ntcp; i++)
        if (!policy_add_tcp(pol, tcp[i], err, sizeof(err)))
            reply = reply_error("tcp: %s", err);
    jf_strv_free(allow);
    jf_strv_free(tcp);
    struct cred_set *creds = NULL;
    if (!reply && !(creds = cred_set_parse(json_object_get(msg, "secrets"), err, sizeof(err))))
        reply = reply_error("%s", err);
    if (reply) {
        policy_free(pol);
        return reply;
    }
    struct spoke *s = spoke_new(px, name, user, pol);
    s->creds = creds;
    s->max_tunnels = (unsigned)max_tunnels;
    s->max_pending = (unsigned)max_pending;
    refusal_budget_init(&s->budget, (unsigned)refusal_rate, (unsigned)refusal_burst,
                        (unsigned)conn_rate, (unsigned)conn_burst);
    s->report_only = report_only;
    s->synth = synth_new(&px->cfg->synthetic, px->cfg->synthetic_max, why, sizeof(why));
    if (!s->synth || !preset_synthetic(s, json_object_get(msg, "synthetic"), why, sizeof(why))) {
        spoke_remove(px, s);
        return reply_error("%s", why);
    }
    int lfd = *fd;
    *fd = -1;
    if (!listener_add(px, s, lfd, -1, NULL, why, sizeof(why))) {
        spoke_remove(px, s);
        return reply_error("%s", why);
    }
    if (dns_listen) {
        int ufd = *dns_fd;
        *dns_fd = -1;
        if (!(s->dns = dns_udp_add(px, s, ufd, why, sizeof(why)))) {
            spoke_remove(px, s);
            return reply_error("%s", why);
        }
    }
    np_audit_spoke(px, s, "spoke-add", NULL);
    log_info("spoke %s added (%zu allowlist entries)", s->name, policy_entry_count(pol));
    return reply_ok();
}

static json_t *op_remove(struct proxy *px, const json_t *msg)
{
    static const char *const keys[] = {"op", "spoke", NULL};
    json_t *reply = NULL;
    struct spoke *s = msg_spoke(px, msg, "remove", keys, &reply);
    if (!s)
        return reply;
    np_audit_spoke(px, s, "spoke-remove", NULL);
    pthread_mutex_lock(&px->lock);
    unsigned tunnels = s->tunnels;
    pthread_mutex_unlock(&px->lock);
    log_info("spoke %s removed (%u tunnels finish on their own)", s->name, tunnels);
    spoke_remove(px, s);
    return reply_ok();
}

/* A listener the hub made on the jail's own loopback for a raw TCP grant such as
 * 127.0.0.1:6390: every connection on it goes to that grant. */
static json_t *op_forward(struct proxy *px, const json_t *msg, int *fd)
{
    static const char *const keys[] = {"op", "spoke", "to", NULL};
    json_t *reply = NULL;
    struct spoke *s = msg_spoke(px, msg, "forward", keys, &reply);
    if (!s)
        return reply;
    char err[512] = "";
    struct jf_ctx jc = {.file = "forward", .err = err, .errlen = sizeof(err)};
    const char *to = NULL;
    if (!jf_string(&jc, msg, "", "to", true, 300, &to))
        return reply_error("%s", err);
    if (*fd < 0)
        return reply_error("forward needs the listening socket attached (SCM_RIGHTS)");
    struct authority a;
    struct host h;
    const char *why = NULL;
    if (!authority_parse(to, strlen(to), &a, &why) ||
        !host_canonicalise(a.host, a.host_len, a.bracketed, &h, &why))
        return reply_error("to: %s", why);
    const char *grant = policy_tcp_grant(s->policy, &h, a.port);
    if (!grant)
        return reply_error("to: %.300s is not one of spoke %s's tcp grants", to, s->name);
    char lwhy[300];
    int lfd = *fd;
    *fd = -1;
    if (!listener_add(px, s, lfd, -1, grant, lwhy, sizeof(lwhy)))
        return reply_error("%s", lwhy);
    log_info("spoke %s: forwarding a listener to %s", s->name, grant);
    return reply_ok();
}

/* The synthetic addresses a spoke's resolver handed out before a restart, in chunks
 * after its add (a message is at most 64 KiB). */
static json_t *op_synthetic(struct proxy *px, const json_t *msg)
{
    static const char *const keys[] = {"op", "spoke", "names", NULL};
    json_t *reply = NULL;
    struct spoke *s = msg_spoke(px, msg, "synthetic", keys, &reply);
    if (!s)
        return reply;
    char why[300];
    if (!preset_synthetic(s, json_object_get(msg, "names"), why, sizeof(why)))
        return reply_error("%s", why);
    return reply_ok();
}

/* Sends an event (taken) to the hub as one whole datagram: safe from any worker's
 * thread. A full channel (the hub not reading) loses it; what says what was lost. */
static void notify_hub(struct proxy *px, json_t *ev, const char *what)
{
    if (ev && ctl_send(px->control->fd, ev, -1) < 0 && errno != EAGAIN)
        log_warn("control channel: cannot hand the hub %s", what);
    json_decref(ev);
}

void control_notify_synthetic(struct proxy *px, const char *spoke, const char *name, const char *ip)
{
    if (!px->control)
        return;
    /* A lost note only matters if the proxy then restarts. */
    notify_hub(px,
               json_pack("{s:s,s:s,s:s,s:s}", "event", "synthetic", "spoke", spoke, "name", name,
                         "ip", ip),
               "a synthetic address");
}

void control_notify_span(struct proxy *px, const struct conn *c, const char *name, bool ok,
                         uint64_t bytes)
{
    if (!px->control)
        return;
    /* A lost span loses no record: the tunnel's are on file either way. */
    notify_hub(px,
               json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:b,s:I}", "event", "span", "spoke",
                         c->spoke->name, "traceparent", c->trace, "span", c->span, "name", name,
                         "start", (json_int_t)c->t_accept_real, "end", (json_int_t)now_real_ns(),
                         "ok", ok, "bytes", (json_int_t)bytes),
               "a tunnel's span");
}

/* A secret's new value (rotation) or a new binding for a spoke: requests that start
 * from now on use it; those under way keep the one they started with. */
static json_t *op_secret(struct proxy *px, const json_t *msg)
{
    static const char *const keys[] = {"op", "spoke", "secret", NULL};
    json_t *reply = NULL;
    struct spoke *s = msg_spoke(px, msg, "secret", keys, &reply);
    if (!s)
        return reply;
    char err[512] = "";
    struct cred cred;
    if (!cred_parse(json_object_get(msg, "secret"), &cred, err, sizeof(err)))
        return reply_error("%s", err);
    char secret[CRED_NAME_MAX + 1];
    str_copy(secret, cred.name, sizeof(secret));
    pthread_mutex_lock(&px->creds_lock);
    struct cred_set *old = s->creds;
    struct cred_set *now = cred_set_with(old, &cred);
    if (now)
        s->creds = now;
    pthread_mutex_unlock(&px->creds_lock);
    if (!now)
        return reply_error("spoke %s has %d secrets already", s->name, CRED_MAX_PER_SPOKE);
    cred_set_unref(old);
    np_audit_secret(px, s, secret);
    return reply_ok();
}

/* The hub's CA, which answers for the hosts whose TLS is opened. Set once; the same CA
 * again (a restarted hub) is fine. */
static json_t *op_tls(struct proxy *px, const json_t *msg)
{
    static const char *const keys[] = {"op", "ca_cert", "ca_key", NULL};
    char err[512] = "";
    struct jf_ctx jc = {.file = "tls", .err = err, .errlen = sizeof(err)};
    const char *cert = NULL, *key = NULL;
    if (!jf_object(&jc, msg, "", keys) || !jf_string(&jc, msg, "", "ca_cert", true, 65536, &cert) ||
        !jf_string(&jc, msg, "", "ca_key", true, 65536, &key))
        return reply_error("%s", err);
    if (!px->tls)
        return reply_error("this proxy has no TLS contexts (--upstream-ca could not be read)");
    struct tlsca *ca = tlsca_new(cert, strlen(cert), key, strlen(key), err, sizeof(err));
    if (!ca)
        return reply_error("tls: %s", err);
    if (px->ca) {
        bool same = strcmp(tlsca_fingerprint(px->ca), tlsca_fingerprint(ca)) == 0;
        tlsca_free(ca);
        return same ? reply_ok() : reply_error("tls: a CA is set already");
    }
    /* Published before any spoke that needs it is added (the hub sends it first). */
    __atomic_store_n(&px->ca, ca, __ATOMIC_RELEASE);
    log_info("TLS for secrets: CA sha256 %s, upstreams verified with %s", tlsca_fingerprint(ca),
             tlsctx_ca_file(px->tls));
    return reply_ok();
}

/* Values in a message are wiped once it is handled, whatever became of it. */
static void wipe_string(json_t *v)
{
    if (json_is_string(v))
        explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

static void wipe_values(const json_t *msg)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(msg, "secrets"), i, b)
        wipe_string(json_object_get(b, "value"));
    wipe_string(json_object_get(json_object_get(msg, "secret"), "value"));
    wipe_string(json_object_get(msg, "ca_key"));
}

json_t *control_handle(struct proxy *px, const json_t *msg, int *fds, size_t nfds)
{
    json_t *reply = control_dispatch(px, msg, fds, nfds);
    wipe_values(msg);
    return reply;
}

static json_t *control_dispatch(struct proxy *px, const json_t *msg, int *fds, size_t nfds)
{
    const char *op = json_string_value(json_object_get(msg, "op"));
    if (!op)
        return reply_error("op: missing or not a string");
    int none = -1;
    if (nfds == 0)
        fds = &none;
    if (strcmp(op, "add") == 0)
        return op_add(px, msg, fds, nfds);
    if (nfds > 1)
        return reply_error("op %s takes at most one descriptor", op);
    if (strcmp(op, "forward") == 0)
        return op_forward(px, msg, fds);
    if (strcmp(op, "synthetic") == 0)
        return op_synthetic(px, msg);
    if (strcmp(op, "remove") == 0)
        return op_remove(px, msg);
    if (strcmp(op, "secret") == 0)
        return op_secret(px, msg);
    if (strcmp(op, "tls") == 0)
        return op_tls(px, msg);
    if (strcmp(op, "trace") == 0)
        return op_trace(px, msg);
    if (strcmp(op, "ping") == 0) {
        json_t *r = reply_ok();
        unsigned n = 0;
        for (struct spoke *s = px->spokes; s; s = s->next)
            n++;
        json_object_set_new(r, "spokes", json_integer(n));
        pthread_mutex_lock(&px->lock);
        unsigned tunnels = px->tunnels;
        pthread_mutex_unlock(&px->lock);
        json_object_set_new(r, "tunnels", json_integer(tunnels));
        return r;
    }
    return reply_error("op: unknown operation");
}

static void on_control(evutil_socket_t sock, short what, void *arg)
{
    (void)what;
    struct control *ctl = arg;
    json_t *msg;
    int fds[CTL_MAX_FDS];
    size_t nfds = 0;
    int rc = ctl_recvv((int)sock, &msg, fds, 2, &nfds);
    if (rc == 0) {
        event_del(ctl->ev);
        proxy_start_drain(ctl->px, "the hub closed the control channel");
        return;
    }
    json_t *reply;
    if (rc < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return;
        if (errno != EMSGSIZE && errno != EBADMSG) {
            log_warn("control channel");
            event_del(ctl->ev);
            proxy_start_drain(ctl->px, "the control channel failed");
            return;
        }
        reply = reply_error(errno == EMSGSIZE ? "message too large" : "not a JSON object");
    } else {
        reply = control_handle(ctl->px, msg, fds, nfds);
        json_decref(msg);
    }
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (ctl_send((int)sock, reply, -1) < 0)
        log_warn("control channel: cannot reply");
    json_decref(reply);
}

struct control *control_new(struct proxy *px, int fd, char *err, size_t errlen)
{
    int type = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) {
        snprintf(err, errlen, "--control %d: not a SOCK_SEQPACKET socket", fd);
        return NULL;
    }
    if (set_cloexec(fd, true) < 0 || set_nonblock(fd, true) < 0) {
        snprintf(err, errlen, "--control %d: %s", fd, strerror(errno));
        return NULL;
    }
    struct control *ctl = xcalloc(1, sizeof(*ctl));
    ctl->px = px;
    ctl->fd = fd;
    ctl->ev = event_new(px->base, fd, EV_READ | EV_PERSIST, on_control, ctl);
    if (!ctl->ev) {
        free(ctl);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    event_add(ctl->ev, NULL);
    px->control = ctl;
    return ctl;
}

void control_free(struct control *ctl)
{
    if (!ctl)
        return;
    event_free(ctl->ev);
    close(ctl->fd);
    free(ctl);
}
