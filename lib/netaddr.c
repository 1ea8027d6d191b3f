#include "netaddr.h"
#include "util.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *const class_names[] = {
    [ADDR_PUBLIC] = "public",
    [ADDR_UNSPECIFIED] = "unspecified",
    [ADDR_LOOPBACK] = "loopback",
    [ADDR_PRIVATE] = "private",
    [ADDR_LINK_LOCAL] = "link-local",
    [ADDR_CGNAT] = "cgnat",
    [ADDR_ULA] = "ula",
    [ADDR_MULTICAST] = "multicast",
    [ADDR_BROADCAST] = "broadcast",
    [ADDR_DOCUMENTATION] = "documentation",
    [ADDR_BENCHMARK] = "benchmark",
    [ADDR_NAT64] = "nat64",
    [ADDR_6TO4] = "6to4",
    [ADDR_TEREDO] = "teredo",
    [ADDR_RESERVED] = "reserved",
};

const char *addr_class_name(enum addr_class c)
{
    if ((size_t)c < ARRAY_LEN(class_names) && class_names[c])
        return class_names[c];
    return "unknown";
}

struct range {
    const char *cidr;
    enum addr_class cls;
};

/* Order matters only where ranges nest: the first match wins, so the narrow ranges
 * come before the wide ones that contain them. */
static const struct range v4_ranges[] = {
    {"255.255.255.255/32", ADDR_BROADCAST},  {"0.0.0.0/8", ADDR_UNSPECIFIED},
    {"127.0.0.0/8", ADDR_LOOPBACK},          {"10.0.0.0/8", ADDR_PRIVATE},
    {"172.16.0.0/12", ADDR_PRIVATE},         {"192.168.0.0/16", ADDR_PRIVATE},
    {"169.254.0.0/16", ADDR_LINK_LOCAL},     {"100.64.0.0/10", ADDR_CGNAT},
    {"224.0.0.0/4", ADDR_MULTICAST},         {"192.0.2.0/24", ADDR_DOCUMENTATION},
    {"198.51.100.0/24", ADDR_DOCUMENTATION}, {"203.0.113.0/24", ADDR_DOCUMENTATION},
    {"198.18.0.0/15", ADDR_BENCHMARK},       {"192.0.0.0/24", ADDR_RESERVED},
    {"192.88.99.0/24", ADDR_RESERVED}, /* former 6to4 relay anycast */
    {"240.0.0.0/4", ADDR_RESERVED},
};

static const struct range v6_ranges[] = {
    {"::/128", ADDR_UNSPECIFIED},
    {"::1/128", ADDR_LOOPBACK},
    {"64:ff9b::/96", ADDR_NAT64},
    {"64:ff9b:1::/48", ADDR_NAT64},
    {"::/96", ADDR_RESERVED},           /* IPv4-compatible, deprecated */
    {"::ffff:0:0:0/96", ADDR_RESERVED}, /* IPv4-translated (SIIT, RFC 2765) */
    {"100::/64", ADDR_RESERVED},
    {"2001:2::/48", ADDR_BENCHMARK},
    {"2001:10::/28", ADDR_RESERVED},
    {"2001:20::/28", ADDR_RESERVED},
    {"2001:db8::/32", ADDR_DOCUMENTATION},
    {"2001::/32", ADDR_TEREDO},
    {"2001::/23", ADDR_RESERVED}, /* the rest of the IETF protocol assignments */
    {"2002::/16", ADDR_6TO4},
    {"fc00::/7", ADDR_ULA},
    {"fe80::/10", ADDR_LINK_LOCAL},
    {"fec0::/10", ADDR_PRIVATE},
    {"ff00::/8", ADDR_MULTICAST},
    {"3fff::/20", ADDR_DOCUMENTATION},
    {"5f00::/16", ADDR_RESERVED}, /* SRv6 SIDs (RFC 9602), never a public host */
};

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, b, full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (b[full] & mask);
}

/* The tables are parsed once, on first use: classification runs for every address
 * the proxy resolves. Once for the whole process (pthread_once): netproxy's workers
 * classify on several threads, and a table half parsed by another thread would let a
 * private address pass as public. */
static struct cidr v4_parsed[ARRAY_LEN(v4_ranges)];
static struct cidr v6_parsed[ARRAY_LEN(v6_ranges)];
static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

static void parse_ranges(void)
{
    for (size_t i = 0; i < ARRAY_LEN(v4_ranges); i++)
        cidr_parse(v4_ranges[i].cidr, &v4_parsed[i]);
    for (size_t i = 0; i < ARRAY_LEN(v6_ranges); i++)
        cidr_parse(v6_ranges[i].cidr, &v6_parsed[i]);
}

static enum addr_class classify_in(const struct range *ranges, const struct cidr *parsed, size_t n,
                                   const uint8_t *addr)
{
    pthread_once(&ranges_once, parse_ranges);
    for (size_t i = 0; i < n; i++)
        if (prefix_match(parsed[i].addr, addr, parsed[i].prefix))
            return ranges[i].cls;
    return ADDR_PUBLIC;
}

