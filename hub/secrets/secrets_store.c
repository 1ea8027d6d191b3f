/* The secret store's files and their encryption (secrets.h). */
#include "secrets.h"
#include "filewrite.h"
#include "jsonfile.h"
#include "secret.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_LEN 32
#define NONCE_LEN 12
#define TAG_LEN 16
#define FILE_MAX (4 * SECRET_VALUE_MAX)
#define AAD_MAX (SECRET_NAME_MAX + SECRET_MAX_HOSTS * (SECRET_HOST_MAX + 1) + 3 * 64 + 64)

struct secret_store {
    char *dir;
    char *key_path;
    bool key_from_credential;
};

/* ---- names ---- */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool secret_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SECRET_NAME_MAX || !alnum(s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

bool secret_host_valid(const char *s)
{
    return host_pattern_valid(s);
}

bool secret_header_valid(const char *s)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    size_t n = strlen(s);
    if (n == 0 || n > SECRET_FIELD_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && !strchr(extra, s[i]))
            return false;
    return true;
}

bool secret_query_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SECRET_FIELD_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && !strchr("-._~", s[i]))
            return false;
    return true;
}

bool secret_host_matches(const struct secret_meta *m, const char *host)
{
    for (char **h = m->hosts; h && *h; h++) {
        if (strncmp(*h, "*.", 2) != 0) {
            if (strcasecmp(*h, host) == 0)
                return true;
            continue;
        }
        /* "*.example.com": a name under example.com, not example.com itself. */
        size_t hl = strlen(host), dl = strlen(*h + 1); /* ".example.com" */
        if (hl > dl && strcasecmp(host + hl - dl, *h + 1) == 0)
            return true;
    }
    return false;
}

const char *secret_injectable(const char *value, size_t len)
{
    if (len == 0)
        return "it is empty";
    if (len > SECRET_INJECT_MAX)
        return "it is longer than 4096 bytes, too long for a request header";
    for (size_t i = 0; i < len; i++)
        if (value[i] < 0x20 || value[i] > 0x7e)
            return "it holds a byte that cannot be put into a request header (a control "
                   "character, a line break or a non-ASCII byte)";
    if (value[0] == ' ' || value[len - 1] == ' ')
        return "it begins or ends with a space";
    return NULL;
}

void secret_meta_clear(struct secret_meta *m)
{
    jf_strv_free(m->hosts);
    free(m->header);
    free(m->query);
    memset(m, 0, sizeof(*m));
}

void secret_meta_copy(struct secret_meta *dst, const struct secret_meta *src)
{
    memset(dst, 0, sizeof(*dst));
    memcpy(dst->name, src->name, sizeof(dst->name));
    memcpy(dst->set_at, src->set_at, sizeof(dst->set_at));
    dst->hosts = strv_dup(src->hosts);
    dst->header = src->header ? xstrdup(src->header) : NULL;
    dst->query = src->query ? xstrdup(src->query) : NULL;
}

/* ---- the store and its directory ---- */

struct secret_store *secret_store_open(const char *dir, const char *key_file)
{
    struct secret_store *st = xcalloc(1, sizeof(*st));
    st->dir = xstrdup(dir);
    const char *creds = getenv("CREDENTIALS_DIRECTORY");
    char *cred = creds && *creds ? xasprintf("%s/%s", creds, SECRET_CREDENTIAL_ID) : NULL;
    if (cred && access(cred, F_OK) == 0) {
        st->key_path = cred;
        st->key_from_credential = true;
    } else {
        free(cred);
        st->key_path = xstrdup(key_file);
    }
    return st;
}

void secret_store_free(struct secret_store *st)
{
    if (!st)
        return;
    free(st->dir);
    free(st->key_path);
    free(st);
}

const char *secret_store_dir(const struct secret_store *st)
{
    return st->dir;
}

const char *secret_store_key_path(const struct secret_store *st)
{
    return st->key_path;
}

/* Only the hub's user may read or list what is in there: the same rule as ssh's for its
 * keys. A directory or file that others can reach is refused, not repaired, because
 * someone may already have read it. */
