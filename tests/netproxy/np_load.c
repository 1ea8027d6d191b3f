/* np_load: the load generator and upstream for scripts/bench/proxy, in C so that the
 * client is never the bottleneck being measured.
 *
 *   np_load serve ECHO_ADDR:PORT SOURCE_ADDR:PORT
 *       epoll server: ECHO echoes; SOURCE reads an 8-byte count N (little endian),
 *       sends N bytes and closes (a download: no half-close needed, so any proxy can
 *       carry it).
 *   np_load latency  [--via PROXY] --target HOST:PORT --addr ADDR:PORT -n N
 *       N sequential tunnels: time from connect() to the first echoed byte.
 *   np_load rate     [--via PROXY] --target HOST:PORT --addr ADDR:PORT -c CONC -d SECONDS
 *       CONC concurrent clients, each looping connect, CONNECT, one echoed byte, close,
 *       after a 0.5 s warm-up; "all_tunnels" counts the warm-up's tunnels too.
 *   np_load throughput [--via PROXY] --target HOST:PORT --addr ADDR:PORT -b BYTES
 *       one stream of BYTES from the source, timed from request to last byte.
 *   np_load idle     [--via PROXY] --target HOST:PORT --addr ADDR:PORT -n N
 *       opens N tunnels (each proven with one echoed byte), prints "ready OPEN FAILED"
 *       and, for each status a refusal was answered with, " STATUS:COUNT"; holds the
 *       open ones until stdin closes.
 *   np_load burst    [--via PROXY] --target HOST:PORT --addr ADDR:PORT -n N -c CONC
 *       exactly N tunnels, CONC at a time, each: connect, CONNECT, one echoed byte,
 *       close. Counts the answers by status (and connections that failed without
 *       one) and times each from connect() to its echo (or its refusal): the
 *       numbers scripts/load/proxy and tests/load check the audit log against.
 *   np_load dns      --server ADDR:PORT --name NAME -n N
 *       N sequential UDP queries (A, with EDNS) for NAME: the time from send to
 *       answer (median, p99) and the answers' response codes.
 * With --via the client speaks CONNECT to the proxy for HOST:PORT; without it, it
 * connects to ADDR:PORT directly. --first FILE sends the file's bytes as the tunnel's
 * first data instead of one byte, and waits for as many echoed (a TLS ClientHello for
 * transparent egress, which checks its server_name). Results are one JSON line on
 * stdout. */
#include "netaddr.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "np_load: %s: %s\n", what, strerror(errno));
    exit(1);
}

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: see the comment at the top of tests/netproxy/np_load.c\n");
    exit(2);
}

static void parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    if (!sockaddr_parse_hostport(s, ss, len)) {
        fprintf(stderr, "np_load: bad address %s\n", s);
        exit(2);
    }
}

static int listen_on(const char *s)
{
    struct sockaddr_storage ss;
    socklen_t len;
    parse_addr(s, &ss, &len);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0)
        die(s);
    return fd;
}

/* ---- server ------------------------------------------------------------------------- */

enum { ROLE_ECHO_LISTEN, ROLE_SOURCE_LISTEN, ROLE_ECHO, ROLE_SOURCE };

struct sconn {
    int fd, role;
    uint64_t left; /* source: bytes still to send */
    unsigned char req[8];
    size_t req_got;
};

