/* The Redis back end (hiredis, blocking, with timeouts).
 *
 * Every command goes through redis_cmd(), which reconnects when the connection was
 * lost (Redis restarted, socket dropped, command timed out) and sends the command
 * again, for up to reconnect_ms; "LOADING" (a restarted server reading its AOF) is
 * waited out the same way. Resending is safe because every write is idempotent:
 * HSET/HDEL/DEL by nature, and the history append is a Lua script that skips an
 * entry already among the list's last few (each entry carries a random id). A write
 * counts as done only when Redis acknowledged it; with appendfsync always, Redis
 * acknowledges only what is on disk. */
#include "memory_impl.h"

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

static const char append_script[] =
    "local recent = redis.call('LRANGE', KEYS[1], -tonumber(ARGV[3]), -1)\n"
    "for i = 1, #recent do\n"
    "  if recent[i] == ARGV[1] then return 0 end\n"
    "end\n"
    "redis.call('RPUSH', KEYS[1], ARGV[1])\n"
    "redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)\n"
    "return 1\n";

struct rb {
    redisContext *c;
    char *addr; /* as configured, for messages */
    char *unix_path;
    char *host;
    int port;
    char *password;
    char *username;
    int db;
    long connect_timeout_ms, command_timeout_ms, reconnect_ms;
    /* The connection was lost and not yet re-established, also across commands (one
     * that gave up): the reconnect is then said, as the loss was. */
    bool lost;
};

static struct timeval tv_ms(long ms)
{
    return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Connects, authenticates and selects the db. -1: try again later; -2: permanent
 * (credentials refused), err filled either way. */
static int rb_connect(struct rb *r, char *err, size_t errlen)
{
    struct timeval tv = tv_ms(r->connect_timeout_ms);
    redisContext *c = r->unix_path ? redisConnectUnixWithTimeout(r->unix_path, tv)
                                   : redisConnectWithTimeout(r->host, r->port, tv);
    if (!c) {
        snprintf(err, errlen, "cannot reach Redis at %s: out of memory", r->addr);
        return -1;
    }
    if (c->err) {
        snprintf(err, errlen, "cannot reach Redis at %s: %s", r->addr, c->errstr);
        redisFree(c);
        return -1;
    }
    redisSetTimeout(c, tv_ms(r->command_timeout_ms));
    if (!r->unix_path)
        redisEnableKeepAlive(c);
    if (r->password) {
        redisReply *rep = r->username ? redisCommand(c, "AUTH %s %s", r->username, r->password)
                                      : redisCommand(c, "AUTH %s", r->password);
        if (!rep) {
            snprintf(err, errlen, "cannot reach Redis at %s: %s", r->addr, c->errstr);
            redisFree(c);
            return -1;
        }
        bool ok = rep->type == REDIS_REPLY_STATUS;
        if (!ok)
            snprintf(err, errlen, "Redis at %s refused the credentials: %.200s", r->addr,
                     rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        freeReplyObject(rep);
        if (!ok) {
            redisFree(c);
            return -2;
        }
    }
    if (r->db) {
        redisReply *rep = redisCommand(c, "SELECT %d", r->db);
        bool ok = rep && rep->type == REDIS_REPLY_STATUS;
        if (!ok)
            snprintf(err, errlen, "Redis at %s: SELECT %d failed: %.200s", r->addr, r->db,
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str : c->errstr);
        freeReplyObject(rep);
        if (!ok) {
            redisFree(c);
            return -2;
        }
    }
    r->c = c;
    return 0;
}

/* Runs one command, reconnecting and resending as described above. NULL and err
 * when Redis stayed unreachable for reconnect_ms or refused us. The reply may be an
 * error reply: callers check its type. */
static redisReply *redis_cmd(struct memory *m, int argc, const char **argv, char *err,
                             size_t errlen)
{
    struct rb *r = m->impl;
    size_t lens[8];
    for (int i = 0; i < argc && i < 8; i++)
        lens[i] = strlen(argv[i]);
    uint64_t deadline = now_mono_ns() + (uint64_t)r->reconnect_ms * 1000000u;
    long pause = 20;
    unsigned losses = 0;
    for (;;) {
        if (!r->c) {
            int rc = rb_connect(r, err, errlen);
            if (rc == -2)
                return NULL;
            if (rc < 0)
                goto wait;
            if (r->lost)
                log_warnx("memory: reconnected to Redis at %s", r->addr);
            r->lost = false;
        }
        redisReply *rep = redisCommandArgv(r->c, argc, argv, lens);
        if (rep) {
            if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "LOADING", 7) == 0) {
                freeReplyObject(rep);
                snprintf(err, errlen, "Redis at %s is still loading its data", r->addr);
                goto wait;
            }
            return rep;
        }
        snprintf(err, errlen, "lost the connection to Redis at %s: %s", r->addr, r->c->errstr);
        if (losses++ == 0)
            log_warnx("memory: %s; reconnecting", err);
        r->lost = true;
        redisFree(r->c);
        r->c = NULL;
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
        pause = pause * 2 > 500 ? 500 : pause * 2;
    }
}

