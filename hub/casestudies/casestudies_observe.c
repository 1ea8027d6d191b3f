/* What the case-study runner sees from outside the spokes: file contents, inotify
 * events, processes in the host's /proc, a sampled process tree, Redis statistics,
 * the hub's and the proxy's audit logs. Nothing here asks a spoke anything. */
#include "casestudies.h"
#include "log.h"
#include "rmtree.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIGEST_MAX (256u << 20)
#define AUDIT_READ_MAX (32u << 20)

/* ---- files ---- */

void cs_file_digest(const char *path, struct cs_digest *d)
{
    memset(d, 0, sizeof(*d));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    d->exists = true;
    d->size = st.st_size;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    char buf[65536];
    ssize_t n;
    size_t total = 0;
    while (total < DIGEST_MAX && (n = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            h ^= (unsigned char)buf[i];
            h *= 1099511628211ULL;
        }
        total += (size_t)n;
    }
    close(fd);
    d->hash = h;
}

bool cs_digest_equal(const struct cs_digest *a, const struct cs_digest *b)
{
    return a->exists == b->exists && a->size == b->size && a->hash == b->hash;
}

int cs_watch_begin(const char *path)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return -1;
    if (inotify_add_watch(fd, path, IN_ACCESS | IN_OPEN | IN_DONT_FOLLOW) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int cs_watch_end(int fd)
{
    if (fd < 0)
        return -1;
    int events = 0;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            if (e->mask & (IN_ACCESS | IN_OPEN))
                events++;
            p += sizeof(*e) + e->len;
        }
    }
    close(fd);
    return events;
}

char *cs_read_file(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *buf = xmalloc(max + 1);
    ssize_t n = read_full(fd, buf, max);
    close(fd);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Owner of the directory holding path. */
static bool dir_owner(const char *path, uid_t *uid, gid_t *gid)
{
    char *copy = xstrdup(path);
    struct stat st;
    bool ok = stat(dirname(copy), &st) == 0;
    free(copy);
    if (ok) {
        *uid = st.st_uid;
        *gid = st.st_gid;
    }
    return ok;
}

int cs_write_file(const char *path, const void *data, size_t len)
{
    uid_t uid = 0;
    gid_t gid = 0;
    bool owned = dir_owner(path, &uid, &gid);
    unlink(path); /* a fresh inode: nothing of what was there survives */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, data, len);
    if (rc == 0 && owned && fchown(fd, uid, gid) < 0)
        rc = -1;
    close(fd);
    return rc;
}

int cs_copy_tree(const char *src, const char *dst, char *err, size_t errlen)
{
    DIR *d = opendir(src);
    if (!d) {
        snprintf(err, errlen, "%s: %s", src, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *s = xasprintf("%s/%s", src, e->d_name);
        char *t = xasprintf("%s/%s", dst, e->d_name);
        struct stat st;
        if (lstat(s, &st) < 0) {
            snprintf(err, errlen, "%s: %s", s, strerror(errno));
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            uid_t uid = 0;
            gid_t gid = 0;
            bool owned = dir_owner(t, &uid, &gid);
            if ((mkdir(t, 0700) < 0 && errno != EEXIST) || (owned && chown(t, uid, gid) < 0)) {
                snprintf(err, errlen, "%s: %s", t, strerror(errno));
                rc = -1;
            } else {
                rc = cs_copy_tree(s, t, err, errlen);
            }
        } else if (S_ISREG(st.st_mode)) {
            size_t len = 0;
            char *data = cs_read_file(s, 16u << 20, &len);
            if (!data || cs_write_file(t, data, len) < 0) {
                snprintf(err, errlen, "%s: %s", data ? t : s, strerror(errno));
                rc = -1;
            }
            free(data);
        }
        free(s);
        free(t);
    }
    closedir(d);
    return rc;
}

/* By descriptors (lib/rmtree.c): what a spoke left may be deeper than PATH_MAX. */
int cs_remove_tree(const char *path)
{
    return rmtree(path);
}

off_t cs_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

/* ---- processes ---- */

/* state and ppid from /proc/PID/stat (the name in parentheses may hold anything). */
static bool proc_stat(pid_t pid, char *state, pid_t *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    int pp = 0;
    if (!rp || sscanf(rp + 1, " %c %d", state, &pp) != 2)
        return false;
    *ppid = (pid_t)pp;
    return true;
}

bool cs_pid_alive(pid_t pid)
{
    char state;
    pid_t ppid;
    return pid > 0 && proc_stat(pid, &state, &ppid) && state != 'Z' && state != 'X';
}

int cs_pid_uid(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    int uid = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "Uid:", 4) == 0)
            uid = atoi(line + 4);
    if (f)
        fclose(f);
    return uid;
}

static long status_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    long v = 0;
    size_t fl = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':')
            v = atol(line + fl + 1);
    if (f)
        fclose(f);
    return v;
}

struct ptable {
    pid_t *pid, *ppid;
    size_t n;
};

static void ptable_read(struct ptable *t)
{
    size_t cap = 512;
    t->pid = xcalloc(cap, sizeof(pid_t));
    t->ppid = xcalloc(cap, sizeof(pid_t));
    t->n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name), ppid;
        char state;
        if (!proc_stat(pid, &state, &ppid) || state == 'Z' || state == 'X')
            continue;
        if (t->n == cap) {
            cap *= 2;
            t->pid = xrealloc(t->pid, cap * sizeof(pid_t));
            t->ppid = xrealloc(t->ppid, cap * sizeof(pid_t));
        }
        t->pid[t->n] = pid;
        t->ppid[t->n++] = ppid;
    }
    if (d)
        closedir(d);
}

