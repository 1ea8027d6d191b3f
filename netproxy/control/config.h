/* The proxy's tunables: request limits, connection limits and timeouts. main.c fills
 * them from the command line; every other file only reads them. */
#ifndef NETPROXY_CONFIG_H
#define NETPROXY_CONFIG_H

#include "netproxy/core/core.h"
#include "netaddr.h"

#include <stdbool.h>
#include <stdint.h>

struct np_config {
    struct req_limits req;
    unsigned max_tunnels;           /* global, tunnels being set up or relaying */
    unsigned max_tunnels_per_spoke; /* default for each spoke */
    unsigned max_pending;           /* connections still sending their request */
    unsigned max_pending_per_spoke;
    unsigned retry_after_s; /* Retry-After on 429/503 */
    uint64_t header_timeout_ms;
    uint64_t dns_timeout_ms;
    uint64_t connect_timeout_ms;
    uint64_t idle_timeout_ms;
    uint64_t max_lifetime_ms; /* 0: no limit */
    uint64_t drain_timeout_ms;
    uint64_t linger_ms; /* after an error answer, how long to read what the client sends */
    bool report_only;
    unsigned pipe_size;               /* bytes per splice pipe */
    uint16_t ports[POLICY_MAX_PORTS]; /* --ports: the default for every spoke */
    size_t nports;
    /* The jail's resolver and transparent egress. */
    struct cidr synthetic;  /* --synthetic-range: the addresses that stand for names */
    unsigned synthetic_max; /* names per spoke */
    unsigned dns_rate;      /* queries per second per spoke, sustained */
    unsigned dns_burst;     /* ... and in a burst */
    /* Each spoke's budget (refusalbudget.h): refusal records and new connections per
     * second, sustained and in a burst; a rate of 0 turns one off. */
    unsigned refusal_rate, refusal_burst;
    unsigned conn_rate, conn_burst;
};

void config_defaults(struct np_config *c);

/* "250ms", "10s", "2m", "1h" or a bare number of seconds; false on junk or > max_ms. */
bool parse_duration_ms(const char *s, uint64_t max_ms, uint64_t *out);

#endif
