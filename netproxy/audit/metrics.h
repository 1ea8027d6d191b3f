/* Prometheus metrics: counters the connection code bumps (cheap increments on the hot
 * path) and a text exposition served over HTTP by --metrics ADDR:PORT (GET /metrics). */
#ifndef NETPROXY_METRICS_H
#define NETPROXY_METRICS_H

#include "netproxy/core/core.h"

#include <stddef.h>
#include <stdint.h>

struct proxy;
struct metrics;

enum decision_kind { DECISION_ALLOW, DECISION_DENY, DECISION_WOULD_DENY, DECISION_KINDS };

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

void metrics_decision(struct metrics *m, enum decision_kind kind, enum reason r);
void metrics_dns(struct metrics *m, uint64_t ns);
void metrics_connect(struct metrics *m, uint64_t ns);
void metrics_bytes(struct metrics *m, uint64_t client_to_upstream, uint64_t upstream_to_client);
void metrics_closed(struct metrics *m, enum close_reason r);
void metrics_audit_failure(struct metrics *m);
void metrics_accept_error(struct metrics *m);

/* The exposition text (malloc'd) for the current state of px. */
char *metrics_render(const struct metrics *m, const struct proxy *px, size_t *len);
/* Serves GET /metrics on the listening socket fd (bound by the caller). */
int metrics_serve(struct metrics *m, struct proxy *px, int fd);

#endif
