/* Connecting to the memory's Redis: direct, or through Sentinel (see redis_conn.h). */
#include "redis_conn.h"

#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASTER_NAME_MAX 64

/* "HOST:PORT" or "[V6]:PORT" of length n into a malloc'd host and a port. */
static bool parse_host_port(const char *s, size_t n, char **host, int *port)
{
    const char *colon = NULL;
    for (size_t i = n; i-- > 0;)
        if (s[i] == ':') {
            colon = s + i;
            break;
        }
    if (!colon || colon == s || (size_t)(colon - s) + 1 >= n || n - (size_t)(colon - s) > 6)
        return false;
    char digits[8];
    size_t dl = n - (size_t)(colon - s) - 1;
    memcpy(digits, colon + 1, dl);
    digits[dl] = '\0';
    uint64_t p;
    if (!parse_u64(digits, 1, 65535, &p))
        return false;
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hl < 3 || s[hl - 1] != ']')
            return false;
        *host = xstrndup(s + 1, hl - 2);
    } else {
        if (memchr(s, '[', hl) || memchr(s, ']', hl))
            return false;
        *host = xstrndup(s, hl);
    }
    *port = (int)p;
    return true;
}

static bool name_valid(const char *s, size_t n)
{
    return name_chars_valid(s, n, MASTER_NAME_MAX, "_.-");
}

static bool parse_sentinel(struct redis_link *l, const char *spec, char *err, size_t errlen)
{
    const char *slash = strchr(spec, '/');
    if (!slash || !name_valid(slash + 1, strlen(slash + 1))) {
        snprintf(err, errlen,
                 "memory.redis: sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME needs a master "
                 "name of 1 to %d of A-Z a-z 0-9 _ . -",
                 MASTER_NAME_MAX);
        return false;
    }
    l->master_name = xstrdup(slash + 1);
    const char *p = spec;
    while (p < slash) {
        const char *end = memchr(p, ',', (size_t)(slash - p));
        if (!end)
            end = slash;
        if (l->n_sentinels == REDIS_SENTINELS_MAX) {
            snprintf(err, errlen, "memory.redis: at most %d sentinels", REDIS_SENTINELS_MAX);
            return false;
        }
        struct redis_sentinel *s = &l->sentinels[l->n_sentinels];
        if (!parse_host_port(p, (size_t)(end - p), &s->host, &s->port)) {
            snprintf(err, errlen,
                     "memory.redis: sentinel \"%.*s\" must be HOST:PORT or [IPv6]:PORT",
                     (int)(end - p > 200 ? 200 : end - p), p);
            return false;
        }
        l->n_sentinels++;
        p = end + 1;
    }
    if (l->n_sentinels == 0) {
        snprintf(err, errlen, "memory.redis: sentinel:// names no sentinel");
        return false;
    }
    return true;
}

bool redis_link_parse(struct redis_link *l, const char *addr, char *err, size_t errlen)
{
    l->addr = xstrdup(addr);
    if (strncmp(addr, "sentinel://", 11) == 0)
        return parse_sentinel(l, addr + 11, err, errlen);
    const char *path = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr[0] == '/' ? addr : NULL;
    if (path) {
        if (!*path || strlen(path) >= 108) {
            snprintf(err, errlen, "memory.redis: the socket path must be 1 to 107 bytes");
            return false;
        }
        l->unix_path = xstrdup(path);
        return true;
    }
    if (!parse_host_port(addr, strlen(addr), &l->host, &l->port)) {
        snprintf(err, errlen,
                 "memory.redis \"%.200s\" must be unix:PATH, HOST:PORT, [IPv6]:PORT, "
                 "sentinel://HOST:PORT,.../MASTERNAME or none",
                 addr);
        return false;
    }
    return true;
}

bool redis_link_is_sentinel(const struct redis_link *l)
{
    return l->n_sentinels > 0;
}

static void say(struct redis_link *l, const char *action, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct redis_link *l, const char *action, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (l->on_event)
        l->on_event(l->event_ud, action, msg);
    else
        log_warnx("memory: %s", msg);
}

