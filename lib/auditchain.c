#include "auditchain.h"
#include "auditkey.h"
#include "log.h"
#include "mapguard.h"
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char chain_key[] = ",\"isolate.chain\":{\"seq\":";
static const char sig_key[] = ",\"isolate.signature\":\"";

/* The chain's head where every writer of the file finds it without a system call: a
 * small file beside the log (.NAME.chain), mapped shared, under a process-shared robust
 * mutex. It says which file (device, inode) it describes; a writer whose file is
 * another (a rotation) reads its own file's last line instead, as without it. */
#define SHARED_MAGIC 0x31434741u /* "AGC1" */
struct shared_head {
    uint32_t magic;
    pthread_mutex_t lock;
    uint64_t dev, ino; /* 0: describes no file yet */
    uint64_t seq;
    unsigned char last[SHA256_LEN];
    uint8_t last_is_checkpoint;
};

struct chain {
    EVP_PKEY *key;
    char key_id[AUDITKEY_ID_LEN + 1];
    char *rotated_path; /* path.1: where a new file's predecessor is, after logrotate */
    uint64_t every_records, every_ns;

    bool known;   /* seq and last describe the file's last record */
    uint64_t seq; /* 0: none yet */
    unsigned char last[SHA256_LEN];
    off_t end; /* the file's size after our last record; -1 unknown */
    bool last_is_checkpoint;
    bool need_link; /* the file is empty: a link record goes first */

    bool wrote;             /* this writer has written a record */
    uint64_t since;         /* records since this writer's last checkpoint */
    uint64_t checkpoint_ns; /* monotonic time of that checkpoint (or the start) */

    struct shared_head *shared; /* NULL: flock and the file's size instead */
    uint64_t dev, ino;          /* of the file written now */

    char *buf; /* the line being chained */
    size_t cap;
};

static void reserve(struct chain *c, size_t n)
{
    if (n <= c->cap)
        return;
    c->cap = n + n / 2;
    c->buf = xrealloc(c->buf, c->cap);
}

static const char *rfind(const char *hay, size_t len, const char *needle, size_t nlen)
{
    if (len < nlen)
        return NULL;
    for (size_t i = len - nlen + 1; i-- > 0;)
        if (memcmp(hay + i, needle, nlen) == 0)
            return hay + i;
    return NULL;
}

bool auditchain_parse_tail(const char *line, size_t len, uint64_t *seq, const char **prev,
                           bool *signed_)
{
    const char *p = rfind(line, len, chain_key, sizeof(chain_key) - 1);
    if (!p)
        return false;
    const char *end = line + len;
    p += sizeof(chain_key) - 1;
    uint64_t v = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 20)
        v = v * 10 + (uint64_t)(*p++ - '0');
    static const char mid[] = ",\"prev\":\"";
    if (p == digits || (size_t)(end - p) < sizeof(mid) - 1 + 64 + 2 ||
        memcmp(p, mid, sizeof(mid) - 1) != 0)
        return false;
    p += sizeof(mid) - 1;
    const char *hex = p;
    p += 64;
    if (memcmp(p, "\"}", 2) != 0)
        return false;
    p += 2;
    /* What may follow: the line's end, or a signature and then the end. */
    bool sig = false;
    if (end - p > (ptrdiff_t)(sizeof(sig_key) - 1) &&
        memcmp(p, sig_key, sizeof(sig_key) - 1) == 0) {
        const char *q = memchr(p + sizeof(sig_key) - 1, '"',
                               (size_t)(end - p - (ptrdiff_t)sizeof(sig_key) + 1));
        if (!q)
            return false;
        p = q + 1;
        sig = true;
    }
    if (end - p != 1 || *p != '}')
        return false;
    *seq = v;
    *prev = hex;
    if (signed_)
        *signed_ = sig;
    return true;
}

