/* The attacker's collection server: a real listener on 127.0.0.1 (never another
 * address), on the runner's event loop, that counts every byte any client sends and
 * keeps the first KEEP_MAX of them, so the runner can tell whether a stolen secret
 * arrived. It answers each request with "204 No Content" once the client has
 * finished sending. */
#include "casestudies.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_MAX (1u << 20)
#define CLIENTS_MAX 64

struct cs_collector {
    struct evconnlistener *listener;
    char addr[32];
    uint64_t bytes, connections;
    char *kept;
    size_t kept_len;
    struct bufferevent *clients[CLIENTS_MAX]; /* freed with the collector if still open */
};

static bool track(struct cs_collector *c, struct bufferevent *bev)
{
    for (size_t i = 0; i < CLIENTS_MAX; i++)
        if (!c->clients[i]) {
            c->clients[i] = bev;
            return true;
        }
    return false;
}

static void drop(struct cs_collector *c, struct bufferevent *bev)
{
    for (size_t i = 0; i < CLIENTS_MAX; i++)
        if (c->clients[i] == bev)
            c->clients[i] = NULL;
    bufferevent_free(bev);
}

static void on_written(struct bufferevent *bev, void *arg)
{
    struct cs_collector *c = arg;
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        drop(c, bev);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct cs_collector *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char buf[16384];
    int n;
    while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
        c->bytes += (uint64_t)n;
        size_t take = (size_t)n;
        if (c->kept_len + take > KEEP_MAX)
            take = KEEP_MAX - c->kept_len;
        memcpy(c->kept + c->kept_len, buf, take);
        c->kept_len += take;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct cs_collector *c = arg;
    if (what & BEV_EVENT_EOF) {
        on_read(bev, arg);
        static const char reply[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
        bufferevent_setcb(bev, NULL, on_written, on_event, c);
        bufferevent_write(bev, reply, sizeof(reply) - 1);
        return;
    }
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        drop(c, bev);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    struct cs_collector *c = arg;
    c->connections++;
    struct bufferevent *bev =
        bufferevent_socket_new(evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        evutil_closesocket(fd);
        return;
    }
    if (!track(c, bev)) {
        bufferevent_free(bev); /* too many at once: closed, but its connection counted */
        return;
    }
    struct timeval tv = {.tv_sec = 10};
    bufferevent_set_timeouts(bev, &tv, &tv);
    bufferevent_setcb(bev, on_read, NULL, on_event, c);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

struct cs_collector *cs_collector_new(struct event_base *base, char *err, size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct cs_collector *c = xcalloc(1, sizeof(*c));
    c->listener =
        evconnlistener_new_bind(base, on_accept, c, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                16, (struct sockaddr *)&sa, sizeof(sa));
    if (!c->listener) {
        snprintf(err, errlen, "collector: cannot listen on 127.0.0.1: %s", strerror(errno));
        free(c);
        return NULL;
    }
    struct sockaddr_in bound;
    socklen_t bl = sizeof(bound);
    getsockname(evconnlistener_get_fd(c->listener), (struct sockaddr *)&bound, &bl);
    snprintf(c->addr, sizeof(c->addr), "127.0.0.1:%u", (unsigned)ntohs(bound.sin_port));
    c->kept = xmalloc(KEEP_MAX + 1);
    return c;
}

void cs_collector_free(struct cs_collector *c)
{
    if (!c)
        return;
    evconnlistener_free(c->listener);
    for (size_t i = 0; i < CLIENTS_MAX; i++)
        if (c->clients[i])
            bufferevent_free(c->clients[i]);
    free(c->kept);
    free(c);
}

const char *cs_collector_addr(const struct cs_collector *c)
{
    return c->addr;
}

uint64_t cs_collector_bytes(const struct cs_collector *c)
{
    return c->bytes;
}

uint64_t cs_collector_connections(const struct cs_collector *c)
{
    return c->connections;
}

bool cs_collector_received(const struct cs_collector *c, uint64_t from, const char *needle)
{
    if (from >= c->kept_len || !needle || !*needle)
        return false;
    return memmem(c->kept + from, c->kept_len - from, needle, strlen(needle)) != NULL;
}