static int check_private(const char *path, const struct stat *st, bool dir, char *err,
                         size_t errlen)
{
    if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s: not a %s", path, dir ? "directory" : "regular file");
        return -1;
    }
    if (st->st_uid != geteuid()) {
        snprintf(err, errlen, "%s is owned by uid %u, not by the hub's user (uid %u)", path,
                 (unsigned)st->st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st->st_mode & 077) {
        snprintf(err, errlen,
                 "%s is open to other users (mode %04o); it must be %s: fix it with chmod %s "
                 "and consider the values in it exposed",
                 path, (unsigned)(st->st_mode & 07777), dir ? "0700" : "0600", dir ? "700" : "600");
        return -1;
    }
    return 0;
}

/* The directory, checked; created 0700 (parents 0711) when create is set. 1 there, 0
 * missing (and not created), -1 and err. */
static int store_dir(struct secret_store *st, bool create, char *err, size_t errlen)
{
    struct stat sb;
    if (lstat(st->dir, &sb) < 0) {
        if (errno != ENOENT) {
            snprintf(err, errlen, "%s: %s", st->dir, strerror(errno));
            return -1;
        }
        if (!create)
            return 0;
        if (mkdir_parents(st->dir, 0700) < 0 || lstat(st->dir, &sb) < 0) {
            snprintf(err, errlen, "creating %s: %s", st->dir, strerror(errno));
            return -1;
        }
    }
    return check_private(st->dir, &sb, true, err, errlen) < 0 ? -1 : 1;
}

/* ---- the key ---- */

/* Reads the key (32 raw bytes, or 64 hex digits and an optional newline) into
 * secret memory. With create, a missing key file is made. 1 and *key, 0 missing, -1. */
static int load_key(struct secret_store *st, bool create, bool *created, unsigned char **key,
                    char *err, size_t errlen)
{
    *key = NULL;
    int fd = open(st->key_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT && create && !st->key_from_credential) {
        unsigned char *k = secret_alloc(KEY_LEN);
        if (RAND_bytes(k, KEY_LEN) != 1) {
            secret_free(k);
            snprintf(err, errlen, "no randomness for a new store key");
            return -1;
        }
        char *copy = xstrdup(st->key_path);
        char *slash = strrchr(copy, '/');
        if (slash && slash != copy) {
            *slash = '\0';
            mkdir_p(copy, 0711);
        }
        free(copy);
        int wfd = open(st->key_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (wfd < 0 || write_all(wfd, k, KEY_LEN) < 0 || fsync(wfd) < 0) {
            snprintf(err, errlen, "creating the store key %s: %s", st->key_path, strerror(errno));
            if (wfd >= 0) {
                close(wfd);
                unlink(st->key_path);
            }
            secret_free(k);
            return -1;
        }
        close(wfd);
        if (created)
            *created = true;
        *key = k;
        return 1;
    }
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "the store key %s: %s", st->key_path, strerror(errno));
        return -1;
    }
    struct stat sb;
    /* A systemd credential is the unit's own (root:root 0400 or a ramfs of its own). */
    if (fstat(fd, &sb) < 0 ||
        (!st->key_from_credential && check_private(st->key_path, &sb, false, err, errlen) < 0)) {
        if (!err[0])
            snprintf(err, errlen, "the store key %s: %s", st->key_path, strerror(errno));
        close(fd);
        return -1;
    }
    unsigned char *raw = secret_alloc(2 * KEY_LEN + 4);
    ssize_t n = read_full(fd, raw, 2 * KEY_LEN + 3);
    close(fd);
    unsigned char *k = secret_alloc(KEY_LEN);
    bool ok = false;
    if (n == KEY_LEN) {
        memcpy(k, raw, KEY_LEN);
        ok = true;
    } else if (n >= 2 * KEY_LEN && n <= 2 * KEY_LEN + 2 &&
               (n == 2 * KEY_LEN || raw[2 * KEY_LEN] == '\n' ||
                (raw[2 * KEY_LEN] == '\r' && n == 2 * KEY_LEN + 2))) {
        ok = true;
        for (size_t i = 0; i < KEY_LEN && ok; i++) {
            int hi = hex_digit_value((char)raw[2 * i]), lo = hex_digit_value((char)raw[2 * i + 1]);
            ok = hi >= 0 && lo >= 0;
            k[i] = (unsigned char)(hi << 4 | lo);
        }
    }
    secret_free(raw);
    if (!ok) {
        secret_free(k);
        snprintf(err, errlen, "the store key %s must hold 32 bytes, or 64 hexadecimal digits",
                 st->key_path);
        return -1;
    }
    *key = k;
    return 1;
}

