/* One canonical spelling for every destination host, computed once per request and
 * used for the policy check, DNS and the audit record alike:
 * - names: ASCII lowercase, the trailing dot removed, IDN converted to punycode
 *   (libidn2, UTS #46 non-transitional), labels of 1..63 bytes, at most 253 bytes;
 * - IP literals in any spelling a resolver or a browser would accept (dotted,
 *   decimal "2130706433", hex "0x7f.1", octal "0177.0.0.1", short forms "127.1",
 *   IPv6 in brackets, IPv4-mapped IPv6) become an address, never a name. A name whose
 *   last label is numeric but that is no valid IPv4 address ("1.2.3.4.5") is refused:
 *   it is ambiguous, and the WHATWG URL standard refuses it too. */
#ifndef NETPROXY_HOST_H
#define NETPROXY_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define HOST_NAME_MAX_LEN 253

enum host_kind { HOST_NAME, HOST_IP };

struct host {
    enum host_kind kind;
    /* The canonical name, or the address in inet_ntop form for HOST_IP. */
    char name[HOST_NAME_MAX_LEN + 1];
    /* HOST_IP only: the address (IPv4-mapped IPv6 unwrapped to IPv4), port 0. */
    struct sockaddr_storage addr;
};

/* raw: the host part of the authority (no port); bracketed: it was "[...]". Returns
 * false with a fixed explanation in *why. */
bool host_canonicalise(const char *raw, size_t len, bool bracketed, struct host *out,
                       const char **why);

/* True when a and b are the same address (IPv4-mapped IPv6 equals its IPv4). */
bool host_addr_equal(const struct sockaddr *a, const struct sockaddr *b);

#endif
