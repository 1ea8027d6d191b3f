/* `hub serve --background`: the hub of this host that serves only the clients that
 * attach over its control socket (serve_control.c). `hub serve --stdio` starts one
 * when no hub runs (serve_spawn.c), so that the stdio clients of a host share one hub,
 * its spokes and their data, as they would share the installed service.
 *
 * It says "ready" on the descriptor its starter gave it once clients can attach, and
 * ends by itself once it has had nothing to do for serve.idle_exit_s: no session, no
 * question waiting for hub approvals or for a client's retry (input_required), no
 * connection on the control socket. It ends too when its socket is gone or replaced
 * (its run directory removed): no client can reach it any more; and when a hub serve
 * that starts now (the service) asks for the socket while it serves nobody (op yield,
 * serve_control.c), so that the host's spokes are that hub's alone. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How often the idle state is looked at. */
#define IDLE_CHECK_MS 250

struct background {
    struct serve *sv;
    uint64_t idle_since; /* now_mono_ns() when it last had something to do */
    char sock[108];
    struct stat sock_st; /* the socket it bound, to know it is still the one at the path */
    bool done;           /* it ends by itself (said in its log) */
};

/* Whether the path still leads to the socket this hub listens on. */
static bool socket_ours(const struct background *b)
{
    struct stat st;
    return lstat(b->sock, &st) == 0 && st.st_ino == b->sock_st.st_ino &&
           st.st_dev == b->sock_st.st_dev;
}

static bool busy(const struct serve *sv)
{
    return !LIST_EMPTY(&sv->sessions) || sv->n_approvals > 0 || !LIST_EMPTY(&sv->mrtr) ||
           sv->n_ctl_conns > 0;
}

static void on_check(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct background *b = ud;
    uint64_t now = now_mono_ns();
    if (!socket_ours(b)) {
        log_info("the background hub ends: its control socket %s is gone or replaced, no "
                 "client can attach",
                 b->sock);
        b->done = true;
        event_base_loopbreak(b->sv->base);
        return;
    }
    if (busy(b->sv)) {
        b->idle_since = now;
        return;
    }
    unsigned limit = b->sv->cfg->idle_exit_s;
    if (limit > 0 && now - b->idle_since >= (uint64_t)limit * 1000000000ULL) {
        log_info("the background hub had no client for %u s: ending", limit);
        b->done = true;
        event_base_loopbreak(b->sv->base);
    }
}

void serve_ready_say(int fd, const char *word)
{
    if (fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof(line), "%s\n", word);
    if (write_all(fd, line, (size_t)n) < 0)
        log_debug("background: the starter did not hear \"%s\"", word);
}

int serve_background(struct serve *sv, int ready_fd)
{
    struct background b = {.sv = sv, .idle_since = now_mono_ns()};
    sv->background = true;
    serve_control_path(sv->cfg, b.sock, sizeof(b.sock));
    if (lstat(b.sock, &b.sock_st) < 0)
        log_warnx("the control socket %s: %s", b.sock, strerror(errno));
    struct event *check = event_new(sv->base, -1, EV_PERSIST, on_check, &b);
    struct timeval tv = {0, IDLE_CHECK_MS * 1000};
    event_add(check, &tv);
    serve_ready_say(ready_fd, "ready");
    if (ready_fd >= 0)
        close(ready_fd);
    if (sv->cfg->idle_exit_s > 0)
        log_info("the background hub ends after %u s without a client", sv->cfg->idle_exit_s);
    while (!b.done && !sv->yielded && !hub_quit_requested(sv->hub))
        event_base_loop(sv->base, EVLOOP_ONCE);
    event_free(check);
    return 0;
}
