/* floor-relay: the floor that scripts/bench/proxy measures netproxy against. A CONNECT
 * relay that does nothing but move bytes: one thread, one epoll set, "CONNECT
 * a.b.c.d:port" parsed, the address dialled, "200" answered, then splice(2) both ways
 * through pipes from a small pool (the same mechanism netproxy relays with). No policy,
 * no DNS, no audit, no timers, no limits: whatever netproxy costs above this is the
 * price of what it checks and records.
 *
 *   floor-relay ADDR:PORT      (IPv4; runs until killed)
 *   floor-relay --fd N         accept on the listening socket N it inherited (one in
 *                              another network namespace: scripts/bench/egress)
 *
 * Not a proxy to deploy: it trusts its clients and dials whatever they ask for. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX 1024
#define PIPE_SIZE (256 * 1024)
#define POOL_MAX 64

static const char ANSWER[] = "HTTP/1.1 200 Connection established\r\n\r\n";

struct dir {
    int from, to;
    int pr, pw; /* -1 when no pipe is held */
    size_t in_pipe;
    bool eof, done;
};

enum state { S_HEAD, S_DIAL, S_RELAY, S_DEAD };

struct tun;

/* What an epoll event points to: one side of a tunnel. */
struct side {
    struct tun *t;
    bool upstream;
};

struct tun {
    enum state st;
    int cfd, ufd;
    struct side cs, us;
    char head[HEAD_MAX];
    size_t len;
    struct dir d[2]; /* 0: client to upstream, 1: upstream to client */
    struct tun *next_dead;
};

static int ep;
static int pool[POOL_MAX][2];
static unsigned npool;
/* Closed in this batch of events: freed after it, since a later event of the same
 * batch may still point to them. */
static struct tun *dead;

static void die(const char *what)
{
    fprintf(stderr, "floor-relay: %s: %s\n", what, strerror(errno));
    exit(1);
}

static bool pipe_get(struct dir *d)
{
    if (npool) {
        npool--;
        d->pr = pool[npool][0];
        d->pw = pool[npool][1];
        return true;
    }
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return false;
    (void)fcntl(fds[1], F_SETPIPE_SZ, PIPE_SIZE);
    d->pr = fds[0];
    d->pw = fds[1];
    return true;
}

static void pipe_put(struct dir *d)
{
    if (d->pr < 0)
        return;
    if (d->in_pipe == 0 && npool < POOL_MAX) {
        pool[npool][0] = d->pr;
        pool[npool][1] = d->pw;
        npool++;
    } else {
        close(d->pr);
        close(d->pw);
    }
    d->pr = d->pw = -1;
    d->in_pipe = 0;
}

static void tun_free(struct tun *t)
{
    pipe_put(&t->d[0]);
    pipe_put(&t->d[1]);
    close(t->cfd);
    if (t->ufd >= 0)
        close(t->ufd);
    t->st = S_DEAD;
    t->next_dead = dead;
    dead = t;
}

static void watch(int fd, struct side *s, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = s};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        die("epoll_ctl");
}

/* Moves bytes until either end says EAGAIN (the sockets are edge-triggered). false
 * when the tunnel failed. */
static bool pump(struct dir *d)
{
    while (!d->done) {
        if (d->in_pipe) {
            ssize_t n =
                splice(d->pr, NULL, d->to, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n < 0)
                return errno == EAGAIN;
            d->in_pipe -= (size_t)n;
            continue;
        }
        if (d->eof) {
            pipe_put(d);
            (void)shutdown(d->to, SHUT_WR);
            d->done = true;
            break;
        }
        if (d->pr < 0 && !pipe_get(d))
            return false;
        ssize_t n =
            splice(d->from, NULL, d->pw, NULL, PIPE_SIZE, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0)
            d->in_pipe = (size_t)n;
        else if (n == 0)
            d->eof = true;
        else if (errno == EAGAIN) {
            pipe_put(d);
            return true;
        } else
            return false;
    }
    return true;
}

static void relay(struct tun *t)
{
    if (!pump(&t->d[0]) || !pump(&t->d[1]) || (t->d[0].done && t->d[1].done))
        tun_free(t);
}

