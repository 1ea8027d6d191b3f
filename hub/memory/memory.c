/* The memory front: configuration, user-id validation, history entries, and the grant
 * logic (most specific key decides, deny wins a tie, once is used up, always never
 * applies to irreversible tools) over the back end's lists and hashes plus the
 * in-process tier of once/session grants. */
#include "memory_impl.h"

#include "audit.h"
#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROLE_MAX 16
#define KEY_MAX 256

void memory_config_defaults(struct memory_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->connect_timeout_ms = 2000;
    cfg->command_timeout_ms = 2000;
    cfg->reconnect_ms = 5000;
    cfg->history_max = 1000;
    cfg->entry_max_bytes = 64 * 1024;
    cfg->prefix = "isolategpt";
    cfg->wait_replicas = -1;
    cfg->wait_timeout_ms = 1000;
}

bool memory_config_parse(struct jf_ctx *c, const json_t *obj, const char *where,
                         struct memory_config *cfg)
{
    static const char *const keys[] = {"redis",
                                       "password_env",
                                       "username",
                                       "db",
                                       "connect_timeout_ms",
                                       "command_timeout_ms",
                                       "reconnect_ms",
                                       "history_max",
                                       "entry_max_bytes",
                                       "prefix",
                                       "sentinel_password_env",
                                       "wait_replicas",
                                       "wait_timeout_ms",
                                       "tls",
                                       NULL};
    if (!jf_object(c, obj, where, keys) ||
        !jf_string(c, obj, where, "redis", false, 1024, &cfg->redis) ||
        !jf_string(c, obj, where, "password_env", false, 128, &cfg->password_env) ||
        !jf_string(c, obj, where, "username", false, 128, &cfg->username) ||
        !jf_string(c, obj, where, "prefix", false, 32, &cfg->prefix) ||
        !jf_string(c, obj, where, "sentinel_password_env", false, 128, &cfg->sentinel_password_env))
        return false;
    const char *envs[] = {cfg->password_env, cfg->sentinel_password_env};
    const char *env_keys[] = {"password_env", "sentinel_password_env"};
    for (size_t i = 0; i < 2; i++)
        for (const char *p = envs[i]; p && *p; p++)
            if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                  (*p >= '0' && *p <= '9') || *p == '_'))
                return jf_fail(c, where, env_keys[i],
                               "must name an environment variable, not hold the password");
    const json_t *tls = json_object_get(obj, "tls");
    if (tls) {
        static const char *const tkeys[] = {"ca_file", "cert_file", "key_file", "server_name",
                                            NULL};
        char twhere[160];
        snprintf(twhere, sizeof(twhere), "%s%stls", where, *where ? "." : "");
        if (!jf_object(c, tls, twhere, tkeys) ||
            !jf_string(c, tls, twhere, "ca_file", true, 1024, &cfg->tls_ca_file) ||
            !jf_string(c, tls, twhere, "cert_file", false, 1024, &cfg->tls_cert_file) ||
            !jf_string(c, tls, twhere, "key_file", false, 1024, &cfg->tls_key_file) ||
            !jf_string(c, tls, twhere, "server_name", false, 253, &cfg->tls_server_name))
            return false;
        const char *paths[] = {cfg->tls_ca_file, cfg->tls_cert_file, cfg->tls_key_file};
        const char *pkeys[] = {"ca_file", "cert_file", "key_file"};
        for (size_t i = 0; i < 3; i++)
            if (paths[i] && paths[i][0] != '/')
                return jf_fail(c, twhere, pkeys[i], "must be an absolute path");
        if (cfg->tls_key_file && !cfg->tls_cert_file)
            return jf_fail(c, twhere, "key_file", "needs cert_file");
    }
    int64_t v;
