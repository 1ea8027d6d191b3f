/* IP addresses: strict parsing, CIDR ranges and the classification that decides
 * whether an address is a public destination. netproxy refuses every class but
 * ADDR_PUBLIC after resolution; nsjail-lite and the hub's veth pool use the same
 * table so that no component hands out or dials 169.254.169.254 by accident. */
#ifndef ISOLATE_NETADDR_H
#define ISOLATE_NETADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum addr_class {
    ADDR_PUBLIC,
    ADDR_UNSPECIFIED,   /* 0.0.0.0/8, :: */
    ADDR_LOOPBACK,      /* 127/8, ::1 */
    ADDR_PRIVATE,       /* RFC 1918, fec0::/10 */
    ADDR_LINK_LOCAL,    /* 169.254/16 (cloud metadata too), fe80::/10 */
    ADDR_CGNAT,         /* 100.64/10 */
    ADDR_ULA,           /* fc00::/7 */
    ADDR_MULTICAST,     /* 224/4, ff00::/8 */
    ADDR_BROADCAST,     /* 255.255.255.255 */
    ADDR_DOCUMENTATION, /* 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32 */
    ADDR_BENCHMARK,     /* 198.18/15, 2001:2::/48 */
    ADDR_NAT64,         /* 64:ff9b::/96, 64:ff9b:1::/48 */
    ADDR_6TO4,          /* 2002::/16 */
    ADDR_TEREDO,        /* 2001::/32 */
    ADDR_RESERVED,      /* 240/4, 192.0.0/24, 192.88.99/24, ::/96, 100::/64, 2001::/23 ... */
};

/* Stable lower-case names ("link-local") used in audit records and error bodies. */
const char *addr_class_name(enum addr_class c);
/* IPv4-mapped IPv6 addresses are classified as the IPv4 address they carry. */
enum addr_class addr_classify(const struct sockaddr *sa);

struct cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    unsigned prefix;
};

/* "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). Host bits must be
 * zero. Only the canonical inet_pton spellings are accepted. */
bool cidr_parse(const char *s, struct cidr *out);
bool cidr_contains(const struct cidr *c, const struct sockaddr *sa);
bool cidr_overlaps(const struct cidr *a, const struct cidr *b);
/* "169.254.64.1/30" style (host bits allowed): the address and its prefix. */
bool ifaddr_parse(const char *s, struct cidr *addr_with_prefix);
void cidr_format(const struct cidr *c, char *buf, size_t size);

/* Parses "1.2.3.4:443" or "[2001:db8::1]:443" (strict inet_pton forms). */
bool sockaddr_parse_hostport(const char *s, struct sockaddr_storage *out, socklen_t *len);
/* "1.2.3.4" or "2001:db8::1" (no port) into buf. */
void sockaddr_format_ip(const struct sockaddr *sa, char *buf, size_t size);
uint16_t sockaddr_port(const struct sockaddr *sa);
socklen_t sockaddr_len(const struct sockaddr *sa);

#endif
