/* hub serve follows its spokes directory: an app added, updated (`hub spokes add`,
 * `update`) or removed while it runs is offered at once. inotify says the directory
 * changed; after a quiet moment (an editor or an installer writes in several steps)
 * the hub reads it again (hub_manifests_reload) and every connected client is told
 * with notifications/tools/list_changed. A directory that no longer loads (one bad
 * manifest) changes nothing: the apps stay as they were, and the log and the audit
 * say why. */
#include "log.h"
#include "serve/serve_impl.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_QUIET_MS 250
#define WATCH_MASK                                                                                 \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)

static void tell_sessions(struct serve *sv)
{
    struct serve_session *ss;
    LIST_FOREACH(ss, &sv->sessions, link)
    if (ss->state == SS_READY) {
        /* An app's tools, prompts and resources come and go with its manifest. */
        serve_session_send(ss, jrpc_notification("notifications/tools/list_changed", NULL), NULL);
        serve_session_send(ss, jrpc_notification("notifications/prompts/list_changed", NULL), NULL);
        serve_session_send(ss, jrpc_notification("notifications/resources/list_changed", NULL),
                           NULL);
    }
    /* 2026-07-28 clients: on the subscriptions that asked for it. */
    serve_subscribe_changed(sv, SERVE_LIST_TOOLS | SERVE_LIST_PROMPTS | SERVE_LIST_RESOURCES);
}

static void on_quiet(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve *sv = arg;
    char summary[512], err[1024];
    int rc = hub_manifests_reload(sv->hub, summary, sizeof(summary), err, sizeof(err));
    if (rc < 0) {
        log_warnx("%s changed but does not load (the apps stay as they were): %s",
                  sv->cfg->spokes_dir, err);
        return;
    }
    if (rc == 0)
        return;
    tell_sessions(sv);
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct serve *sv = arg;
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool relevant = false;
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                log_warnx("%s was removed or moved: apps added there from now on are not seen "
                          "until hub serve starts again",
                          sv->cfg->spokes_dir);
                event_del(sv->ev_watch);
                return;
            }
            if (e->len && manifest_is_file_name(e->name)) /* NUL-padded by the kernel */
                relevant = true;
            p += sizeof(*e) + e->len;
        }
    }
    if (relevant) {
        struct timeval quiet = {0, WATCH_QUIET_MS * 1000};
        evtimer_add(sv->ev_quiet, &quiet); /* again: the quiet moment starts over */
    }
}

int serve_watch_start(struct serve *sv, char *err, size_t errlen)
{
    sv->watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (sv->watch_fd < 0 || inotify_add_watch(sv->watch_fd, sv->cfg->spokes_dir, WATCH_MASK) < 0) {
        snprintf(err, errlen, "watching %s: %s", sv->cfg->spokes_dir, strerror(errno));
        return -1;
    }
    sv->ev_watch = event_new(sv->base, sv->watch_fd, EV_READ | EV_PERSIST, on_inotify, sv);
    sv->ev_quiet = evtimer_new(sv->base, on_quiet, sv);
    event_add(sv->ev_watch, NULL);
    return 0;
}

void serve_watch_stop(struct serve *sv)
{
    if (sv->ev_watch)
        event_free(sv->ev_watch);
    if (sv->ev_quiet)
        event_free(sv->ev_quiet);
    if (sv->watch_fd >= 0)
        close(sv->watch_fd);
    sv->ev_watch = sv->ev_quiet = NULL;
    sv->watch_fd = -1;
}