/* Source: read the count, then write until done. Returns false when c is closed. */
static bool source_step(int ep, struct sconn *c, char *buf, size_t size)
{
    if (c->req_got < sizeof(c->req)) {
        ssize_t r = read(c->fd, c->req + c->req_got, sizeof(c->req) - c->req_got);
        if (r < 0 && errno == EAGAIN)
            return true;
        if (r <= 0)
            goto done;
        c->req_got += (size_t)r;
        if (c->req_got < sizeof(c->req))
            return true;
        memcpy(&c->left, c->req, sizeof(c->left));
        struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
    while (c->left > 0) {
        size_t n = c->left < size ? (size_t)c->left : size;
        ssize_t w = write(c->fd, buf, n);
        if (w < 0 && errno == EAGAIN)
            return true;
        if (w <= 0)
            goto done;
        c->left -= (uint64_t)w;
    }
done:
    close(c->fd);
    free(c);
    return false;
}

static _Noreturn void serve(const char *echo_addr, const char *source_addr)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct sconn ls[2] = {{.fd = listen_on(echo_addr), .role = ROLE_ECHO_LISTEN},
                          {.fd = listen_on(source_addr), .role = ROLE_SOURCE_LISTEN}};
    for (int i = 0; i < 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ls[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, ls[i].fd, &ev);
    }
    static char buf[1 << 18];
    memset(buf, 's', sizeof(buf));
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            struct sconn *c = evs[i].data.ptr;
            if (c->role == ROLE_ECHO_LISTEN || c->role == ROLE_SOURCE_LISTEN) {
                int fd;
                while ((fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    struct sconn *nc = xcalloc(1, sizeof(*nc));
                    nc->fd = fd;
                    nc->role = c->role == ROLE_ECHO_LISTEN ? ROLE_ECHO : ROLE_SOURCE;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            if (c->role == ROLE_SOURCE) {
                source_step(ep, c, buf, sizeof(buf));
                continue;
            }
            for (;;) {
                ssize_t r = read(c->fd, buf, sizeof(buf));
                if (r > 0) {
                    {
                        /* Echo replies are tiny in the benchmark: a blocking-ish
                         * retry is fine. */
                        ssize_t off = 0;
                        while (off < r) {
                            ssize_t w = write(c->fd, buf + off, (size_t)(r - off));
                            if (w < 0 && errno != EAGAIN)
                                break;
                            if (w > 0)
                                off += w;
                        }
                    }
                    continue;
                }
                if (r < 0 && errno == EAGAIN)
                    break;
                close(c->fd);
                free(c);
                break;
            }
        }
    }
}

/* ---- clients ------------------------------------------------------------------------ */

struct target {
    bool via;
    struct sockaddr_storage dial; /* the proxy, or the upstream directly */
    socklen_t dial_len;
    char request[600];
    size_t request_len;
    char first[4096]; /* the tunnel's first data, echoed back */
    size_t first_len;
};

static int dial_blocking(const struct target *t)
{
    int fd = socket(t->dial.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (const struct sockaddr *)&t->dial, t->dial_len) < 0)
        die("connect");
    return fd;
}

/* "HTTP/1.0 200" (tinyproxy) or "HTTP/1.1 200" (netproxy). */
static bool is_200(const char *head)
{
    return strncmp(head, "HTTP/1.", 7) == 0 && strncmp(head + 8, " 200", 4) == 0;
}

/* Reads the proxy's answer head; false unless it is 200. */
static bool read_head(int fd)
{
    char buf[1024];
    size_t got = 0;
    while (got < sizeof(buf) - 1) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (n <= 0)
            return false;
        got += (size_t)n;
        buf[got] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            return is_200(buf);
    }
    return false;
}

static int open_tunnel_blocking(const struct target *t)
{
    int fd = dial_blocking(t);
    if (t->via &&
        (write(fd, t->request, t->request_len) != (ssize_t)t->request_len || !read_head(fd))) {
        fprintf(stderr, "np_load: CONNECT refused\n");
        exit(1);
    }
    return fd;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void read_first(const char *path, struct target *t)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read_full(fd, t->first, sizeof(t->first));
    if (n <= 0 || (size_t)n == sizeof(t->first)) {
        fprintf(stderr, "np_load: --first %s: empty, unreadable or over %zu bytes\n", path,
                sizeof(t->first) - 1);
        exit(2);
    }
    close(fd);
    t->first_len = (size_t)n;
}

