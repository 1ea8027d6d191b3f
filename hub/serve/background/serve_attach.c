/* `hub serve --stdio` beside a running hub: this process's stdin and stdout go to the
 * hub that owns the host's spokes (its control socket, serve_control.c), which serves
 * the client on them as a session of its own; this process then only waits, so that
 * the client sees its server running for as long as the session lasts. When no hub
 * runs, a background one is started first (serve_spawn.c). The session's end ends this
 * process (the hub says why first; a hub that dies says nothing, and this process tells
 * the client so, on the stream, before it ends); this process ending (the client
 * killed it) ends the session. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ATTACH_ANSWER_MS 30000
/* A hub found gone just after it was started (or after it said ready) is started anew
 * this many times at most. */
#define ATTACH_STARTS 3

int serve_control_connect(const struct hub_config *cfg, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char path[sizeof(sa.sun_path)];
    if (!serve_control_path(cfg, path, sizeof(path))[0])
        return -2;
    str_copy(sa.sun_path, path, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        /* Whoever listens there gets this process's stdin and stdout (the client's
         * session) or its approvals: only a hub of root's or of this account, as the
         * kernel says, never another account's process that bound the path first. */
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
            snprintf(err, errlen, "the hub's control socket %s: SO_PEERCRED: %s", path,
                     strerror(errno));
            close(fd);
            return -1;
        }
        if (cred.uid != 0 && cred.uid != geteuid() && cred.uid != getuid()) {
            snprintf(err, errlen,
                     "the hub's control socket %s is held by uid %u (pid %d), neither root nor "
                     "this account: not handing it anything",
                     path, (unsigned)cred.uid, (int)cred.pid);
            close(fd);
            return -1;
        }
        return fd;
    }
    int e = errno;
    close(fd);
    if (e == ENOENT || e == ECONNREFUSED)
        return -2;
    snprintf(err, errlen, "the hub's control socket %s: %s", path, strerror(e));
    return -1;
}

/* Sends req (one line) with fds attached (n_fds of them, may be 0). */
static int send_request(int fd, json_t *req, const int *fds, size_t n_fds)
{
    char *text = json_dumps(req, JSON_COMPACT);
    if (!text)
        return -1;
    size_t len = strlen(text);
    char *line = xasprintf("%s\n", text);
    free(text);
    char cbuf[CMSG_SPACE(2 * sizeof(int))] = {0};
    struct iovec iov = {.iov_base = line, .iov_len = len + 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n_fds) {
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, n_fds * sizeof(int));
    }
    ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    free(line);
    return n == (ssize_t)(len + 1) ? 0 : -1;
}

/* The hub's lines on the control connection are read as they come (lib/jsonrpc.h's
 * line reader): the attach answer and the session's end may arrive in one read (the
 * whole session can be over before this process is scheduled again), so what follows a
 * line is kept for the next. */
#define HUB_LINE_MAX 65535

enum line_status { LINE_OK, LINE_TIMEOUT, LINE_CLOSED, LINE_TOO_LONG };

/* The next line of fd (at *line, *len bytes), waiting up to timeout_ms (-1: as long as
 * it takes). */
static enum line_status next_line(int fd, struct line_reader *lr, int timeout_ms, const char **line,
                                  size_t *len)
{
    uint64_t end = now_mono_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ULL;
    for (;;) {
        enum lr_status st = lr_next(lr, line, len);
        if (st == LR_LINE)
            return LINE_OK;
        if (st == LR_TOO_LONG)
            return LINE_TOO_LONG;
        int wait = -1;
        if (timeout_ms >= 0) {
            uint64_t now = now_mono_ns();
            if (now >= end)
                return LINE_TIMEOUT;
            wait = (int)((end - now) / 1000000ULL) + 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, wait);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue; /* the deadline, looked at above */
        if (r < 0 || lr_fill(lr, fd) <= 0)
            return LINE_CLOSED;
    }
}

/* The answer line, parsed; NULL with err after timeout_ms or a closed connection. */
static json_t *read_answer(int fd, struct line_reader *lr, int timeout_ms, char *err, size_t errlen)
{
    const char *line;
    size_t len;
    switch (next_line(fd, lr, timeout_ms, &line, &len)) {
    case LINE_TIMEOUT:
        snprintf(err, errlen, "the running hub did not answer within %d ms", timeout_ms);
        return NULL;
    case LINE_CLOSED:
        snprintf(err, errlen, "the running hub closed the connection without an answer");
        return NULL;
    case LINE_TOO_LONG:
        snprintf(err, errlen, "the running hub's answer is too long");
        return NULL;
    case LINE_OK:
        break;
    }
    json_t *a = json_loadb(line, len, 0, NULL);
    if (!json_is_object(a)) {
        json_decref(a);
        snprintf(err, errlen, "the running hub's answer is not JSON");
        return NULL;
    }
    return a;
}