static bool v6_is_v4_mapped(const uint8_t *a)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a, prefix, sizeof(prefix)) == 0;
}

enum addr_class addr_classify(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return classify_in(v4_ranges, v4_parsed, ARRAY_LEN(v4_ranges),
                           (const uint8_t *)&in->sin_addr);
    }
    if (sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        if (v6_is_v4_mapped(a))
            return classify_in(v4_ranges, v4_parsed, ARRAY_LEN(v4_ranges), a + 12);
        return classify_in(v6_ranges, v6_parsed, ARRAY_LEN(v6_ranges), a);
    }
    return ADDR_RESERVED;
}

static bool parse_addr(const char *s, int *family, uint8_t *addr)
{
    if (inet_pton(AF_INET, s, addr) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, s, addr) == 1) {
        *family = AF_INET6;
        return true;
    }
    return false;
}

static bool split_prefix(const char *s, char *addr, size_t size, unsigned *prefix, bool *has_prefix)
{
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= size)
        return false;
    memcpy(addr, s, n);
    addr[n] = '\0';
    *has_prefix = slash != NULL;
    if (!slash)
        return true;
    uint64_t p;
    if (!parse_u64(slash + 1, 0, 128, &p))
        return false;
    *prefix = (unsigned)p;
    return true;
}

static bool parse_with_prefix(const char *s, struct cidr *out)
{
    char addr[INET6_ADDRSTRLEN + 1];
    bool has_prefix;
    unsigned prefix = 0;
    memset(out, 0, sizeof(*out));
    if (!split_prefix(s, addr, sizeof(addr), &prefix, &has_prefix))
        return false;
    if (!parse_addr(addr, &out->family, out->addr))
        return false;
    unsigned max = out->family == AF_INET ? 32 : 128;
    out->prefix = has_prefix ? prefix : max;
    return out->prefix <= max;
}

bool cidr_parse(const char *s, struct cidr *out)
{
    if (!parse_with_prefix(s, out))
        return false;
    unsigned bytes = out->family == AF_INET ? 4 : 16;
    for (unsigned bit = out->prefix; bit < bytes * 8; bit++)
        if (out->addr[bit / 8] & (0x80 >> (bit % 8)))
            return false; /* host bits set: almost always a typo in a policy */
    return true;
}

bool ifaddr_parse(const char *s, struct cidr *out)
{
    return parse_with_prefix(s, out);
}

bool cidr_contains(const struct cidr *c, const struct sockaddr *sa)
{
    const uint8_t *a;
    int family = sa->sa_family;
    if (family == AF_INET) {
        a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
    } else if (family == AF_INET6) {
        a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        if (c->family == AF_INET && v6_is_v4_mapped(a)) {
            a += 12;
            family = AF_INET;
        }
    } else {
        return false;
    }
    return family == c->family && prefix_match(c->addr, a, c->prefix);
}

bool cidr_overlaps(const struct cidr *a, const struct cidr *b)
{
    if (a->family != b->family)
        return false;
    unsigned p = a->prefix < b->prefix ? a->prefix : b->prefix;
    return prefix_match(a->addr, b->addr, p);
}

void cidr_format(const struct cidr *c, char *buf, size_t size)
{
    char addr[INET6_ADDRSTRLEN];
    inet_ntop(c->family, c->addr, addr, sizeof(addr));
    snprintf(buf, size, "%s/%u", addr, c->prefix);
}

bool sockaddr_parse_hostport(const char *s, struct sockaddr_storage *out, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN + 1];
    const char *port_str;
    memset(out, 0, sizeof(*out));
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
            return false;
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = '\0';
        port_str = close + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof(host) || memchr(s, ':', (size_t)(colon - s)))
            return false;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        port_str = colon + 1;
    }
    uint64_t port;
    if (!parse_u64(port_str, 0, 65535, &port))
        return false;
    struct sockaddr_in *in = (struct sockaddr_in *)out;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
    if (s[0] != '[' && inet_pton(AF_INET, host, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        *len = sizeof(*in);
        return true;
    }
    if (s[0] == '[' && inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*in6);
        return true;
    }
    return false;
}

void sockaddr_format_ip(const struct sockaddr *sa, char *buf, size_t size)
{
    /* IPv4 by hand: inet_ntop formats it through sprintf, and the proxy formats three
     * addresses per audit record. */
    if (sa->sa_family == AF_INET && size >= INET_ADDRSTRLEN) {
        const unsigned char *b =
            (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr.s_addr;
        char *p = buf;
        for (int i = 0; i < 4; i++) {
            unsigned v = b[i];
            if (v >= 100)
                *p++ = (char)('0' + v / 100);
            if (v >= 10)
                *p++ = (char)('0' + v / 10 % 10);
            *p++ = (char)('0' + v % 10);
            *p++ = i < 3 ? '.' : '\0';
        }
        return;
    }
    const void *a = sa->sa_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)size))
        str_copy(buf, "?", size);
}

uint16_t sockaddr_port(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    if (sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return 0;
}

socklen_t sockaddr_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}
