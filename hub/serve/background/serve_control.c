/* The control socket of a running `hub serve` (hub.json serve.control_socket, default
 * RUN_DIR/serve.sock): one hub per host owns the spokes, and the clients of this host
 * reach it here.
 *
 * A local unix stream socket; each connection sends one request, a JSON object on one
 * line (at most CTL_LINE_MAX bytes), and gets one answer line:
 *   {"op":"attach","user":U,"app":A,"ask_exec":B,"isolation":I}  + two descriptors
 *        (SCM_RIGHTS: the client's input and output): `hub serve --stdio` hands its
 *        stdin/stdout over and the session runs here, in this hub, on its spokes. The
 *        answer is {"ok":true,"user":U}; the connection then stays open for as long as
 *        the session. Its end is said in one more line, {"end":WHY,"by_client":B}
 *        (whether it was the client's doing), before the connection closes, so that a
 *        connection closed without it means the hub died; the connection's closing (the
 *        attaching process ended) ends the session.
 *   {"op":"approvals",...}, {"op":"answer",...}  the out-of-band questions (serve_queue.c)
 *   {"op":"yield"}  a hub starting now (the service) asks a background hub that serves
 *        nobody to end and leave it the socket ({"ok":true}, then it ends); any other
 *        hub, or one with a session or a question waiting, refuses.
 * Refusals are {"ok":false,"error":"why"}.
 *
 * Who is who comes from the kernel (SO_PEERCRED), never from the request: root, and the
 * account this hub runs as, may name any user (either could run its own hub as any
 * user anyway); with serve.control_users "unix" any other local account may connect and
 * acts as the hub user of its account name; otherwise only those two may connect (the
 * socket is 0600). One hub owns the socket at a time: the one holding the flock on
 * PATH.lock (which holds its pid) binds it; a hub that finds it held leaves it to that
 * one. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CTL_LINE_MAX 65536
#define CTL_MAX_CONNS 256
/* How long a hub taking the socket over waits for the background hub's end (it stops
 * its spokes first). */
#define TAKE_OVER_WAIT_MS 15000

struct ctl_conn {
    struct serve *sv;
    LIST_ENTRY(ctl_conn) link;
    int fd;
    struct event *ev;
    uid_t uid;
    pid_t pid;
    char buf[CTL_LINE_MAX];
    size_t len;
    int fds[2]; /* received with the request */
    size_t n_fds;
    struct serve_stream *stream; /* an attached session, on these: */
    int stream_fds[2];
    struct event *ev_end; /* closes the connection once its session has ended */
    bool ending;
};

const char *serve_control_path(const struct hub_config *cfg, char *buf, size_t len)
{
    if (cfg->control_socket)
        snprintf(buf, len, "%s", cfg->control_socket);
    else
        snprintf(buf, len, "%s/serve.sock", cfg->run_dir);
    return buf;
}

/* ---- connections ---- */

static void reply(struct ctl_conn *c, json_t *msg);

/* Closes the connection; an attached session ends with it, its end said first (why:
 * the hub's reason, when the connection did not end because the attaching side went). */
static void conn_free(struct ctl_conn *c, const char *why)
{
    if (c->stream && why && !c->ending)
        reply(c, json_pack("{s:s,s:b}", "end", why, "by_client", 0));
    if (c->stream) {
        serve_stream_close(c->stream, "the attached client ended", false);
        c->stream = NULL;
        close(c->stream_fds[0]);
        close(c->stream_fds[1]);
    }
    for (size_t i = 0; i < c->n_fds; i++)
        close(c->fds[i]);
    event_free(c->ev);
    if (c->ev_end)
        event_free(c->ev_end);
    close(c->fd);
    LIST_REMOVE(c, link);
    c->sv->n_ctl_conns--;
    free(c);
}

static void reply(struct ctl_conn *c, json_t *msg)
{
    char *line = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!line)
        return;
    size_t n = strlen(line);
    line[n] = '\n';
    /* Small, on a fresh connection: the socket buffer takes it; a peer that does not
     * read loses its answer, nothing else. */
    if (write(c->fd, line, n + 1) < 0)
        log_debug("control: answer not sent: %s", strerror(errno));
    free(line);
}

void serve_control_refuse(struct ctl_conn *c, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    reply(c, json_pack("{s:b,s:s}", "ok", 0, "error", why));
}

