#include "control.h"

#include "audit.h"
#include "ctl.h"
#include "jsonfile.h"
#include "log.h"
#include "netaddr.h"
#include "netproxy.h"
#include "util.h"

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

static json_t *op_add(struct proxy *px, const json_t *msg, int *fd)
{
    static const char *const keys[] = {"op",          "spoke",  "user",        "allow",
                                       "ports",       "listen", "max_tunnels", "max_pending",
                                       "report_only", NULL};
    char err[512] = "";
    struct jf_ctx jc = {.file = "add", .err = err, .errlen = sizeof(err)};
    const char *name = NULL, *user = NULL, *listen = NULL;
    char **allow = NULL;
    size_t nallow = 0;
    int64_t max_tunnels = px->cfg->max_tunnels_per_spoke;
    int64_t max_pending = px->cfg->max_pending_per_spoke;
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
        !parse_ports(&jc, msg, ports, &nports) ||
        !jf_int(&jc, msg, "", "max_tunnels", false, 1, 1000000, &max_tunnels) ||
        !jf_int(&jc, msg, "", "max_pending", false, 1, 1000000, &max_pending) ||
        !jf_bool(&jc, msg, "", "report_only", false, &report_only)) {
        jf_strv_free(allow);
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
    } else if (!(pol = policy_new((const char *const *)allow, nallow, ports, nports, err,
                                  sizeof(err)))) {
        reply = reply_error("allow: %s", err);
    }
    jf_strv_free(allow);
    if (reply)
        return reply;
    struct spoke *s = spoke_new(px, name, user, pol);
    s->max_tunnels = (unsigned)max_tunnels;
    s->max_pending = (unsigned)max_pending;
    s->report_only = report_only;
    int lfd = *fd;
    *fd = -1;
    if (!listener_add(px, s, lfd, -1, why, sizeof(why))) {
        spoke_remove(px, s);
        return reply_error("%s", why);
    }
    np_audit_spoke(px, s, "spoke-add", NULL);
    log_info("spoke %s added (%zu allowlist entries)", s->name, policy_entry_count(pol));
    return reply_ok();
}

static json_t *op_remove(struct proxy *px, const json_t *msg)
{
    static const char *const keys[] = {"op", "spoke", NULL};
    char err[512] = "";
    struct jf_ctx jc = {.file = "remove", .err = err, .errlen = sizeof(err)};
    const char *name = NULL;
    if (!jf_object(&jc, msg, "", keys) || !jf_string(&jc, msg, "", "spoke", true, 64, &name))
        return reply_error("%s", err);
    struct spoke *s = spoke_find(px, name);
    if (!s)
        return reply_error("no spoke named %.64s", name);
    np_audit_spoke(px, s, "spoke-remove", NULL);
    pthread_mutex_lock(&px->lock);
    unsigned tunnels = s->tunnels;
    pthread_mutex_unlock(&px->lock);
    log_info("spoke %s removed (%u tunnels finish on their own)", s->name, tunnels);
    spoke_remove(px, s);
    return reply_ok();
}

json_t *control_handle(struct proxy *px, const json_t *msg, int *fd)
{
    const char *op = json_string_value(json_object_get(msg, "op"));
    if (!op)
        return reply_error("op: missing or not a string");
    if (strcmp(op, "add") == 0)
        return op_add(px, msg, fd);
    if (strcmp(op, "remove") == 0)
        return op_remove(px, msg);
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
    int fd;
    int rc = ctl_recv((int)sock, &msg, &fd);
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
        reply = control_handle(ctl->px, msg, &fd);
        json_decref(msg);
    }
    if (fd >= 0)
        close(fd);
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
