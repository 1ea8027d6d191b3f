/* hub serve --stdio: one client on stdin/stdout, newline-delimited JSON-RPC (the MCP
 * stdio transport). Nothing but MCP frames goes to stdout (the hub logs to stderr);
 * a frame longer than the limit ends the session, since the stream cannot be
 * resynchronised; a client that stops reading while the hub has more than the output
 * bound to say ends it too. The client closing stdin ends the session and the hub. */
#include "log.h"
#include "serve_impl.h"
#include "util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STDIO_MAX_FRAME (4 * 1024 * 1024)
#define STDIO_MAX_OUT (64 * 1024 * 1024)

struct stdio_t {
    struct serve *sv;
    struct serve_session *ss;
    struct line_reader lr;
    struct event *ev_in, *ev_out;
    struct evbuffer *out;
    bool done;
    const char *why;
};

static void finish(struct stdio_t *st, const char *why)
{
    if (st->done)
        return;
    st->done = true;
    st->why = why;
    event_base_loopbreak(st->sv->base);
}

static void flush_out(struct stdio_t *st)
{
    while (evbuffer_get_length(st->out) > 0) {
        int n = evbuffer_write(st->out, STDOUT_FILENO);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (st->ev_out)
                event_add(st->ev_out, NULL);
            return;
        }
        if (n <= 0) {
            finish(st, "the client closed stdout");
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

static void stdio_send(void *t, json_t *msg, const json_t *related)
{
    (void)related;
    struct stdio_t *st = t;
    size_t len;
    char *line = jrpc_dump_line(msg, &len);
    if (!line)
        return;
    if (evbuffer_get_length(st->out) + len > STDIO_MAX_OUT) {
        free(line);
        log_warnx("serve: the client does not read its answers; ending the session");
        finish(st, "the client stopped reading");
        return;
    }
    evbuffer_add(st->out, line, len);
    free(line);
    flush_out(st);
}

static const struct serve_transport stdio_transport = {.send = stdio_send};

static void on_frame(struct stdio_t *st, const char *line, size_t len)
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
    struct stdio_t *st = ud;
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
        finish(st, "a frame longer than the limit");
        return;
    }
    if (n == 0)
        finish(st, "the client closed stdin");
    else if (n < 0)
        finish(st, "reading stdin failed");
}

int serve_stdio(struct serve *sv, const char *user)
{
    struct stdio_t st = {.sv = sv};
    if (set_nonblock(STDIN_FILENO, true) < 0 || set_nonblock(STDOUT_FILENO, true) < 0) {
        log_warn("serve --stdio: making stdin/stdout non-blocking");
        return -1;
    }
    lr_init(&st.lr, STDIO_MAX_FRAME);
    st.out = evbuffer_new();
    st.ev_in = event_new(sv->base, STDIN_FILENO, EV_READ | EV_PERSIST, on_readable, &st);
    st.ev_out = event_new(sv->base, STDOUT_FILENO, EV_WRITE, on_writable, &st);
    if (event_add(st.ev_in, NULL) < 0) {
        log_warnx("serve --stdio: stdin cannot be polled (a pipe or terminal is needed)");
        event_free(st.ev_in);
        event_free(st.ev_out);
        evbuffer_free(st.out);
        lr_free(&st.lr);
        return -1;
    }
    st.ss = serve_session_new(sv, &stdio_transport, &st, user, "stdio", "stdio");
    while (!st.done && !hub_quit_requested(sv->hub))
        event_base_loop(sv->base, EVLOOP_ONCE);
    serve_session_close(st.ss, st.why ? st.why : "the hub was asked to quit");
    /* What is still buffered (the last answers) goes out before the hub ends. */
    set_nonblock(STDOUT_FILENO, false);
    while (evbuffer_get_length(st.out) > 0 && evbuffer_write(st.out, STDOUT_FILENO) > 0)
        ;
    event_free(st.ev_in);
    event_free(st.ev_out);
    evbuffer_free(st.out);
    lr_free(&st.lr);
    return 0;
}
