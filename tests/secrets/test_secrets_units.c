/* The secret store's parts without a hub: key detection in literal values, stand-ins,
 * redaction (whole lines and streams cut anywhere), and the store itself (round trip,
 * its files' modes, refusal of a file edited without the key, of a wrong key and of a
 * directory others can read). */
#include "redact.h"
#include "config/config.h"
#include "secrets/secrets.h"
#include "secret.h"
#include "tests/unit/test.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_keylike(void)
{
    static const char *const keys[] = {
        "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "github_pat_11ABCDEFG0123456789abcdefghij",
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
        "sk-ant-api03-abcdefghijklmnopqrstu",
        "xoxb-123456789012-1234567890123-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "ntn_1234567890abcdefghijklmnopqrstuvwx",
        "Bearer ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "q8Xz1vT7bN3mK9pL2wR6yH4jF0cD5gS8aE1uI7oQ", /* random, no prefix */
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"};
    static const char *const not_keys[] = {
        "/data/memory.jsonl",
        "https://api.example.com/v1/things?x=1",
        "sk-",
        "ghp_short",
        "hello world this is a sentence with many words in it",
        "production",
        "0123456789abcdef0123456789abcdef01234567", /* hex: a commit id, not a key */
        "MY_DATABASE_CONNECTION_STRING_FOR_PRODUCTION",
        "550e8400-e29b-41d4-a716-446655440000"};
    const char *why = NULL;
    for (size_t i = 0; i < ARRAY_LEN(keys); i++)
        CHECK(keylike(keys[i], &why), "looks like a key: %.24s... (%s)", keys[i], why ? why : "");
    for (size_t i = 0; i < ARRAY_LEN(not_keys); i++)
        CHECK(!keylike(not_keys[i], &why), "not a key: %s", not_keys[i]);
}

static bool same_shape(const char *a, const char *b)
{
    if (strlen(a) != strlen(b))
        return false;
    for (size_t i = 0; a[i]; i++) {
        char x = a[i], y = b[i];
        bool lx = x >= 'a' && x <= 'z', ux = x >= 'A' && x <= 'Z', dx = x >= '0' && x <= '9';
        bool ly = y >= 'a' && y <= 'z', uy = y >= 'A' && y <= 'Z', dy = y >= '0' && y <= '9';
        if (lx != ly || ux != uy || dx != dy || (!lx && !ux && !dx && x != y))
            return false;
    }
    return true;
}

static void test_standin(void)
{
    char err[256];
    const char *v = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    char *s1 = standin_make(v, strlen(v), err, sizeof(err));
    char *s2 = standin_make(v, strlen(v), err, sizeof(err));
    CHECK(s1 && s2, "a GitHub token gets a stand-in");
    CHECK(s1 && strncmp(s1, "ghp_", 4) == 0 && same_shape(s1, v),
          "the stand-in keeps the prefix, the length and each character's kind (%s)", s1);
    CHECK(s1 && s2 && strcmp(s1, s2) != 0 && strcmp(s1, v) != 0,
          "stand-ins are random: two differ, and neither is the value");
    free(s1);
    free(s2);
    v = "AKIAIOSFODNN7EXAMPLE";
    s1 = standin_make(v, strlen(v), err, sizeof(err));
    CHECK(s1 && strncmp(s1, "AKIA", 4) == 0 && same_shape(s1, v),
          "an AWS key id keeps AKIA (a prefix without a separator)");
    free(s1);
    v = "xoxb-123456789012-1234567890123-abcdefghij";
    s1 = standin_make(v, strlen(v), err, sizeof(err));
    CHECK(s1 && same_shape(s1, v) && s1[17] == '-' && s1[31] == '-',
          "the dashes inside a Slack token stay where they were");
    free(s1);
    v = "sk-abcdefgh";
    s1 = standin_make(v, strlen(v), err, sizeof(err));
    CHECK(!s1 && strstr(err, "at least 16"), "a value too short for a stand-in is refused (%s)",
          err);
    free(s1);
}

struct sink {
    char buf[4096];
    size_t len;
};

static int sink_write(void *ud, const char *b, size_t n)
{
    struct sink *s = ud;
    if (s->len + n >= sizeof(s->buf))
        return -1;
    memcpy(s->buf + s->len, b, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return 0;
}

static void test_redact(void)
{
    const char *v = "tok-3f9a8b7c6d5e4f3a2b1c";
    CHECK(!redact_active(), "nothing registered: redaction is off");
    size_t n;
    CHECK(redact_copy("abc", 3, &n) == NULL, "... and a line passes untouched");
    redact_add(v, strlen(v), "api");
    redact_add("short", 5, "tiny");
    const char *line =
        "{\"a\":\"tok-3f9a8b7c6d5e4f3a2b1c\",\"b\":\"x tok-3f9a8b7c6d5e4f3a2b1c y\"}";
    char *r = redact_copy(line, strlen(line), &n);
    CHECK(r && n == strlen(r) && !strstr(r, v) && strstr(r, "[secret api]"),
          "a registered value is replaced wherever it is in the line");
    CHECK(r && strcmp(r, "{\"a\":\"[secret api]\",\"b\":\"x [secret api] y\"}") == 0,
          "... and nothing else changes (%s)", r ? r : "");
    free(r);
    r = redact_copy("short words", 11, &n);
    CHECK(r == NULL, "values under %d bytes are not registered (they would match words)",
          REDACT_MIN_LEN);
    free(r);
    /* A value with a quote and a newline, as a JSON writer escapes it. */
    const char *odd = "pa\"ss\nword-1234";
    redact_add(odd, strlen(odd), "odd");
    const char *escaped = "{\"x\":\"pa\\\"ss\\nword-1234\"}";
    r = redact_copy(escaped, strlen(escaped), &n);
    CHECK(r && strcmp(r, "{\"x\":\"[secret odd]\"}") == 0,
          "a value is also found as JSON escapes it (%s)", r ? r : "");
    free(r);
    /* A stream cut at every position: the value never comes out whole. */
    const char *text = "log: token=tok-3f9a8b7c6d5e4f3a2b1c end\n";
    size_t tl = strlen(text);
    bool all_ok = true;
    for (size_t cut = 1; cut < tl; cut++) {
        struct sink s = {.len = 0};
        struct redact_stream rs = {0};
        redact_stream_feed(&rs, text, cut, sink_write, &s);
        redact_stream_feed(&rs, text + cut, tl - cut, sink_write, &s);
        redact_stream_flush(&rs, sink_write, &s);
        if (strcmp(s.buf, "log: token=[secret api] end\n") != 0) {
            all_ok = false;
            printf("# cut at %zu: %s", cut, s.buf);
        }
    }
    CHECK(all_ok, "a stream cut anywhere in the value still gets it redacted, nothing lost");
    redact_remove(v, strlen(v));
    redact_remove(odd, strlen(odd));
    CHECK(!redact_active(), "removed again: redaction is off");
}

static char dir[] = "/tmp/itest-secrets-units.XXXXXX";

static void test_store(void)
{
    char err[1024];
    struct hub_config cfg;
    config_defaults(&cfg, "/nonexistent");
    free(cfg.secrets_dir);
    cfg.secrets_dir = xasprintf("%s/store", dir);
    free(cfg.secrets_key_file);
    cfg.secrets_key_file = xasprintf("%s/key", dir);
    struct secret_store *st = secret_store_new(&cfg);
    struct secret_meta m = {0};
    str_copy(m.name, "github", sizeof(m.name));
    m.hosts = xcalloc(2, sizeof(char *));
    m.hosts[0] = xstrdup("api.github.com");
    m.header = xstrdup("Authorization");
    const char *v = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    bool created = false;
    CHECK(secret_store_set(st, &m, v, strlen(v), &created, err, sizeof(err)) == 0 && created,
          "set makes the directory and the key, and stores the secret (%s)", err);
    struct stat sb;
    char *path = xasprintf("%s/store/github.json", dir);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600, "the secret's file is 0600");
    CHECK(stat(cfg.secrets_dir, &sb) == 0 && (sb.st_mode & 0777) == 0700, "the store is 0700");
    CHECK(stat(cfg.secrets_key_file, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_size == 32,
          "the key is 32 bytes, 0600");
    char text[8192];
    int fd = open(path, O_RDONLY);
    ssize_t tn = read(fd, text, sizeof(text) - 1);
    close(fd);
    text[tn > 0 ? tn : 0] = '\0';
    CHECK(tn > 0 && !strstr(text, v) && !strstr(text, "a1B2c3"),
          "the file does not hold the value");
    struct secret_meta got;
    char *value = NULL;
    size_t len = 0;
    CHECK(secret_store_get(st, "github", &got, &value, &len, err, sizeof(err)) == 1 && value &&
              len == strlen(v) && strcmp(value, v) == 0,
          "get decrypts the value (%s)", err);
    CHECK(got.hosts && got.hosts[0] && strcmp(got.hosts[0], "api.github.com") == 0 &&
              !got.hosts[1] && got.header && strcmp(got.header, "Authorization") == 0 &&
              got.set_at[0],
          "... with its hosts, header and the time it was set");
    secret_free(value);
    secret_meta_clear(&got);
    CHECK(secret_store_get(st, "nope", &got, &value, &len, err, sizeof(err)) == 0,
          "a missing secret is 0, not an error");

    /* Someone without the key adds a host, to have the value injected there. */
    char *edited = xstrdup(text);
    char *h = strstr(edited, "\"api.github.com\"");
    CHECK(h != NULL, "the hosts are in clear in the file (to edit)");
    if (h) {
        char *ne = xasprintf("%.*s\"api.github.com\", \"evil.example.com\"%s", (int)(h - edited),
                             edited, h + strlen("\"api.github.com\""));
        fd = open(path, O_WRONLY | O_TRUNC);
        CHECK(write(fd, ne, strlen(ne)) == (ssize_t)strlen(ne), "wrote the edited file");
        close(fd);
        free(ne);
        err[0] = '\0';
        CHECK(secret_store_get(st, "github", &got, &value, &len, err, sizeof(err)) == -1 &&
                  strstr(err, "does not decrypt"),
              "a file whose hosts were changed without the key is refused (%s)", err);
        fd = open(path, O_WRONLY | O_TRUNC);
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "restored the file");
        close(fd);
    }
    free(edited);

    /* Another key: nothing decrypts. */
    fd = open(cfg.secrets_key_file, O_WRONLY | O_TRUNC);
    CHECK(write(fd, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", 65) == 65,
          "replaced the key with another (hex form)");
    close(fd);
    CHECK(secret_store_get(st, "github", &got, &value, &len, err, sizeof(err)) == -1 &&
              strstr(err, "does not decrypt"),
          "a wrong key is refused (%s)", err);
    unlink(cfg.secrets_key_file);
    CHECK(secret_store_get(st, "github", &got, &value, &len, err, sizeof(err)) == -1 &&
              strstr(err, "missing"),
          "a missing key is said (%s)", err);
    CHECK(secret_store_get(st, "github", &got, NULL, NULL, err, sizeof(err)) == 1,
          "the metadata is still listed without the key");
    secret_meta_clear(&got);

    chmod(cfg.secrets_dir, 0755);
    CHECK(secret_store_get(st, "github", &got, NULL, NULL, err, sizeof(err)) == -1 &&
              strstr(err, "open to other users"),
          "a store directory others can read is refused (%s)", err);
    chmod(cfg.secrets_dir, 0700);
    chmod(path, 0644);
    CHECK(secret_store_get(st, "github", &got, NULL, NULL, err, sizeof(err)) == -1 &&
              strstr(err, "open to other users"),
          "a secret's file others can read is refused (%s)", err);
    chmod(path, 0600);
    CHECK(secret_store_rm(st, "github", err, sizeof(err)) == 1 &&
              secret_store_rm(st, "github", err, sizeof(err)) == 0,
          "rm removes it once");
    CHECK(secret_store_get(st, "../etc/passwd", &got, NULL, NULL, err, sizeof(err)) == -1,
          "a name with a path in it is refused");
    free(path);
    secret_meta_clear(&m);
    secret_store_free(st);
    config_free(&cfg);
}

int main(void)
{
    test_keylike();
    test_standin();
    test_redact();
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_store();
    char *cmd = xasprintf("rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    free(cmd);
    return test_done();
}
