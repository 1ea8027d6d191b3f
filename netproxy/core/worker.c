/* Workers: --workers N event loops, so that the proxy can use more than one core.
 *
 * Worker 0 is the main thread's loop. Workers 1..N-1 each run a loop of their own on a
 * thread started before the sandbox (the seccomp filter is synchronised to every
 * thread; the threads wait at a gate until it is on, so nothing is served before,
 * and the filter goes on only once each thread has reached the gate).
 * A connection lives on the worker that accepted it from start to close: its events,
 * timers, DNS lookup and splice pipes all belong to that loop, so the relay path takes
 * no lock. What workers share is locked or atomic: the tunnel and pending counts and
 * the spokes' counts (px->lock), spoke references and metrics (atomic), the address
 * guard's endpoint list (a rwlock) and the audit stream (lib/audit: one whole line
 * per write, under its lock, so records never interleave or tear).
 *
 * The main thread keeps the control channel, signals and metrics. A drain stops the
 * listeners, then wakes every worker; a worker whose last connection ends leaves its
 * loop and tells the main thread, which exits once they all have. */
#include "log.h"
#include "netproxy/netproxy.h"
#include "resolve.h"
#include "tunnel.h"
#include "util.h"

#include "conn.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The gate the threads wait at until the sandbox is on. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static unsigned gate_arrived;

void worker_abort_all(struct worker *w)
{
    while (w->conns)
        conn_abort(w->conns);
}

static void leave_if_done(struct worker *w)
{
    struct proxy *px = w->px;
    bool draining = __atomic_load_n(&px->draining, __ATOMIC_ACQUIRE);
    bool aborting = __atomic_load_n(&px->aborting, __ATOMIC_ACQUIRE);
    if (aborting)
        worker_abort_all(w);
    if ((draining || aborting) && !w->conns)
        event_base_loopexit(w->base, NULL);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    leave_if_done(arg);
}

void worker_conn_gone(struct worker *w)
{
    worker_spare_reclaim(w);
    if (w->conns || !__atomic_load_n(&w->px->draining, __ATOMIC_ACQUIRE))
        return;
    if (w->index == 0) {
        if (workers_others_exited(w->px))
            event_base_loopexit(w->base, NULL);
    } else {
        event_base_loopexit(w->base, NULL);
    }
}

void worker_init(struct proxy *px, struct worker *w, unsigned i, struct event_base *base)
{
    w->px = px;
    w->index = i;
    w->base = base;
    w->pipes = pipe_pool_new(px->cfg->pipe_size, 64);
    w->spare_fd = -1;
    worker_spare_reclaim(w);
    if (w->spare_fd < 0)
        fatal("creating the spare descriptor");
    if (i > 0) {
        w->wake = event_new(base, -1, 0, on_wake, w);
        if (!w->wake)
            fatalx("cannot create worker %u's wake-up event", i);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_mutex_lock(&gate_lock);
    gate_arrived++;
    pthread_cond_broadcast(&gate_cond);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    /* A loop with nothing pending must not end: the listeners may come later (hub). */
    event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
    struct proxy *px = w->px;
    pthread_mutex_lock(&px->lock);
    w->exited = true;
    pthread_mutex_unlock(&px->lock);
    event_active(px->worker_exited, EV_READ, 0);
    return NULL;
}

bool workers_others_exited(struct proxy *px)
{
    pthread_mutex_lock(&px->lock);
    bool all = true;
    for (unsigned i = 1; i < px->nworkers; i++)
        all = all && px->workers[i].exited;
    pthread_mutex_unlock(&px->lock);
    return all;
}

int workers_start(struct proxy *px, char *err, size_t errlen)
{
    for (unsigned i = 1; i < px->nworkers; i++) {
        struct worker *w = &px->workers[i];
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            snprintf(err, errlen, "cannot start worker %u: %s", i, strerror(rc));
            return -1;
        }
        w->started = true;
    }
    /* A thread makes its own setup calls (rseq, ...) when it starts: the sandbox goes on
     * only once every thread is waiting at the gate. */
    pthread_mutex_lock(&gate_lock);
    while (gate_arrived < px->nworkers - 1)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    return 0;
}

void workers_open(struct proxy *px)
{
    (void)px;
    pthread_mutex_lock(&gate_lock);
    gate_open = true;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

void workers_wake(struct proxy *px)
{
    for (unsigned i = 1; i < px->nworkers; i++)
        if (px->workers[i].started)
            event_active(px->workers[i].wake, EV_READ, 0);
}

void workers_stop(struct proxy *px)
{
    __atomic_store_n(&px->aborting, true, __ATOMIC_RELEASE);
    worker_abort_all(&px->workers[0]);
    workers_open(px); /* a setup that failed before opening must not leave them waiting */
    workers_wake(px);
    for (unsigned i = 1; i < px->nworkers; i++) {
        struct worker *w = &px->workers[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        w->started = false;
    }
}