int serve_control_call(const struct hub_config *cfg, json_t *req, json_t **answer, char *err,
                       size_t errlen)
{
    int fd = serve_control_connect(cfg, err, errlen);
    if (fd < 0)
        return fd;
    int rc = -1;
    struct line_reader lr;
    lr_init(&lr, HUB_LINE_MAX);
    if (send_request(fd, req, NULL, 0) < 0)
        snprintf(err, errlen, "sending to the running hub: %s", strerror(errno));
    else if ((*answer = read_answer(fd, &lr, ATTACH_ANSWER_MS, err, errlen)) != NULL)
        rc = 0;
    lr_free(&lr);
    close(fd);
    return rc;
}

/* The hub ended the session or died (why): the client hears it as a log message on its
 * stream, since its requests in flight will get no answer, and so does stderr. */
static void tell_client(const char *why)
{
    char text[600];
    snprintf(text, sizeof(text),
             "The IsolateGPT hub serving this session ended: %s. Start this MCP server again "
             "(a hub is started anew when none runs).",
             why);
    log_warnx("%s", text);
    json_t *note =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "jsonrpc", "2.0", "method", "notifications/message",
                  "params", "level", "error", "logger", "isolategpt", "data", text);
    char *line = json_dumps(note, JSON_COMPACT);
    json_decref(note);
    if (!line)
        return;
    char *framed = xasprintf("%s\n", line);
    free(line);
    /* The hub made the stream non-blocking (the description is shared): blocking again,
     * and a client gone is no signal to die of. */
    signal(SIGPIPE, SIG_IGN);
    set_nonblock(STDOUT_FILENO, false);
    if (write_all(STDOUT_FILENO, framed, strlen(framed)) < 0)
        log_debug("attach: the client did not take the message: %s", strerror(errno));
    free(framed);
}

/* Waits for the end of the attached session on fd (its lines after the attach answer
 * in lr): 0 when the client ended it, 1 when the hub did or died (the client told). */
static int wait_end(int fd, struct line_reader *lr)
{
    const char *line;
    size_t len;
    for (;;) {
        enum line_status st = next_line(fd, lr, -1, &line, &len);
        if (st == LINE_TOO_LONG) { /* no line of ours is this long: not the hub speaking */
            lr_free(lr);
            lr_init(lr, HUB_LINE_MAX);
            continue;
        }
        if (st != LINE_OK)
            break;
        json_t *end = json_loadb(line, len, 0, NULL);
        const char *why = json_string_value(json_object_get(end, "end"));
        int rc = -1;
        if (why && json_is_true(json_object_get(end, "by_client")))
            rc = 0;
        else if (why) {
            tell_client(why);
            rc = 1;
        }
        json_decref(end);
        if (rc >= 0)
            return rc;
    }
    tell_client("its process ended without ending the session (it crashed or was killed)");
    return 1;
}

/* The attach request on fd (a connection to the hub): 0 or 1 as wait_end(), -1 with err
 * when it was refused. Closes fd. */
static int attach_on(int fd, const struct hub_config *cfg, const struct serve_attach_opts *o,
                     char *err, size_t errlen)
{
    json_t *req = json_pack("{s:s,s:b,s:s}", "op", "attach", "ask_exec", o->ask_exec, "isolation",
                            isolation_name(cfg->isolation));
    if (o->user)
        json_object_set_new(req, "user", json_string(o->user));
    if (o->app)
        json_object_set_new(req, "app", json_string(o->app));
    int fds[2] = {STDIN_FILENO, STDOUT_FILENO};
    int rc = send_request(fd, req, fds, 2);
    json_decref(req);
    if (rc < 0) {
        snprintf(err, errlen, "sending to the running hub: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct line_reader lr;
    lr_init(&lr, HUB_LINE_MAX);
    json_t *a = read_answer(fd, &lr, ATTACH_ANSWER_MS, err, errlen);
    if (!a) {
        lr_free(&lr);
        close(fd);
        return -1;
    }
    if (!json_is_true(json_object_get(a, "ok"))) {
        const char *why = json_string_value(json_object_get(a, "error"));
        snprintf(err, errlen, "the running hub refused: %s", why ? why : "no reason given");
        json_decref(a);
        lr_free(&lr);
        close(fd);
        return -1;
    }
    log_info("serving through the running hub as user %s",
             json_string_value(json_object_get(a, "user")));
    json_decref(a);
    /* The session is the hub's now: this process holds on until it ends. */
    rc = wait_end(fd, &lr);
    lr_free(&lr);
    close(fd);
    return rc;
}

int serve_attach(const struct hub_config *cfg, const struct serve_attach_opts *o, bool *started,
                 char *err, size_t errlen)
{
    *started = false;
    for (int starts = 0;; starts++) {
        int fd = serve_control_connect(cfg, err, errlen);
        if (fd >= 0)
            return attach_on(fd, cfg, o, err, errlen);
        if (fd == -1 || !o->start_argv)
            return fd;
        if (starts == ATTACH_STARTS) {
            snprintf(err, errlen,
                     "a hub was started %d times and none answers on the control "
                     "socket",
                     ATTACH_STARTS);
            return -1;
        }
        int r = serve_start_background(cfg, o->start_argv, err, errlen);
        if (r < 0)
            return -1;
        *started = *started || r == 1;
    }
}
