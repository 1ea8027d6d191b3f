/* The SSRF guard: every address the proxy is about to dial passes here first.
 *
 * An address is dialled only when it is public (lib/netaddr.h) and not one of the
 * proxy's own, or when an --upstream-allow-cidr range covers it (stand-in upstreams in
 * tests and benchmarks). A destination equal to one of the proxy's own listening
 * endpoints is refused even then: a tunnel into the proxy itself is a loop. */
#ifndef NETPROXY_ADDRGUARD_H
#define NETPROXY_ADDRGUARD_H

#include "netaddr.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum guard_verdict {
    GUARD_PUBLIC,     /* a public address that is not ours */
    GUARD_ALLOW_CIDR, /* non-public, but an --upstream-allow-cidr covers it */
    GUARD_DENY_CLASS, /* non-public: loopback, private, link-local, ... */
    GUARD_DENY_OWN,   /* public, but one of this host's addresses */
    GUARD_DENY_LOOP,  /* ip:port of one of the proxy's listeners */
};

struct addrguard;

struct addrguard *addrguard_new(void);
void addrguard_free(struct addrguard *g);
void addrguard_allow_cidr(struct addrguard *g, const struct cidr *c);
/* Records the addresses of this network namespace's interfaces (getifaddrs). */
int addrguard_load_own(struct addrguard *g);
void addrguard_add_own(struct addrguard *g, const struct sockaddr *sa);
/* Listening endpoints (ip and port) that a tunnel must never reach. */
void addrguard_add_endpoint(struct addrguard *g, const struct sockaddr *sa);
void addrguard_remove_endpoint(struct addrguard *g, const struct sockaddr *sa);

/* sa carries the destination port. *cls gets the address class in every case. */
enum guard_verdict addrguard_check(const struct addrguard *g, const struct sockaddr *sa,
                                   enum addr_class *cls);
bool guard_allows(enum guard_verdict v);
const char *guard_verdict_name(enum guard_verdict v, enum addr_class cls);

#endif
