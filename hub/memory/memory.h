/* The hub's memory: per-user conversation history and permission grants.
 *
 * Two back ends behind one interface:
 *   - Redis (hiredis), persistent across hub restarts: over a unix socket
 *     ("unix:/path/redis.sock"), TCP ("host:port", "[::1]:6379") or a Sentinel set
 *     ("sentinel://host:port,host:port/MASTERNAME", followed across failovers, writes
 *     confirmed by a replica with WAIT: redis_conn.h), with an optional
 *     password (AUTH, read from the environment variable the config names, optionally
 *     with an ACL user name), connect and command timeouts. A lost connection (a Redis
 *     restart, a dropped socket) is re-established transparently and the command sent
 *     again, for up to reconnect_ms; every write waits for Redis' acknowledgement, and
 *     the writes are idempotent so that sending one again never duplicates it. With
 *     scripts/redis-private (AOF, appendfsync always) what was acknowledged survives a
 *     kill -9 of redis-server.
 *   - "none" (--memory none): the same semantics in the hub process; nothing survives.
 *
 * Key layout in Redis (PREFIX defaults to "isolategpt"; USER is validated, see
 * memory_user_valid(), so no user can name another user's keys):
 *   PREFIX:USER:history  LIST of JSON entries {"id","ts","role","text"}, oldest first,
 *                        trimmed to history_max entries
 *   PREFIX:USER:grants   HASH field "category|app|tool|peer" -> {"scope","created"},
 *                        only the persistent scopes (always, deny)
 *   PREFIX:USER:seen     HASH field "app|what" -> first time (ms): memory_first_seen()
 * once and session grants live in the hub process only: a session grant must end with
 * the hub session, also when the hub is killed, and a key in Redis would outlive a
 * crashed hub until some expiry; in the hub's memory it cannot (see grants.h).
 *
 * Functions return -1 and a message in err on failure (Redis unreachable past the
 * reconnect window, a refused user id, ...). Not thread-safe; one per thread. */
#ifndef HUB_MEMORY_H
#define HUB_MEMORY_H

#include "grants.h"
#include "jsonfile.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMORY_USER_MAX 64

struct memory_config {
    const char *redis;                 /* "unix:PATH", "PATH" (absolute), "HOST:PORT" or "none" */
    const char *password_env;          /* environment variable with the AUTH password; NULL: none */
    const char *username;              /* ACL user for AUTH (Redis 6+); NULL: default user */
    int db;                            /* SELECT db; default 0 */
    long connect_timeout_ms;           /* default 2000 */
    long command_timeout_ms;           /* default 2000 */
    long reconnect_ms;                 /* keep trying a lost server this long; default 5000 */
    size_t history_max;                /* entries kept per user; default 1000 */
    size_t entry_max_bytes;            /* text per entry, longer is cut (marked); default 64 KiB */
    const char *prefix;                /* key prefix, [A-Za-z0-9_.-]{1,32}; default "isolategpt" */
    const char *sentinel_password_env; /* AUTH for the sentinels; NULL: none */
    int wait_replicas;    /* replicas that confirm each write (WAIT); -1 (default): 1 under
                             Sentinel, else 0 */
    long wait_timeout_ms; /* how long they have; default 1000 */
    /* TLS to the servers and sentinels (memory.tls: absolute paths); ca NULL: plain */
    const char *tls_ca_file, *tls_cert_file, *tls_key_file, *tls_server_name;
};

void memory_config_defaults(struct memory_config *cfg);
/* Reads hub.json's "memory" object: keys redis, password_env, username, db,
 * connect_timeout_ms, command_timeout_ms, reconnect_ms, history_max, entry_max_bytes,
 * prefix, sentinel_password_env, wait_replicas, wait_timeout_ms, tls {ca_file, cert_file,
 * key_file, server_name}. Strings are borrowed from obj. */
bool memory_config_parse(struct jf_ctx *c, const json_t *obj, const char *where,
                         struct memory_config *cfg);

struct memory;

/* spec ("none", a Redis address, or NULL for cfg->redis) picks the back end. For Redis
 * it connects (and authenticates) now, so that an unreachable server is reported at
 * start: NULL and a message that says how to start one or run with --memory none. */
/* "file:/PATH": in the process, with the hashes (grants, first-seen) kept in that file
 * as well, for hub serve without Redis (memory_local.c). */
struct memory *memory_open(const char *spec, const struct memory_config *cfg, char *err,
                           size_t errlen);
void memory_close(struct memory *m);
struct audit;
/* Where the Redis back end puts what happened to its connection (lost, failover,
 * reconnected, replication degraded) besides stderr; a borrowed pointer, NULL: none. */
