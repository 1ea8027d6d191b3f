/* Run by test_memory.sh (which stops the server whatever happens):
 *   memory_check DIR      DIR is where the private redis-server lives
 * Memory with a real private redis-server (scripts/redis-private) and the in-process
 * fallback: history and grant semantics on both, persistence across a client restart,
 * a redis-server kill -9 + restart (AOF), transparent reconnects, user ids that try to
 * reach other keys, tampered data, AUTH, and an unreachable server. */
#include "test.h"

#include "memory/memory.h"
#include "util.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];
static char sock[300];
static char spec[320];
static const char *root;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool redis_start(void)
{
    return sh("cd '%s' && scripts/redis-private start '%s' >/dev/null", root, dir) == 0;
}

static void redis_stop(void)
{
    sh("cd '%s' && scripts/redis-private stop '%s' >/dev/null 2>&1", root, dir);
}

static pid_t redis_pid(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/redis.pid", dir);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

/* Running and not a zombie (the daemon's parent is init, which reaps when it likes). */
static bool alive(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static void redis_kill9(void)
{
    pid_t pid = redis_pid();
    if (pid > 0) {
        kill(pid, SIGKILL);
        for (int i = 0; i < 100 && alive(pid); i++)
            usleep(10000);
    }
}

/* A direct connection, to look at keys as Redis sees them. */
static redisReply *raw(const char *fmt, ...)
{
    redisContext *c = redisConnectUnix(sock);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

static struct memory *open_mem(const char *which, struct memory_config *cfg)
{
    char err[512];
    struct memory *m = memory_open(which, cfg, err, sizeof(err));
    if (!m)
        printf("# memory_open(%s): %s\n", which, err);
    return m;
}

static void test_user_ids(void)
{
    const char *good[] = {"alice", "Bob_2", "u-1", "7"};
    const char *bad[] = {
        "",         "../x",
        "a:b",      "a b",
        "-x",       "_x",
        "a*",       "a\nb",
        "\xc3\xa9", "alice:grants",
        "x/y",      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    bool all = true;
    for (size_t i = 0; i < ARRAY_LEN(good); i++)
        all = all && memory_user_valid(good[i]);
    CHECK(all, "ordinary user ids are valid");
    all = true;
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        if (memory_user_valid(bad[i])) {
            printf("# accepted: %s\n", bad[i]);
            all = false;
        }
    CHECK(all, "ids that could address other keys or paths are refused");
}

/* The same semantics on every back end. */
static void semantics(struct memory *m, const char *name)
{
    char err[512];
    CHECK(memory_history_clear(m, "alice", err, sizeof(err)) == 0, "%s: clear", name);
    CHECK(memory_history_append(m, "alice", "user", "first", err, sizeof(err)) == 0 &&
              memory_history_append(m, "alice", "assistant", "second", err, sizeof(err)) == 0 &&
              memory_history_append(m, "alice", "user", "third", err, sizeof(err)) == 0,
          "%s: three entries appended", name);
    struct memory_msg *msgs;
    size_t n;
    CHECK(memory_history_last(m, "alice", 2, &msgs, &n, err, sizeof(err)) == 0 && n == 2 &&
              strcmp(msgs[0].text, "second") == 0 && strcmp(msgs[0].role, "assistant") == 0 &&
              strcmp(msgs[1].text, "third") == 0 && msgs[1].ts_ms > 0,
          "%s: the last two, oldest first", name);
    memory_msgs_free(msgs, n);
    CHECK(memory_history_last(m, "bob", 10, &msgs, &n, err, sizeof(err)) == 0 && n == 0,
          "%s: another user sees nothing of alice's", name);
    memory_msgs_free(msgs, n);
    CHECK(memory_history_append(m, "../alice", "user", "x", err, sizeof(err)) < 0 &&
              strstr(err, "not valid"),
          "%s: user ../alice refused (%s)", name, err);
    CHECK(memory_history_last(m, "alice:history", 1, &msgs, &n, err, sizeof(err)) < 0,
          "%s: user alice:history refused", name);
    CHECK(memory_history_append(m, "alice", "User!", "x", err, sizeof(err)) < 0,
          "%s: a bad role is refused", name);
    for (int i = 0; i < 12; i++) {
        char t[16];
        snprintf(t, sizeof(t), "n%d", i);
        memory_history_append(m, "carol", "user", t, err, sizeof(err));
    }
    CHECK(memory_history_last(m, "carol", 100, &msgs, &n, err, sizeof(err)) == 0 && n == 8 &&
              strcmp(msgs[0].text, "n4") == 0 && strcmp(msgs[7].text, "n11") == 0,
          "%s: history is trimmed to history_max (8), keeping the newest", name);
    memory_msgs_free(msgs, n);
    char big[3000];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(memory_history_append(m, "carol", "assistant", big, err, sizeof(err)) == 0 &&
              memory_history_last(m, "carol", 1, &msgs, &n, err, sizeof(err)) == 0 && n == 1 &&
              strlen(msgs[0].text) < 1100 && strstr(msgs[0].text, "[truncated]"),
          "%s: an entry over entry_max_bytes is cut and marked", name);
    memory_msgs_free(msgs, n);

    /* Grants. */
    struct grant g, hit;
    memory_grant_revoke(m, "alice", -1, NULL, NULL, NULL, err, sizeof(err));
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "send", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_ASK,
          "%s: no grant: ask", name);
    grant_init(&g, GRANT_EXEC, "mail", "read", NULL, GRANT_ONCE, err, sizeof(err));
    CHECK(memory_grant_set(m, "alice", &g, false, err, sizeof(err)) == 0, "%s: once set", name);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "read", NULL, false, &hit, err,
                             sizeof(err)) == GRANT_ALLOW &&
              hit.scope == GRANT_ONCE,
          "%s: once allows the next action", name);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "read", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_ASK,
          "%s: once is used up: ask again", name);
    grant_init(&g, GRANT_EXEC, "mail", "read", NULL, GRANT_SESSION, err, sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "read", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_ALLOW &&
              memory_grant_check(m, "alice", GRANT_EXEC, "mail", "read", NULL, false, NULL, err,
                                 sizeof(err)) == GRANT_ALLOW,
          "%s: session allows again and again", name);
    grant_init(&g, GRANT_EXEC, "mail", "*", NULL, GRANT_DENY, err, sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "send", NULL, false, &hit, err,
                             sizeof(err)) == GRANT_REFUSE &&
              hit.scope == GRANT_DENY && strcmp(hit.tool, "*") == 0,
          "%s: deny mail.* refuses mail.send", name);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "read", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_ALLOW,
          "%s: the more specific session grant for mail.read still allows", name);
    grant_init(&g, GRANT_EXEC, "metro_hail", "*", NULL, GRANT_ALWAYS, err, sizeof(err));
    CHECK(memory_grant_set(m, "alice", &g, false, err, sizeof(err)) == 0 &&
              memory_grant_check(m, "alice", GRANT_EXEC, "metro_hail", "estimate_fare", NULL, false,
                                 NULL, err, sizeof(err)) == GRANT_ALLOW,
          "%s: always metro_hail.* allows its tools", name);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "metro_hail", "book_ride", NULL, true, NULL,
                             err, sizeof(err)) == GRANT_ASK,
          "%s: but not an irreversible tool: ask", name);
    grant_init(&g, GRANT_EXEC, "metro_hail", "book_ride", NULL, GRANT_ALWAYS, err, sizeof(err));
    CHECK(memory_grant_set(m, "alice", &g, true, err, sizeof(err)) < 0 &&
              strstr(err, "irreversible"),
          "%s: always is never stored for an irreversible tool", name);
    grant_init(&g, GRANT_COLLAB, "calendar", "create_event", "mail", GRANT_ALWAYS, err,
               sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
    CHECK(memory_grant_check(m, "alice", GRANT_COLLAB, "calendar", "create_event", "mail", false,
                             NULL, err, sizeof(err)) == GRANT_ALLOW &&
              memory_grant_check(m, "alice", GRANT_COLLAB, "calendar", "create_event", "notes",
                                 false, NULL, err, sizeof(err)) == GRANT_ASK,
          "%s: collab is per calling app", name);
    CHECK(memory_grant_check(m, "alice", GRANT_DATA, "calendar", "create_event", "mail", false,
                             NULL, err, sizeof(err)) == GRANT_ASK,
          "%s: categories do not mix", name);
    CHECK(memory_grant_check(m, "bob", GRANT_EXEC, "metro_hail", "estimate_fare", NULL, false, NULL,
                             err, sizeof(err)) == GRANT_ASK,
          "%s: grants are per user", name);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "*", NULL, false, NULL, err,
                             sizeof(err)) < 0,
          "%s: a check needs a concrete tool", name);
    CHECK(grant_init(&g, GRANT_EXEC, "mail|x", "read", NULL, GRANT_ONCE, err, sizeof(err)) ==
                  false &&
              grant_init(&g, GRANT_EXEC, "mail", "re|ad", NULL, GRANT_ONCE, err, sizeof(err)) ==
                  false,
          "%s: the key separator cannot appear in names", name);

    struct grant *list;
    size_t count;
    CHECK(memory_grant_list(m, "alice", &list, &count, err, sizeof(err)) == 0 && count == 4,
          "%s: four grants listed (%zu)", name, count);
    bool sorted = true;
    for (size_t i = 1; i < count; i++) {
        char a[300], b[300];
        grant_key(&list[i - 1], a, sizeof(a));
        grant_key(&list[i], b, sizeof(b));
        sorted = sorted && strcmp(a, b) < 0;
    }
    CHECK(sorted, "%s: listed in key order", name);
    free(list);
    CHECK(memory_grant_revoke(m, "alice", GRANT_EXEC, "mail", NULL, NULL, err, sizeof(err)) == 2,
          "%s: revoke exec mail removes the deny and the session grant", name);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "mail", "send", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_ASK,
          "%s: after revoke: ask", name);
    /* A new answer replaces the old one for the same key. */
    grant_init(&g, GRANT_EXEC, "metro_hail", "*", NULL, GRANT_SESSION, err, sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
    CHECK(memory_grant_list(m, "alice", &list, &count, err, sizeof(err)) == 0 && count == 2,
          "%s: setting session over always replaces it", name);
    free(list);
    grant_init(&g, GRANT_EXEC, "metro_hail", "*", NULL, GRANT_ALWAYS, err, sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
}

static void test_local(void)
{
    struct memory_config cfg;
    memory_config_defaults(&cfg);
    cfg.history_max = 8;
    cfg.entry_max_bytes = 1024;
    struct memory *m = open_mem("none", &cfg);
    CHECK(m && !memory_persistent(m), "in-process memory opens");
    semantics(m, "none");
    memory_close(m);
}

static void test_redis(void)
{
    struct memory_config cfg;
    memory_config_defaults(&cfg);
    cfg.history_max = 8;
    cfg.entry_max_bytes = 1024;
    cfg.prefix = "itest";
    struct memory *m = open_mem(spec, &cfg);
    CHECK(m && memory_persistent(m), "redis memory opens on the private socket");
    if (!m)
        return;
    semantics(m, "redis");

    /* The key layout, as Redis sees it. */
    redisReply *r = raw("LLEN itest:alice:history");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 3, "history at itest:alice:history");
    freeReplyObject(r);
    r = raw("HGET itest:alice:grants %s", "exec|metro_hail|*|*");
    CHECK(r && r->type == REDIS_REPLY_STRING && strstr(r->str, "\"always\""),
          "grants at itest:alice:grants, field category|app|tool|peer");
    freeReplyObject(r);
    r = raw("HGET itest:alice:grants %s", "exec|mail|read|*");
    CHECK(r && r->type == REDIS_REPLY_NIL, "session grants are not written to Redis");
    freeReplyObject(r);

    /* A session grant and the persistent ones, then a client (hub) restart. */
    char err[512];
    struct grant g;
    grant_init(&g, GRANT_DATA, "notes", "*", "mail", GRANT_SESSION, err, sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
    grant_init(&g, GRANT_EXEC, "bank", "*", NULL, GRANT_DENY, err, sizeof(err));
    memory_grant_set(m, "alice", &g, false, err, sizeof(err));
    memory_close(m);
    m = open_mem(spec, &cfg);
    CHECK(m != NULL, "reopened (a hub restart)");
    if (!m)
        return;
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "metro_hail", "estimate_fare", NULL, false,
                             NULL, err, sizeof(err)) == GRANT_ALLOW,
          "always survives a hub restart");
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "bank", "transfer", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_REFUSE,
          "deny survives a hub restart");
    CHECK(memory_grant_check(m, "alice", GRANT_DATA, "notes", "add", "mail", false, NULL, err,
                             sizeof(err)) == GRANT_ASK,
          "a session grant does not survive it");
    struct memory_msg *msgs;
    size_t n;
    CHECK(memory_history_last(m, "alice", 3, &msgs, &n, err, sizeof(err)) == 0 && n == 3 &&
              strcmp(msgs[2].text, "third") == 0,
          "history survives a hub restart");
    memory_msgs_free(msgs, n);

    /* kill -9 of redis-server, restart from its AOF: nothing acknowledged is lost, and
     * the same client carries on without being reopened. */
    for (int i = 0; i < 5; i++) {
        char t[16];
        snprintf(t, sizeof(t), "acked-%d", i);
        memory_history_append(m, "dave", "user", t, err, sizeof(err));
    }
    pid_t before = redis_pid();
    redis_kill9();
    CHECK(!alive(before), "redis-server killed with SIGKILL");
    CHECK(redis_start() && redis_pid() != before, "redis-server restarted on the same directory");
    CHECK(memory_history_last(m, "dave", 10, &msgs, &n, err, sizeof(err)) == 0 && n == 5 &&
              strcmp(msgs[0].text, "acked-0") == 0 && strcmp(msgs[4].text, "acked-4") == 0,
          "every acknowledged entry survived kill -9 (reconnected transparently)");
    memory_msgs_free(msgs, n);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "bank", "x", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_REFUSE,
          "grants survived kill -9 too");

    /* A write while Redis is down and comes back 300 ms later: it waits and succeeds,
     * and the entry is stored once. */
    redis_kill9();
    pid_t child = fork();
    if (child == 0) {
        char cmd[700];
        snprintf(cmd, sizeof(cmd),
                 "sleep 0.3; cd '%s' && scripts/redis-private start '%s' >/dev/null", root, dir);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    uint64_t t0 = now_mono_ns();
    int rc = memory_history_append(m, "dave", "user", "during-restart", err, sizeof(err));
    long ms = (long)((now_mono_ns() - t0) / 1000000u);
    int st;
    waitpid(child, &st, 0);
    CHECK(rc == 0 && ms >= 250, "a write during the outage waits for the restart (%ld ms)", ms);
    CHECK(memory_history_last(m, "dave", 10, &msgs, &n, err, sizeof(err)) == 0 && n == 6 &&
              strcmp(msgs[5].text, "during-restart") == 0 && strcmp(msgs[4].text, "acked-4") == 0,
          "and it is stored exactly once");
    memory_msgs_free(msgs, n);

    /* Appends sent without waiting (the request's entry while the planner works): read
     * back in order, and one whose server died before it answered is sent again once
     * the server is back, and stored once. */
    CHECK(memory_history_append_nowait(m, "dave", "user", "nowait-1", err, sizeof(err)) == 0 &&
              memory_history_append_nowait(m, "dave", "assistant", "nowait-2", err,
                                           sizeof(err)) == 0,
          "appends sent without waiting");
    CHECK(memory_history_last(m, "dave", 2, &msgs, &n, err, sizeof(err)) == 0 && n == 2 &&
              strcmp(msgs[0].text, "nowait-1") == 0 && strcmp(msgs[1].text, "nowait-2") == 0,
          "... are there for the next read, in order");
    memory_msgs_free(msgs, n);
    CHECK(memory_history_sync(m, err, sizeof(err)) == 0, "... and nothing is left to sync");
    CHECK(memory_history_append_nowait(m, "dave", "user", "nowait-3", err, sizeof(err)) == 0,
          "an append sent without waiting");
    redis_kill9();
    child = fork();
    if (child == 0) {
        char cmd[700];
        snprintf(cmd, sizeof(cmd),
                 "sleep 0.3; cd '%s' && scripts/redis-private start '%s' >/dev/null", root, dir);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    rc = memory_history_sync(m, err, sizeof(err));
    waitpid(child, &st, 0);
    CHECK(rc == 0, "... its server killed before the reply was read: sync waits for it back (%s)",
          rc ? err : "stored");
    size_t copies = 0;
    CHECK(memory_history_last(m, "dave", 20, &msgs, &n, err, sizeof(err)) == 0 && n == 8 &&
              strcmp(msgs[7].text, "nowait-3") == 0 && strcmp(msgs[6].text, "nowait-2") == 0,
          "... the history has it last, trimmed to history_max (%zu)", n);
    for (size_t i = 0; i < n; i++)
        copies += strcmp(msgs[i].text, "nowait-3") == 0;
    CHECK(copies == 1, "... the one sent again stored exactly once (%zu)", copies);
    memory_msgs_free(msgs, n);

    /* Tampered data is skipped, not trusted. */
    r = raw("RPUSH itest:alice:history %s", "{not json");
    freeReplyObject(r);
    r = raw("HSET itest:alice:grants %s %s", "exec|evil|*|*|extra", "{\"scope\":\"always\"}");
    freeReplyObject(r);
    r = raw("HSET itest:alice:grants %s %s", "exec|good|*|*", "{\"scope\":\"forever\"}");
    freeReplyObject(r);
    CHECK(memory_history_last(m, "alice", 2, &msgs, &n, err, sizeof(err)) == 0 && n == 1 &&
              strcmp(msgs[0].text, "third") == 0,
          "a tampered history entry is skipped");
    memory_msgs_free(msgs, n);
    CHECK(memory_grant_check(m, "alice", GRANT_EXEC, "good", "x", NULL, false, NULL, err,
                             sizeof(err)) == GRANT_ASK,
          "a grant with an unknown scope is ignored");
    struct grant *list;
    size_t count;
    CHECK(memory_grant_list(m, "alice", &list, &count, err, sizeof(err)) == 0 && count == 3,
          "tampered grants are not listed (%zu: metro_hail, calendar, bank)", count);
    free(list);
    CHECK(memory_grant_revoke(m, "alice", -1, NULL, NULL, NULL, err, sizeof(err)) == 5,
          "revoking everything also clears the two junk fields");
    r = raw("SET itest:erin:history %s", "a string, not a list");
    freeReplyObject(r);
    CHECK(memory_history_append(m, "erin", "user", "x", err, sizeof(err)) < 0 &&
              strstr(err, "WRONGTYPE"),
          "a key of the wrong type is a clear error: %s", err);

    /* Redis gone for longer than the reconnect window: a clear error, in bounded time. */
    memory_close(m);
    cfg.reconnect_ms = 300;
    m = open_mem(spec, &cfg);
    redis_stop();
    t0 = now_mono_ns();
    rc = memory_history_append(m, "alice", "user", "lost", err, sizeof(err));
    ms = (long)((now_mono_ns() - t0) / 1000000u);
    CHECK(rc < 0 && strstr(err, "gave up after 300 ms") && ms < 2000,
          "Redis down past reconnect_ms: error in %ld ms: %s", ms, err);
    struct grant pay;
    CHECK(grant_init(&pay, GRANT_EXEC, "bank", "pay", NULL, GRANT_ALWAYS, err, sizeof(err)) &&
              memory_grant_set(m, "alice", &pay, false, err, sizeof(err)) < 0,
          "a grant while Redis is down fails");
    json_t *failed = memory_take_failed_writes(m);
    const char *w0 = json_string_value(json_array_get(failed, 0));
    const char *w1 = json_string_value(json_array_get(failed, 1));
    CHECK(json_array_size(failed) == 2 && w0 && w1 &&
              strstr(w0, "the user's entry was not stored in the history") &&
              strstr(w1, "the always grant for bank.pay was not stored") &&
              strstr(w1, "gave up after 300 ms"),
          "both failed writes are listed for the user: %s | %s", w0 ? w0 : "-", w1 ? w1 : "-");
    json_decref(failed);
    failed = memory_take_failed_writes(m);
    CHECK(json_array_size(failed) == 0, "reading them empties the list");
    json_decref(failed);
    memory_close(m);
    CHECK(open_mem(spec, &cfg) == NULL, "Redis down at start: memory_open fails");
    char msg[512];
    CHECK(memory_open(spec, &cfg, msg, sizeof(msg)) == NULL && strstr(msg, "redis-private") &&
              strstr(msg, "--memory none") && strstr(msg, sock),
          "and says how to start one or run without: %s", msg);
    CHECK(memory_open(NULL, &cfg, msg, sizeof(msg)) == NULL && strstr(msg, "no Redis configured"),
          "no address configured: says so");
    CHECK(redis_start(), "redis-server started again");
}

static void test_auth(void)
{
    redisReply *r = raw("CONFIG SET requirepass %s", "s3cr3t-pw-XYZ");
    CHECK(r && r->type == REDIS_REPLY_STATUS, "the private server now wants a password");
    freeReplyObject(r);
    struct memory_config cfg;
    memory_config_defaults(&cfg);
    char err[512];
    CHECK(memory_open(spec, &cfg, err, sizeof(err)) == NULL && strstr(err, "NOAUTH"),
          "without a password: refused (%s)", err);
    cfg.password_env = "ISOLATE_TEST_REDIS_PW";
    unsetenv("ISOLATE_TEST_REDIS_PW");
    CHECK(memory_open(spec, &cfg, err, sizeof(err)) == NULL && strstr(err, "ISOLATE_TEST_REDIS_PW"),
          "password_env unset: named");
    setenv("ISOLATE_TEST_REDIS_PW", "wrong-password", 1);
    CHECK(memory_open(spec, &cfg, err, sizeof(err)) == NULL &&
              strstr(err, "refused the credentials") && !strstr(err, "wrong-password"),
          "a wrong password: refused, not echoed (%s)", err);
    setenv("ISOLATE_TEST_REDIS_PW", "s3cr3t-pw-XYZ", 1);
    struct memory *m = open_mem(spec, &cfg);
    CHECK(m && memory_history_append(m, "alice", "user", "authed", err, sizeof(err)) == 0,
          "the right password from the environment works");
    /* The password is also sent again after a reconnect. */
    redis_kill9();
    redis_start();
    r = NULL;
    redisContext *c = redisConnectUnix(sock);
    if (c && !c->err)
        r = redisCommand(c, "CONFIG SET requirepass %s", "s3cr3t-pw-XYZ");
    freeReplyObject(r);
    if (c)
        redisFree(c);
    struct memory_msg *msgs;
    size_t n;
    CHECK(m && memory_history_last(m, "alice", 1, &msgs, &n, err, sizeof(err)) == 0 && n == 1 &&
              strcmp(msgs[0].text, "authed") == 0,
          "after a restart the client re-authenticates");
    if (m && n)
        memory_msgs_free(msgs, n);
    memory_close(m);
}

static void test_tcp(void)
{
    /* A throw-away server on a loopback TCP port, without AOF: host:port works and the
     * missing durability is warned about. */
    char tdir[300];
    snprintf(tdir, sizeof(tdir), "%s/tcp", dir);
    mkdir_p(tdir, 0700);
    int port = 0;
    FILE *p = popen("/usr/bin/python3 -c 'import socket; s=socket.socket(); "
                    "s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])'",
                    "r");
    if (p) {
        if (fscanf(p, "%d", &port) != 1)
            port = 0;
        pclose(p);
    }
    int rc = sh("redis-server --port %d --bind 127.0.0.1 --save '' --appendonly no "
                "--daemonize yes --dir '%s' --pidfile '%s/redis.pid' --logfile '%s/redis.log'",
                port, tdir, tdir, tdir);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    struct memory_config cfg;
    memory_config_defaults(&cfg);
    struct memory *m = NULL;
    for (int i = 0; rc == 0 && i < 50 && !m; i++) {
        char err[512];
        m = memory_open(addr, &cfg, err, sizeof(err));
        if (!m)
            usleep(50000);
    }
    char err[512];
    CHECK(m && memory_history_append(m, "alice", "user", "tcp", err, sizeof(err)) == 0,
          "host:port works (%s)", addr);
    memory_close(m);
    sh("kill $(cat '%s/redis.pid') 2>/dev/null; sleep 0.2; rm -rf '%s'", tdir, tdir);
    CHECK(memory_open("127.0.0.1:notaport", &cfg, err, sizeof(err)) == NULL &&
              strstr(err, "HOST:PORT"),
          "a bad address is explained");
}

static void test_config(void)
{
    char err[256];
    struct jf_ctx jc = {.file = "hub.json", .err = err, .errlen = sizeof(err)};
    const char *text = "{\"redis\": \"unix:/run/x.sock\", \"password_env\": \"REDIS_PW\", "
                       "\"history_max\": 50}";
    json_t *obj = jf_parse(&jc, text, strlen(text));
    struct memory_config cfg;
    memory_config_defaults(&cfg);
    CHECK(memory_config_parse(&jc, obj, "memory", &cfg) && cfg.history_max == 50 &&
              strcmp(cfg.redis, "unix:/run/x.sock") == 0,
          "memory config parsed");
    json_decref(obj);
    text = "{\"password_env\": \"hunter 2\"}";
    obj = jf_parse(&jc, text, strlen(text));
    CHECK(!memory_config_parse(&jc, obj, "memory", &cfg) && strstr(err, "memory.password_env"),
          "a password pasted into password_env is refused");
    json_decref(obj);
    text = "{\"redis\": \"sentinel://127.0.0.1:26379,[::1]:26380/mymaster\", "
           "\"wait_replicas\": 2, \"wait_timeout_ms\": 300}";
    obj = jf_parse(&jc, text, strlen(text));
    memory_config_defaults(&cfg);
    CHECK(cfg.wait_replicas == -1 && memory_config_parse(&jc, obj, "memory", &cfg) &&
              cfg.wait_replicas == 2 && cfg.wait_timeout_ms == 300,
          "Sentinel address and WAIT settings parsed");
    json_decref(obj);
    text = "{\"sentinel_password_env\": \"pw=x\"}";
    obj = jf_parse(&jc, text, strlen(text));
    CHECK(!memory_config_parse(&jc, obj, "memory", &cfg) && strstr(err, "sentinel_password_env"),
          "a password pasted into sentinel_password_env is refused");
    json_decref(obj);
}

/* Malformed sentinel:// addresses are refused with a reason, before anything is
 * dialled; one whose sentinels are all down says so for each. */
static void test_sentinel_addresses(void)
{
    struct memory_config cfg;
    memory_config_defaults(&cfg);
    cfg.connect_timeout_ms = 200;
    cfg.reconnect_ms = 0;
    static const struct {
        const char *addr, *says;
    } bad[] = {
        {"sentinel://127.0.0.1:26379", "master name"},
        {"sentinel://127.0.0.1:26379/", "master name"},
        {"sentinel://127.0.0.1:26379/bad name", "master name"},
        {"sentinel:///mymaster", "no sentinel"},
        {"sentinel://127.0.0.1/mymaster", "HOST:PORT"},
        {"sentinel://127.0.0.1:0/mymaster", "HOST:PORT"},
        {"sentinel://127.0.0.1:99999/mymaster", "HOST:PORT"},
        {"sentinel://127.0.0.1:1,,127.0.0.1:2/mymaster", "HOST:PORT"},
        {"sentinel://[::1:26379/mymaster", "HOST:PORT"},
        {"sentinel://a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,a:14,a:15,a:16,"
         "a:17/m",
         "at most"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[1024] = "";
        struct memory *m = memory_open(bad[i].addr, &cfg, err, sizeof(err));
        CHECK(!m && strstr(err, bad[i].says), "refused: %s (%s)", bad[i].addr, err);
        memory_close(m);
    }
    char err[2048] = "";
    /* Ports 1 and 2 on loopback: nothing listens there. */
    struct memory *m =
        memory_open("sentinel://127.0.0.1:1,127.0.0.1:2/mymaster", &cfg, err, sizeof(err));
    CHECK(!m && strstr(err, "sentinel 127.0.0.1:1") && strstr(err, "sentinel 127.0.0.1:2"),
          "no sentinel answering: each one's failure is said (%s)", err);
    memory_close(m);
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr, "usage: memory_check /ABSOLUTE/DIR (run by tests/memory/test_memory.sh)\n");
        return 2;
    }
    root = getenv("ROOT") ? getenv("ROOT") : ".";
    snprintf(dir, sizeof(dir), "%s", argv[1]);
    snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
    snprintf(spec, sizeof(spec), "unix:%s", sock);
    signal(SIGPIPE, SIG_IGN);
    test_user_ids();
    test_config();
    test_sentinel_addresses();
    test_local();
    CHECK(redis_start(), "a private redis-server starts (%s)", sock);
    test_redis();
    test_auth();
    test_tcp();
    redis_stop();
    return test_done();
}
