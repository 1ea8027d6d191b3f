#include "audit.h"

#include "netproxy/core/core.h"
#include "netproxy/control/control.h"
#include "firstseen.h"
#include "lib/audit.h"
#include "lib/auditchain.h"
#include "lib/auditkey.h"
#include "lib/jsonline.h"
#include "lib/traceparent.h"
#include "log.h"
#include "metrics.h"
#include "netproxy/netproxy.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <event2/event.h>
#include <string.h>

/* Big enough for the worst record: every capped string made of bytes that escape to six
 * (\u00XX) still fits twice over. */
#define RECORD_MAX 16384

/* What every tunnel record ends with: its time, the ECS version, the service. */
static void put_envelope(struct jline *j, struct proxy *px)
{
    char ts[40];
    format_iso8601(now_real_ns(), ts, sizeof(ts));
    jl_str(j, "@timestamp", ts);
    jl_open(j, "ecs");
    jl_str(j, "version", AUDIT_ECS_VERSION);
    jl_close(j);
    jl_open(j, "service");
    jl_str(j, "name", audit_service(px->audit));
    jl_close(j);
}

static void put_ip(struct jline *j, const char *key, const struct sockaddr_storage *ss)
{
    char ip[INET6_ADDRSTRLEN];
    sockaddr_format_ip((const struct sockaddr *)ss, ip, sizeof(ip));
    jl_str(j, key, ip);
}

static void put_duration(struct jline *j, const char *key, uint64_t start, uint64_t end)
{
    if (start && end >= start)
        jl_int(j, key, (int64_t)(end - start));
}

static int write_record(struct proxy *px, const char *line, size_t len, const char *what)
{
    if (audit_write_line(px->audit, line, len) == 0)
        return 0;
    int saved = errno;
    metrics_audit_failure(px->metrics);
    log_warnx("audit: cannot write the %s record to %s: %s", what, audit_path(px->audit),
              strerror(saved));
    errno = saved;
    return -1;
}

/* The decision record (close false: r, detail and status say what was decided) or the
 * close record of a tunnel, written field by field into a buffer on the stack (these
 * are two per tunnel: building them as jansson objects cost more than the relay). The
 * fields are the ECS names of netproxy/OCSF.md, grouped as nested objects. */