void serve_control_reply(struct ctl_conn *c, json_t *msg)
{
    reply(c, msg);
}

/* The hub user the peer acts as: want (or the hub's user) for root; the account's name
 * with control_users "unix". NULL after refusing. */
const char *serve_control_user(struct ctl_conn *c, const char *want, char *buf, size_t len)
{
    struct serve *sv = c->sv;
    if (serve_control_peer_privileged(c)) {
        const char *u = want ? want : sv->cfg->user;
        if (!user_id_valid(u)) {
            serve_control_refuse(c, "user must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -");
            return NULL;
        }
        str_copy(buf, u, len);
        return buf;
    }
    if (sv->cfg->control_users != CONTROL_USERS_UNIX) {
        serve_control_refuse(c,
                             "only root and uid %u may use this hub's control socket "
                             "(hub.json serve.control_users)",
                             (unsigned)geteuid());
        return NULL;
    }
    struct passwd pw, *res = NULL;
    char pwbuf[1024];
    if (getpwuid_r(c->uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0 || !res ||
        !user_id_valid(pw.pw_name)) {
        serve_control_refuse(c, "uid %u has no account name that is a hub user id",
                             (unsigned)c->uid);
        return NULL;
    }
    if (want && strcmp(want, pw.pw_name) != 0) {
        serve_control_refuse(c, "%s may act only as the hub user %s", pw.pw_name, pw.pw_name);
        return NULL;
    }
    str_copy(buf, pw.pw_name, len);
    return buf;
}

bool serve_control_peer_privileged(const struct ctl_conn *c)
{
    return c->uid == 0 || c->uid == geteuid();
}

unsigned serve_control_peer_uid(const struct ctl_conn *c)
{
    return (unsigned)c->uid;
}

struct serve *serve_control_serve(const struct ctl_conn *c)
{
    return c->sv;
}

static void on_ending(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    conn_free(ud, NULL);
}

/* The attached session's stream ended: the connection closes after this turn of the
 * loop (the session may be in the middle of handling a message). */
static void on_stream_end(void *ud, struct serve_stream *st, const char *why, bool by_client)
{
    (void)st;
    struct ctl_conn *c = ud;
    log_debug("control: attached session of pid %d ended: %s", (int)c->pid, why);
    if (c->ending)
        return;
    reply(c, json_pack("{s:s,s:b}", "end", why, "by_client", by_client));
    c->ending = true;
    c->ev_end = evtimer_new(c->sv->base, on_ending, c);
    struct timeval now = {0, 0};
    evtimer_add(c->ev_end, &now);
}

static void op_attach(struct ctl_conn *c, const json_t *req)
{
    struct serve *sv = c->sv;
    if (c->n_fds != 2) {
        serve_control_refuse(c, "attach needs the client's input and output descriptors");
        return;
    }
    const char *want = json_string_value(json_object_get(req, "user"));
    const char *app = json_string_value(json_object_get(req, "app"));
    const char *iso = json_string_value(json_object_get(req, "isolation"));
    char user[65];
    if (!serve_control_user(c, want, user, sizeof(user)))
        return;
    if (app && (strlen(app) > MANIFEST_NAME_MAX || !manifest_find(sv->ms, app))) {
        serve_control_refuse(c, "no app %.80s is installed in the running hub", app);
        return;
    }
    if (iso && strcmp(iso, isolation_name(sv->cfg->isolation)) != 0) {
        serve_control_refuse(c, "the running hub isolates its apps in %s mode, not %.20s",
                             isolation_name(sv->cfg->isolation), iso);
        return;
    }
    char remote[64], err[200];
    snprintf(remote, sizeof(remote), "pid %d", (int)c->pid);
    struct serve_stream *st = serve_stream_open(sv, c->fds[0], c->fds[1], user, remote, "attach",
                                                on_stream_end, c, err, sizeof(err));
    if (!st) {
        serve_control_refuse(c, "%s", err);
        return;
    }
    c->stream = st;
    c->stream_fds[0] = c->fds[0];
    c->stream_fds[1] = c->fds[1];
    c->n_fds = 0;
    struct serve_session *ss = serve_stream_session(st);
    if (app)
        str_copy(ss->app, app, sizeof(ss->app));
    if (json_is_true(json_object_get(req, "ask_exec")))
        ss->ask_exec = true;
    log_info("control: a client of %s (pid %d, uid %u) attached", user, (int)c->pid,
             (unsigned)c->uid);
    reply(c, json_pack("{s:b,s:s,s:s}", "ok", 1, "user", user, "isolation",
                       isolation_name(sv->cfg->isolation)));
}

static void op_yield(struct ctl_conn *c)
{
    struct serve *sv = c->sv;
    if (!serve_control_peer_privileged(c))
        serve_control_refuse(c, "only root and uid %u may ask this hub to end",
                             (unsigned)geteuid());
    else if (!sv->background)
        serve_control_refuse(c, "this hub serve is not a background one: it keeps the socket");
    else if (!LIST_EMPTY(&sv->sessions) || sv->n_approvals > 0 || !LIST_EMPTY(&sv->mrtr))
        serve_control_refuse(c, "the background hub serves sessions or holds questions");
    else {
        log_info("control: a hub serve starting now (pid %d) takes the socket over: ending",
                 (int)c->pid);
        sv->yielded = true;
        reply(c, json_pack("{s:b}", "ok", 1));
        event_base_loopbreak(sv->base);
    }
}

static void on_request(struct ctl_conn *c, const char *line, size_t len)
{
    json_error_t je;
    json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    const char *op = json_string_value(json_object_get(req, "op"));
    if (!json_is_object(req) || !op)
        serve_control_refuse(c, "a request is a JSON object with an op");
    else if (strcmp(op, "attach") == 0)
        op_attach(c, req);
    else if (strcmp(op, "yield") == 0)
        op_yield(c);
    else if (!serve_queue_control(c, op, req))
        serve_control_refuse(c, "unknown op %.40s", op);
    json_decref(req);
}

/* Takes what arrived: bytes up to the request's line end, and descriptors. */
static ssize_t recv_some(struct ctl_conn *c)
{
    char cbuf[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = {.iov_base = c->buf + c->len, .iov_len = sizeof(c->buf) - c->len};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return -1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *fds = (int *)CMSG_DATA(cm);
        for (size_t i = 0; i < k; i++) {
            if (c->n_fds < 2 && !c->stream)
                c->fds[c->n_fds++] = fds[i];
            else
                close(fds[i]); /* more than asked for: never kept */
        }
    }
    if (mh.msg_flags & MSG_CTRUNC)
        errno = EMSGSIZE;
    return (mh.msg_flags & MSG_CTRUNC) ? -1 : n;
}

static void on_readable(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct ctl_conn *c = ud;
    if (c->ending)
        return;
    ssize_t n = recv_some(c);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || c->stream) {
        /* Closed (or, once attached, anything at all): the attaching process is gone or
         * misbehaves; its session ends. */
        conn_free(c, n > 0 ? "the attaching process sent more than its request" : NULL);
        return;
    }
    c->len += (size_t)n;
    char *nl = memchr(c->buf, '\n', c->len);
    if (!nl) {
        if (c->len == sizeof(c->buf)) {
            serve_control_refuse(c, "request longer than %d bytes", CTL_LINE_MAX);
            conn_free(c, NULL);
        }
        return;
    }
    on_request(c, c->buf, (size_t)(nl - c->buf));
    /* The descriptors are the session's now, or were not wanted. */
    for (size_t i = 0; i < c->n_fds; i++)
        close(c->fds[i]);
    c->n_fds = 0;
    if (!c->stream && !c->ending)
        conn_free(c, NULL); /* one request per connection */
}

