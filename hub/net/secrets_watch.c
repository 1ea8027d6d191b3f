#include "secrets_watch.h"
#include "log.h"
#include "net_proxy.h"
#include "secret.h"
#include "secrets/secrets.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

struct secrets_watch {
    struct secret_store *store;
    struct proxy_sup *proxy;
    int fd;
    struct event *ev;
};

/* NAME.json was written (renamed into place by secret_store_set). */
static void changed(struct secrets_watch *w, const char *file)
{
    size_t n = strlen(file);
    if (n < 6 || strcmp(file + n - 5, ".json") != 0 || file[0] == '.')
        return;
    char name[SECRET_NAME_MAX + 1];
    if (n - 5 > SECRET_NAME_MAX)
        return;
    memcpy(name, file, n - 5);
    name[n - 5] = '\0';
    if (!secret_name_valid(name) || !w->proxy)
        return;
    struct secret_meta meta;
    char *value = NULL, err[512];
    size_t len = 0;
    int rc = secret_store_get(w->store, name, &meta, &value, &len, err, sizeof(err));
    if (rc <= 0) {
        if (rc < 0)
            log_warnx("secret %s changed but cannot be read: %s", name, err);
        return;
    }
    if (meta.hosts && meta.hosts[0] && !secret_injectable(value, len))
        proxy_secret_rotate(w->proxy, &meta, value, len);
    secret_free(value);
    secret_meta_clear(&meta);
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct secrets_watch *w = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            if (e->len && (e->mask & (IN_MOVED_TO | IN_CLOSE_WRITE)))
                changed(w, e->name);
            p += sizeof(*e) + e->len;
        }
    }
}

struct secrets_watch *secrets_watch_start(struct event_base *base, struct secret_store *store,
                                          struct proxy_sup *proxy, char *err, size_t errlen)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0 || inotify_add_watch(fd, secret_store_dir(store),
                                    IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR) < 0) {
        snprintf(err, errlen, "watching %s: %s", secret_store_dir(store), strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    struct secrets_watch *w = xcalloc(1, sizeof(*w));
    w->store = store;
    w->proxy = proxy;
    w->fd = fd;
    w->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_event, w);
    event_add(w->ev, NULL);
    return w;
}

void secrets_watch_free(struct secrets_watch *w)
{
    if (!w)
        return;
    event_free(w->ev);
    close(w->fd);
    free(w);
}