static int tunnel_record(struct conn *c, bool close, enum reason r, const char *detail, int status)
{
    char buf[RECORD_MAX];
    struct jline j;
    const struct spoke *s = c->spoke;
    uint64_t now = now_mono_ns();
    /* The hub's call it belongs to: taken at the decision, kept for the close. */
    if (!close) {
        pthread_mutex_lock(&c->px->lock);
        memcpy(c->trace, s->trace, sizeof(c->trace));
        c->spans = s->trace_spans;
        pthread_mutex_unlock(&c->px->lock);
        struct trace_ctx call, own;
        if (c->trace[0] && trace_begin(&call, c->trace)) {
            trace_child(&own, &call); /* the tunnel is a span of its own under the call */
            memcpy(c->span, own.span_id, sizeof(c->span));
        }
    }
    bool traced = c->trace[0] && strlen(c->trace) == 55 && c->span[0];
    jl_begin(&j, buf, sizeof(buf));

    jl_open(&j, "event");
    jl_str(&j, "kind", "event");
    jl_strs(&j, "category", "network", NULL);
    jl_str(&j, "action", close ? "close" : "connect");
    jl_str(&j, "id", c->id);
    jl_str(&j, "module", "netproxy");
    if (!close) {
        bool allowed = r == R_ALLOWED;
        jl_strs(&j, "type", "connection", allowed ? "allowed" : "denied");
        jl_str(&j, "outcome", allowed ? "success" : "failure");
        if (!allowed)
            jl_str(&j, "reason", reason_code(r));
        else if (c->would_deny != R_ALLOWED)
            jl_str(&j, "reason", reason_code(c->would_deny));
    } else {
        jl_strs(&j, "type", "connection", "end");
        jl_str(&j, "outcome", c->close_reason == CLOSE_DONE ? "success" : "failure");
        jl_str(&j, "reason", close_reason_code(c->close_reason));
        char ts[40];
        format_iso8601(c->t_accept_real, ts, sizeof(ts));
        jl_str(&j, "start", ts);
    }
    put_duration(&j, "duration", c->t_accept, now);
    jl_close(&j);

    jl_open(&j, "source");
    put_ip(&j, "ip", &c->src);
    jl_int(&j, "port", sockaddr_port((const struct sockaddr *)&c->src));
    if (close)
        jl_int(&j, "bytes", (int64_t)c->c2u.bytes);
    jl_close(&j);

    jl_open(&j, "isolate");
    jl_str(&j, "spoke", s->name);
    if (s->user)
        jl_str(&j, "user", s->user);
    if (traced) { /* the call's span, whose child the tunnel is */
        jl_open(&j, "span");
        jl_strn(&j, "parent", c->trace + 36, 16, 16);
        jl_close(&j);
    }
    if (c->have_dst) {
        jl_str(&j, "address_class", addr_class_name(c->dst_class));
        if (c->guard)
            jl_str(&j, "address_guard", c->guard);
    }
    /* A user's app reaching this registrable domain for the first time (firstseen.h). */
    if (!close && r == R_ALLOWED && c->registered) {
        int seen = np_firstseen_mark(s->user ? s->user : "-", s->name, c->registered);
        if (seen >= 0)
            jl_bool(&j, "first_seen", seen == 1);
    }
    if (s->report_only)
        jl_bool(&j, "report_only", true);
    if (c->would_deny != R_ALLOWED)
        jl_str(&j, "would_deny", reason_code(c->would_deny));
    if (c->t_dns_start && c->t_dns_end >= c->t_dns_start) {
        jl_open(&j, "dns");
        put_duration(&j, "duration", c->t_dns_start, c->t_dns_end);
        jl_close(&j);
    }
    if (c->t_connect_start && c->t_connected >= c->t_connect_start) {
        jl_open(&j, "connect");
        put_duration(&j, "duration", c->t_connect_start, c->t_connected);
        jl_close(&j);
    }
    /* How it came: a CONNECT request, or straight to its destination (egress.h). */
    jl_str(&j, "egress", c->mode == MODE_PROXY ? "connect" : "transparent");
    if (c->raw)
        jl_bool(&j, "tcp_grant", true);
    if (c->synthetic) {
        jl_open(&j, "synthetic");
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &c->orig_dst.sin_addr, ip, sizeof(ip));
        jl_str(&j, "ip", ip);
        jl_close(&j);
    }
    jl_close(&j);

    if (traced) {
        jl_open(&j, "trace");
        jl_strn(&j, "id", c->trace + 3, 32, 32);
        jl_close(&j);
        jl_open(&j, "span");
        jl_str(&j, "id", c->span);
        jl_close(&j);
    }

    jl_open(&j, "rule");
    jl_str(&j, "ruleset", s->name);
    if (c->rule)
        jl_str(&j, "name", c->rule);
    jl_close(&j);

    jl_open(&j, "network");
    jl_str(&j, "transport", "tcp");
    if (c->proto != SNIFF_UNKNOWN)
        jl_str(&j, "protocol", c->proto == SNIFF_TLS ? "tls" : "http");
    if (c->have_dst)
        jl_str(&j, "type", c->dst.ss_family == AF_INET6 ? "ipv6" : "ipv4");
    if (close)
        jl_int(&j, "bytes", (int64_t)(c->c2u.bytes + c->u2c.bytes));
    jl_close(&j);

    if (c->named[0] && c->proto == SNIFF_TLS) {
        jl_open(&j, "tls");
        jl_open(&j, "client");
        jl_strn(&j, "server_name", c->named, strnlen(c->named, sizeof(c->named)), 256);
        jl_close(&j);
        jl_close(&j);
    }
    bool http_request = c->have_target && c->mode == MODE_PROXY;
    if (http_request || (!close && status)) {
        jl_open(&j, "http");
        if (http_request) {
            jl_open(&j, "request");
            jl_strn(&j, "method", c->method, strnlen(c->method, sizeof(c->method)), 32);
            jl_close(&j);
            if (c->rp.line_done)
                jl_str(&j, "version", c->rp.version_minor ? "1.1" : "1.0");
        }
        if (!close && status) {
            jl_open(&j, "response");
            jl_int(&j, "status_code", status);
            jl_close(&j);
        }
        jl_close(&j);
    }
    if (c->have_target) {
        jl_open(&j, "url");
        jl_strn(&j, "original", c->target, strnlen(c->target, sizeof(c->target)), 256);
        jl_close(&j);
        if (c->user_agent[0] && c->mode == MODE_PROXY) {
            jl_open(&j, "user_agent");
            jl_strn(&j, "original", c->user_agent, strnlen(c->user_agent, sizeof(c->user_agent)),
                    sizeof(c->user_agent));
            jl_close(&j);
        }
    }
    if (c->have_host || c->have_dst || close) {
        jl_open(&j, "destination");
        if (c->have_host) {
            jl_str(&j, "address", c->host.name);
            if (c->host.kind == HOST_NAME)
                jl_str(&j, "domain", c->host.name);
            if (c->registered)
                jl_str(&j, "registered_domain", c->registered);
            jl_int(&j, "port", c->port);
        }
        if (c->have_dst)
            put_ip(&j, "ip", &c->dst);
        if (close)
            jl_int(&j, "bytes", (int64_t)c->u2c.bytes);
        jl_close(&j);
    }
    if (!close && detail)
        jl_strn(&j, "message", detail, strlen(detail), 512);

    put_envelope(&j, c->px);
    int rc = write_record(c->px, buf, jl_end(&j), close ? "close" : "decision");
    /* The tunnel's span ends with it: at its close, or at a refusal (no close follows). */
    if (traced && c->spans && (close || r != R_ALLOWED)) {
        char name[300];
        snprintf(name, sizeof(name), "tunnel %s:%d", c->have_host ? c->host.name : "?", c->port);
        control_notify_span(c->px, c, name, close ? c->close_reason == CLOSE_DONE : false,
                            c->c2u.bytes + c->u2c.bytes);
    }
    return rc;
}