void memory_set_audit(struct memory *m, struct audit *a);
/* "redis unix:/run/x/redis.sock" or "in-process (--memory none)": safe to print. */
const char *memory_describe(const struct memory *m);
bool memory_persistent(const struct memory *m);

/* A user id: 1..64 of [A-Za-z0-9_-], starting with a letter or digit. The hub may also
 * use it in file names (per-user data directories). */
bool memory_user_valid(const char *user);

/* Writes that failed since the last call (history entries, grants; each also returned
 * its error to its caller): a new JSON array of messages, one per write (at most
 * MEMORY_FAILED_WRITES_MAX, then one that counts the rest); reading empties it. So
 * that what was not stored is said to the user once a request is over, not only in a
 * log. */
#define MEMORY_FAILED_WRITES_MAX 8
json_t *memory_take_failed_writes(struct memory *m);

/* --- history ------------------------------------------------------------------- */

struct memory_msg {
    char *role; /* [a-z]{1,16}: "user", "assistant", ... */
    char *text;
    int64_t ts_ms;
};

int memory_history_append(struct memory *m, const char *user, const char *role, const char *text,
                          char *err, size_t errlen);
/* As memory_history_append, but without waiting for the store to acknowledge the
 * write (with scripts/redis-private's appendfsync always, an fsync that can take
 * tens of ms on a busy disk): the write is sent, and its acknowledgement is read
 * before the next memory operation or by memory_history_sync(). A write that is not
 * acknowledged is sent again (entries are not doubled). 0, or -1 and err when it
 * could not even be sent (then as memory_history_append). */
int memory_history_append_nowait(struct memory *m, const char *user, const char *role,
                                 const char *text, char *err, size_t errlen);
/* Waits for the writes memory_history_append_nowait() sent: 0 when all are stored, -1
 * and err (and a failed write noted, as for memory_history_append) when one is not. */
int memory_history_sync(struct memory *m, char *err, size_t errlen);
/* The last n entries, oldest first (*count may be less than n). Entries that are not
 * ours (tampered with) are skipped with a warning. Free with memory_msgs_free(). */
int memory_history_last(struct memory *m, const char *user, size_t n, struct memory_msg **out,
                        size_t *count, char *err, size_t errlen);
void memory_msgs_free(struct memory_msg *msgs, size_t count);
int memory_history_clear(struct memory *m, const char *user, char *err, size_t errlen);

/* --- first seen ---------------------------------------------------------------- */

/* Whether app doing what (a tool it calls, a refusal it met: any 1-512 bytes) is new for
 * user: 1 the first time (remembered from now on, in Redis across hubs and restarts),
 * 0 after, -1 and err. Key: PREFIX:USER:seen, a hash of "APP|WHAT" -> first time (ms). */
int memory_first_seen(struct memory *m, const char *user, const char *app, const char *what,
                      char *err, size_t errlen);
/* The same as the hub's first-seen hook (hub_set_first_seen(h, memory_first_seen_hook,
 * m)): -1 when the memory cannot tell, said at debug level only (the record is written
 * without the field, and a Redis outage is said elsewhere). */
int memory_first_seen_hook(void *m, const char *user, const char *app, const char *what);

/* --- grants (semantics in grants.h) --------------------------------------------- */

/* Records g for user, replacing any grant with the same key in either tier. Refuses
 * scope always when irreversible is true. */
int memory_grant_set(struct memory *m, const char *user, const struct grant *g, bool irreversible,
                     char *err, size_t errlen);
/* The decision for one action: GRANT_ALLOW, GRANT_REFUSE or GRANT_ASK (no grant), or -1.
 * tool and peer are concrete names (peer NULL for exec). A once grant that decides is
 * used up. matched (may be NULL) receives the deciding grant. */
int memory_grant_check(struct memory *m, const char *user, enum grant_category category,
                       const char *app, const char *tool, const char *peer, bool irreversible,
                       struct grant *matched, char *err, size_t errlen);
/* Every grant of the user, both tiers, sorted by key. Caller frees *out. */
int memory_grant_list(struct memory *m, const char *user, struct grant **out, size_t *count,
                      char *err, size_t errlen);
/* Removes the grants that match: category < 0, or app, tool, peer NULL match anything
 * (tool "*" matches only the wildcard grant). Returns how many were removed, or -1. */
int memory_grant_revoke(struct memory *m, const char *user, int category, const char *app,
                        const char *tool, const char *peer, char *err, size_t errlen);

#endif
