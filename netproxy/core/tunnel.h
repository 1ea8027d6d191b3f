/* Relaying an established tunnel: each direction is a "half" that moves bytes from
 * one socket to the other with splice(2) through a pipe, so the payload never enters
 * user space. Pipes come from a small pool and are held only while bytes are in
 * flight: an idle tunnel costs two sockets and no pipe.
 *
 * End of stream on one side is passed on as shutdown(SHUT_WR) on the other once
 * everything read has been written (half-close); the other direction keeps flowing. */
#ifndef NETPROXY_TUNNEL_H
#define NETPROXY_TUNNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event;

struct pipe_pool;

struct pipe_pool *pipe_pool_new(unsigned pipe_size, unsigned max_idle);
void pipe_pool_free(struct pipe_pool *pool);
unsigned pipe_pool_size(const struct pipe_pool *pool);

struct half {
    int from, to;
    struct event *rev; /* EV_READ on from */
    struct event *wev; /* EV_WRITE on to */
    bool rev_on, wev_on;
    int pipe_r, pipe_w; /* -1 when no pipe is held */
    size_t pipe_cap;
    size_t in_pipe;
    /* Bytes from user space sent before the spliced stream: the "200" answer for the
     * upstream-to-client half, early tunnel data the client sent with its request for
     * the other. Owned (malloc). */
    char *pre;
    size_t pre_len, pre_off;
    bool pre_counts;          /* whether pre bytes count as payload */
    bool eof;                 /* from reached end of stream */
    bool done;                /* ... and it was passed on */
    const struct half *other; /* the opposite direction */
    uint64_t bytes;           /* payload bytes written to `to` */
};

enum pump_result {
    PUMP_WAIT,        /* waiting for readiness; events armed */
    PUMP_DONE,        /* end of stream passed on; this half is finished */
    PUMP_ERR_FROM,    /* error reading from `from` (reset) */
    PUMP_ERR_TO,      /* error writing to `to` */
    PUMP_ERR_NO_PIPE, /* out of descriptors */
};

void half_init(struct half *h, int from, int to, struct event *rev, struct event *wev);
/* Moves what it can without blocking; *moved gets the payload bytes written. */
enum pump_result half_pump(struct half *h, struct pipe_pool *pool, uint64_t *moved);
/* Disarms the events and gives the pipe back (or closes it if bytes are still in it). */
void half_release(struct half *h, struct pipe_pool *pool);

#endif