int np_audit_decision(struct conn *c, enum reason r, const char *detail, int status)
{
    return tunnel_record(c, false, r, detail, status);
}

int np_audit_close(struct conn *c)
{
    return tunnel_record(c, true, R_ALLOWED, NULL, 0);
}

int np_audit_request(struct conn *c, const struct np_request_record *r)
{
    char buf[RECORD_MAX], id[33];
    struct jline j;
    const struct spoke *s = c->spoke;
    bool ok = r->reason == R_ALLOWED;
    audit_new_id(id);
    jl_begin(&j, buf, sizeof(buf));
    jl_open(&j, "event");
    jl_str(&j, "kind", "event");
    jl_strs(&j, "category", "network", "web");
    jl_str(&j, "action", r->action);
    jl_str(&j, "id", id);
    jl_str(&j, "module", "netproxy");
    jl_strs(&j, "type", "access", ok ? "allowed" : "denied");
    jl_str(&j, "outcome", ok ? "success" : "failure");
    if (!ok)
        jl_str(&j, "reason", reason_code(r->reason));
    jl_close(&j);
    jl_open(&j, "source");
    put_ip(&j, "ip", &c->src);
    jl_int(&j, "port", sockaddr_port((const struct sockaddr *)&c->src));
    jl_close(&j);
    jl_open(&j, "isolate");
    jl_str(&j, "spoke", s->name);
    if (s->user)
        jl_str(&j, "user", s->user);
    jl_open(&j, "tunnel");
    jl_str(&j, "id", c->id);
    jl_bool(&j, "tls_opened", r->tls);
    jl_close(&j);
    if (r->secret) {
        jl_open(&j, "secret");
        jl_str(&j, "name", r->secret);
        jl_close(&j);
    }
    jl_close(&j);
    jl_open(&j, "http");
    if (r->method && r->method[0]) {
        jl_open(&j, "request");
        jl_strn(&j, "method", r->method, strlen(r->method), 32);
        jl_close(&j);
        jl_str(&j, "version", r->version);
    }
    if (r->status) {
        jl_open(&j, "response");
        jl_int(&j, "status_code", r->status);
        jl_close(&j);
    }
    jl_close(&j);
    jl_open(&j, "url");
    jl_str(&j, "domain", c->host.name);
    if (r->path && r->path[0])
        jl_strn(&j, "path", r->path, strlen(r->path), 256);
    jl_close(&j);
    jl_open(&j, "destination");
    jl_str(&j, "domain", c->host.name);
    jl_int(&j, "port", c->port);
    if (c->have_dst)
        put_ip(&j, "ip", &c->dst);
    jl_close(&j);
    if (r->detail)
        jl_strn(&j, "message", r->detail, strlen(r->detail), 512);
    put_envelope(&j, c->px);
    return write_record(c->px, buf, jl_end(&j), r->action);
}

