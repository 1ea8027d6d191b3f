/* The Redis back end (hiredis, blocking, with timeouts).
 *
 * Every command goes through redis_cmd(), which reconnects when the connection was
 * lost (Redis restarted, socket dropped, command timed out) and sends the command
 * again, for up to reconnect_ms; "LOADING" (a restarted server reading its AOF) is
 * waited out the same way. Resending is safe because every write is idempotent:
 * HSET/HDEL/DEL by nature, and the history append is a Lua script that skips an
 * entry already among the list's last few (each entry carries a random id). A write
 * counts as done only when Redis acknowledged it; with appendfsync always, Redis
 * acknowledges only what is on disk, and with wait_replicas (the default under
 * Sentinel) only once a replica has it too (WAIT), so that it survives a failover.
 *
 * A READONLY or MASTERDOWN answer means we speak to a replica: the connection is
 * dropped and made again, which under Sentinel asks the sentinels where the master is
 * now (redis_conn.c). Losses, failovers and reconnects are said on stderr and in the
 * hub's audit (memory_set_audit). */
#include "memory_impl.h"
#include "redis_conn.h"

#include "audit.h"
#include "log.h"
#include "util.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_GRANTS 10000
/* How many of the newest entries the append script compares against. */
#define DEDUP_WINDOW "16"
/* Appends in flight without their reply read (a request and its answer). */
#define PEND_MAX 4

static const char append_script[] =
    "local recent = redis.call('LRANGE', KEYS[1], -tonumber(ARGV[3]), -1)\n"
    "for i = 1, #recent do\n"
    "  if recent[i] == ARGV[1] then return 0 end\n"
    "end\n"
    "redis.call('RPUSH', KEYS[1], ARGV[1])\n"
    "redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)\n"
    "return 1\n";

struct rb {
    struct redis_link link;
    struct memory *m; /* for its audit, once open */
    long reconnect_ms;
    /* Replicas that must confirm each write (WAIT) before it counts as done, and how
     * long they have. */
    int wait_replicas;
    long wait_timeout_ms;
    /* The connection was lost and not yet re-established, also across commands (one
     * that gave up): the reconnect is then said, as the loss was. */
    bool lost;
    /* Writes are going on without the replica confirmation (none is connected): said
     * once, until one confirms again. */
    bool degraded;
    /* Appends sent without waiting for their reply (list_append_sent), oldest first:
     * read before the next command (drain); kept until then to be sent again. */
    struct pending_append {
        char *key, *entry, *max;
    } pend[PEND_MAX];
    size_t n_pend;
    bool pend_failed; /* one of them could not be stored: said by rb_sync */
    char pend_err[300];
};

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* What happened to the connection: on stderr, and in the hub's audit when the memory
 * has one, so that a failover is on record with what the hub did around it. */
static void rb_event(void *ud, const char *action, const char *message)
{
    struct rb *r = ud;
    log_warnx("memory: %s", message);
    struct audit *a = r->m ? r->m->audit : NULL;
    if (!a)
        return;
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set(rec, "event.category", json_pack("[s]", "database"));
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome",
                  strcmp(action, "memory-connection-lost") == 0 ||
                          strcmp(action, "memory-replication-degraded") == 0
                      ? "failure"
                      : "success");
    audit_set_str(rec, "message", message);
    if (r->link.host) {
        audit_set_str(rec, "server.address", r->link.host);
        audit_set_int(rec, "server.port", r->link.port);
    }
    (void)audit_write(a, rec); /* it already happened: a lost record cannot undo it */
}

static void check_replicas(struct rb *r);

static bool is_replica_error(const redisReply *rep)
{
    /* READONLY: we speak to a replica (the old master came back demoted, or a
     * sentinel's answer is stale); MASTERDOWN: a replica that lost its master. */
    return rep->type == REDIS_REPLY_ERROR &&
           (strncmp(rep->str, "READONLY", 8) == 0 || strncmp(rep->str, "MASTERDOWN", 10) == 0);
}

/* Runs one command, reconnecting and resending as described above. NULL and err
 * when Redis stayed unreachable for reconnect_ms or refused us. The reply may be an
 * error reply: callers check its type. */
