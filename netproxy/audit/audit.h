/* The proxy's audit records, written with lib/audit.h (ECS field names, one line per
 * record, one write per line; the two per tunnel formatted with lib/jsonline.h):
 * - a decision record for every request (event.action "connect"), allowed or refused,
 *   with event.reason for every refusal, also for malformed requests, limits and
 *   timeouts;
 * - a close record for every tunnel that was established (event.action "close"),
 *   sharing the decision's event.id, with bytes each way and durations;
 * - a record when the hub adds or removes a spoke (event.action "spoke-add" /
 *   "spoke-remove").
 * Untrusted strings are sanitised and capped by lib/audit; the request target has its
 * userinfo redacted before it gets here. The field list is in netproxy/OCSF.md. */
#ifndef NETPROXY_AUDIT_H
#define NETPROXY_AUDIT_H

#include "netproxy/core/core.h"

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct proxy;
struct spoke;

/* status: the HTTP status sent (0 when none). 0, or -1 with errno when the line was not
 * written (the caller refuses the tunnel; failures are counted and logged here). */
int np_audit_decision(struct conn *c, enum reason r, const char *detail, int status);
int np_audit_close(struct conn *c);

/* One request inside a tunnel netproxy looked into (intercept.h): a secret put in
 * (action "credential-inject", one record per secret, written before the request goes
 * on), or a request or handshake refused (action "request" or "tls", reason set). The
 * tunnel's id is isolate.tunnel.id; never a value. */
struct np_request_record {
    const char *action;
    enum reason reason; /* R_ALLOWED for an injection */
    const char *secret; /* the secret's name, or NULL */
    const char *method, *path;
    const char *version; /* "1.1" or "2" */
    int status;          /* what the client was answered, 0 for none */
    const char *detail;
    bool tls;
};
int np_audit_request(struct conn *c, const struct np_request_record *r);
/* --audit-key: the records hash-chained and checkpoints signed with the key at
 * key_path (lib/auditchain.h), read now, before privileges are dropped. 0, or -1 with
 * err filled. Then a timer seals a quiet log's last records (stopped at the end). */
int np_audit_chain(struct proxy *px, const char *key_path, char *err, size_t errlen);
void np_audit_tick_start(struct proxy *px);
void np_audit_tick_stop(void);
void np_audit_spoke(struct proxy *px, const struct spoke *s, const char *action, const char *error);
/* The hub gave a spoke a secret's new value (event.action "secret-update"). */
void np_audit_secret(struct proxy *px, const struct spoke *s, const char *secret);

/* The rest of netproxy/audit/'s interface (this header is the folder's): the metrics
 * (metrics.h), the first-seen store (firstseen.h) and the log files opened for the
 * writers (logopener.h). */
#include "metrics.h"
#include "firstseen.h"
#include "logopener.h"

#endif
