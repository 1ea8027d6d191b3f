/* Listening sockets: bound by main.c (standalone) or handed over by the hub. */
#include "addrguard.h"
#include "conn.h"
#include "log.h"
#include "netproxy/audit/audit.h"
#include "netproxy/netproxy.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long accepting pauses when the process is out of descriptors. */
#define ACCEPT_PAUSE_MS 100
/* The most connections accepted from a closing listener's queue (SOMAXCONN's default). */
#define LISTENER_BACKLOG_DRAIN_MAX 4096

/* Out of descriptors, accept() cannot even take a client to tell it so, and the client
 * would wait in the backlog for nothing. So one descriptor is held in reserve (an inet
 * socket: the sandbox lets the proxy make those): at EMFILE it is given up for one
 * accept(), that connection takes the normal path and is answered 503 tunnel-limit
 * (audited) when its dial finds no descriptor, and the reserve is taken back as soon
 * as a connection ends. */
void worker_spare_reclaim(struct worker *w)
{
    if (w->spare_fd < 0)
        w->spare_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct listen_watch *lw = arg;
    worker_spare_reclaim(lw->w);
    event_add(lw->ev, NULL);
}

static void accept_error(struct listen_watch *lw, int err)
{
    struct listener *l = lw->l;
    metrics_accept_error(l->px->metrics);
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        /* Without a descriptor there is nobody to answer: pause instead of spinning. */
        log_warnx("spoke %s: accept: %s; pausing %d ms", l->spoke->name, strerror(err),
                  ACCEPT_PAUSE_MS);
        event_del(lw->ev);
        struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
        evtimer_add(lw->resume, &tv);
        return;
    }
    log_warnx("spoke %s: accept: %s", l->spoke->name, strerror(err));
}

/* One connection per readiness event: the listener is level-triggered, so a backlog
 * brings us straight back, and the common case costs no accept() ending in EAGAIN.
 * (A socket several workers watch wakes them all; those that lose the race get
 * EAGAIN.) */
static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    struct listen_watch *lw = arg;
    struct worker *w = lw->w;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && w->spare_fd >= 0) {
        close(w->spare_fd);
        w->spare_fd = -1;
        len = sizeof(ss);
        fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    }
    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
            accept_error(lw, errno);
        return;
    }
    conn_accept(w, lw->l, fd, (struct sockaddr *)&ss, len);
}

struct listener *listener_add(struct proxy *px, struct spoke *s, int fd, int worker,
                              const char *forward, char *err, size_t errlen)
{
    int type = 0, acc = 0;
    socklen_t len = sizeof(type);
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
        getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        snprintf(err, errlen, "the descriptor is not a TCP socket");
        close(fd);
        return NULL;
    }
    if (sockaddr_port((struct sockaddr *)&ss) == 0) {
        snprintf(err, errlen, "the socket is not bound");
        close(fd);
        return NULL;
    }
    len = sizeof(acc);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) < 0 ||
        (!acc && listen(fd, SOMAXCONN) < 0)) {
        snprintf(err, errlen, "cannot listen on the socket: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    if (set_nonblock(fd, true) < 0 || set_cloexec(fd, true) < 0) {
        snprintf(err, errlen, "cannot configure the socket: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    /* Accepted sockets inherit TCP_NODELAY: small TLS records must not wait. */
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct listener *l = xcalloc(1, sizeof(*l));
    l->px = px;
    l->spoke = s;
    l->addr = ss;
    l->fd = fd;
    l->forward = forward ? xstrdup(forward) : NULL;
    int transparent = 0;
    len = sizeof(transparent);
    l->transparent = ss.ss_family == AF_INET &&
                     getsockopt(fd, SOL_IP, IP_TRANSPARENT, &transparent, &len) == 0 && transparent;
    unsigned first = worker < 0 ? 0 : (unsigned)worker;
    l->nwatch = worker < 0 ? px->nworkers : 1;
    l->watch = xcalloc(l->nwatch, sizeof(*l->watch));
    bool ok = true;
    for (unsigned i = 0; i < l->nwatch; i++) {
        struct listen_watch *lw = &l->watch[i];
        lw->l = l;
        lw->w = &px->workers[first + i];
        lw->ev = event_new(lw->w->base, fd, EV_READ | EV_PERSIST, on_accept, lw);
        lw->resume = evtimer_new(lw->w->base, on_resume, lw);
        ok = ok && lw->ev && lw->resume && event_add(lw->ev, NULL) == 0;
    }
    if (!ok) {
        snprintf(err, errlen, "cannot watch the socket");
        listener_free(l);
        return NULL;
    }
    /* A forward listener lives in the jail's namespace: its address is not ours. */
    if (!forward) {
        addrguard_add_endpoint(px->guard, (struct sockaddr *)&ss);
        l->guarded = true;
    }
    l->next = s->listeners;
    s->listeners = l;
    return l;
}

/* Connections the kernel completed before the listener closes would otherwise be
 * reset unseen: a refused connection without its record. So they are accepted and
 * decided like any other, on the main thread's loop (which runs the drain too), up to
 * a bound, since clients may keep arriving until the socket is closed. */
static void accept_backlog(struct listener *l)
{
    struct worker *w = &l->px->workers[0];
    if (__atomic_load_n(&l->px->aborting, __ATOMIC_ACQUIRE))
        return; /* ending every connection now: nobody would decide these */
    for (unsigned n = 0; n < LISTENER_BACKLOG_DRAIN_MAX; n++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN: the queue is empty (or out of descriptors: see accept_error) */
        }
        conn_accept(w, l, fd, (struct sockaddr *)&ss, len);
    }
    log_warnx("spoke %s: more than %d connections queued at close; the rest are reset",
              l->spoke->name, LISTENER_BACKLOG_DRAIN_MAX);
}

/* Main thread. With workers, event_free() waits for a callback another thread is
 * running on the event to return, so no accept is in flight once this is done. */
void listener_free(struct listener *l)
{
    if (!l)
        return;
    for (unsigned i = 0; i < l->nwatch; i++) {
        if (l->watch[i].ev)
            event_free(l->watch[i].ev);
        if (l->watch[i].resume)
            event_free(l->watch[i].resume);
    }
    if (l->spoke)
        accept_backlog(l);
    if (l->guarded)
        addrguard_remove_endpoint(l->px->guard, (struct sockaddr *)&l->addr);
    free(l->watch);
    free(l->forward);
    close(l->fd);
    free(l);
}

int listener_bind(const char *hostport, bool reuseport, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (!sockaddr_parse_hostport(hostport, &ss, &len)) {
        snprintf(err, errlen, "--listen %s: expected ADDR:PORT (IPv6 as [ADDR]:PORT)", hostport);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "--listen %s: socket: %s", hostport, strerror(errno));
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
        snprintf(err, errlen, "--listen %s: SO_REUSEPORT: %s", hostport, strerror(errno));
        close(fd);
        return -1;
    }
    if (ss.ss_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        snprintf(err, errlen, "--listen %s: %s", hostport, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}