static void drain(struct memory *m);

static redisReply *redis_cmd(struct memory *m, int argc, const char **argv, char *err,
                             size_t errlen)
{
    struct rb *r = m->impl;
    drain(m); /* replies come in order: those of appends sent earlier first */
    size_t lens[8];
    for (int i = 0; i < argc && i < 8; i++)
        lens[i] = strlen(argv[i]);
    uint64_t deadline = now_mono_ns() + (uint64_t)r->reconnect_ms * 1000000u;
    long pause = 20;
    unsigned losses = 0;
    for (;;) {
        if (!r->link.c) {
            int rc = redis_link_connect(&r->link, err, errlen);
            if (rc == -2)
                return NULL;
            if (rc < 0)
                goto wait;
            if (r->lost)
                rb_event(r, "memory-reconnected", "reconnected to Redis");
            r->lost = false;
            check_replicas(r);
        }
        redisReply *rep = rwire_command_argv(r->link.c, argc, argv, lens);
        if (rep) {
            if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "LOADING", 7) == 0) {
                freeReplyObject(rep);
                snprintf(err, errlen, "Redis at %s is still loading its data", r->link.addr);
                goto wait;
            }
            if (!is_replica_error(rep))
                return rep;
            snprintf(err, errlen, "Redis at %s answered %.200s", r->link.addr, rep->str);
            freeReplyObject(rep);
        } else {
            snprintf(err, errlen, "lost the connection to Redis at %s: %s", r->link.addr,
                     rwire_errstr(r->link.c));
        }
        if (losses++ == 0 && !r->lost) {
            char msg[700];
            snprintf(msg, sizeof(msg), "%s; %s", err,
                     redis_link_is_sentinel(&r->link) ? "asking the sentinels for the master"
                                                      : "reconnecting");
            rb_event(r, "memory-connection-lost", msg);
        }
        r->lost = true;
        redis_link_drop(&r->link);
        if (losses == 1 && now_mono_ns() < deadline)
            continue; /* a restarted server usually answers at once */
    wait:
        if (now_mono_ns() >= deadline) {
            size_t n = strlen(err);
            snprintf(err + n, errlen > n ? errlen - n : 0, " (gave up after %ld ms)",
                     r->reconnect_ms);
            return NULL;
        }
        sleep_ms(pause);
        /* Under Sentinel the wait is for a promotion, which is seen only by asking. */
        long cap = redis_link_is_sentinel(&r->link) ? 200 : 500;
        pause = pause * 2 > cap ? cap : pause * 2;
    }
}

static void set_degraded(struct rb *r, int connected)
{
    if (!r->degraded) {
        char msg[500];
        snprintf(msg, sizeof(msg),
                 "the Redis master has %d of the %d replicas memory.wait_replicas asks for: "
                 "writes are kept on fewer machines until they are back",
                 connected, r->wait_replicas);
        rb_event(r, "memory-replication-degraded", msg);
    }
    r->degraded = true;
}

/* After a (re)connection: a master without enough replicas (a promoted one, until the
 * old master comes back as its replica) is known at once, so that no write waits the
 * whole WAIT timeout to learn it. */
static void check_replicas(struct rb *r)
{
    if (r->wait_replicas <= 0)
        return;
    int connected = redis_link_replicas(&r->link);
    if (connected >= 0 && connected < r->wait_replicas)
        set_degraded(r, connected);
}

/* WAIT for the replicas after a write on the current connection: 0 confirmed (or no
 * more replicas are connected than confirmed it: then said once, and the memory goes
 * on with what there is), -1 not confirmed in time, -2 the connection was lost (the
 * write must be sent again on the next one). */