#define GET_INT(key, min, max, field)                                                              \
    do {                                                                                           \
        v = (int64_t)cfg->field;                                                                   \
        if (!jf_int(c, obj, where, key, false, min, max, &v))                                      \
            return false;                                                                          \
        cfg->field = (__typeof__(cfg->field))v;                                                    \
    } while (0)
    GET_INT("db", 0, 1000, db);
    GET_INT("connect_timeout_ms", 1, 600000, connect_timeout_ms);
    GET_INT("command_timeout_ms", 1, 600000, command_timeout_ms);
    GET_INT("reconnect_ms", 0, 3600000, reconnect_ms);
    GET_INT("history_max", 1, 1000000, history_max);
    GET_INT("entry_max_bytes", 64, 16 << 20, entry_max_bytes);
    GET_INT("wait_replicas", -1, 16, wait_replicas);
    GET_INT("wait_timeout_ms", 1, 600000, wait_timeout_ms);
#undef GET_INT
    return true;
}

bool memory_user_valid(const char *user)
{
    size_t n = user ? strlen(user) : 0;
    if (n == 0 || n > MEMORY_USER_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = user[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '-')))
            return false;
    }
    return true;
}

static bool prefix_valid(const char *s)
{
    return s && name_chars_valid(s, strlen(s), 32, "_.-");
}

void memory_strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

struct memory *memory_open(const char *spec, const struct memory_config *cfg_in, char *err,
                           size_t errlen)
{
    struct memory_config cfg = *cfg_in;
    struct memory_config d;
    memory_config_defaults(&d);
    if (!cfg.prefix)
        cfg.prefix = d.prefix;
    if (cfg.connect_timeout_ms <= 0)
        cfg.connect_timeout_ms = d.connect_timeout_ms;
    if (cfg.command_timeout_ms <= 0)
        cfg.command_timeout_ms = d.command_timeout_ms;
    if (cfg.wait_timeout_ms <= 0)
        cfg.wait_timeout_ms = d.wait_timeout_ms;
    if (cfg.history_max == 0)
        cfg.history_max = d.history_max;
    if (cfg.entry_max_bytes < 64)
        cfg.entry_max_bytes = d.entry_max_bytes;
    if (!prefix_valid(cfg.prefix)) {
        snprintf(err, errlen, "memory.prefix must be 1 to 32 of A-Z a-z 0-9 _ . -");
        return NULL;
    }
    const char *addr = spec ? spec : cfg.redis;
    struct memory *m;
    if (addr && strcmp(addr, "none") == 0) {
        m = memory_local_open(&cfg, NULL, err, errlen);
    } else if (addr && strncmp(addr, "file:", 5) == 0 && addr[5] == '/') {
        m = memory_local_open(&cfg, addr + 5, err, errlen);
    } else if (!addr || !*addr) {
        snprintf(err, errlen,
                 "no Redis configured: start a private one with `scripts/redis-private start "
                 "DIR` and set memory.redis to unix:DIR/redis.sock, or run with --memory none "
                 "(nothing is remembered)");
        return NULL;
    } else {
        m = memory_redis_open(addr, &cfg, err, errlen);
    }
    if (!m)
        return NULL;
    m->prefix = xstrdup(cfg.prefix);
    m->cfg.prefix = m->prefix;
    return m;
}

void memory_close(struct memory *m)
{
    if (!m)
        return;
    m->ops->destroy(m);
    json_decref(m->failed_writes);
    free(m->session);
    free(m->prefix);
    free(m->describe);
    free(m);
}

void memory_set_audit(struct memory *m, struct audit *a)
{
    m->audit = a;
}

const char *memory_describe(const struct memory *m)
{
    return m->describe;
}

bool memory_persistent(const struct memory *m)
{
    return m->ops->persistent;
}

static bool user_key(const struct memory *m, const char *user, const char *what, char *key,
                     char *err, size_t errlen)
{
    if (!memory_user_valid(user)) {
        json_t *shown = audit_string(user ? user : "", user ? strlen(user) : 0, 64);
        snprintf(err, errlen,
                 "user id \"%s\" is not valid: 1 to %d of A-Z a-z 0-9 _ -, starting with a "
                 "letter or digit",
                 json_string_value(shown), MEMORY_USER_MAX);
        json_decref(shown);
        return false;
    }
    snprintf(key, KEY_MAX, "%s:%s:%s", m->prefix, user, what);
    return true;
}

