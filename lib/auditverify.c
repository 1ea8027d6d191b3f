#include "auditverify.h"
#include "auditchain.h"
#include "auditkey.h"
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char sig_key[] = ",\"isolate.signature\":\"";

struct walk {
    struct auditverify_report *r;
    EVP_PKEY *const *keys;
    size_t nkeys;
    bool started;
    uint64_t seq;
    char hash[2 * SHA256_LEN + 1];
    char prev_where[600]; /* FILE:LINE of the record before */
    uint64_t unsealed;
    char unsealed_from[600];
};

__attribute__((format(printf, 4, 5))) static enum auditverify_status
fault(struct auditverify_report *r, enum auditverify_status st, const char *where, const char *fmt,
      ...)
{
    char what[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(r->what, sizeof(r->what), "%s: %s", where, what);
    r->status = st;
    return st;
}

static bool is_zero_hex(const char *hex)
{
    for (int i = 0; i < 64; i++)
        if (hex[i] != '0')
            return false;
    return true;
}

static EVP_PKEY *find_key(const struct walk *w, const char *id)
{
    for (size_t i = 0; i < w->nkeys; i++) {
        char kid[AUDITKEY_ID_LEN + 1];
        if (auditkey_id(w->keys[i], kid) && strcmp(kid, id) == 0)
            return w->keys[i];
    }
    return NULL;
}

static enum auditverify_status check_signature(struct walk *w, const char *line, size_t len,
                                               const char *where)
{
    json_error_t je;
    json_t *rec = json_loadb(line, len, 0, &je);
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(json_object_get(rec, "isolate"), "audit"), "checkpoint"),
        "key"));
    const char *b64 = json_string_value(json_object_get(rec, "isolate.signature"));
    enum auditverify_status st = AV_OK;
    const char *sig_at = NULL;
    for (const char *p = line;
         (p = memmem(p, len - (size_t)(p - line), sig_key, sizeof(sig_key) - 1)) != NULL; p++)
        sig_at = p;
    unsigned char sig[AUDITKEY_SIG_LEN + 3];
    EVP_PKEY *k = id ? find_key(w, id) : NULL;
    if (!rec || !id || !b64 || !sig_at)
        st = fault(w->r, AV_SIGNATURE, where, "a checkpoint without its key id or signature");
    else if (!k)
        st = fault(w->r, AV_SIGNATURE, where,
                   "checkpoint signed with key %.*s, which is not among the keys given", 16, id);
    else if (strlen(b64) != 88 || EVP_DecodeBlock(sig, (const unsigned char *)b64, 88) != 66 ||
             !auditkey_verify(k, line, (size_t)(sig_at - line), sig, AUDITKEY_SIG_LEN))
        st = fault(w->r, AV_SIGNATURE, where,
                   "bad signature: the checkpoint or the chain it seals was changed");
    json_decref(rec);
    return st;
}

/* One record: linked to the one before, and a checkpoint's signature good. */
static enum auditverify_status check_line(struct walk *w, const char *line, size_t len,
                                          const char *where, bool first_of_file)
{
    struct auditverify_report *r = w->r;
    uint64_t seq;
    const char *prev;
    bool sig;
    if (!auditchain_parse_tail(line, len, &seq, &prev, &sig))
        return fault(r, AV_BROKEN, where,
                     "a record without its chain fields: inserted, edited, or written by a "
                     "writer that does not chain its records");
    char prev_hex[65];
    memcpy(prev_hex, prev, 64);
    prev_hex[64] = '\0';
    if (w->started) {
        uint64_t want = w->seq + 1;
        if (seq == want && strcmp(prev_hex, w->hash) == 0) {
            /* linked */
        } else if (seq == 1 && is_zero_hex(prev_hex)) {
            return fault(r, AV_BROKEN, where,
                         "a new chain starts here: it does not continue %s (the records before "
                         "it were not chained, or the chain was lost)",
                         w->prev_where);
        } else if (seq == want) {
            if (first_of_file)
                return fault(r, AV_BROKEN, w->prev_where,
                             "record changed: the next file's link (%s) names another hash", where);
            return fault(r, AV_BROKEN, w->prev_where,
                         "record changed: its hash is not the one the next record names");
        } else if (seq > want) {
            return fault(r, AV_BROKEN, where,
                         "%" PRIu64 " record(s) missing before this one, after %s (seq jumps "
                         "from %" PRIu64 " to %" PRIu64 ")%s",
                         seq - want, w->prev_where, w->seq, seq,
                         first_of_file ? ": that file's tail was cut, or a file of the set is "
                                         "missing"
                                       : ": deleted or moved");
        } else {
            return fault(r, AV_BROKEN, where,
                         "record out of order (seq %" PRIu64 " after %" PRIu64 " at %s): "
                         "inserted, moved, or the same file given twice",
                         seq, w->seq, w->prev_where);
        }
    } else {
        r->first_seq = seq;
    }
    if (sig) {
        enum auditverify_status st = check_signature(w, line, len, where);
        if (st != AV_OK)
            return st;
        r->checkpoints++;
        snprintf(r->sealed_at, sizeof(r->sealed_at), "%s", where);
        w->unsealed = 0;
    } else if (w->unsealed++ == 0) {
        snprintf(w->unsealed_from, sizeof(w->unsealed_from), "%s", where);
    }
    unsigned char h[SHA256_LEN];
    sha256(line, len, h);
    hex_encode(h, SHA256_LEN, w->hash);
    w->seq = seq;
    w->started = true;
    r->last_seq = seq;
    r->records++;
    snprintf(w->prev_where, sizeof(w->prev_where), "%s", where);
    return AV_OK;
}

