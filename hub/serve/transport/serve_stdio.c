/* hub serve --stdio: a client on a pair of byte streams, newline-delimited JSON-RPC (the
 * MCP stdio transport): this process's stdin/stdout, or the ones a `hub serve --stdio`
 * handed over the control socket (serve_control.c), several at once. Nothing but MCP
 * frames goes to the output (the hub logs to stderr); a frame longer than the limit
 * ends the session, since the stream cannot be resynchronised; a client that stops
 * reading while the hub has more than the output bound to say ends it too. The client
 * closing its output ends the session (and, on the hub's own stdin, the hub). */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STDIO_MAX_FRAME (4 * 1024 * 1024)
#define STDIO_MAX_OUT (64 * 1024 * 1024)

struct serve_stream {
    struct serve *sv;
    struct serve_session *ss;
    int in_fd, out_fd;
    struct line_reader lr;
    struct event *ev_in, *ev_out;
    struct evbuffer *out;
    bool done;
    serve_stream_end_fn end;
    void *end_ud;
};

/* The stream is over: the owner is told once (it closes it, now or later). */
static void finish(struct serve_stream *st, const char *why, bool by_client)
{
    if (st->done)
        return;
    st->done = true;
    event_del(st->ev_in);
    st->end(st->end_ud, st, why, by_client);
}

static void flush_out(struct serve_stream *st)
{
    while (evbuffer_get_length(st->out) > 0) {
        int n = evbuffer_write(st->out, st->out_fd);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            event_add(st->ev_out, NULL);
            return;
        }
        if (n <= 0) {
            evbuffer_drain(st->out, evbuffer_get_length(st->out));
            finish(st, "the client closed its input", true);
            return;
        }
    }
}

static void on_writable(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    flush_out(ud);
}

static void stream_send(void *t, json_t *msg, const json_t *related)
{
    (void)related;
    struct serve_stream *st = t;
    size_t len;
    char *line = jrpc_dump_line(msg, &len);
    if (!line)
        return;
    if (evbuffer_get_length(st->out) + len > STDIO_MAX_OUT) {
        free(line);
        log_warnx("serve: the client does not read its answers; ending the session");
        finish(st, "the client stopped reading", true);
        return;
    }
    evbuffer_add(st->out, line, len);
    free(line);
    flush_out(st);
}

static const struct serve_transport stream_transport = {.send = stream_send};

static void on_frame(struct serve_stream *st, const char *line, size_t len)
{
    if (len == 0)
        return;
    struct jrpc_msg msg;
    int code;
    char err[256];
    if (jrpc_parse(line, len, &msg, &code, err, sizeof(err)) < 0) {
        serve_session_on_bad_frame(st->ss, code, err);
        return;
    }
    serve_session_on_message(st->ss, &msg);
    jrpc_msg_free(&msg);
}

static void on_readable(evutil_socket_t fd, short what, void *ud)
{
    (void)what;
    struct serve_stream *st = ud;
    ssize_t n = lr_fill(&st->lr, fd);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    const char *line;
    size_t len;
    enum lr_status s;
    while (!st->done && (s = lr_next(&st->lr, &line, &len)) == LR_LINE)
        on_frame(st, line, len);
    if (st->done)
        return;
    if (s == LR_TOO_LONG || (n < 0 && errno == ENOBUFS)) {
        serve_session_on_bad_frame(st->ss, JRPC_INVALID_REQUEST, "frame longer than the limit");
        finish(st, "a frame longer than the limit", true);
        return;
    }
    if (n == 0)
        finish(st, "the client closed stdin", true);
    else if (n < 0)
        finish(st, "reading stdin failed", false);
}

struct serve_stream *serve_stream_open(struct serve *sv, int in_fd, int out_fd, const char *user,
                                       const char *remote, const char *transport,
                                       serve_stream_end_fn end, void *ud, char *err, size_t errlen)
{
    if (set_nonblock(in_fd, true) < 0 || set_nonblock(out_fd, true) < 0) {
        snprintf(err, errlen, "making the client's streams non-blocking: %s", strerror(errno));
        return NULL;
    }
    struct serve_stream *st = xcalloc(1, sizeof(*st));
    st->sv = sv;
    st->in_fd = in_fd;
    st->out_fd = out_fd;
    st->end = end;
    st->end_ud = ud;
    lr_init(&st->lr, STDIO_MAX_FRAME);
    st->out = evbuffer_new();
    st->ev_in = event_new(sv->base, in_fd, EV_READ | EV_PERSIST, on_readable, st);
    st->ev_out = event_new(sv->base, out_fd, EV_WRITE, on_writable, st);
    if (!st->ev_in || !st->ev_out || event_add(st->ev_in, NULL) < 0) {
        snprintf(err, errlen, "the client's input cannot be polled (a pipe or socket is needed)");
        if (st->ev_in)
            event_free(st->ev_in);
        if (st->ev_out)
            event_free(st->ev_out);
        evbuffer_free(st->out);
        lr_free(&st->lr);
        free(st);
        return NULL;
    }
    st->ss = serve_session_new(sv, &stream_transport, st, user, remote, transport);
    return st;
}

struct serve_session *serve_stream_session(struct serve_stream *st)
{
    return st->ss;
}

void serve_stream_close(struct serve_stream *st, const char *why, bool drain)
{
    serve_session_close(st->ss, why);
    /* What is still buffered (the last answers) goes out first: waiting for it on the
     * hub's own stdout, as much as goes at once on a stream handed over. */
    if (drain)
        set_nonblock(st->out_fd, false);
    while (evbuffer_get_length(st->out) > 0 && evbuffer_write(st->out, st->out_fd) > 0)
        ;
    event_free(st->ev_in);
    event_free(st->ev_out);
    evbuffer_free(st->out);
    lr_free(&st->lr);
    free(st);
}

struct own_stdio {
    struct serve *sv;
    bool done;
    const char *why;
};

static void on_own_end(void *ud, struct serve_stream *st, const char *why, bool by_client)
{
    (void)st;
    (void)by_client;
    struct own_stdio *o = ud;
    o->done = true;
    o->why = why;
    event_base_loopbreak(o->sv->base);
}

int serve_stdio(struct serve *sv, const char *user)
{
    struct own_stdio o = {.sv = sv};
    char err[200];
    struct serve_stream *st = serve_stream_open(sv, STDIN_FILENO, STDOUT_FILENO, user, "stdio",
                                                "stdio", on_own_end, &o, err, sizeof(err));
    if (!st) {
        log_warnx("serve --stdio: %s", err);
        return -1;
    }
    while (!o.done && !hub_quit_requested(sv->hub))
        event_base_loop(sv->base, EVLOOP_ONCE);
    serve_stream_close(st, o.why ? o.why : "the hub was asked to quit", true);
    return 0;
}