void np_audit_spoke(struct proxy *px, const struct spoke *s, const char *action, const char *error)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set(rec, "event.category", json_pack("[s]", "configuration"));
    audit_set(rec, "event.type", json_pack("[s]", error ? "info" : "change"));
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.module", "netproxy");
    audit_set_str(rec, "event.outcome", error ? "failure" : "success");
    if (error)
        audit_set(rec, "event.reason", audit_string(error, strlen(error), 512));
    if (s) {
        audit_set_str(rec, "isolate.spoke", s->name);
        if (s->user)
            audit_set_str(rec, "isolate.user", s->user);
        audit_set_int(rec, "isolate.allow_entries", (int64_t)policy_entry_count(s->policy));
    }
    if (audit_write(px->audit, rec) < 0) {
        int saved = errno;
        metrics_audit_failure(px->metrics);
        log_warnx("audit: cannot write the %s record to %s: %s", action, audit_path(px->audit),
                  strerror(saved));
    }
}

void np_audit_secret(struct proxy *px, const struct spoke *s, const char *secret)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set(rec, "event.category", json_pack("[s]", "configuration"));
    audit_set(rec, "event.type", json_pack("[s]", "change"));
    audit_set_str(rec, "event.action", "secret-update");
    audit_set_str(rec, "event.module", "netproxy");
    audit_set_str(rec, "event.outcome", "success");
    audit_set_str(rec, "isolate.spoke", s->name);
    if (s->user)
        audit_set_str(rec, "isolate.user", s->user);
    audit_set_str(rec, "isolate.secret.name", secret);
    if (audit_write(px->audit, rec) < 0) {
        metrics_audit_failure(px->metrics);
        log_warnx("audit: cannot write the secret-update record to %s", audit_path(px->audit));
    }
}

/* One proxy per process: its checkpoint timer. */
static struct event *audit_tick_ev;

int np_audit_chain(struct proxy *px, const char *key_path, char *err, size_t errlen)
{
    EVP_PKEY *key = auditkey_load_or_create(key_path, err, errlen);
    if (!key)
        return -1;
    int rc = auditchain_attach(px->audit, key, NULL, err, errlen);
    EVP_PKEY_free(key);
    return rc;
}

static void on_audit_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    audit_tick(arg);
}

void np_audit_tick_start(struct proxy *px)
{
    struct timeval tv = {.tv_sec = AUDITCHAIN_EVERY_S / 4};
    audit_tick_ev = event_new(px->base, -1, EV_PERSIST, on_audit_tick, px->audit);
    if (audit_tick_ev)
        event_add(audit_tick_ev, &tv);
}

void np_audit_tick_stop(void)
{
    if (audit_tick_ev)
        event_free(audit_tick_ev);
    audit_tick_ev = NULL;
}
