#include "tunnel.h"

#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct pipe_pool {
    int (*idle)[3]; /* read end, write end, capacity */
    unsigned n, max;
    unsigned pipe_size;
};

struct pipe_pool *pipe_pool_new(unsigned pipe_size, unsigned max_idle)
{
    struct pipe_pool *p = xcalloc(1, sizeof(*p));
    p->idle = xcalloc(max_idle ? max_idle : 1, sizeof(*p->idle));
    p->max = max_idle;
    p->pipe_size = pipe_size;
    return p;
}

void pipe_pool_free(struct pipe_pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++) {
        close(p->idle[i][0]);
        close(p->idle[i][1]);
    }
    free(p->idle);
    free(p);
}

unsigned pipe_pool_size(const struct pipe_pool *p)
{
    return __atomic_load_n(&p->n, __ATOMIC_RELAXED); /* the metrics read other workers' */
}

static int pool_get(struct pipe_pool *p, int *r, int *w, size_t *cap)
{
    if (p->n > 0) {
        p->n--;
        *r = p->idle[p->n][0];
        *w = p->idle[p->n][1];
        *cap = (size_t)p->idle[p->n][2];
        return 0;
    }
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return -1;
    /* Bigger pipes mean fewer splice calls per megabyte; the default (64 KiB) is kept
     * if the per-user pipe quota says no. */
    int size = p->pipe_size ? fcntl(fds[1], F_SETPIPE_SZ, (int)p->pipe_size) : -1;
    if (size <= 0)
        size = fcntl(fds[1], F_GETPIPE_SZ);
    *r = fds[0];
    *w = fds[1];
    *cap = size > 0 ? (size_t)size : 65536;
    return 0;
}

static void pool_put(struct pipe_pool *p, int r, int w, size_t cap)
{
    if (p->n < p->max) {
        p->idle[p->n][0] = r;
        p->idle[p->n][1] = w;
        p->idle[p->n][2] = (int)cap;
        p->n++;
        return;
    }
    close(r);
    close(w);
}

void half_init(struct half *h, int from, int to, struct event *rev, struct event *wev)
{
    h->from = from;
    h->to = to;
    h->rev = rev;
    h->wev = wev;
    h->rev_on = h->wev_on = false;
    h->pipe_r = h->pipe_w = -1;
    h->in_pipe = 0;
    h->eof = h->done = false;
    h->bytes = 0;
    h->other = NULL;
}

static void arm(struct half *h, bool want_read, bool want_write)
{
    if (want_read != h->rev_on) {
        if (want_read)
            event_add(h->rev, NULL);
        else
            event_del(h->rev);
        h->rev_on = want_read;
    }
    if (want_write != h->wev_on) {
        if (want_write)
            event_add(h->wev, NULL);
        else
            event_del(h->wev);
        h->wev_on = want_write;
    }
}

static void drop_pipe(struct half *h, struct pipe_pool *pool)
{
    if (h->pipe_r < 0)
        return;
    if (h->in_pipe == 0) {
        pool_put(pool, h->pipe_r, h->pipe_w, h->pipe_cap);
    } else {
        close(h->pipe_r);
        close(h->pipe_w);
    }
    h->pipe_r = h->pipe_w = -1;
    h->in_pipe = 0;
}

/* Rounds per callback, so that one fast tunnel cannot starve the others. */
#define PUMP_ROUNDS 16

enum pump_result half_pump(struct half *h, struct pipe_pool *pool, uint64_t *moved)
{
    *moved = 0;
    if (h->done)
        return PUMP_DONE;
    /* A read shorter than asked for drained the socket: once it is written out, wait
     * for readiness instead of paying for a read that would say EAGAIN. Epoll is
     * level-triggered, so nothing is missed. */
    bool drained = false;
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        if (h->pre_off < h->pre_len) {
            ssize_t n = send(h->to, h->pre + h->pre_off, h->pre_len - h->pre_off, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    arm(h, false, true);
                    return PUMP_WAIT;
                }
                return PUMP_ERR_TO;
            }
            h->pre_off += (size_t)n;
            if (h->pre_counts) {
                h->bytes += (uint64_t)n;
                *moved += (uint64_t)n;
            }
            if (h->pre_off == h->pre_len) {
                free(h->pre);
                h->pre = NULL;
                h->pre_len = h->pre_off = 0;
                drained = true; /* nothing was read yet: wait for the first bytes */
            }
            continue;
        }
        if (h->in_pipe > 0) {
            ssize_t n =
                splice(h->pipe_r, NULL, h->to, NULL, h->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    arm(h, false, true);
                    return PUMP_WAIT;
                }
                return PUMP_ERR_TO;
            }
            h->in_pipe -= (size_t)n;
            h->bytes += (uint64_t)n;
            *moved += (uint64_t)n;
            continue;
        }
        if (drained && !h->eof) {
            drop_pipe(h, pool);
            arm(h, true, false);
            return PUMP_WAIT;
        }
        if (h->eof) {
            drop_pipe(h, pool);
            arm(h, false, false);
            /* When the other direction is finished too, the tunnel closes now and
             * close() sends the FIN. Otherwise half-close: the peer may still talk.
             * (ENOTCONN: the peer is already gone; the other half will notice.) */
            if (!h->other || !h->other->done)
                (void)shutdown(h->to, SHUT_WR);
            h->done = true;
            return PUMP_DONE;
        }
        if (h->pipe_r < 0 && pool_get(pool, &h->pipe_r, &h->pipe_w, &h->pipe_cap) < 0) {
            arm(h, false, false);
            return PUMP_ERR_NO_PIPE;
        }
        size_t want = h->pipe_cap;
        ssize_t n = splice(h->from, NULL, h->pipe_w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            h->in_pipe = (size_t)n;
            drained = (size_t)n < want;
        } else if (n == 0) {
            h->eof = true;
        } else if (errno == EAGAIN || errno == EINTR) {
            drop_pipe(h, pool); /* empty: back to the pool while we wait */
            arm(h, true, false);
            return PUMP_WAIT;
        } else {
            return PUMP_ERR_FROM;
        }
    }
    /* Still busy: stay armed for more; the loop calls back at once. */
    arm(h, h->in_pipe == 0 && h->pre_off == h->pre_len, h->in_pipe > 0 || h->pre_off < h->pre_len);
    return PUMP_WAIT;
}

void half_release(struct half *h, struct pipe_pool *pool)
{
    if (h->rev && h->wev)
        arm(h, false, false);
    drop_pipe(h, pool);
    free(h->pre);
    h->pre = NULL;
    h->pre_len = h->pre_off = 0;
}