/* A query for name: A, class IN, recursion desired, with an EDNS OPT record. */
static size_t dns_query(uint8_t *q, uint16_t id, const char *name)
{
    uint8_t hdr[12] = {id >> 8, id & 0xff, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
    memcpy(q, hdr, 12);
    size_t len = 12;
    for (const char *p = name; *p;) {
        size_t l = strcspn(p, ".");
        q[len++] = (uint8_t)l;
        memcpy(q + len, p, l);
        len += l;
        p += l + (p[l] == '.');
    }
    static const uint8_t tail[] = {0, 0, 1, 0, 1, 0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
    memcpy(q + len, tail, sizeof(tail));
    return len + sizeof(tail);
}

static int run_dns(const char *server, const char *name, unsigned n)
{
    struct sockaddr_storage ss;
    socklen_t len;
    parse_addr(server, &ss, &len);
    if (strlen(name) > 200)
        usage();
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0)
        die("dns socket");
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    uint64_t *v = xcalloc(n, sizeof(*v));
    unsigned warm = n / 10 + 10, rcodes[16] = {0}, lost = 0;
    for (unsigned i = 0; i < n + warm; i++) {
        uint8_t q[300], a[1500];
        size_t qlen = dns_query(q, (uint16_t)i, name);
        uint64_t t0 = now_mono_ns();
        ssize_t got = -1;
        if (send(fd, q, qlen, 0) == (ssize_t)qlen)
            do
                got = recv(fd, a, sizeof(a), 0);
            while (got >= 2 && (a[0] != q[0] || a[1] != q[1]));
        uint64_t t1 = now_mono_ns();
        if (got < 12) {
            lost++;
            continue;
        }
        if (i >= warm) {
            v[i - warm] = t1 - t0;
            rcodes[a[3] & 0xf]++;
        }
    }
    qsort(v, n, sizeof(*v), cmp_u64);
    printf("{\"n\":%u,\"median_us\":%.1f,\"p99_us\":%.1f,\"noerror\":%u,\"lost\":%u}\n", n,
           v[n / 2] / 1000.0, v[(size_t)(n * 0.99)] / 1000.0, rcodes[0], lost);
    free(v);
    close(fd);
    return lost ? 1 : 0;
}

static int run_latency(const struct target *t, unsigned n)
{
    uint64_t *v = xcalloc(n, sizeof(*v));
    unsigned warm = n / 10 + 10;
    for (unsigned i = 0; i < n + warm; i++) {
        uint64_t t0 = now_mono_ns();
        int fd = open_tunnel_blocking(t);
        char back[sizeof(t->first)];
        if (write(fd, t->first, t->first_len) != (ssize_t)t->first_len ||
            read_full(fd, back, t->first_len) != (ssize_t)t->first_len)
            die("echo");
        uint64_t t1 = now_mono_ns();
        close(fd);
        if (i >= warm)
            v[i - warm] = t1 - t0;
    }
    qsort(v, n, sizeof(*v), cmp_u64);
    printf("{\"n\":%u,\"median_us\":%.1f,\"p99_us\":%.1f}\n", n, v[n / 2] / 1000.0,
           v[(size_t)(n * 0.99)] / 1000.0);
    free(v);
    return 0;
}

static int run_throughput(const struct target *t, uint64_t total)
{
    int fd = open_tunnel_blocking(t);
    static char buf[1 << 18];
    uint64_t t0 = now_mono_ns(), got = 0;
    if (write(fd, &total, sizeof(total)) != sizeof(total))
        die("write");
    while (got < total) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r <= 0)
            break;
        got += (uint64_t)r;
    }
    uint64_t t1 = now_mono_ns();
    if (got != total) {
        fprintf(stderr, "np_load: got %llu of %llu bytes\n", (unsigned long long)got,
                (unsigned long long)total);
        return 1;
    }
    close(fd);
    double secs = (double)(t1 - t0) / 1e9;
    printf("{\"bytes\":%llu,\"seconds\":%.3f,\"MBps\":%.1f}\n", (unsigned long long)total, secs,
           (double)total / secs / 1e6);
    return 0;
}

/* Concurrent clients on one epoll loop. */
enum cstate { CS_CONNECTING, CS_HEAD, CS_ECHO };

struct client {
    int fd;
    enum cstate st;
    char buf[256];
    size_t got, echoed;
    int status;  /* the proxy's answer, 0 before (or without) one */
    uint64_t t0; /* connect() */
};