/* Checks the reply type; on mismatch fills err (Redis' own error text if it is one). */
static bool expect(struct memory *m, redisReply *rep, int type, char *err, size_t errlen)
{
    struct rb *r = m->impl;
    if (rep->type == type)
        return true;
    if (rep->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "Redis at %s: %.300s", r->addr, rep->str);
    else
        snprintf(err, errlen, "Redis at %s gave an unexpected reply (type %d)", r->addr, rep->type);
    return false;
}

static int rb_list_append(struct memory *m, const char *key, const char *entry, size_t max,
                          char *err, size_t errlen)
{
    char maxs[32];
    snprintf(maxs, sizeof(maxs), "%zu", max);
    const char *argv[] = {"EVAL", append_script, "1", key, entry, maxs, DEDUP_WINDOW};
    redisReply *rep = redis_cmd(m, 7, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_INTEGER, err, errlen);
    freeReplyObject(rep);
    return ok ? 0 : -1;
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
    redisReply *rep = redis_cmd(m, 2, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_INTEGER, err, errlen);
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

static int rb_hash_set(struct memory *m, const char *key, const char *field, const char *value,
                       char *err, size_t errlen)
{
    const char *argv[] = {"HSET", key, field, value};
    redisReply *rep = redis_cmd(m, 4, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_INTEGER, err, errlen);
    freeReplyObject(rep);
    return ok ? 0 : -1;
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

static int rb_hash_del(struct memory *m, const char *key, const char *field, char *err,
                       size_t errlen)
{
    const char *argv[] = {"HDEL", key, field};
    redisReply *rep = redis_cmd(m, 3, argv, err, errlen);
    if (!rep)
        return -1;
    bool ok = expect(m, rep, REDIS_REPLY_INTEGER, err, errlen);
    int n = ok ? (int)rep->integer : -1;
    freeReplyObject(rep);
    return n;
}

static void rb_destroy(struct memory *m)
{
    struct rb *r = m->impl;
    if (!r)
        return;
    if (r->c)
        redisFree(r->c);
    if (r->password) {
        explicit_bzero(r->password, strlen(r->password));
        free(r->password);
    }
    free(r->username);
    free(r->addr);
    free(r->unix_path);
    free(r->host);
    free(r);
}

static const struct memory_ops redis_ops = {
    .kind = "redis",
    .persistent = true,
    .list_append = rb_list_append,
    .list_last = rb_list_last,
    .del = rb_del,
    .hash_set = rb_hash_set,
    .hash_get = rb_hash_get,
    .hash_all = rb_hash_all,
    .hash_del = rb_hash_del,
    .destroy = rb_destroy,
};

/* "unix:PATH", "/PATH", "HOST:PORT" or "[V6]:PORT". */
static bool parse_addr(struct rb *r, const char *addr, char *err, size_t errlen)
{
    const char *path = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr[0] == '/' ? addr : NULL;
    if (path) {
        if (!*path || strlen(path) >= 108) {
            snprintf(err, errlen, "memory.redis: the socket path must be 1 to 107 bytes");
            return false;
        }
        r->unix_path = xstrdup(path);
        return true;
    }
    const char *colon = strrchr(addr, ':');
    uint64_t port;
    if (!colon || colon == addr || !parse_u64(colon + 1, 1, 65535, &port)) {
        snprintf(err, errlen,
                 "memory.redis \"%.200s\" must be unix:PATH, HOST:PORT, [IPv6]:PORT or none", addr);
        return false;
    }
    size_t hl = (size_t)(colon - addr);
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']')
        r->host = xstrndup(addr + 1, hl - 2);
    else
        r->host = xstrndup(addr, hl);
    r->port = (int)port;
    return true;
}

/* A warning (not an error) when the server would lose acknowledged writes on a crash. */
static void check_durability(struct memory *m)
{
    struct rb *r = m->impl;
    redisReply *rep = redisCommand(r->c, "CONFIG GET appendonly");
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_STRING && strcmp(rep->element[1]->str, "no") == 0)
        log_warnx("memory: Redis at %s does not use an append-only file: what it acknowledged "
                  "may be lost if it crashes (scripts/redis-private runs one with appendfsync "
                  "always)",
                  r->addr);
    freeReplyObject(rep); /* CONFIG may be disabled: then nothing to say */
}

