/* Bearer tokens of hub serve --http and hub repl-server --tokens. The file holds one
 * line per token, "sha256:HEX
 * USER" (the SHA-256 of the token in lower-case hex, and the user it stands for), with
 * '#' comments and blank lines: the tokens themselves are never stored. A presented
 * token is hashed and compared with every line in constant time. `hub serve token add`
 * (tokens_add) makes a token of 32 random bytes (base64url), appends its line and
 * prints it once. */
#include "log.h"
#include "sha256.h"
#include "tokens.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKENS_MAX 10000
#define LINE_MAX_LEN 256

struct token_entry {
    unsigned char hash[SHA256_LEN];
    char user[65];
};

struct tokens {
    struct token_entry *v;
    size_t n;
};

struct tokens *tokens_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct tokens *t = xcalloc(1, sizeof(*t));
    char line[LINE_MAX_LEN + 2];
    unsigned lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] != '\n' && !feof(f)) {
            snprintf(err, errlen, "%s:%u: line too long", path, lineno);
            goto fail;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' ||
                           line[len - 1] == '\t'))
            line[--len] = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        char hex[65], user[65], extra[2];
        if (sscanf(p, "sha256:%64[0-9a-fA-F] %64s %1s", hex, user, extra) != 2 ||
            strlen(hex) != 64 || !user_id_valid(user)) {
            snprintf(err, errlen,
                     "%s:%u: expected 'sha256:HEX USER' (64 hex digits, a user id of a-z, A-Z, "
                     "0-9, _ and -)",
                     path, lineno);
            goto fail;
        }
        if (t->n >= TOKENS_MAX) {
            snprintf(err, errlen, "%s: more than %d tokens", path, TOKENS_MAX);
            goto fail;
        }
        t->v = xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
        struct token_entry *e = &t->v[t->n++];
        for (int i = 0; i < SHA256_LEN; i++)
            e->hash[i] =
                (unsigned char)(hex_digit_value(hex[2 * i]) << 4 | hex_digit_value(hex[2 * i + 1]));
        str_copy(e->user, user, sizeof(e->user));
    }
    fclose(f);
    return t;
fail:
    fclose(f);
    tokens_free(t);
    return NULL;
}

void tokens_free(struct tokens *t)
{
    if (!t)
        return;
    OPENSSL_cleanse(t->v, t->n * sizeof(*t->v));
    free(t->v);
    free(t);
}

const char *tokens_check(const struct tokens *t, const char *token, size_t len, size_t *index)
{
    unsigned char h[SHA256_LEN];
    if (len == 0 || len > 512 || !sha256(token, len, h))
        return NULL;
    const char *found = NULL;
    /* Every line is compared, and each comparison takes the same time: how long the
     * check takes says nothing about which line (nearly) matched. */
    for (size_t i = 0; i < t->n; i++)
        if (CRYPTO_memcmp(h, t->v[i].hash, SHA256_LEN) == 0 && !found) {
            found = t->v[i].user;
            *index = i;
        }
    return found;
}

size_t tokens_find_line(const struct tokens *t, const struct tokens *old, size_t i)
{
    if (!t || !old || i >= old->n)
        return SIZE_MAX;
    for (size_t j = 0; j < t->n; j++)
        if (memcmp(t->v[j].hash, old->v[i].hash, SHA256_LEN) == 0 &&
            strcmp(t->v[j].user, old->v[i].user) == 0)
            return j;
    return SIZE_MAX;
}

size_t tokens_count(const struct tokens *t)
{
    return t ? t->n : 0;
}

const char *tokens_user(const struct tokens *t, size_t i)
{
    return i < t->n ? t->v[i].user : NULL;
}

int tokens_add(const char *path, const char *user)
{
    unsigned char raw[32], h[SHA256_LEN];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        log_warnx("token add: no randomness from OpenSSL");
        return -1;
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char token[64];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(raw); i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16;
        if (i + 1 < sizeof(raw))
            v |= (uint32_t)raw[i + 1] << 8;
        if (i + 2 < sizeof(raw))
            v |= raw[i + 2];
        size_t chars = i + 2 < sizeof(raw) ? 4 : i + 1 < sizeof(raw) ? 3 : 2;
        for (size_t k = 0; k < chars; k++)
            token[n++] = b64[(v >> (18 - 6 * k)) & 63];
    }
    token[n] = '\0';
    OPENSSL_cleanse(raw, sizeof(raw));
    if (!sha256(token, n, h)) {
        log_warnx("token add: SHA-256 failed");
        return -1;
    }
    char line[160], hex[2 * SHA256_LEN + 1];
    hex_encode(h, SHA256_LEN, hex);
    int len = snprintf(line, sizeof(line), "sha256:%s %s\n", hex, user);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, line, (size_t)len) < 0) {
        log_warn("token add: %s", path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    printf("%s\n", token);
    OPENSSL_cleanse(token, sizeof(token));
    return 0;
}