/* One line, newline included, into *buf, at most AUDITCHAIN_MAX_LINE bytes kept: -1 at
 * the end, else its length (past the bound for a line that was too long). */
static ssize_t read_line(FILE *f, char **buf, size_t *cap)
{
    size_t n = 0;
    int ch;
    while ((ch = getc_unlocked(f)) != EOF) {
        if (n < AUDITCHAIN_MAX_LINE) {
            if (n + 2 > *cap) {
                *cap = *cap ? *cap * 2 : 4096;
                *buf = xrealloc(*buf, *cap);
            }
            (*buf)[n] = (char)ch;
        }
        n++;
        if (ch == '\n')
            break;
    }
    if (ch == EOF && n == 0)
        return -1;
    return (ssize_t)n;
}

/* A file of the set, read as it is or, named *.gz (logrotate's compress), through
 * gzip -dc. */
struct input {
    FILE *f;
    pid_t pid; /* gzip's, or -1 */
};

static bool input_open(const char *path, struct input *in)
{
    in->pid = -1;
    size_t n = strlen(path);
    if (n < 3 || strcmp(path + n - 3, ".gz") != 0)
        return (in->f = fopen(path, "re")) != NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    int p[2] = {-1, -1};
    if (fd < 0 || pipe2(p, O_CLOEXEC) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {"gzip", "-dc", NULL};
    int rc = posix_spawnp(&in->pid, "gzip", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        errno = rc;
        return false;
    }
    in->f = fdopen(p[0], "r");
    return in->f != NULL;
}

/* false when gzip said the archive is damaged (only asked after reading it all). */
static bool input_close(struct input *in, bool read_all)
{
    fclose(in->f);
    if (in->pid < 0)
        return true;
    int status = 0;
    while (waitpid(in->pid, &status, 0) < 0 && errno == EINTR)
        ;
    return !read_all || (WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The seq of a file's first record, for putting the files in chain order. */
static uint64_t first_seq(const char *path)
{
    struct input in;
    if (!input_open(path, &in))
        return UINT64_MAX;
    FILE *f = in.f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = read_line(f, &line, &cap);
    uint64_t seq = UINT64_MAX;
    const char *prev;
    if (n > 0 && (size_t)n <= AUDITCHAIN_MAX_LINE && line[n - 1] == '\n')
        n--;
    if (n <= 0 || (size_t)n > AUDITCHAIN_MAX_LINE ||
        !auditchain_parse_tail(line, (size_t)n, &seq, &prev, NULL))
        seq = UINT64_MAX;
    free(line);
    input_close(&in, false);
    return seq;
}

struct ordered {
    const char *path;
    uint64_t seq;
    size_t given;
};

static int by_seq(const void *a, const void *b)
{
    const struct ordered *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->given < y->given ? -1 : x->given > y->given;
}

static enum auditverify_status walk_file(struct walk *w, const char *path)
{
    struct input in;
    if (!input_open(path, &in))
        return fault(w->r, AV_UNREADABLE, path, "%s", strerror(errno));
    FILE *f = in.f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0;
    enum auditverify_status st = AV_OK;
    char where[600];
    while (st == AV_OK && (n = read_line(f, &line, &cap)) >= 0) {
        lineno++;
        snprintf(where, sizeof(where), "%s:%" PRIu64, path, lineno);
        if ((size_t)n > AUDITCHAIN_MAX_LINE)
            st = fault(w->r, AV_BROKEN, where, "a line longer than any record (%zd bytes)", n);
        else if (n == 0 || line[n - 1] != '\n')
            st = fault(w->r, AV_BROKEN, where, "the last record is cut short (no line end)");
        else
            st = check_line(w, line, (size_t)n - 1, where, lineno == 1);
    }
    if (st == AV_OK && ferror(f))
        st = fault(w->r, AV_UNREADABLE, path, "read error");
    bool whole = input_close(&in, st == AV_OK);
    if (st == AV_OK && !whole)
        st = fault(w->r, AV_UNREADABLE, path, "gzip cannot decompress it (damaged)");
    if (st == AV_OK && lineno == 0)
        st = fault(w->r, AV_BROKEN, path, "empty: a file of the set with no records");
    free(line);
    return st;
}

enum auditverify_status auditverify_files(const char *const *files, size_t nfiles,
                                          EVP_PKEY *const *keys, size_t nkeys,
                                          struct auditverify_report *r)
{
    memset(r, 0, sizeof(*r));
    struct ordered *o = xcalloc(nfiles ? nfiles : 1, sizeof(*o));
    for (size_t i = 0; i < nfiles; i++)
        o[i] = (struct ordered){.path = files[i], .seq = first_seq(files[i]), .given = i};
    qsort(o, nfiles, sizeof(*o), by_seq);
    struct walk w = {.r = r, .keys = keys, .nkeys = nkeys};
    enum auditverify_status st = AV_OK;
    for (size_t i = 0; i < nfiles && st == AV_OK; i++)
        st = walk_file(&w, o[i].path);
    free(o);
    if (st != AV_OK)
        return st;
    if (w.unsealed)
        return fault(r, AV_UNSEALED, w.unsealed_from,
                     "%" PRIu64 " record(s) from here to the end have no signed checkpoint after "
                     "them: the tail after %s was cut, or its writer is still running",
                     w.unsealed, r->sealed_at[0] ? r->sealed_at : "the start");
    return AV_OK;
}