static void on_accept(evutil_socket_t fd, short what, void *ud)
{
    (void)what;
    struct serve *sv = ud;
    int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0)
        return;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (sv->n_ctl_conns >= CTL_MAX_CONNS ||
        getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
        close(cfd);
        return;
    }
    struct ctl_conn *c = xcalloc(1, sizeof(*c));
    c->sv = sv;
    c->fd = cfd;
    c->uid = cred.uid;
    c->pid = cred.pid;
    c->ev = event_new(sv->base, cfd, EV_READ | EV_PERSIST, on_readable, c);
    event_add(c->ev, NULL);
    LIST_INSERT_HEAD(&sv->ctl_conns, c, link);
    sv->n_ctl_conns++;
}

/* ---- the socket ---- */

int serve_control_lock(const struct hub_config *cfg, char *err, size_t errlen)
{
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (!serve_control_path(cfg, path, sizeof(path))[0]) {
        snprintf(err, errlen, "no control socket is configured (hub.json serve.control_socket)");
        return -1;
    }
    if (strlen(path) >= sizeof(path) - 1) {
        snprintf(err, errlen, "control socket %s: longer than a socket path may be", path);
        return -1;
    }
    char *copy = xstrdup(path);
    int rc = mkdir_p(dirname(copy), 0755);
    free(copy);
    char *lock_path = xasprintf("%s.lock", path);
    int lock = rc < 0 ? -1 : open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    free(lock_path);
    if (lock < 0) {
        snprintf(err, errlen, "the control socket's lock %s.lock: %s", path, strerror(errno));
        return -1;
    }
    if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(lock);
        if (e == EWOULDBLOCK)
            return -2; /* another hub owns it */
        snprintf(err, errlen, "the control socket's lock %s.lock: %s", path, strerror(e));
        return -1;
    }
    /* The owner's pid, for the operator (and the tests) to find it. */
    char pid[24];
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (ftruncate(lock, 0) < 0 || pwrite(lock, pid, (size_t)n, 0) != n)
        log_debug("control: the lock file does not say the owner's pid: %s", strerror(errno));
    return lock;
}