/* The last line of the file on fd, size bytes long, without its newline, into c->buf. */
static bool read_last_line(struct chain *c, int fd, off_t size, size_t *len)
{
    if (size <= 0)
        return false;
    size_t want = 4096;
    for (;;) {
        size_t n = (uint64_t)size < want ? (size_t)size : want;
        reserve(c, n);
        off_t from = size - (off_t)n;
        size_t got = 0;
        while (got < n) {
            ssize_t r = pread(fd, c->buf + got, n - got, from + (off_t)got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return false;
            got += (size_t)r;
        }
        size_t body = n;
        if (c->buf[body - 1] == '\n')
            body--;
        const char *nl = body ? rfind(c->buf, body, "\n", 1) : NULL;
        if (nl || (size_t)size == n) {
            size_t start = nl ? (size_t)(nl - c->buf) + 1 : 0;
            memmove(c->buf, c->buf + start, body - start);
            *len = body - start;
            return true;
        }
        if (want >= AUDITCHAIN_MAX_LINE)
            return false;
        want *= 4;
    }
}

/* Takes the last record of the file on fd as the chain's head. false: not a chained
 * record (or unreadable); *len_out tells whether there was a line at all. */
static bool adopt_last(struct chain *c, int fd, off_t size)
{
    size_t len;
    if (!read_last_line(c, fd, size, &len))
        return false;
    uint64_t seq;
    const char *prev;
    bool sig;
    if (!auditchain_parse_tail(c->buf, len, &seq, &prev, &sig))
        return false;
    sha256(c->buf, len, c->last);
    c->seq = seq;
    c->known = true;
    c->last_is_checkpoint = sig;
    return true;
}

/* Brings the chain's head up to date with the file (called under the file lock). */
static void sync_head(struct chain *c, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        /* A pipe or a terminal: only this writer's own records. */
        if (!c->known)
            c->need_link = true;
        return;
    }
    if (c->known && c->end >= 0 && st.st_size == c->end)
        return; /* nobody else wrote since our last record */
    if (st.st_size == 0) {
        c->need_link = true;
        if (!c->known && c->rotated_path) {
            /* A fresh writer on a new file: the one logrotate moved aside precedes it. */
            int prev = open(c->rotated_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
            struct stat pst;
            if (prev >= 0 && fstat(prev, &pst) == 0 && S_ISREG(pst.st_mode))
                (void)adopt_last(c, prev, pst.st_size);
            if (prev >= 0)
                close(prev);
        }
    } else if (adopt_last(c, fd, st.st_size)) {
        c->need_link = false;
    } else {
        /* Records this chain cannot continue (unchained, torn, unreadable): a new chain
         * starts after them, and the verifier says where. */
        c->known = false;
        c->seq = 0;
        c->need_link = true;
    }
    c->end = st.st_size;
}

/* Writes body (a JSON object's line, "}\n" at its end) with the chain's fields, and a
 * signature when sign is set. */
static int put_chained(struct chain *c, struct audit *a, const char *line, size_t len, bool counted,
                       bool sign)
{
    if (len < 3 || line[len - 1] != '\n' || line[len - 2] != '}' || line[0] != '{') {
        errno = EINVAL;
        return -1;
    }
    size_t body = len - 2;
    static const char zeros[SHA256_LEN];
    const unsigned char *prev = c->known ? c->last : (const unsigned char *)zeros;
    uint64_t seq = (c->known ? c->seq : 0) + 1;
    /* line may be c->buf itself (a record of the chain's own), which reserve() moves. */
    bool own = line == c->buf;
    reserve(c, body + 256);
    if (!own)
        memcpy(c->buf, line, body);
    size_t o = body;
    /* ,"isolate.chain":{"seq":N,"prev":"HEX"} without printf: a fifth of the chain's
     * cost otherwise. */
    const char *key = body == 1 ? chain_key + 1 : chain_key;
    size_t klen = strlen(key);
    memcpy(c->buf + o, key, klen);
    o += klen;
    char digits[20];
    size_t nd = 0;
    uint64_t v = seq;
    do
        digits[nd++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (nd)
        c->buf[o++] = digits[--nd];
    static const char mid[] = ",\"prev\":\"";
    memcpy(c->buf + o, mid, sizeof(mid) - 1);
    o += sizeof(mid) - 1;
    hex_encode(prev, SHA256_LEN, c->buf + o);
    o += 2 * SHA256_LEN;
    c->buf[o++] = '"';
    c->buf[o++] = '}';
    if (sign) {
        unsigned char sig[AUDITKEY_SIG_LEN];
        if (!auditkey_sign(c->key, c->buf, o, sig)) {
            errno = EIO;
            return -1;
        }
        memcpy(c->buf + o, sig_key, sizeof(sig_key) - 1);
        o += sizeof(sig_key) - 1;
        o += (size_t)EVP_EncodeBlock((unsigned char *)c->buf + o, sig, sizeof(sig));
        c->buf[o++] = '"';
    }
    c->buf[o++] = '}';
    unsigned char h[SHA256_LEN];
    sha256(c->buf, o, h);
    c->buf[o++] = '\n';
    if (audit_put_locked(a, c->buf, o, counted) < 0)
        return -1;
    memcpy(c->last, h, sizeof(h));
    c->seq = seq;
    c->known = true;
    c->last_is_checkpoint = sign;
    if (c->end >= 0)
        c->end += (off_t)o;
    return 0;
}

/* A record of the chain's own: ECS's frame around isolate members. */
static size_t own_record(struct chain *c, struct audit *a, const char *action, const char *isolate)
{
    char ts[40];
    format_iso8601(now_real_ns(), ts, sizeof(ts));
    size_t need = strlen(isolate) + strlen(audit_service(a)) + 256;
    reserve(c, need + 256);
    int n = snprintf(c->buf, c->cap,
                     "{\"@timestamp\":\"%s\",\"event\":{\"kind\":\"event\",\"action\":\"%s\","
                     "\"outcome\":\"success\"},\"isolate\":{%s},\"ecs\":{\"version\":\"%s\"},"
                     "\"service\":{\"name\":\"%s\"}}\n",
                     ts, action, isolate, AUDIT_ECS_VERSION, audit_service(a));
    return n > 0 ? (size_t)n : 0;
}

static int write_link(struct chain *c, struct audit *a)
{
    char isolate[200];
    if (c->known) {
        char hex[2 * SHA256_LEN + 1];
        hex_encode(c->last, SHA256_LEN, hex);
        snprintf(isolate, sizeof(isolate),
                 "\"audit\":{\"chain\":\"continued\",\"previous\":{\"seq\":%" PRIu64
                 ",\"hash\":\"%s\"}}",
                 c->seq, hex);
    } else {
        snprintf(isolate, sizeof(isolate), "\"audit\":{\"chain\":\"new\"}");
    }
    size_t n = own_record(c, a, "audit-link", isolate);
    if (put_chained(c, a, c->buf, n, false, false) < 0)
        return -1;
    c->need_link = false;
    return 0;
}

static int write_checkpoint(struct chain *c, struct audit *a, const char *reason)
{
    char isolate[200];
    snprintf(isolate, sizeof(isolate),
             "\"audit\":{\"checkpoint\":{\"reason\":\"%s\",\"key\":\"%s\"}}", reason, c->key_id);
    size_t n = own_record(c, a, "audit-checkpoint", isolate);
    if (put_chained(c, a, c->buf, n, false, true) < 0)
        return -1;
    c->since = 0;
    c->checkpoint_ns = now_mono_ns();
    return 0;
}

/* flock, which a pipe or a terminal does not need (and may refuse). */
static bool lock_file(int fd)
{
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR)
            return false;
    return true;
}

/* A checkpoint is due by count, or by time: looked at every 16th record (the clock
 * costs more than the rest of the test) and always from the timer (tick). */
static bool due_by(const struct chain *c, bool look_at_clock)
{
    return c->key &&
           (c->since >= c->every_records ||
            (c->since > 0 && look_at_clock && now_mono_ns() - c->checkpoint_ns >= c->every_ns));
}

static bool due(const struct chain *c)
{
    return due_by(c, true);
}

/* What a writer holds while it chains a record. */
struct hold {
    int fd;
    bool flocked, shared_locked;
};

/* The head file was cut short under the mapping (someone's ftruncate): the mapping is
 * dropped and this writer goes on as without one, from the file's own last record (the
 * log itself is untouched, so the chain goes on unbroken). Said once. */
static void drop_shared(struct chain *c, struct audit *a)
{
    mapguard_recovered();
    munmap(c->shared, sizeof(*c->shared));
    c->shared = NULL;
    c->known = false;
    c->end = -1;
    log_warnx("audit log %s: its chain's head file (.NAME.chain beside it) was cut short by "
              "another process; chaining from the log's last record instead (slower)",
              audit_path(a));
}

/* Takes the file's chain for this writer and brings c's head up to date with it. */
static void head_acquire(struct chain *c, struct audit *a, struct hold *h)
{
    h->fd = audit_fd_locked(a);
    h->flocked = h->shared_locked = false;
    struct shared_head *s = c->shared;
    sigjmp_buf jb;
    if (s && c->ino && !mapguard_enter(jb)) {
        h->shared_locked = false;
        drop_shared(c, a);
        s = NULL;
    }
    if (s && c->ino) {
        int r = pthread_mutex_lock(&s->lock);
        if (r == EOWNERDEAD) {
            /* A writer died holding it, maybe between its write and this update. */
            pthread_mutex_consistent(&s->lock);
            s->ino = 0;
            r = 0;
        }
        if (r == 0) {
            h->shared_locked = true;
            if (s->ino == c->ino && s->dev == c->dev) {
                c->known = true;
                c->need_link = false;
                c->seq = s->seq;
                memcpy(c->last, s->last, SHA256_LEN);
                c->last_is_checkpoint = s->last_is_checkpoint;
                mapguard_leave();
                return;
            }
            /* The head is another file's: the one this file follows, when it is new. */
            c->known = s->ino != 0;
            if (c->known) {
                c->seq = s->seq;
                memcpy(c->last, s->last, SHA256_LEN);
            }
            c->end = -1;
        }
        mapguard_leave();
    }
    h->flocked = lock_file(h->fd);
    sync_head(c, h->fd);
}

static void head_release(struct chain *c, struct audit *a, struct hold *h)
{
    struct shared_head *s = c->shared;
    sigjmp_buf jb;
    if (h->shared_locked && !mapguard_enter(jb)) {
        h->shared_locked = false;
        drop_shared(c, a);
    }
    if (h->shared_locked) {
        /* Published only once the file has a record of the chain (its link). */
        if (c->known && !c->need_link) {
            s->dev = c->dev;
            s->ino = c->ino;
            s->seq = c->seq;
            memcpy(s->last, c->last, SHA256_LEN);
            s->last_is_checkpoint = c->last_is_checkpoint;
        }
        pthread_mutex_unlock(&s->lock);
        mapguard_leave();
    }
    if (h->flocked)
        (void)flock(h->fd, LOCK_UN);
}

static int chain_write(void *cv, struct audit *a, const char *line, size_t len)
{
    struct chain *c = cv;
    struct hold h;
    head_acquire(c, a, &h);
    int rc = c->need_link ? write_link(c, a) : 0;
    if (rc == 0)
        rc = put_chained(c, a, line, len, true, false);
    int saved = errno;
    if (rc == 0) {
        c->wrote = true;
        c->since++;
        /* A checkpoint that cannot be written now is due again at the next record. */
        if (due_by(c, (c->since & 15) == 0))
            (void)write_checkpoint(c, a, "interval");
    }
    head_release(c, a, &h);
    errno = saved;
    return rc;
}

/* Seals the current file when its last record is not a checkpoint. */
static void seal(struct chain *c, struct audit *a, const char *reason)
{
    struct hold h;
    head_acquire(c, a, &h);
    if (c->known && !c->need_link && !c->last_is_checkpoint)
        (void)write_checkpoint(c, a, reason);
    head_release(c, a, &h);
}

static void file_id(struct chain *c, int fd)
{
    struct stat st;
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    c->dev = regular ? (uint64_t)st.st_dev : 0;
    c->ino = regular ? (uint64_t)st.st_ino : 0;
}

static void chain_rotate(void *cv, struct audit *a, int new_fd)
{
    struct chain *c = cv;
    if (c->key && c->wrote)
        seal(c, a, "rotate");
    else {
        struct hold h;
        head_acquire(c, a, &h);
        head_release(c, a, &h);
    }
    file_id(c, new_fd);
    c->end = -1; /* the next record reads the new file first */
}

static void chain_tick(void *cv, struct audit *a, bool closing)
{
    struct chain *c = cv;
    /* A writer that wrote nothing leaves the file alone. */
    if (!c->key || !c->wrote)
        return;
    if (!closing && !due(c))
        return;
    seal(c, a, closing ? "shutdown" : "interval");
}

static void chain_free(void *cv)
{
    struct chain *c = cv;
    if (c->shared)
        munmap(c->shared, sizeof(*c->shared));
    EVP_PKEY_free(c->key);
    free(c->rotated_path);
    free(c->buf);
    free(c);
}

static const struct audit_chain_ops chain_ops = {
    .write = chain_write, .rotate = chain_rotate, .tick = chain_tick, .free = chain_free};

/* Initialises a head no writer has set up yet; false when the file was cut short
 * between its allocation and now. */
static bool init_shared(struct shared_head *s)
{
    sigjmp_buf jb;
    if (!mapguard_enter(jb)) {
        mapguard_recovered();
        return false;
    }
    if (s->magic != SHARED_MAGIC) {
        memset(s, 0, sizeof(*s));
        pthread_mutexattr_t at;
        pthread_mutexattr_init(&at);
        pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&s->lock, &at);
        pthread_mutexattr_destroy(&at);
        __atomic_store_n(&s->magic, SHARED_MAGIC, __ATOMIC_RELEASE);
    }
    mapguard_leave();
    return true;
}