static int rb_wait(struct memory *m, char *err, size_t errlen)
{
    struct rb *r = m->impl;
    if (r->wait_replicas <= 0)
        return 0;
    int want = r->wait_replicas;
    if (r->degraded) {
        int connected = redis_link_replicas(&r->link);
        if (connected == 0)
            return 0; /* nobody to wait for: still degraded */
        if (connected > 0 && connected < want)
            want = connected;
    }
    redisReply *rep =
        r->link.c ? rwire_command(r->link.c, "WAIT %d %ld", want, r->wait_timeout_ms) : NULL;
    if (!rep) {
        snprintf(err, errlen, "lost the connection to Redis at %s waiting for a replica: %s",
                 r->link.addr, r->link.c ? rwire_errstr(r->link.c) : "dropped");
        r->lost = true;
        redis_link_drop(&r->link);
        return -2;
    }
    long long acked = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (acked < 0)
        snprintf(err, errlen, "Redis at %s: WAIT: %.200s", r->link.addr,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    if (acked < 0)
        return -1;
    if (acked >= r->wait_replicas) {
        if (r->degraded)
            rb_event(r, "memory-replication-restored",
                     "the Redis replicas confirm the writes again");
        r->degraded = false;
        return 0;
    }
    /* Fewer than asked: fine only when every replica there confirmed it. */
    int connected = redis_link_replicas(&r->link);
    if (connected >= 0 && acked >= connected) {
        set_degraded(r, connected);
        return 0;
    }
    snprintf(err, errlen,
             "the write reached the Redis master but only %lld of %d replicas confirmed it "
             "within %ld ms (memory.wait_timeout_ms)",
             acked, want, r->wait_timeout_ms);
    return -1;
}

/* Checks the reply type; on mismatch fills err (Redis' own error text if it is one). */
static bool expect(struct memory *m, redisReply *rep, int type, char *err, size_t errlen)
{
    struct rb *r = m->impl;
    if (rep->type == type)
        return true;
    if (rep->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "Redis at %s: %.300s", r->link.addr, rep->str);
    else
        snprintf(err, errlen, "Redis at %s gave an unexpected reply (type %d)", r->link.addr,
                 rep->type);
    return false;
}

/* A write: the command, then WAIT for the replicas; when the connection is lost in
 * between, the (idempotent) write is sent again on the next one, since a WAIT only
 * counts the writes of its own connection. 0 and *integer (the command's integer
 * reply), or -1 and err. */
static int rb_write(struct memory *m, int argc, const char **argv, long long *integer, char *err,
                    size_t errlen)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        redisReply *rep = redis_cmd(m, argc, argv, err, errlen);
        if (!rep)
            return -1;
        bool ok = expect(m, rep, REDIS_REPLY_INTEGER, err, errlen);
        if (ok && integer)
            *integer = rep->integer;
        freeReplyObject(rep);
        if (!ok)
            return -1;
        int w = rb_wait(m, err, errlen);
        if (w != -2)
            return w;
    }
    return -1;
}

static int rb_list_append(struct memory *m, const char *key, const char *entry, size_t max,
                          char *err, size_t errlen)
{
    char maxs[32];
    snprintf(maxs, sizeof(maxs), "%zu", max);
    const char *argv[] = {"EVAL", append_script, "1", key, entry, maxs, DEDUP_WINDOW};
    return rb_write(m, 7, argv, NULL, err, errlen);
}

static void pend_free(struct pending_append *p)
{
    free(p->key);
    free(p->entry);
    free(p->max);
}

/* Reads the replies to the appends sent without waiting. One whose reply does not come
 * (the connection broke) is sent again the ordinary way: the append script drops a
 * repeat, so nothing is doubled. A failure is kept for rb_sync to report. */
static void drain(struct memory *m)
{
    struct rb *r = m->impl;
    size_t n = r->n_pend, i = 0;
    if (n == 0)
        return;
    r->n_pend = 0; /* the resends below go through redis_cmd, which drains */
    for (; i < n && r->link.c; i++) {
        redisReply *rep = rwire_get_reply(r->link.c);
        if (!rep) {
            if (!r->lost) {
                char msg[500];
                snprintf(msg, sizeof(msg), "lost the connection to Redis at %s: %s; reconnecting",
                         r->link.addr, rwire_errstr(r->link.c));
                rb_event(r, "memory-connection-lost", msg);
            }
            r->lost = true;
            redis_link_drop(&r->link);
            break;
        }
        char err[300];
        if (!expect(m, rep, REDIS_REPLY_INTEGER, err, sizeof(err)) && !r->pend_failed) {
            r->pend_failed = true;
            str_copy(r->pend_err, err, sizeof(r->pend_err));
        }
        freeReplyObject(rep);
        pend_free(&r->pend[i]);
    }
    for (; i < n; i++) {
        char err[300];
        size_t max = (size_t)strtoull(r->pend[i].max, NULL, 10);
        if (rb_list_append(m, r->pend[i].key, r->pend[i].entry, max, err, sizeof(err)) < 0 &&
            !r->pend_failed) {
            r->pend_failed = true;
            str_copy(r->pend_err, err, sizeof(r->pend_err));
        }
        pend_free(&r->pend[i]);
    }
}

