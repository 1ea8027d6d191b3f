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

#include "reason.h"

#include <stdbool.h>

struct conn;
struct proxy;
struct spoke;

/* status: the HTTP status sent (0 when none). 0, or -1 with errno when the line was not
 * written (the caller refuses the tunnel; failures are counted and logged here). */
int np_audit_decision(struct conn *c, enum reason r, const char *detail, int status);
int np_audit_close(struct conn *c);
void np_audit_spoke(struct proxy *px, const struct spoke *s, const char *action, const char *error);

#endif