struct memory *memory_redis_open(const char *addr, const struct memory_config *cfg, char *err,
                                 size_t errlen)
{
    struct rb *r = xcalloc(1, sizeof(*r));
    struct memory tmp = {.impl = r};
    r->addr = xstrdup(addr);
    if (!parse_addr(r, addr, err, errlen))
        goto fail;
    if (cfg->password_env && *cfg->password_env) {
        const char *pw = getenv(cfg->password_env);
        if (!pw || !*pw) {
            snprintf(err, errlen,
                     "memory.password_env names $%s, which is not set: export the Redis "
                     "password there",
                     cfg->password_env);
            goto fail;
        }
        r->password = xstrdup(pw);
        if (cfg->username)
            r->username = xstrdup(cfg->username);
    }
    r->db = cfg->db;
    r->connect_timeout_ms = cfg->connect_timeout_ms;
    r->command_timeout_ms = cfg->command_timeout_ms;
    r->reconnect_ms = cfg->reconnect_ms;
    int rc = rb_connect(r, err, errlen);
    if (rc < 0) {
        if (rc == -1) {
            size_t n = strlen(err);
            snprintf(err + n, errlen > n ? errlen - n : 0,
                     ". Start a private Redis with `scripts/redis-private start DIR` (then "
                     "memory.redis is unix:DIR/redis.sock), or run with --memory none");
        }
        goto fail;
    }
    const char *ping[] = {"PING"};
    redisReply *rep = redis_cmd(&tmp, 1, ping, err, errlen);
    bool ok = rep && expect(&tmp, rep, REDIS_REPLY_STATUS, err, errlen);
    freeReplyObject(rep);
    if (!ok)
        goto fail;
    check_durability(&tmp);

    struct memory *m = xcalloc(1, sizeof(*m));
    m->ops = &redis_ops;
    m->impl = r;
    m->cfg = *cfg;
    m->cfg.redis = r->addr;
    m->cfg.password_env = NULL; /* never needed again */
    m->cfg.username = r->username;
    m->describe =
        xasprintf("redis %s%s", r->unix_path ? "unix:" : "", r->unix_path ? r->unix_path : r->addr);
    return m;
fail:
    rb_destroy(&tmp);
    return NULL;
}