/* The append without waiting for its reply, on a server without replicas to WAIT for
 * (the hub's private one): what the reply would confirm is an fsync (appendfsync
 * always), which then runs while the hub works on. */
static int rb_list_append_sent(struct memory *m, const char *key, const char *entry, size_t max,
                               char *err, size_t errlen)
{
    struct rb *r = m->impl;
    if (r->n_pend == PEND_MAX)
        drain(m);
    if (!r->link.c || r->wait_replicas > 0) /* the ordinary way: reconnects, WAITs */
        return rb_list_append(m, key, entry, max, err, errlen);
    char maxs[32];
    snprintf(maxs, sizeof(maxs), "%zu", max);
    const char *argv[] = {"EVAL", append_script, "1", key, entry, maxs, DEDUP_WINDOW};
    size_t lens[7];
    for (int i = 0; i < 7; i++)
        lens[i] = strlen(argv[i]);
    if (rwire_send_argv(r->link.c, 7, argv, lens) < 0) {
        /* Whether it arrived is unknown: the ordinary way sends it again. */
        r->lost = true;
        redis_link_drop(&r->link);
        return rb_list_append(m, key, entry, max, err, errlen);
    }
    r->pend[r->n_pend++] =
        (struct pending_append){.key = xstrdup(key), .entry = xstrdup(entry), .max = xstrdup(maxs)};
    return 0;
}

static int rb_sync(struct memory *m, char *err, size_t errlen)
{
    struct rb *r = m->impl;
    drain(m);
    if (!r->pend_failed)
        return 0;
    r->pend_failed = false;
    str_copy(err, r->pend_err, errlen);
    return -1;
}

static bool strings_from(struct memory *m, redisReply *rep, size_t first, size_t step, char ***out,
                         size_t *count, char *err, size_t errlen)
{
    size_t n = rep->elements > first ? (rep->elements - first + step - 1) / step : 0;
    char **v = xcalloc(n + 1, sizeof(*v));
    size_t k = 0;
    for (size_t i = first; i < rep->elements; i += step) {
        redisReply *el = rep->element[i];
        if (el->type != REDIS_REPLY_STRING) {
            memory_strv_free(v, k);
            return expect(m, el, REDIS_REPLY_STRING, err, errlen);
        }
        v[k++] = xstrndup(el->str, el->len);
    }
    *out = v;
    *count = k;
    return true;
}

