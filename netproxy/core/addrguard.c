#include "addrguard.h"

#include "host.h"
#include "util.h"

#include <ifaddrs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct addr_vec {
    struct sockaddr_storage *v;
    size_t n, cap;
};

struct addrguard {
    struct cidr *allow;
    size_t nallow;
    struct addr_vec own;
    struct addr_vec endpoints;
    /* The hub adds and removes listeners (on the main thread) while workers check. */
    pthread_rwlock_t endpoints_lock;
};

static void vec_push(struct addr_vec *v, const struct sockaddr *sa)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 8;
        v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
    }
    memset(&v->v[v->n], 0, sizeof(v->v[v->n]));
    memcpy(&v->v[v->n], sa, sockaddr_len(sa));
    v->n++;
}

struct addrguard *addrguard_new(void)
{
    struct addrguard *g = xcalloc(1, sizeof(struct addrguard));
    pthread_rwlock_init(&g->endpoints_lock, NULL);
    return g;
}

void addrguard_free(struct addrguard *g)
{
    if (!g)
        return;
    free(g->allow);
    free(g->own.v);
    free(g->endpoints.v);
    pthread_rwlock_destroy(&g->endpoints_lock);
    free(g);
}

void addrguard_allow_cidr(struct addrguard *g, const struct cidr *c)
{
    g->allow = xrealloc(g->allow, (g->nallow + 1) * sizeof(*g->allow));
    g->allow[g->nallow++] = *c;
}

void addrguard_add_own(struct addrguard *g, const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
        vec_push(&g->own, sa);
}

int addrguard_load_own(struct addrguard *g)
{
    struct ifaddrs *ifa;
    if (getifaddrs(&ifa) < 0)
        return -1;
    g->own.n = 0;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
        if (i->ifa_addr)
            addrguard_add_own(g, i->ifa_addr);
    freeifaddrs(ifa);
    return 0;
}

void addrguard_add_endpoint(struct addrguard *g, const struct sockaddr *sa)
{
    pthread_rwlock_wrlock(&g->endpoints_lock);
    vec_push(&g->endpoints, sa);
    pthread_rwlock_unlock(&g->endpoints_lock);
}

static bool is_own(const struct addrguard *g, const struct sockaddr *d)
{
    for (size_t i = 0; i < g->own.n; i++)
        if (host_addr_equal((const struct sockaddr *)&g->own.v[i], d))
            return true;
    return false;
}

/* d is the destination (unmapped); e a listening endpoint. */
static bool reaches_endpoint(const struct addrguard *g, const struct sockaddr *e,
                             const struct sockaddr *d, enum addr_class dcls)
{
    if (sockaddr_port(e) != sockaddr_port(d))
        return false;
    /* A listener on 0.0.0.0 or :: answers on every address of this host. */
    if (addr_classify(e) == ADDR_UNSPECIFIED)
        return dcls == ADDR_LOOPBACK || dcls == ADDR_UNSPECIFIED || is_own(g, d);
    return host_addr_equal(e, d);
}

void addrguard_remove_endpoint(struct addrguard *g, const struct sockaddr *sa)
{
    pthread_rwlock_wrlock(&g->endpoints_lock);
    for (size_t i = 0; i < g->endpoints.n; i++) {
        const struct sockaddr *e = (const struct sockaddr *)&g->endpoints.v[i];
        if (sockaddr_port(e) == sockaddr_port(sa) && e->sa_family == sa->sa_family &&
            host_addr_equal(e, sa)) {
            g->endpoints.v[i] = g->endpoints.v[--g->endpoints.n];
            break;
        }
    }
    pthread_rwlock_unlock(&g->endpoints_lock);
}

/* IPv4-mapped IPv6 destinations are compared as the IPv4 address they carry. */
static void unmap(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out, sa, sockaddr_len(sa));
    if (sa->sa_family != AF_INET6)
        return;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(in6->sin6_addr.s6_addr, mapped, 12) != 0)
        return;
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = in6->sin6_port};
    memcpy(&in.sin_addr, in6->sin6_addr.s6_addr + 12, 4);
    memset(out, 0, sizeof(*out));
    memcpy(out, &in, sizeof(in));
}

enum guard_verdict addrguard_check(const struct addrguard *g, const struct sockaddr *sa,
                                   enum addr_class *cls)
{
    struct sockaddr_storage u;
    unmap(sa, &u);
    const struct sockaddr *d = (const struct sockaddr *)&u;
    *cls = addr_classify(d);
    bool loop = false;
    pthread_rwlock_rdlock((pthread_rwlock_t *)&g->endpoints_lock);
    for (size_t i = 0; i < g->endpoints.n && !loop; i++)
        loop = reaches_endpoint(g, (const struct sockaddr *)&g->endpoints.v[i], d, *cls);
    pthread_rwlock_unlock((pthread_rwlock_t *)&g->endpoints_lock);
    if (loop)
        return GUARD_DENY_LOOP;
    for (size_t i = 0; i < g->nallow; i++)
        if (cidr_contains(&g->allow[i], d))
            return GUARD_ALLOW_CIDR;
    if (*cls != ADDR_PUBLIC)
        return GUARD_DENY_CLASS;
    return is_own(g, d) ? GUARD_DENY_OWN : GUARD_PUBLIC;
}

bool guard_allows(enum guard_verdict v)
{
    return v == GUARD_PUBLIC || v == GUARD_ALLOW_CIDR;
}

const char *guard_verdict_name(enum guard_verdict v, enum addr_class cls)
{
    switch (v) {
    case GUARD_PUBLIC:
        return "public";
    case GUARD_ALLOW_CIDR:
        return "upstream-allow-cidr";
    case GUARD_DENY_OWN:
        return "own-address";
    case GUARD_DENY_LOOP:
        return "proxy-listener";
    case GUARD_DENY_CLASS:
        break;
    }
    return addr_class_name(cls);
}