static void client_start(int ep, const struct target *t, struct client *c)
{
    c->fd = socket(t->dial.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        die("socket");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (const struct sockaddr *)&t->dial, t->dial_len) < 0 && errno != EINPROGRESS)
        die("connect");
    c->st = CS_CONNECTING;
    c->got = c->echoed = 0;
    c->status = 0;
    c->t0 = now_mono_ns();
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Advances a client; returns 1 when its tunnel completed an echo, -1 on failure. */
static int client_step(int ep, const struct target *t, struct client *c)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    switch (c->st) {
    case CS_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err)
            return -1;
        if (t->via) {
            if (write(c->fd, t->request, t->request_len) != (ssize_t)t->request_len)
                return -1;
            c->st = CS_HEAD;
        } else {
            if (write(c->fd, t->first, t->first_len) != (ssize_t)t->first_len)
                return -1;
            c->st = CS_ECHO;
        }
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        return 0;
    }
    case CS_HEAD: {
        ssize_t n = read(c->fd, c->buf + c->got, sizeof(c->buf) - 1 - c->got);
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return -1;
        c->got += (size_t)n;
        c->buf[c->got] = '\0';
        if (!strstr(c->buf, "\r\n\r\n"))
            return c->got < sizeof(c->buf) - 1 ? 0 : -1;
        if (strncmp(c->buf, "HTTP/1.", 7) == 0)
            c->status = atoi(c->buf + 9);
        if (!is_200(c->buf) || write(c->fd, t->first, t->first_len) != (ssize_t)t->first_len)
            return -1;
        c->st = CS_ECHO;
        return 0;
    }
    case CS_ECHO: {
        char b[sizeof(t->first)];
        ssize_t n = read(c->fd, b, t->first_len - c->echoed);
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return -1;
        c->echoed += (size_t)n;
        return c->echoed == t->first_len ? 1 : 0;
    }
    }
    return -1;
}

static int run_rate(const struct target *t, unsigned conc, double seconds)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct client *cs = xcalloc(conc, sizeof(*cs));
    for (unsigned i = 0; i < conc; i++)
        client_start(ep, t, &cs[i]);
    uint64_t start = now_mono_ns(), warm_end = start + 500000000ull;
    uint64_t end = warm_end + (uint64_t)(seconds * 1e9);
    uint64_t done = 0, failed = 0, all = 0;
    struct epoll_event evs[256];
    for (;;) {
        uint64_t now = now_mono_ns();
        if (now >= end)
            break;
        int n = epoll_wait(ep, evs, 256, 100);
        for (int i = 0; i < n; i++) {
            struct client *c = evs[i].data.ptr;
            int r = client_step(ep, t, c);
            if (r == 0)
                continue;
            all += r > 0;
            if (now_mono_ns() >= warm_end) {
                if (r > 0)
                    done++;
                else
                    failed++;
            }
            close(c->fd);
            client_start(ep, t, c);
        }
    }
    /* all_tunnels counts the warm-up too: what a proxy's CPU time before and after the
     * run is divided by. */
    printf("{\"concurrency\":%u,\"tunnels\":%llu,\"all_tunnels\":%llu,\"failed\":%llu,"
           "\"per_second\":%.0f}\n",
           conc, (unsigned long long)done, (unsigned long long)all, (unsigned long long)failed,
           (double)done / seconds);
    for (unsigned i = 0; i < conc; i++)
        close(cs[i].fd);
    free(cs);
    close(ep);
    return failed > done / 100 ? 1 : 0;
}

static int run_burst(const struct target *t, unsigned n, unsigned conc)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (conc > n)
        conc = n;
    struct client *cs = xcalloc(conc, sizeof(*cs));
    uint64_t *lat = xcalloc(n, sizeof(*lat));
    unsigned started = 0, finished = 0, ok = 0, no_answer = 0, by_status[600] = {0};
    uint64_t start = now_mono_ns();
    for (unsigned i = 0; i < conc; i++, started++)
        client_start(ep, t, &cs[i]);
    struct epoll_event evs[256];
    while (finished < n) {
        int k = epoll_wait(ep, evs, 256, 30000);
        if (k == 0) {
            fprintf(stderr, "np_load: burst: stalled at %u of %u\n", finished, n);
            free(lat);
            free(cs);
            return 1;
        }
        for (int i = 0; i < k; i++) {
            struct client *c = evs[i].data.ptr;
            int r = client_step(ep, t, c);
            if (r == 0)
                continue;
            lat[finished++] = now_mono_ns() - c->t0;
            if (r > 0)
                ok++;
            else if (c->status > 0 && c->status < 600)
                by_status[c->status]++;
            else
                no_answer++;
            close(c->fd);
            if (started < n) {
                client_start(ep, t, c);
                started++;
            }
        }
    }
    double secs = (double)(now_mono_ns() - start) / 1e9;
    qsort(lat, n, sizeof(*lat), cmp_u64);
    printf("{\"n\":%u,\"concurrency\":%u,\"ok\":%u,\"no_answer\":%u,\"refused\":{", n, conc, ok,
           no_answer);
    bool first = true;
    for (int st = 0; st < 600; st++)
        if (by_status[st]) {
            printf("%s\"%d\":%u", first ? "" : ",", st, by_status[st]);
            first = false;
        }
    printf("},\"seconds\":%.3f,\"per_second\":%.0f,\"median_us\":%.1f,\"p99_us\":%.1f,"
           "\"max_us\":%.1f}\n",
           secs, n / secs, lat[n / 2] / 1000.0, lat[(size_t)(n * 0.99)] / 1000.0,
           lat[n - 1] / 1000.0);
    free(lat);
    free(cs);
    close(ep);
    return 0;
}