/* .NAME.chain beside the log, made and initialised once under flock; NULL when it
 * cannot be (the writer then takes flock and checks the file's size per record). */
static struct shared_head *map_shared(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *side = slash ? xasprintf("%.*s/.%s.chain", (int)(slash - path), path, slash + 1)
                       : xasprintf(".%s.chain", path);
    int fd = open(side, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
    free(side);
    if (fd < 0)
        return NULL;
    struct shared_head *s = NULL;
    struct stat st;
    /* Its blocks allocated now: a page of a sparse file written through the mapping
     * on a full disk would be SIGBUS, not an error. */
    if (lock_file(fd) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        posix_fallocate(fd, 0, sizeof(*s)) == 0) {
        void *m = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        s = m == MAP_FAILED ? NULL : m;
    }
    if (s && !init_shared(s)) {
        munmap(s, sizeof(*s));
        s = NULL;
    }
    (void)flock(fd, LOCK_UN);
    close(fd);
    return s;
}

int auditchain_attach(struct audit *a, EVP_PKEY *key, const struct auditchain_opts *o, char *err,
                      size_t errlen)
{
    struct chain *c = xcalloc(1, sizeof(*c));
    if (key) {
        if (!auditkey_id(key, c->key_id) || EVP_PKEY_up_ref(key) != 1) {
            snprintf(err, errlen, "audit key: cannot read its public half");
            free(c);
            return -1;
        }
        c->key = key;
    }
    c->every_records = o && o->every_records ? o->every_records : AUDITCHAIN_EVERY_RECORDS;
    c->every_ns = (o && o->every_s ? o->every_s : AUDITCHAIN_EVERY_S) * 1000000000ull;
    c->checkpoint_ns = now_mono_ns();
    c->end = -1;
    file_id(c, audit_fd_locked(a));
    if (strcmp(audit_path(a), "-") != 0) {
        c->rotated_path = xasprintf("%s.1", audit_path(a));
        if (c->ino) {
            mapguard_install();
            c->shared = map_shared(audit_path(a));
        }
    }
    audit_attach_chain(a, c, &chain_ops);
    return 0;
}