/* AUTH on c; false and err when refused or unanswered (*refused tells which). */
static bool auth(struct rwire *c, const char *who, const char *user, const char *password,
                 bool *refused, char *err, size_t errlen)
{
    redisReply *rep = user ? rwire_command(c, "AUTH %s %s", user, password)
                           : rwire_command(c, "AUTH %s", password);
    *refused = false;
    if (!rep) {
        snprintf(err, errlen, "cannot reach %s: %s", who, rwire_errstr(c));
        return false;
    }
    bool ok = rep->type == REDIS_REPLY_STATUS;
    if (!ok) {
        *refused = true;
        snprintf(err, errlen, "%s refused the credentials: %.200s", who,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    }
    freeReplyObject(rep);
    return ok;
}

/* Asks one sentinel for the master; 0 and host/port, -1 and err. */
static int ask_sentinel(struct redis_link *l, const struct redis_sentinel *s, char **host,
                        int *port, char *err, size_t errlen)
{
    char who[300];
    snprintf(who, sizeof(who), "sentinel %s:%d", s->host, s->port);
    char why[400];
    struct rwire *c = rwire_connect(NULL, s->host, s->port, l->tls, l->tls_server_name,
                                    l->connect_timeout_ms, l->command_timeout_ms, why, sizeof(why));
    if (!c) {
        snprintf(err, errlen, "cannot reach sentinel %s", why);
        return -1;
    }
    bool refused;
    if (l->sentinel_password && !auth(c, who, NULL, l->sentinel_password, &refused, err, errlen)) {
        rwire_free(c);
        return -1;
    }
    redisReply *rep = rwire_command(c, "SENTINEL get-master-addr-by-name %s", l->master_name);
    int rc = -1;
    if (!rep) {
        snprintf(err, errlen, "%s did not answer: %s", who, rwire_errstr(c));
    } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
               rep->element[0]->type == REDIS_REPLY_STRING &&
               rep->element[1]->type == REDIS_REPLY_STRING && rep->element[0]->len > 0 &&
               rep->element[0]->len < 256) {
        uint64_t p;
        if (parse_u64(rep->element[1]->str, 1, 65535, &p)) {
            *host = xstrndup(rep->element[0]->str, rep->element[0]->len);
            *port = (int)p;
            rc = 0;
        } else {
            snprintf(err, errlen, "%s gave a port that is not one", who);
        }
    } else if (rep->type == REDIS_REPLY_NIL) {
        snprintf(err, errlen, "%s knows no master named %s", who, l->master_name);
    } else {
        snprintf(err, errlen, "%s: %.200s", who,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    }
    freeReplyObject(rep);
    rwire_free(c);
    return rc;
}

/* The master's address from the first sentinel that answers, which then moves to the
 * front (the Sentinel clients' guideline: the next question goes to one that works). */
static int discover(struct redis_link *l, char **host, int *port, char *err, size_t errlen)
{
    size_t off = 0;
    for (size_t i = 0; i < l->n_sentinels; i++) {
        char one[1024];
        if (ask_sentinel(l, &l->sentinels[i], host, port, one, sizeof(one)) == 0) {
            if (i > 0) {
                struct redis_sentinel first = l->sentinels[i];
                memmove(&l->sentinels[1], &l->sentinels[0], i * sizeof(first));
                l->sentinels[0] = first;
            }
            return 0;
        }
        off += (size_t)snprintf(err + off, off < errlen ? errlen - off : 0, "%s%s", i ? "; " : "",
                                one);
        if (off >= errlen)
            off = errlen ? errlen - 1 : 0;
    }
    return -1;
}

/* ROLE: true when c speaks to a master; else err says what it is. */
static bool is_master(struct rwire *c, const char *who, char *err, size_t errlen)
{
    redisReply *rep = rwire_command(c, "ROLE");
    bool ok = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
              rep->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(rep->element[0]->str, "master") == 0;
    if (!ok)
        snprintf(err, errlen, "%s is not the master (yet): %s", who,
                 !rep                             ? rwire_errstr(c)
                 : rep->type == REDIS_REPLY_ERROR ? rep->str
                 : rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
                         rep->element[0]->type == REDIS_REPLY_STRING
                     ? rep->element[0]->str
                     : "unexpected ROLE reply");
    freeReplyObject(rep);
    return ok;
}

int redis_link_connect(struct redis_link *l, char *err, size_t errlen)
{
    redis_link_drop(l);
    char *host = NULL;
    int port = 0;
    if (redis_link_is_sentinel(l)) {
        if (discover(l, &host, &port, err, errlen) < 0)
            return -1;
    }
    char who[400];
    if (l->unix_path)
        snprintf(who, sizeof(who), "Redis at unix:%s", l->unix_path);
    else if (host)
        snprintf(who, sizeof(who), "Redis master %s at %s:%d", l->master_name, host, port);
    else
        snprintf(who, sizeof(who), "Redis at %s", l->addr);
    char why[400];
    struct rwire *c = rwire_connect(l->unix_path, host ? host : l->host, host ? port : l->port,
                                    l->tls, l->tls_server_name, l->connect_timeout_ms,
                                    l->command_timeout_ms, why, sizeof(why));
    if (!c) {
        snprintf(err, errlen, "cannot reach %s: %s", who, why);
        free(host);
        return -1;
    }
    int rc = 0;
    bool refused = false;
    if (l->password && !auth(c, who, l->username, l->password, &refused, err, errlen)) {
        rc = refused ? -2 : -1;
        goto fail;
    }
    if (l->db) {
        redisReply *rep = rwire_command(c, "SELECT %d", l->db);
        bool ok = rep && rep->type == REDIS_REPLY_STATUS;
        if (!ok)
            snprintf(err, errlen, "%s: SELECT %d failed: %.200s", who, l->db,
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str : rwire_errstr(c));
        rc = rep && !ok ? -2 : -1;
        freeReplyObject(rep);
        if (!ok)
            goto fail;
    }
    if (host) {
        /* A sentinel may name the old master for a moment, or the replica it promotes
         * before that replica took the role. */
        if (!is_master(c, who, err, errlen)) {
            rc = -1;
            goto fail;
        }
        char *old = l->host;
        int old_port = l->port;
        l->host = host;
        l->port = port;
        host = NULL;
        l->c = c;
        l->generation++;
        if (old && (strcmp(old, l->host) != 0 || old_port != port))
            say(l, "memory-failover",
                "the Redis master %s moved from %s:%d to %s:%d (Sentinel failover); the "
                "memory goes on there",
                l->master_name, old, old_port, l->host, port);
        else if (!old)
            log_debug("memory: Redis master %s is at %s:%d", l->master_name, l->host, port);
        free(old);
        return 0;
    }
    l->c = c;
    l->generation++;
    return 0;
fail:
    rwire_free(c);
    free(host);
    return rc;
}

void redis_link_drop(struct redis_link *l)
{
    if (l->c) {
        rwire_free(l->c);
        l->c = NULL;
    }
}

int redis_link_replicas(struct redis_link *l)
{
    if (!l->c)
        return -1;
    redisReply *rep = rwire_command(l->c, "ROLE");
    int n = -1;
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 3 &&
        rep->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(rep->element[0]->str, "master") == 0 && rep->element[2]->type == REDIS_REPLY_ARRAY)
        n = (int)rep->element[2]->elements;
    freeReplyObject(rep);
    return n;
}

static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void redis_link_free(struct redis_link *l)
{
    redis_link_drop(l);
    free_secret(l->password);
    free_secret(l->sentinel_password);
    free(l->username);
    free(l->addr);
    free(l->unix_path);
    free(l->host);
    free(l->master_name);
    free(l->tls_server_name);
    rwire_tls_context_free(l->tls);
    for (size_t i = 0; i < l->n_sentinels; i++)
        free(l->sentinels[i].host);
    memset(l, 0, sizeof(*l));
}
