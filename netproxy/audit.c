#include "audit.h"

#include "addrguard.h"
#include "conn.h"
#include "lib/audit.h"
#include "log.h"
#include "metrics.h"
#include "netproxy.h"
#include "util.h"

#include <errno.h>
#include <string.h>

static void set_ip(json_t *rec, const char *path, const struct sockaddr_storage *ss)
{
    char ip[INET6_ADDRSTRLEN];
    sockaddr_format_ip((const struct sockaddr *)ss, ip, sizeof(ip));
    audit_set_str(rec, path, ip);
}

static void set_ns_duration(json_t *rec, const char *path, uint64_t start, uint64_t end)
{
    if (start && end >= start)
        audit_set_int(rec, path, (int64_t)(end - start));
}

static json_t *tunnel_record(const struct conn *c, const char *action)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set(rec, "event.category", json_pack("[s]", "network"));
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.id", c->id);
    audit_set_str(rec, "event.module", "netproxy");
    set_ip(rec, "source.ip", &c->src);
    audit_set_int(rec, "source.port", sockaddr_port((const struct sockaddr *)&c->src));
    audit_set_str(rec, "isolate.spoke", c->spoke->name);
    if (c->spoke->user)
        audit_set_str(rec, "isolate.user", c->spoke->user);
    audit_set_str(rec, "rule.ruleset", c->spoke->name);
    audit_set_str(rec, "network.transport", "tcp");
    if (c->have_target) {
        audit_set(rec, "http.request.method",
                  audit_string(c->method, strnlen(c->method, sizeof(c->method)), 32));
        audit_set(rec, "url.original",
                  audit_string(c->target, strnlen(c->target, sizeof(c->target)), 256));
        if (c->rp.line_done)
            audit_set_str(rec, "http.version", c->rp.version_minor ? "1.1" : "1.0");
        if (c->user_agent[0])
            audit_set(rec, "user_agent.original",
                      audit_string(c->user_agent, strnlen(c->user_agent, sizeof(c->user_agent)),
                                   sizeof(c->user_agent)));
    }
    if (c->have_host) {
        audit_set_str(rec, "destination.address", c->host.name);
        if (c->host.kind == HOST_NAME)
            audit_set_str(rec, "destination.domain", c->host.name);
        if (c->registered)
            audit_set_str(rec, "destination.registered_domain", c->registered);
        audit_set_int(rec, "destination.port", c->port);
    }
    if (c->have_dst) {
        set_ip(rec, "destination.ip", &c->dst);
        audit_set_str(rec, "network.type", c->dst.ss_family == AF_INET6 ? "ipv6" : "ipv4");
        audit_set_str(rec, "isolate.address_class", addr_class_name(c->dst_class));
        if (c->guard)
            audit_set_str(rec, "isolate.address_guard", c->guard);
    }
    if (c->rule)
        audit_set_str(rec, "rule.name", c->rule);
    if (c->spoke->report_only)
        audit_set(rec, "isolate.report_only", json_true());
    if (c->would_deny != R_ALLOWED)
        audit_set_str(rec, "isolate.would_deny", reason_code(c->would_deny));
    set_ns_duration(rec, "isolate.dns.duration", c->t_dns_start, c->t_dns_end);
    set_ns_duration(rec, "isolate.connect.duration", c->t_connect_start, c->t_connected);
    return rec;
}

static int write_record(struct proxy *px, json_t *rec, const char *what)
{
    if (audit_write(px->audit, rec) == 0)
        return 0;
    int saved = errno;
    metrics_audit_failure(px->metrics);
    log_warnx("audit: cannot write the %s record to %s: %s", what, audit_path(px->audit),
              strerror(saved));
    errno = saved;
    return -1;
}

int np_audit_decision(struct conn *c, enum reason r, const char *detail, int status)
{
    bool allowed = r == R_ALLOWED;
    json_t *rec = tunnel_record(c, "connect");
    audit_set(rec, "event.type", json_pack("[s,s]", "connection", allowed ? "allowed" : "denied"));
    audit_set_str(rec, "event.outcome", allowed ? "success" : "failure");
    if (!allowed)
        audit_set_str(rec, "event.reason", reason_code(r));
    else if (c->would_deny != R_ALLOWED)
        audit_set_str(rec, "event.reason", reason_code(c->would_deny));
    if (detail)
        audit_set(rec, "message", audit_string(detail, strlen(detail), 512));
    if (status)
        audit_set_int(rec, "http.response.status_code", status);
    set_ns_duration(rec, "event.duration", c->t_accept, now_mono_ns());
    return write_record(c->px, rec, "decision");
}

int np_audit_close(struct conn *c)
{
    json_t *rec = tunnel_record(c, "close");
    audit_set(rec, "event.type", json_pack("[s,s]", "connection", "end"));
    bool clean = c->close_reason == CLOSE_DONE;
    audit_set_str(rec, "event.outcome", clean ? "success" : "failure");
    audit_set_str(rec, "event.reason", close_reason_code(c->close_reason));
    char ts[40];
    format_iso8601(c->t_accept_real, ts, sizeof(ts));
    audit_set_str(rec, "event.start", ts);
    set_ns_duration(rec, "event.duration", c->t_accept, now_mono_ns());
    audit_set_int(rec, "source.bytes", (int64_t)c->c2u.bytes);
    audit_set_int(rec, "destination.bytes", (int64_t)c->u2c.bytes);
    audit_set_int(rec, "network.bytes", (int64_t)(c->c2u.bytes + c->u2c.bytes));
    return write_record(c->px, rec, "close");
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
    write_record(px, rec, action);
}