/* ---- one secret's file ---- */

static char *secret_path(const struct secret_store *st, const char *name)
{
    return xasprintf("%s/%s.json", st->dir, name);
}

/* The associated data: everything the file says besides the value, one field a line
 * (none may hold a newline), so that no field can be changed without the key. */
static size_t build_aad(const struct secret_meta *m, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "isolategpt-secret-v1\n%s\n", m->name);
    for (char **h = m->hosts; h && *h && n < cap; h++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", h == m->hosts ? "" : ",", *h);
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, "\n%s\n%s\n%s\n", m->header ? m->header : "",
                              m->query ? m->query : "", m->set_at);
    return n < cap ? n : cap;
}

static int gcm(bool enc, const unsigned char *key, const unsigned char *nonce, const char *aad,
               size_t aad_len, const unsigned char *in, size_t len, unsigned char *out,
               unsigned char *tag)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int outl = 0, ok = ctx != NULL;
    ok = ok && EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1;
    ok = ok && EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) == 1;
    ok = ok && EVP_CipherUpdate(ctx, NULL, &outl, (const unsigned char *)aad, (int)aad_len) == 1;
    ok = ok && EVP_CipherUpdate(ctx, out, &outl, in, (int)len) == 1;
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1;
    ok = ok && EVP_CipherFinal_ex(ctx, out + outl, &outl) == 1;
    if (ok && enc)
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : -1;
}

static char *b64_encode(const unsigned char *in, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    return out;
}

/* Decodes standard base64 into out (room for 3 * len / 4); the decoded length, -1. */
static ssize_t b64_decode(const char *in, unsigned char *out)
{
    size_t len = strlen(in);
    if (len == 0 || len % 4)
        return -1;
    int n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
    if (n < 0)
        return -1;
    size_t pad = (in[len - 1] == '=') + (in[len - 2] == '=');
    return n - (ssize_t)pad;
}

static json_t *meta_json(const struct secret_meta *m)
{
    json_t *hosts = json_array();
    for (char **h = m->hosts; h && *h; h++)
        json_array_append_new(hosts, json_string(*h));
    json_t *o =
        json_pack("{s:i,s:s,s:o,s:s}", "v", 1, "name", m->name, "hosts", hosts, "set", m->set_at);
    if (m->header)
        json_object_set_new(o, "header", json_string(m->header));
    if (m->query)
        json_object_set_new(o, "query", json_string(m->query));
    return o;
}

/* Parses a secret's file into meta and, when wanted, its nonce and sealed value. */
static bool parse_file(struct jf_ctx *jc, const json_t *root, const char *name,
                       struct secret_meta *m, const char **nonce, const char **sealed)
{
    static const char *const keys[] = {"v",   "name",  "hosts", "header", "query",
                                       "set", "nonce", "value", NULL};
    const char *fname = NULL, *header = NULL, *query = NULL, *set = NULL;
    int64_t v = 0;
    memset(m, 0, sizeof(*m));
    if (!jf_object(jc, root, "", keys) || !jf_int(jc, root, "", "v", true, 1, 1, &v) ||
        !jf_string(jc, root, "", "name", true, SECRET_NAME_MAX, &fname) ||
        !jf_strings(jc, root, "", "hosts", true, SECRET_MAX_HOSTS, SECRET_HOST_MAX, &m->hosts,
                    NULL) ||
        !jf_string(jc, root, "", "header", false, SECRET_FIELD_MAX, &header) ||
        !jf_string(jc, root, "", "query", false, SECRET_FIELD_MAX, &query) ||
        !jf_string(jc, root, "", "set", true, sizeof(m->set_at) - 1, &set) ||
        !jf_string(jc, root, "", "nonce", true, 64, nonce) ||
        !jf_string(jc, root, "", "value", true, FILE_MAX, sealed))
        return false;
    if (strcmp(fname, name) != 0)
        return jf_fail(jc, "", "name", "must equal the file name (NAME.json)");
    for (char **h = m->hosts; *h; h++)
        if (!secret_host_valid(*h))
            return jf_fail(jc, "", "hosts", "\"%.80s\" is not a host name", *h);
    if ((header && !secret_header_valid(header)) || (query && !secret_query_valid(query)) ||
        strchr(set, '\n'))
        return jf_fail(jc, "", "header", "a field is not valid");
    str_copy(m->name, fname, sizeof(m->name));
    str_copy(m->set_at, set, sizeof(m->set_at));
    m->header = header ? xstrdup(header) : NULL;
    m->query = query ? xstrdup(query) : NULL;
    return true;
}