/* --- history ------------------------------------------------------------------- */

static bool role_valid(const char *r)
{
    size_t n = r ? strlen(r) : 0;
    if (n == 0 || n > ROLE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (r[i] < 'a' || r[i] > 'z')
            return false;
    return true;
}

static void note_failed_write(struct memory *m, const char *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note_failed_write(struct memory *m, const char *err, const char *fmt, ...)
{
    if (!m->failed_writes)
        m->failed_writes = json_array();
    if (json_array_size(m->failed_writes) >= MEMORY_FAILED_WRITES_MAX) {
        m->failed_unlisted++;
        return;
    }
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    json_array_append_new(m->failed_writes, json_sprintf("%s: %s", what, err));
}

json_t *memory_take_failed_writes(struct memory *m)
{
    json_t *out = m->failed_writes ? m->failed_writes : json_array();
    if (m->failed_unlisted)
        json_array_append_new(
            out, json_sprintf("and %u more writes to the memory failed", m->failed_unlisted));
    m->failed_writes = NULL;
    m->failed_unlisted = 0;
    return out;
}

static int history_append(struct memory *m, const char *user, const char *role, const char *text,
                          bool wait, char *err, size_t errlen)
{
    char key[KEY_MAX];
    if (!user_key(m, user, "history", key, err, errlen))
        return -1;
    if (!role_valid(role)) {
        snprintf(err, errlen, "history role must be 1 to %d lower-case letters", ROLE_MAX);
        return -1;
    }
    char id[33];
    audit_new_id(id);
    json_t *e = json_object();
    json_object_set_new(e, "id", json_string(id));
    json_object_set_new(e, "ts", json_integer((json_int_t)(now_real_ns() / 1000000u)));
    json_object_set_new(e, "role", json_string(role));
    /* Over-long text is cut (and marked) rather than refused: an answer is kept. */
    json_object_set_new(
        e, "text", audit_string(text ? text : "", text ? strlen(text) : 0, m->cfg.entry_max_bytes));
    char *entry = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    int rc = !wait && m->ops->list_append_sent
                 ? m->ops->list_append_sent(m, key, entry, m->cfg.history_max, err, errlen)
                 : m->ops->list_append(m, key, entry, m->cfg.history_max, err, errlen);
    free(entry);
    if (rc < 0)
        note_failed_write(m, err, "the %s's entry was not stored in the history", role);
    return rc;
}

int memory_history_append(struct memory *m, const char *user, const char *role, const char *text,
                          char *err, size_t errlen)
{
    return history_append(m, user, role, text, true, err, errlen);
}

int memory_history_append_nowait(struct memory *m, const char *user, const char *role,
                                 const char *text, char *err, size_t errlen)
{
    return history_append(m, user, role, text, false, err, errlen);
}

int memory_history_sync(struct memory *m, char *err, size_t errlen)
{
    if (!m->ops->sync || m->ops->sync(m, err, errlen) == 0)
        return 0;
    note_failed_write(m, err, "an entry was not stored in the history");
    return -1;
}

int memory_history_last(struct memory *m, const char *user, size_t n, struct memory_msg **out,
                        size_t *count, char *err, size_t errlen)
{
    *out = NULL;
    *count = 0;
    char key[KEY_MAX];
    if (!user_key(m, user, "history", key, err, errlen))
        return -1;
    if (n == 0)
        return 0;
    if (n > m->cfg.history_max)
        n = m->cfg.history_max;
    char **items = NULL;
    size_t got = 0;
    if (m->ops->list_last(m, key, n, &items, &got, err, errlen) < 0)
        return -1;
    struct memory_msg *msgs = xcalloc(got + 1, sizeof(*msgs));
    size_t k = 0, skipped = 0;
    for (size_t i = 0; i < got; i++) {
        json_t *e = json_loads(items[i], JSON_REJECT_DUPLICATES, NULL);
        const char *role = json_string_value(json_object_get(e, "role"));
        json_t *text = json_object_get(e, "text");
        json_t *ts = json_object_get(e, "ts");
        if (role_valid(role) && json_is_string(text) &&
            json_string_length(text) <= m->cfg.entry_max_bytes + 32 && json_is_integer(ts)) {
            msgs[k].role = xstrdup(role);
            msgs[k].text = xstrdup(json_string_value(text));
            msgs[k].ts_ms = json_integer_value(ts);
            k++;
        } else {
            skipped++;
        }
        json_decref(e);
    }
    memory_strv_free(items, got);
    if (skipped)
        log_warnx("memory: %zu history entries of user %s are not valid and were skipped", skipped,
                  user);
    *out = msgs;
    *count = k;
    return 0;
}

void memory_msgs_free(struct memory_msg *msgs, size_t count)
{
    for (size_t i = 0; msgs && i < count; i++) {
        free(msgs[i].role);
        free(msgs[i].text);
    }
    free(msgs);
}

int memory_history_clear(struct memory *m, const char *user, char *err, size_t errlen)
{
    char key[KEY_MAX];
    if (!user_key(m, user, "history", key, err, errlen))
        return -1;
    return m->ops->del(m, key, err, errlen);
}

/* --- first seen ---------------------------------------------------------------- */

int memory_first_seen(struct memory *m, const char *user, const char *app, const char *what,
                      char *err, size_t errlen)
{
    char key[KEY_MAX];
    if (!user_key(m, user, "seen", key, err, errlen))
        return -1;
    size_t al = app ? strlen(app) : 0, wl = what ? strlen(what) : 0;
    if (al == 0 || al > 128 || wl == 0 || wl > 512) {
        snprintf(err, errlen, "first seen: app 1-128 and what 1-512 bytes");
        return -1;
    }
    char *field = xasprintf("%s|%s", app, what);
    char when[32];
    snprintf(when, sizeof(when), "%llu", (unsigned long long)(now_real_ns() / 1000000u));
    int rc = m->ops->hash_setnx(m, key, field, when, err, errlen);
    free(field);
    return rc;
}

int memory_first_seen_hook(void *m, const char *user, const char *app, const char *what)
{
    char err[512];
    int rc = memory_first_seen(m, user, app, what, err, sizeof(err));
    if (rc < 0)
        log_debug("memory: first seen %s %s %s: %s", user, app, what, err);
    return rc;
}

/* --- grants -------------------------------------------------------------------- */

static bool same_key(const struct grant *a, const struct grant *b)
{
    return a->category == b->category && strcmp(a->app, b->app) == 0 &&
           strcmp(a->tool, b->tool) == 0 && strcmp(a->peer, b->peer) == 0;
}

static struct session_grant *session_find(struct memory *m, const char *user,
                                          const struct grant *key)
{
    for (size_t i = 0; i < m->n_session; i++)
        if (strcmp(m->session[i].user, user) == 0 && same_key(&m->session[i].g, key))
            return &m->session[i];
    return NULL;
}

static void session_remove(struct memory *m, struct session_grant *sg)
{
    size_t i = (size_t)(sg - m->session);
    m->session[i] = m->session[--m->n_session];
}

int memory_grant_set(struct memory *m, const char *user, const struct grant *g, bool irreversible,
                     char *err, size_t errlen)
{
    char key[KEY_MAX];
    if (!user_key(m, user, "grants", key, err, errlen))
        return -1;
    struct grant check;
    if (!grant_init(&check, g->category, g->app, g->tool, g->peer, g->scope, err, errlen))
        return -1;
    check.created_ms = g->created_ms ? g->created_ms : check.created_ms;
    if (irreversible && g->scope == GRANT_ALWAYS) {
        snprintf(err, errlen, "\"always\" is never granted for an irreversible tool (%s.%s)",
                 g->app, g->tool);
        return -1;
    }
    char field[KEY_MAX];
    grant_key(&check, field, sizeof(field));
    /* The new answer replaces the old one for this key, whichever tier held it. */
    struct session_grant *old = session_find(m, user, &check);
    if (grant_scope_persistent(check.scope)) {
        char *value = grant_value(&check);
        int rc = m->ops->hash_set(m, key, field, value, err, errlen);
        free(value);
        if (rc < 0) {
            note_failed_write(m, err, "the %s grant for %s.%s was not stored",
                              grant_scope_name(check.scope), check.app, check.tool);
            return -1;
        }
        if (old)
            session_remove(m, old);
        return 0;
    }
    if (m->ops->hash_del(m, key, field, err, errlen) < 0) {
        note_failed_write(m, err, "the %s grant for %s.%s was not recorded",
                          grant_scope_name(check.scope), check.app, check.tool);
        return -1;
    }
    if (!old) {
        if (m->n_session == m->cap_session) {
            m->cap_session = m->cap_session ? 2 * m->cap_session : 16;
            m->session = xrealloc(m->session, m->cap_session * sizeof(*m->session));
        }
        old = &m->session[m->n_session++];
        str_copy(old->user, user, sizeof(old->user));
    }
    old->g = check;
    return 0;
}

/* The grant for exactly this key, if any: the in-process tier and the store; deny
 * wins when both have one. 1 found, 0 none, -1 error. */
static int lookup(struct memory *m, const char *user, const char *hkey, const struct grant *k,
                  struct grant *out, struct session_grant **sg_out, char *err, size_t errlen)
{
    char field[KEY_MAX];
    grant_key(k, field, sizeof(field));
    char *value = NULL;
    if (m->ops->hash_get(m, hkey, field, &value, err, errlen) < 0)
        return -1;
    struct grant stored;
    bool have_stored =
        value && grant_parse(field, value, &stored) && grant_scope_persistent(stored.scope);
    if (value && !have_stored)
        log_warnx("memory: stored grant %s of user %s is not valid; ignored", field, user);
    free(value);
    struct session_grant *sg = session_find(m, user, k);
    *sg_out = NULL;
    if (have_stored && (stored.scope == GRANT_DENY || !sg)) {
        *out = stored;
        return 1;
    }
    if (sg) {
        *out = sg->g;
        *sg_out = sg;
        return 1;
    }
    return 0;
}

int memory_grant_check(struct memory *m, const char *user, enum grant_category category,
                       const char *app, const char *tool, const char *peer, bool irreversible,
                       struct grant *matched, char *err, size_t errlen)
{
    char hkey[KEY_MAX];
    if (!user_key(m, user, "grants", hkey, err, errlen))
        return -1;
    struct grant exact;
    if (!grant_init(&exact, category, app, tool, peer, GRANT_ONCE, err, errlen))
        return -1;
    if (strcmp(exact.tool, "*") == 0 || (category != GRANT_EXEC && strcmp(exact.peer, "*") == 0)) {
        snprintf(err, errlen, "a check names a concrete tool%s, not \"*\"",
                 category != GRANT_EXEC ? " and peer" : "");
        return -1;
    }
    /* Most specific first: (tool, peer), (tool, *), (*, peer), (*, *). */
    const char *tools[] = {exact.tool, exact.tool, "*", "*"};
    const char *peers[] = {exact.peer, "*", exact.peer, "*"};
    for (size_t i = 0; i < 4; i++) {
        if (category == GRANT_EXEC && (i == 1 || i == 3))
            continue; /* exec keys have peer "*" only: tried as i 0 and 2 */
        struct grant k = exact;
        str_copy(k.tool, tools[i], sizeof(k.tool));
        str_copy(k.peer, peers[i], sizeof(k.peer));
        struct grant g;
        struct session_grant *sg;
        int found = lookup(m, user, hkey, &k, &g, &sg, err, errlen);
        if (found < 0)
            return -1;
        if (!found || (irreversible && g.scope == GRANT_ALWAYS))
            continue;
        if (matched)
            *matched = g;
        if (g.scope == GRANT_DENY)
            return GRANT_REFUSE;
        if (g.scope == GRANT_ONCE && sg)
            session_remove(m, sg); /* used up */
        return GRANT_ALLOW;
    }
    return GRANT_ASK;
}

static int grant_cmp(const void *a, const void *b)
{
    char ka[KEY_MAX], kb[KEY_MAX];
    grant_key(a, ka, sizeof(ka));
    grant_key(b, kb, sizeof(kb));
    return strcmp(ka, kb);
}

/* The user's stored grants: the hash's key (hkey, KEY_MAX bytes), its fields and values
 * (free both with memory_strv_free). */
static int grants_read(struct memory *m, const char *user, char *hkey, char ***fields,
                       char ***values, size_t *n, char *err, size_t errlen)
{
    *fields = *values = NULL;
    *n = 0;
    if (!user_key(m, user, "grants", hkey, err, errlen))
        return -1;
    return m->ops->hash_all(m, hkey, fields, values, n, err, errlen) < 0 ? -1 : 0;
}

int memory_grant_list(struct memory *m, const char *user, struct grant **out, size_t *count,
                      char *err, size_t errlen)
{
    *out = NULL;
    *count = 0;
    char hkey[KEY_MAX];
    char **fields, **values;
    size_t n;
    if (grants_read(m, user, hkey, &fields, &values, &n, err, errlen) < 0)
        return -1;
    struct grant *list = xcalloc(n + m->n_session + 1, sizeof(*list));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (grant_parse(fields[i], values[i], &list[k]) && grant_scope_persistent(list[k].scope))
            k++;
        else
            log_warnx("memory: stored grant %.200s of user %s is not valid; ignored", fields[i],
                      user);
    }
    memory_strv_free(fields, n);
    memory_strv_free(values, n);
    for (size_t i = 0; i < m->n_session; i++)
        if (strcmp(m->session[i].user, user) == 0)
            list[k++] = m->session[i].g;
    qsort(list, k, sizeof(*list), grant_cmp);
    *out = list;
    *count = k;
    return 0;
}

static bool revoke_match(const struct grant *g, int category, const char *app, const char *tool,
                         const char *peer)
{
    return (category < 0 || (int)g->category == category) && (!app || strcmp(g->app, app) == 0) &&
           (!tool || strcmp(g->tool, tool) == 0) && (!peer || strcmp(g->peer, peer) == 0);
}

int memory_grant_revoke(struct memory *m, const char *user, int category, const char *app,
                        const char *tool, const char *peer, char *err, size_t errlen)
{
    char hkey[KEY_MAX];
    char **fields, **values;
    size_t n;
    if (grants_read(m, user, hkey, &fields, &values, &n, err, errlen) < 0)
        return -1;
    int removed = 0;
    for (size_t i = 0; i < n; i++) {
        struct grant g;
        /* An entry that does not parse is junk: a revoke of everything clears it too. */
        bool parsed = grant_parse(fields[i], values[i], &g);
        if (parsed ? !revoke_match(&g, category, app, tool, peer)
                   : (category >= 0 || app || tool || peer))
            continue;
        int rc = m->ops->hash_del(m, hkey, fields[i], err, errlen);
        if (rc < 0) {
            memory_strv_free(fields, n);
            memory_strv_free(values, n);
            return -1;
        }
        removed += rc;
    }
    memory_strv_free(fields, n);
    memory_strv_free(values, n);
    for (size_t i = m->n_session; i-- > 0;) {
        struct session_grant *sg = &m->session[i];
        if (strcmp(sg->user, user) == 0 && revoke_match(&sg->g, category, app, tool, peer)) {
            session_remove(m, sg);
            removed++;
        }
    }
    return removed;
}