static int rb_list_last(struct memory *m, const char *key, size_t n, char ***items, size_t *count,
                        char *err, size_t errlen)
{
    char start[32];
    snprintf(start, sizeof(start), "-%zu", n);
    const char *argv[] = {"LRANGE", key, start, "-1"};
    redisReply *rep = redis_cmd(m, 4, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_ARRAY, err, errlen) &&
              strings_from(m, rep, 0, 1, items, count, err, errlen);
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

static int rb_del(struct memory *m, const char *key, char *err, size_t errlen)
{
    const char *argv[] = {"DEL", key};
    return rb_write(m, 2, argv, NULL, err, errlen);
}

static int rb_hash_set(struct memory *m, const char *key, const char *field, const char *value,
                       char *err, size_t errlen)
{
    const char *argv[] = {"HSET", key, field, value};
    return rb_write(m, 4, argv, NULL, err, errlen);
}

static int rb_hash_get(struct memory *m, const char *key, const char *field, char **value,
                       char *err, size_t errlen)
{
    *value = NULL;
    const char *argv[] = {"HGET", key, field};
    redisReply *rep = redis_cmd(m, 3, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = rep->type == REDIS_REPLY_NIL || expect(m, rep, REDIS_REPLY_STRING, err, errlen);
    if (ok && rep->type == REDIS_REPLY_STRING)
        *value = xstrndup(rep->str, rep->len);
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

static int rb_hash_all(struct memory *m, const char *key, char ***fields, char ***values,
                       size_t *count, char *err, size_t errlen)
{
    *fields = *values = NULL;
    *count = 0;
    const char *argv[] = {"HGETALL", key};
    redisReply *rep = redis_cmd(m, 2, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_ARRAY, err, errlen);
    if (ok && (rep->elements % 2 != 0 || rep->elements > 2 * MAX_GRANTS)) {
        snprintf(err, errlen, "the grants at %s are not a sane hash (%zu elements)", key,
                 rep->elements);
        ok = false;
    }
    size_t nf = 0, nv = 0;
    if (ok && strings_from(m, rep, 0, 2, fields, &nf, err, errlen)) {
        ok = strings_from(m, rep, 1, 2, values, &nv, err, errlen);
        if (!ok) {
            memory_strv_free(*fields, nf);
            *fields = NULL;
        }
    } else {
        ok = false;
    }
    freeReplyObject(rep);
    if (ok)
        *count = nf;
    return ok ? 0 : -1;
}

/* Not followed by WAIT: a marker lost in a failover only makes a later record say
 * "first seen" once more, and the records that ask must not wait for a replica. */
static int rb_hash_setnx(struct memory *m, const char *key, const char *field, const char *value,
                         char *err, size_t errlen)
{
    const char *argv[] = {"HSETNX", key, field, value};
    redisReply *rep = redis_cmd(m, 4, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_INTEGER, err, errlen);
    int n = ok ? (rep->integer == 1) : -1;
    freeReplyObject(rep);
    return n;
}

static int rb_hash_del(struct memory *m, const char *key, const char *field, char *err,
                       size_t errlen)
{
    const char *argv[] = {"HDEL", key, field};
    long long n = 0;
    if (rb_write(m, 3, argv, &n, err, errlen) < 0)
        return -1;
    return (int)n;
}

static void rb_destroy(struct memory *m)
{
    struct rb *r = m->impl;
    if (!r)
        return;
    drain(m); /* what was sent is acknowledged before the hub goes */
    redis_link_free(&r->link);
    free(r);
}

static const struct memory_ops redis_ops = {
    .kind = "redis",
    .persistent = true,
    .list_append = rb_list_append,
    .list_append_sent = rb_list_append_sent,
    .sync = rb_sync,
    .list_last = rb_list_last,
    .del = rb_del,
    .hash_set = rb_hash_set,
    .hash_get = rb_hash_get,
    .hash_all = rb_hash_all,
    .hash_setnx = rb_hash_setnx,
    .hash_del = rb_hash_del,
    .destroy = rb_destroy,
};

/* A warning (not an error) when the server would lose acknowledged writes on a crash. */
static void check_durability(struct memory *m)
{
    struct rb *r = m->impl;
    redisReply *rep = rwire_command(r->link.c, "CONFIG GET appendonly");
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_STRING && strcmp(rep->element[1]->str, "no") == 0 &&
        r->wait_replicas <= 0)
        log_warnx("memory: Redis at %s does not use an append-only file: what it acknowledged "
                  "may be lost if it crashes (scripts/redis-private runs one with appendfsync "
                  "always)",
                  r->link.addr);
    freeReplyObject(rep); /* CONFIG may be disabled: then nothing to say */
}

static char *secret_from_env(const char *var, const char *key, char *err, size_t errlen)
{
    const char *pw = getenv(var);
    if (!pw || !*pw) {
        snprintf(err, errlen, "memory.%s names $%s, which is not set: export the password there",
                 key, var);
        return NULL;
    }
    return xstrdup(pw);
}

struct memory *memory_redis_open(const char *addr, const struct memory_config *cfg, char *err,
                                 size_t errlen)
{
    struct rb *r = xcalloc(1, sizeof(*r));
    struct memory tmp = {.impl = r};
    r->link.on_event = rb_event;
    r->link.event_ud = r;
    if (!redis_link_parse(&r->link, addr, err, errlen))
        goto fail;
    if (cfg->password_env && *cfg->password_env) {
        r->link.password = secret_from_env(cfg->password_env, "password_env", err, errlen);
        if (!r->link.password)
            goto fail;
        if (cfg->username)
            r->link.username = xstrdup(cfg->username);
    }
    if (cfg->sentinel_password_env && *cfg->sentinel_password_env) {
        r->link.sentinel_password =
            secret_from_env(cfg->sentinel_password_env, "sentinel_password_env", err, errlen);
        if (!r->link.sentinel_password)
            goto fail;
    }
    if (cfg->tls_ca_file) {
        if (r->link.unix_path) {
            snprintf(err, errlen, "memory.tls is for TCP: %s is a unix socket", addr);
            goto fail;
        }
        struct redis_tls_config tc = {.ca_file = cfg->tls_ca_file,
                                      .cert_file = cfg->tls_cert_file,
                                      .key_file = cfg->tls_key_file,
                                      .server_name = cfg->tls_server_name};
        r->link.tls = rwire_tls_context(&tc, err, errlen);
        if (!r->link.tls)
            goto fail;
        if (cfg->tls_server_name)
            r->link.tls_server_name = xstrdup(cfg->tls_server_name);
    }
    r->link.db = cfg->db;
    r->link.connect_timeout_ms = cfg->connect_timeout_ms;
    r->link.command_timeout_ms = cfg->command_timeout_ms;
    r->reconnect_ms = cfg->reconnect_ms;
    r->wait_replicas = cfg->wait_replicas >= 0            ? cfg->wait_replicas
                       : redis_link_is_sentinel(&r->link) ? 1
                                                          : 0;
    r->wait_timeout_ms = cfg->wait_timeout_ms;
    /* WAIT blocks the connection: it must end before the command timeout does. */
    if (r->wait_timeout_ms >= cfg->command_timeout_ms)
        r->wait_timeout_ms = cfg->command_timeout_ms > 100 ? cfg->command_timeout_ms - 100 : 1;
    int rc = redis_link_connect(&r->link, err, errlen);
    if (rc < 0) {
        size_t n = strlen(err);
        if (rc == -1 && redis_link_is_sentinel(&r->link))
            snprintf(err + n, errlen > n ? errlen - n : 0,
                     ". Check that the sentinels run and monitor a master named %s "
                     "(docs/operations.md, Redis), or run with --memory none",
                     r->link.master_name);
        else if (rc == -1)
            snprintf(err + n, errlen > n ? errlen - n : 0,
                     ". Start a private Redis with `scripts/redis-private start DIR` (then "
                     "memory.redis is unix:DIR/redis.sock), or run with --memory none");
        goto fail;
    }
    const char *ping[] = {"PING"};
    redisReply *rep = redis_cmd(&tmp, 1, ping, err, errlen);
    bool ok = rep && expect(&tmp, rep, REDIS_REPLY_STATUS, err, errlen);
    freeReplyObject(rep);
    if (!ok)
        goto fail;
    check_durability(&tmp);
    check_replicas(r);

    struct memory *m = xcalloc(1, sizeof(*m));
    m->ops = &redis_ops;
    m->impl = r;
    r->m = m;
    m->cfg = *cfg;
    m->cfg.redis = r->link.addr;
    m->cfg.password_env = NULL; /* never needed again */
    m->cfg.sentinel_password_env = NULL;
    m->cfg.username = r->link.username;
    m->cfg.wait_replicas = r->wait_replicas;
    m->cfg.tls_ca_file = m->cfg.tls_cert_file = m->cfg.tls_key_file = NULL; /* borrowed */
    m->cfg.tls_server_name = r->link.tls_server_name;
    m->describe = r->link.unix_path
                      ? xasprintf("redis unix:%s", r->link.unix_path)
                      : xasprintf("redis %s%s", r->link.addr, r->link.tls ? " (TLS)" : "");
    return m;
fail:
    rb_destroy(&tmp);
    return NULL;
}
