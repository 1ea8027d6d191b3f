#include "upool.h"

#include "log.h"
#include "netproxy/netproxy.h"
#include "util.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct entry {
    struct spoke *spoke; /* referenced */
    char host[256];
    uint16_t port;
    int fd;
    SSL *ssl;
    struct event *ev; /* readable (closed, or sent unasked) or idle too long: dropped */
    struct entry *prev, *next;
};

/* Oldest first. */
struct pool {
    struct entry *head, *tail;
    unsigned n;
};

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Unlinks e and frees it with what it still holds (a taken entry holds no fd or SSL). */
static void entry_drop(struct pool *p, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        p->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        p->tail = e->prev;
    p->n--;
    event_free(e->ev);
    SSL_free(e->ssl);
    if (e->fd >= 0)
        close(e->fd);
    spoke_unref(e->spoke);
    free(e);
}

/* A worker thread's exit drops what it kept. */
static void pool_free(void *arg)
{
    struct pool *p = arg;
    while (p->head)
        entry_drop(p, p->head);
    free(p);
}

static void make_key(void)
{
    if (pthread_key_create(&key, pool_free) != 0)
        fatalx("cannot create the upstream pool's key");
}

static struct pool *pool(void)
{
    pthread_once(&once, make_key);
    struct pool *p = pthread_getspecific(key);
    if (!p) {
        p = xcalloc(1, sizeof(*p));
        pthread_setspecific(key, p);
    }
    return p;
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    entry_drop(pool(), arg);
}

static bool same(const struct entry *e, const struct spoke *spoke, const char *host, uint16_t port)
{
    return e->spoke == spoke && e->port == port && strcmp(e->host, host) == 0;
}

void upool_put(struct event_base *base, struct spoke *spoke, const char *host, uint16_t port,
               int fd, SSL *ssl)
{
    struct pool *p = pool();
    struct entry *e = xcalloc(1, sizeof(*e));
    if (strlen(host) >= sizeof(e->host) || !(e->ev = event_new(base, fd, EV_READ, on_event, e))) {
        free(e);
        SSL_free(ssl);
        close(fd);
        return;
    }
    unsigned same_key = 0;
    for (struct entry *x = p->head; x; x = x->next)
        same_key += same(x, spoke, host, port);
    /* Room: the oldest of the key, else the oldest of all. */
    if (same_key >= UPOOL_PER_KEY) {
        for (struct entry *x = p->head; x; x = x->next)
            if (same(x, spoke, host, port)) {
                entry_drop(p, x);
                break;
            }
    } else if (p->n >= UPOOL_MAX) {
        entry_drop(p, p->head);
    }
    e->spoke = spoke;
    spoke_ref(spoke);
    memcpy(e->host, host, strlen(host) + 1);
    e->port = port;
    e->fd = fd;
    e->ssl = ssl;
    SSL_set_app_data(ssl, NULL);
    struct timeval tv = {UPOOL_IDLE_MS / 1000, (UPOOL_IDLE_MS % 1000) * 1000};
    event_add(e->ev, &tv);
    e->prev = p->tail;
    if (p->tail)
        p->tail->next = e;
    else
        p->head = e;
    p->tail = e;
    p->n++;
}

bool upool_take(struct spoke *spoke, const char *host, uint16_t port, int *fd, SSL **ssl)
{
    struct pool *p = pool();
    /* The newest: the likeliest to be still open at the upstream. */
    for (struct entry *e = p->tail; e; e = e->prev) {
        if (!same(e, spoke, host, port))
            continue;
        *fd = e->fd;
        *ssl = e->ssl;
        e->fd = -1;
        e->ssl = NULL;
        entry_drop(p, e);
        return true;
    }
    return false;
}

unsigned upool_count(void)
{
    return pool()->n;
}
