/* The connection to the Redis that holds the memory, as operators run it: a unix
 * socket, HOST:PORT, or a Sentinel set (sentinel://HOST:PORT,HOST:PORT/MASTERNAME),
 * with AUTH (password, optionally an ACL user) and SELECT, plain or over TLS (redis_wire.h).
 *
 * With Sentinel the master is asked of the sentinels (SENTINEL get-master-addr-by-name,
 * the first sentinel that answers is tried first next time), and the address given is
 * checked with ROLE before it is used: during a failover a sentinel may still name
 * the old master, or the promoted replica may not have switched yet. When the master
 * moves, the link says so through its event callback (the memory puts it on stderr
 * and in the hub's audit).
 *
 * This file only connects; memory_redis.c sends the commands, decides when a
 * connection is lost (no reply, READONLY) and calls redis_link_connect() again. */
#ifndef HUB_MEMORY_REDIS_CONN_H
#define HUB_MEMORY_REDIS_CONN_H

#include "redis_wire.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#define REDIS_SENTINELS_MAX 16

struct redis_sentinel {
    char *host;
    int port;
};

/* What happened to the link, for the operator: "memory-failover" (the master moved),
 * "memory-connection-lost", "memory-reconnected", "memory-replication-degraded",
 * "memory-replication-restored". */
typedef void (*redis_event_fn)(void *ud, const char *action, const char *message);

struct redis_link {
    char *addr; /* as configured, for messages */
    /* direct */
    char *unix_path;
    char *host;
    int port;
    /* Sentinel: the master's current address is in host/port once known */
    struct redis_sentinel sentinels[REDIS_SENTINELS_MAX];
    size_t n_sentinels;
    char *master_name;
    char *sentinel_password; /* AUTH for the sentinels (their requirepass); NULL: none */

    char *password;
    char *username;
    int db;
    long connect_timeout_ms, command_timeout_ms;

    struct ssl_ctx_st *tls; /* TLS to every server and sentinel; NULL: plain */
    char *tls_server_name;  /* the name their certificates carry; NULL: the host dialled */

    struct rwire *c;
    unsigned generation; /* counts connections made: a WAIT is only about its own */
    redis_event_fn on_event;
    void *event_ud;
};

/* Parses "unix:PATH", "/PATH", "HOST:PORT", "[V6]:PORT" or
 * "sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME" into l (zeroed by the caller). */
bool redis_link_parse(struct redis_link *l, const char *addr, char *err, size_t errlen);
bool redis_link_is_sentinel(const struct redis_link *l);
/* Connects to the master (asking the sentinels first), authenticates, selects the db.
 * 0; -1 try again later; -2 permanent (credentials refused, SELECT refused). */
int redis_link_connect(struct redis_link *l, char *err, size_t errlen);
/* Drops the connection (the next command reconnects). */
void redis_link_drop(struct redis_link *l);
/* The number of replicas the master has connected right now (ROLE), or -1. */
int redis_link_replicas(struct redis_link *l);
void redis_link_free(struct redis_link *l);

#endif
