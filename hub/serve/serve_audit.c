/* hub serve's records in the hub's audit log (ECS): a client session's start and end
 * (client name and version, remote address, user, transport), each client call with
 * its outcome, and HTTP requests refused before any session (no token, a foreign
 * Origin). The hub's own records of each call and each permission decision share the
 * same file, so one log tells the whole story. Best-effort here: the records of the
 * decisions themselves are the runtime's, written before the decision takes effect. */
#include "traceparent.h"
#include "serve_impl.h"
#include "util.h"

#include <string.h>

static void put(struct serve *sv, json_t *rec)
{
    struct audit *a = hub_audit(sv->hub);
    if (a)
        audit_write(a, rec);
    else
        json_decref(rec);
}

static json_t *record(const char *action, const char *outcome)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.category", "session");
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    return rec;
}

static void client(json_t *rec, const char *remote)
{
    if (remote && remote[0])
        audit_set(rec, "source.address", audit_string(remote, strlen(remote), 80));
}

void serve_audit_session(struct serve_session *ss, const char *action, const char *reason)
{
    json_t *rec = record(action, "success");
    audit_set_str(rec, "isolate.serve.session", ss->id);
    audit_set_str(rec, "isolate.serve.transport", ss->transport);
    audit_set_str(rec, "isolate.serve.protocol", ss->protocol);
    audit_set_str(rec, "isolate.user", ss->user);
    audit_set(rec, "user_agent.name", audit_string(ss->client_name, strlen(ss->client_name), 128));
    audit_set(rec, "user_agent.version",
              audit_string(ss->client_version, strlen(ss->client_version), 64));
    audit_set(rec, "isolate.serve.elicitation", json_boolean(ss->can_elicit));
    audit_set(rec, "isolate.serve.sampling", json_boolean(ss->can_sample));
    client(rec, ss->remote);
    if (reason) {
        audit_set_str(rec, "event.reason", reason);
        audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - ss->t_start));
        audit_set_int(rec, "isolate.serve.calls", (int64_t)ss->calls_total);
    }
    put(ss->sv, rec);
}

void serve_audit_call(struct serve_call *sc, struct serve_session *ss, const char *outcome,
                      const char *layer, const char *message)
{
    bool ok = strcmp(outcome, "success") == 0 || strcmp(outcome, "tool-error") == 0;
    json_t *rec = record("serve-call", ok ? "success" : "failure");
    audit_set_str(rec, "event.category", "process");
    audit_set_str(rec, "isolate.serve.session", sc->session_id);
    audit_set_str(rec, "isolate.serve.call", sc->audit_id);
    audit_set_str(rec, "isolate.serve.result", outcome);
    audit_set_str(rec, "isolate.user", sc->user);
    audit_set_str(rec, "isolate.app", sc->app);
    audit_set_str(rec, "isolate.tool", sc->tool);
    audit_set_int(rec, "event.duration", (int64_t)(now_mono_ns() - sc->t0));
    if (layer)
        audit_set_str(rec, "rule.name", layer);
    if (!ok && message)
        audit_set(rec, "event.reason", audit_string(message, strlen(message), 512));
    if (!ok && sc->denial[0])
        audit_set(rec, "isolate.serve.denial", audit_string(sc->denial, strlen(sc->denial), 300));
    /* The request's span (a tools/call's: others have none): its record, and OTLP. */
    if (sc->traceparent[0]) {
        audit_set_str(rec, "trace.id", sc->trace.trace_id);
        audit_set_str(rec, "span.id", sc->trace.span_id);
        if (sc->trace.parent_id[0])
            audit_set_str(rec, "isolate.span.parent", sc->trace.parent_id);
        char name[160];
        snprintf(name, sizeof(name), "mcp tools/call %s.%s", sc->app, sc->tool);
        haudit_export_span(sc->sv->hub, &sc->trace, name, sc->t0, ok, ok ? NULL : message, sc->user,
                           sc->app, sc->tool);
    }
    if (ss)
        client(rec, ss->remote);
    put(sc->sv, rec);
}

void serve_audit_http(struct serve *sv, const char *remote, const char *outcome, const char *reason,
                      int status)
{
    json_t *rec = record("serve-http-refused", outcome);
    audit_set_str(rec, "event.category", "authentication");
    audit_set(rec, "event.reason", audit_string(reason, strlen(reason), 300));
    audit_set_int(rec, "http.response.status_code", status);
    client(rec, remote);
    put(sv, rec);
}

void serve_audit_conn(struct serve *sv, const char *remote, const char *reason, int status,
                      uint64_t suppressed)
{
    json_t *rec = record("serve-http-refused", "failure");
    audit_set_str(rec, "event.category", "network");
    audit_set(rec, "event.reason", audit_string(reason, strlen(reason), 300));
    audit_set_int(rec, "http.response.status_code", status);
    if (suppressed)
        audit_set_int(rec, "isolate.serve.suppressed", (int64_t)suppressed);
    client(rec, remote);
    put(sv, rec);
}