static void start_relay(struct tun *t)
{
    t->st = S_RELAY;
    if (write(t->cfd, ANSWER, sizeof(ANSWER) - 1) != (ssize_t)sizeof(ANSWER) - 1) {
        tun_free(t);
        return;
    }
    t->d[0] = (struct dir){.from = t->cfd, .to = t->ufd, .pr = -1, .pw = -1};
    t->d[1] = (struct dir){.from = t->ufd, .to = t->cfd, .pr = -1, .pw = -1};
    relay(t);
}

/* "CONNECT a.b.c.d:port HTTP/1.x" into a sockaddr; false when it is anything else. */
static bool parse_target(const char *head, struct sockaddr_in *sin)
{
    if (strncmp(head, "CONNECT ", 8) != 0)
        return false;
    const char *host = head + 8, *colon = strchr(host, ':');
    if (!colon || colon - host > 15)
        return false;
    char ip[16];
    memcpy(ip, host, (size_t)(colon - host));
    ip[colon - host] = '\0';
    char *end;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != ' ' || port == 0 || port > 65535)
        return false;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, ip, &sin->sin_addr) == 1;
}

static void dial(struct tun *t)
{
    struct sockaddr_in sin;
    if (!parse_target(t->head, &sin)) {
        tun_free(t);
        return;
    }
    t->ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (t->ufd < 0) {
        tun_free(t);
        return;
    }
    int one = 1;
    (void)setsockopt(t->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    t->st = S_DIAL;
    watch(t->ufd, &t->us, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (connect(t->ufd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
        start_relay(t);
    else if (errno != EINPROGRESS)
        tun_free(t);
}

static void read_head(struct tun *t)
{
    for (;;) {
        ssize_t n = read(t->cfd, t->head + t->len, sizeof(t->head) - 1 - t->len);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            tun_free(t);
            return;
        }
        t->len += (size_t)n;
        t->head[t->len] = '\0';
        if (strstr(t->head, "\r\n\r\n")) {
            dial(t);
            return;
        }
        if (t->len == sizeof(t->head) - 1) {
            tun_free(t);
            return;
        }
    }
}

static void on_event(struct side *s)
{
    struct tun *t = s->t;
    switch (t->st) {
    case S_HEAD:
        if (!s->upstream)
            read_head(t);
        return;
    case S_DIAL: {
        if (!s->upstream)
            return; /* early bytes wait in the socket until the relay starts */
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(t->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            tun_free(t);
            return;
        }
        start_relay(t);
        return;
    }
    case S_RELAY:
        relay(t);
        return;
    case S_DEAD:
        return;
    }
}

static int listen_on(const char *hostport)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    char ip[64];
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon - hostport >= (long)sizeof(ip))
        exit(2);
    memcpy(ip, hostport, (size_t)(colon - hostport));
    ip[colon - hostport] = '\0';
    sin.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
        exit(2);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    (void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    (void)setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(lfd, 4096) < 0)
        die(hostport);
    return lfd;
}

int main(int argc, char **argv)
{
    bool fd_given = argc == 3 && strcmp(argv[1], "--fd") == 0;
    if (argc != 2 && !fd_given) {
        fprintf(stderr, "usage: floor-relay ADDR:PORT | --fd N\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = fd_given ? atoi(argv[2]) : listen_on(argv[1]);
    if (fd_given && (lfd < 3 || fcntl(lfd, F_SETFL, O_NONBLOCK) < 0))
        die("--fd");
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1");
    struct side listener = {NULL, false};
    watch(lfd, &listener, EPOLLIN);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct side *s = evs[i].data.ptr;
            if (s != &listener) {
                on_event(s);
                continue;
            }
            int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            struct tun *t = calloc(1, sizeof(*t));
            if (!t) {
                close(fd);
                continue;
            }
            t->cfd = fd;
            t->ufd = -1;
            t->d[0].pr = t->d[0].pw = t->d[1].pr = t->d[1].pw = -1;
            t->cs = (struct side){t, false};
            t->us = (struct side){t, true};
            watch(fd, &t->cs, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
            read_head(t);
        }
        while (dead) {
            struct tun *t = dead;
            dead = t->next_dead;
            free(t);
        }
    }
}