/* Opens NAME's file, checks it is private, parses it. 1, 0 missing, -1. */
static int read_file(struct secret_store *st, const char *name, struct secret_meta *m,
                     json_t **root_out, const char **nonce, const char **sealed, char *err,
                     size_t errlen)
{
    char *path = secret_path(st, name);
    struct jf_ctx jc = {.file = path, .err = err, .errlen = errlen};
    struct stat sb;
    int rc = -1;
    *root_out = NULL;
    if (lstat(path, &sb) < 0) {
        if (errno == ENOENT)
            rc = 0;
        else
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (check_private(path, &sb, false, err, errlen) < 0)
        goto out;
    json_t *root = jf_load(&jc, FILE_MAX + 4096);
    if (!root)
        goto out;
    const char *dummy_n, *dummy_s;
    if (!parse_file(&jc, root, name, m, nonce ? nonce : &dummy_n, sealed ? sealed : &dummy_s)) {
        secret_meta_clear(m);
        json_decref(root);
        goto out;
    }
    *root_out = root;
    rc = 1;
out:
    free(path);
    return rc;
}

/* The store's folder for an operation on the secret name: 1 if it is there, 0 if there
 * is none yet, -1 (err) if the name is not one or the folder cannot be used. */
static int named_store_dir(struct secret_store *st, const char *name, char *err, size_t errlen)
{
    if (!secret_name_valid(name)) {
        snprintf(err, errlen, "\"%.80s\" is not a secret name", name);
        return -1;
    }
    return store_dir(st, false, err, errlen);
}

int secret_store_get(struct secret_store *st, const char *name, struct secret_meta *meta,
                     char **value, size_t *len, char *err, size_t errlen)
{
    err[0] = '\0';
    if (value)
        *value = NULL;
    int d = named_store_dir(st, name, err, errlen);
    if (d <= 0)
        return d;
    json_t *root;
    const char *nonce_b64, *sealed_b64;
    int rc = read_file(st, name, meta, &root, &nonce_b64, &sealed_b64, err, errlen);
    if (rc <= 0 || !value)
        goto out;
    rc = -1;
    unsigned char *key = NULL;
    int k = load_key(st, false, NULL, &key, err, errlen);
    if (k <= 0) {
        if (k == 0)
            snprintf(err, errlen,
                     "the store key %s is missing, so secret %s cannot be read (the key "
                     "made with the store must be put back there)",
                     st->key_path, name);
        goto fail;
    }
    unsigned char nonce[64];
    size_t slen = strlen(sealed_b64);
    unsigned char *sealed = xmalloc(slen + 4);
    ssize_t nn = b64_decode(nonce_b64, nonce);
    ssize_t sn = b64_decode(sealed_b64, sealed);
    char *plain = NULL;
    if (nn != NONCE_LEN || sn < TAG_LEN || sn - TAG_LEN > SECRET_VALUE_MAX) {
        snprintf(err, errlen, "secret %s: its file is damaged (nonce or value)", name);
    } else {
        char aad[AAD_MAX];
        size_t alen = build_aad(meta, aad, sizeof(aad));
        size_t plen = (size_t)sn - TAG_LEN;
        plain = secret_alloc(plen + 1);
        if (gcm(false, key, nonce, aad, alen, sealed, plen, (unsigned char *)plain, sealed + plen) <
            0) {
            snprintf(err, errlen,
                     "secret %s does not decrypt with the store key %s: the key is not the "
                     "one it was stored with, or the file was changed",
                     name, st->key_path);
            secret_free(plain);
            plain = NULL;
        } else {
            plain[plen] = '\0';
            *value = plain;
            if (len)
                *len = plen;
            rc = 1;
        }
    }
    free(sealed);
    secret_free(key);
fail:
    if (rc < 0)
        secret_meta_clear(meta);
out:
    json_decref(root);
    return rc;
}

int secret_store_set(struct secret_store *st, struct secret_meta *meta, const char *value,
                     size_t len, bool *created_key, char *err, size_t errlen)
{
    err[0] = '\0';
    if (created_key)
        *created_key = false;
    if (!secret_name_valid(meta->name)) {
        snprintf(err, errlen, "\"%.80s\" is not a secret name (1 to 64 of A-Z a-z 0-9 _ . -)",
                 meta->name);
        return -1;
    }
    if (len == 0 || len > SECRET_VALUE_MAX || memchr(value, '\0', len)) {
        snprintf(err, errlen, "a secret's value must be 1 to %d bytes without NUL",
                 SECRET_VALUE_MAX);
        return -1;
    }
    if (store_dir(st, true, err, errlen) < 0)
        return -1;
    unsigned char *key = NULL;
    int k = load_key(st, true, created_key, &key, err, errlen);
    if (k <= 0) {
        if (k == 0)
            snprintf(err, errlen, "the store key %s is missing", st->key_path);
        return -1;
    }
    format_iso8601(now_real_ns(), meta->set_at, sizeof(meta->set_at));
    unsigned char nonce[NONCE_LEN];
    unsigned char *sealed = xmalloc(len + TAG_LEN);
    char aad[AAD_MAX];
    size_t alen = build_aad(meta, aad, sizeof(aad));
    int rc = -1;
    if (RAND_bytes(nonce, sizeof(nonce)) != 1 ||
        gcm(true, key, nonce, aad, alen, (const unsigned char *)value, len, sealed, sealed + len) <
            0) {
        snprintf(err, errlen, "encrypting secret %s failed", meta->name);
        goto out;
    }
    json_t *o = meta_json(meta);
    char *nb = b64_encode(nonce, sizeof(nonce)), *sb = b64_encode(sealed, len + TAG_LEN);
    json_object_set_new(o, "nonce", json_string(nb));
    json_object_set_new(o, "value", json_string(sb));
    free(nb);
    free(sb);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(o);
    char *path = secret_path(st, meta->name);
    char *line = xasprintf("%s\n", text);
    rc = file_write_atomic(path, line, strlen(line), NULL, 0, 0600, err, errlen);
    free(line);
    free(text);
    free(path);
out:
    free(sealed);
    secret_free(key);
    return rc;
}

static int cmp_meta(const void *a, const void *b)
{
    return strcmp(((const struct secret_meta *)a)->name, ((const struct secret_meta *)b)->name);
}

int secret_store_list(struct secret_store *st, struct secret_meta **out, size_t *n, char *err,
                      size_t errlen)
{
    *out = NULL;
    *n = 0;
    err[0] = '\0';
    int d = store_dir(st, false, err, errlen);
    if (d <= 0)
        return d;
    DIR *dir = opendir(st->dir);
    if (!dir) {
        snprintf(err, errlen, "%s: %s", st->dir, strerror(errno));
        return -1;
    }
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(dir))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0 || e->d_name[0] == '.')
            continue;
        char name[SECRET_NAME_MAX + 1];
        if (l - 5 > SECRET_NAME_MAX)
            continue;
        memcpy(name, e->d_name, l - 5);
        name[l - 5] = '\0';
        if (!secret_name_valid(name))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = xrealloc(*out, cap * sizeof(**out));
        }
        json_t *root;
        if (read_file(st, name, &(*out)[*n], &root, NULL, NULL, err, errlen) <= 0) {
            rc = -1;
            break;
        }
        json_decref(root);
        (*n)++;
    }
    closedir(dir);
    if (rc < 0) {
        secret_meta_list_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    if (*n)
        qsort(*out, *n, sizeof(**out), cmp_meta);
    return 0;
}

void secret_meta_list_free(struct secret_meta *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        secret_meta_clear(&v[i]);
    free(v);
}

int secret_store_rm(struct secret_store *st, const char *name, char *err, size_t errlen)
{
    err[0] = '\0';
    int d = named_store_dir(st, name, err, errlen);
    if (d <= 0)
        return d;
    char *path = secret_path(st, name);
    int rc = unlink(path) == 0 ? 1 : errno == ENOENT ? 0 : -1;
    if (rc < 0)
        snprintf(err, errlen, "removing %s: %s", path, strerror(errno));
    free(path);
    return rc;
}