static int run_idle(const struct target *t, unsigned n)
{
    /* Open in parallel batches through the same state machine, then hold. */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct client *cs = xcalloc(n, sizeof(*cs));
    unsigned started = 0, open = 0, failed = 0, by_status[600] = {0};
    const unsigned batch = 200;
    struct epoll_event evs[256];
    while (open + failed < n) {
        while (started < n && started - open - failed < batch)
            client_start(ep, t, &cs[started++]);
        int k = epoll_wait(ep, evs, 256, 5000);
        if (k == 0) {
            fprintf(stderr, "np_load: idle: stalled at %u open\n", open);
            free(cs);
            return 1;
        }
        for (int i = 0; i < k; i++) {
            struct client *c = evs[i].data.ptr;
            int r = client_step(ep, t, c);
            if (r > 0) {
                open++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            } else if (r < 0) {
                failed++;
                if (c->status > 0 && c->status < 600)
                    by_status[c->status]++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
            }
        }
    }
    printf("ready %u %u", open, failed);
    for (int st = 0; st < 600; st++)
        if (by_status[st])
            printf(" %d:%u", st, by_status[st]);
    printf("\n");
    fflush(stdout);
    char b[64];
    while (read(0, b, sizeof(b)) > 0)
        ;
    for (unsigned i = 0; i < n; i++)
        close(cs[i].fd);
    free(cs);
    close(ep);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "serve") == 0) {
        if (argc != 4)
            usage();
        serve(argv[2], argv[3]);
    }
    struct target t;
    memset(&t, 0, sizeof(t));
    t.first[0] = 'x';
    t.first_len = 1;
    const char *via = NULL, *target = NULL, *addr = NULL, *server = NULL, *name = NULL;
    uint64_t n = 1000, conc = 100, bytes = 1ull << 30;
    double seconds = 5;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--via") == 0)
            via = v;
        else if (strcmp(k, "--target") == 0)
            target = v;
        else if (strcmp(k, "--addr") == 0)
            addr = v;
        else if (strcmp(k, "-n") == 0)
            n = strtoull(v, NULL, 10);
        else if (strcmp(k, "-c") == 0)
            conc = strtoull(v, NULL, 10);
        else if (strcmp(k, "-b") == 0)
            bytes = strtoull(v, NULL, 10);
        else if (strcmp(k, "-d") == 0)
            seconds = strtod(v, NULL);
        else if (strcmp(k, "--first") == 0)
            read_first(v, &t);
        else if (strcmp(k, "--server") == 0)
            server = v;
        else if (strcmp(k, "--name") == 0)
            name = v;
        else
            usage();
    }
    if (strcmp(argv[1], "dns") == 0) {
        if (!server || !name || n == 0)
            usage();
        return run_dns(server, name, (unsigned)n);
    }
    if (!target || !addr || n == 0 || conc == 0)
        usage();
    t.via = via != NULL;
    parse_addr(via ? via : addr, &t.dial, &t.dial_len);
    t.request_len = (size_t)snprintf(t.request, sizeof(t.request),
                                     "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
    if (strcmp(argv[1], "latency") == 0)
        return run_latency(&t, (unsigned)n);
    if (strcmp(argv[1], "rate") == 0)
        return run_rate(&t, (unsigned)conc, seconds);
    if (strcmp(argv[1], "throughput") == 0)
        return run_throughput(&t, bytes);
    if (strcmp(argv[1], "idle") == 0)
        return run_idle(&t, (unsigned)n);
    if (strcmp(argv[1], "burst") == 0)
        return run_burst(&t, (unsigned)n, (unsigned)conc);
    usage();
}