/* Marks root's descendants (root itself included) in in_tree[]. */
static void ptable_tree(const struct ptable *t, pid_t root, bool *in_tree)
{
    for (size_t i = 0; i < t->n; i++)
        in_tree[i] = t->pid[i] == root;
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < t->n; i++) {
            if (in_tree[i])
                continue;
            for (size_t k = 0; k < t->n; k++)
                if (in_tree[k] && t->pid[k] == t->ppid[i]) {
                    in_tree[i] = grew = true;
                    break;
                }
        }
    }
}

static void ptable_free(struct ptable *t)
{
    free(t->pid);
    free(t->ppid);
}

static bool environ_is(pid_t pid, const char *name, const char *value)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    size_t len = 0;
    char *env = cs_read_file(path, 65536, &len);
    if (!env)
        return false;
    char *want = xasprintf("%s=%s", name, value);
    bool found = false;
    for (char *p = env; p < env + len && !found; p += strlen(p) + 1)
        found = strcmp(p, want) == 0;
    free(want);
    free(env);
    return found;
}

pid_t cs_find_spoke_program(pid_t root, const char *app)
{
    struct ptable t;
    ptable_read(&t);
    bool *in = xcalloc(t.n ? t.n : 1, sizeof(bool));
    ptable_tree(&t, root, in);
    pid_t found = 0;
    for (size_t i = 0; i < t.n && !found; i++)
        if (in[i] && environ_is(t.pid[i], "SPOKE_NAME", app))
            found = t.pid[i];
    free(in);
    ptable_free(&t);
    return found;
}

struct cs_sampler {
    struct event *ev;
    pid_t root;
    long peak_procs, peak_rss;
};

static void sample(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct cs_sampler *s = arg;
    struct ptable t;
    ptable_read(&t);
    bool *in = xcalloc(t.n ? t.n : 1, sizeof(bool));
    ptable_tree(&t, s->root, in);
    long procs = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (!in[i] || t.pid[i] == s->root)
            continue;
        procs++;
        long rss = status_kib(t.pid[i], "VmRSS");
        if (rss > s->peak_rss)
            s->peak_rss = rss;
    }
    if (procs > s->peak_procs)
        s->peak_procs = procs;
    free(in);
    ptable_free(&t);
}

struct cs_sampler *cs_sampler_start(struct event_base *base, pid_t root, unsigned interval_ms)
{
    struct cs_sampler *s = xcalloc(1, sizeof(*s));
    s->root = root;
    s->ev = event_new(base, -1, EV_PERSIST, sample, s);
    struct timeval tv = {.tv_sec = interval_ms / 1000,
                         .tv_usec = (suseconds_t)(interval_ms % 1000) * 1000};
    event_add(s->ev, &tv);
    sample(-1, 0, s);
    return s;
}

void cs_sampler_stop(struct cs_sampler *s, long *peak_procs, long *peak_rss_kib)
{
    sample(-1, 0, s);
    event_free(s->ev);
    *peak_procs = s->peak_procs;
    *peak_rss_kib = s->peak_rss;
    free(s);
}

/* ---- Redis ---- */

static long long info_field(const char *info, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, kl) == 0 && p[kl] == ':')
            return atoll(p + kl + 1);
    return -1;
}

int cs_redis_stats(const char *socket_path, long long *keyspace_hits, long long *connections)
{
    struct timeval tv = {.tv_sec = 2};
    redisContext *r = redisConnectUnixWithTimeout(socket_path, tv);
    if (!r || r->err) {
        if (r)
            redisFree(r);
        return -1;
    }
    redisSetTimeout(r, tv);
    redisReply *rep = redisCommand(r, "INFO stats");
    int rc = -1;
    if (rep && rep->type == REDIS_REPLY_STRING) {
        *keyspace_hits = info_field(rep->str, "keyspace_hits");
        *connections = info_field(rep->str, "total_connections_received");
        rc = *keyspace_hits >= 0 && *connections >= 0 ? 0 : -1;
    }
    if (rep)
        freeReplyObject(rep);
    redisFree(r);
    return rc;
}

/* ---- audit logs ---- */

json_t *cs_audit_since(const char *path, off_t *offset)
{
    json_t *out = json_array();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return out;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= *offset) {
        close(fd);
        return out;
    }
    size_t len = (size_t)(st.st_size - *offset);
    if (len > AUDIT_READ_MAX)
        len = AUDIT_READ_MAX;
    char *buf = xmalloc(len + 1);
    ssize_t n = pread(fd, buf, len, *offset);
    close(fd);
    if (n <= 0) {
        free(buf);
        return out;
    }
    buf[n] = '\0';
    char *end = strrchr(buf, '\n'); /* only complete lines; the rest next time */
    if (end) {
        *end = '\0';
        *offset += (off_t)(end - buf + 1);
        for (char *line = buf, *nl; line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            json_t *rec = *line ? json_loads(line, 0, NULL) : NULL;
            if (json_is_object(rec))
                json_array_append(out, rec);
            json_decref(rec);
        }
    }
    free(buf);
    return out;
}

const json_t *cs_get(const json_t *rec, const char *dotted)
{
    char key[128];
    const json_t *v = rec;
    for (const char *p = dotted; v && *p;) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        v = json_object_get(v, key);
        p += n;
        if (*p == '.')
            p++;
    }
    return v;
}
