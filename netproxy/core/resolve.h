/* Name resolution inside the proxy: libevent's evdns (the host's resolv.conf, or
 * --dns-server) plus --resolve overrides. No search domains and no hosts file: the
 * canonical name is looked up as the fully qualified name it is. Each request is
 * resolved exactly once; the caller checks every answer and dials only those, so a
 * second, different answer (DNS rebinding) is never used. */
#ifndef NETPROXY_RESOLVE_H
#define NETPROXY_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RESOLVE_MAX_ADDRS 16

struct event_base;

struct addr_list {
    struct sockaddr_storage a[RESOLVE_MAX_ADDRS];
    unsigned n;     /* kept (at most RESOLVE_MAX_ADDRS), each with the port set */
    unsigned total; /* answers received, including any beyond the cap */
};

struct resolver_config {
    const char *resolv_conf;        /* default /etc/resolv.conf */
    const char *const *dns_servers; /* "ADDR:PORT"; when given, resolv.conf is not read */
    size_t ndns_servers;
    uint64_t timeout_ms; /* the caller's deadline; evdns retries within it */
};

struct resolver;
struct lookup;

struct resolver *resolver_new(struct event_base *base, const struct resolver_config *cfg, char *err,
                              size_t errlen);
void resolver_free(struct resolver *r);

/* "HOST:PORT:ADDR[,ADDR...]" like curl's --resolve; ADDR may be [v6]. */
bool resolver_add_override(struct resolver *r, const char *spec, char *err, size_t errlen);
/* True (and out filled) when host:port has an override. host is canonical. */
bool resolver_override(const struct resolver *r, const char *host, uint16_t port,
                       struct addr_list *out);

/* error is 0 or an EVUTIL_EAI_* code; addrs is valid only during the call. */
typedef void (*resolve_cb)(void *arg, int error, const struct addr_list *addrs);

/* Starts an asynchronous lookup. cb runs exactly once, always from the event loop
 * (never from inside this call), unless lookup_cancel() ran first. */
struct lookup *resolver_lookup(struct resolver *r, const char *host, uint16_t port, resolve_cb cb,
                               void *arg);
void lookup_cancel(struct lookup *lk);
const char *resolver_strerror(int error);

#endif