/* The socket's lock is another hub's: a background hub that serves nobody hands it over
 * (op yield), and the lock is free once it has ended. The lock, or -2 when it stays
 * theirs, -1 with err. */
static int take_over(const struct hub_config *cfg, char *err, size_t errlen)
{
    json_t *req = json_pack("{s:s}", "op", "yield"), *ans = NULL;
    int r = serve_control_call(cfg, req, &ans, err, errlen);
    json_decref(req);
    bool ok = r == 0 && json_is_true(json_object_get(ans, "ok"));
    if (r == 0 && !ok)
        log_debug("control: the owner keeps the socket: %s",
                  json_string_value(json_object_get(ans, "error")));
    json_decref(ans);
    if (!ok)
        return -2;
    for (int waited = 0; waited < TAKE_OVER_WAIT_MS; waited += 50) {
        int lock = serve_control_lock(cfg, err, errlen);
        if (lock != -2)
            return lock;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return -2;
}

int serve_control_listen(struct serve *sv, int lock, char *err, size_t errlen)
{
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (!serve_control_path(sv->cfg, path, sizeof(path))[0]) {
        if (lock >= 0)
            close(lock);
        return 0; /* none configured */
    }
    if (lock < 0 && (lock = serve_control_lock(sv->cfg, err, errlen)) == -2)
        lock = take_over(sv->cfg, err, errlen);
    if (lock < 0)
        return lock == -2 ? 0 : -1;
    /* Ours: what is at the path is a socket a hub that died left. */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    str_copy(sa.sun_path, path, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    mode_t old = umask(sv->cfg->control_users == CONTROL_USERS_UNIX ? 0111 : 0177);
    int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 64) < 0) {
        snprintf(err, errlen, "control socket %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        close(lock);
        return -1;
    }
    sv->ctl_fd = fd;
    sv->ctl_lock = lock;
    sv->ctl_path = xstrdup(path);
    sv->ev_ctl = event_new(sv->base, fd, EV_READ | EV_PERSIST, on_accept, sv);
    event_add(sv->ev_ctl, NULL);
    log_info("clients of this host attach at %s", path);
    return 1;
}

void serve_control_stop(struct serve *sv)
{
    while (!LIST_EMPTY(&sv->ctl_conns))
        conn_free(LIST_FIRST(&sv->ctl_conns), "the hub is shutting down");
    if (sv->ev_ctl)
        event_free(sv->ev_ctl);
    sv->ev_ctl = NULL;
    if (sv->ctl_path)
        unlink(sv->ctl_path); /* before the lock goes: the next owner binds afresh */
    free(sv->ctl_path);
    sv->ctl_path = NULL;
    if (sv->ctl_fd >= 0)
        close(sv->ctl_fd);
    if (sv->ctl_lock >= 0)
        close(sv->ctl_lock);
    sv->ctl_fd = sv->ctl_lock = -1;
}
