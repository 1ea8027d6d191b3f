/* The DNS wire format, as much as the jail's resolver needs (RFC 1035, 6891, 8914):
 * reading one query and writing its answer. Pure functions over byte buffers, with
 * every length checked against the buffer; nothing here allocates or logs.
 *
 * A query is accepted when it has the QR bit clear, opcode QUERY, exactly one
 * question of class IN, no answer or authority records, and at most one additional
 * record, which must be an EDNS OPT record on the root name. Names are read label by
 * label without compression (a query has no reason to compress), each label 1..63
 * bytes, the whole name at most 255 bytes on the wire. The answer repeats the
 * question exactly as sent (the same bytes: resolvers that randomise the case of a
 * name check it). */
#ifndef NETPROXY_DNSMSG_H
#define NETPROXY_DNSMSG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_HEADER_LEN 12
#define DNS_NAME_MAX 253  /* as text, without the trailing dot */
#define DNS_UDP_PLAIN 512 /* the largest answer to a query without EDNS */
#define DNS_UDP_EDNS 1232 /* what we offer and use with EDNS (the DNS flag day's value) */
#define DNS_MSG_MAX 4096  /* the largest query we read */

enum dns_type {
    DNS_T_A = 1,
    DNS_T_NS = 2,
    DNS_T_CNAME = 5,
    DNS_T_SOA = 6,
    DNS_T_PTR = 12,
    DNS_T_MX = 15,
    DNS_T_TXT = 16,
    DNS_T_AAAA = 28,
    DNS_T_SRV = 33,
    DNS_T_OPT = 41,
    DNS_T_SVCB = 64,
    DNS_T_HTTPS = 65,
    DNS_T_ANY = 255,
};

enum dns_rcode {
    DNS_NOERROR = 0,
    DNS_FORMERR = 1,
    DNS_SERVFAIL = 2,
    DNS_NXDOMAIN = 3,
    DNS_NOTIMP = 4,
    DNS_REFUSED = 5,
};

/* RFC 8914 extended error codes we use. */
enum dns_ede {
    DNS_EDE_NONE = -1,
    DNS_EDE_OTHER = 0,
    DNS_EDE_BLOCKED = 15,
    DNS_EDE_PROHIBITED = 18,
};

enum dns_parse {
    DNS_PARSE_OK,
    DNS_PARSE_DROP,    /* not a query we may answer (too short, a response): no answer */
    DNS_PARSE_FORMERR, /* answer FORMERR (the id and, if read, the question are known) */
    DNS_PARSE_NOTIMP,  /* an opcode other than QUERY */
};

struct dns_query {
    uint16_t id;
    bool rd;                     /* recursion desired, echoed */
    char name[DNS_NAME_MAX + 1]; /* as sent, as text: labels joined by '.', no final dot */
    bool name_ok;                /* every byte of the name is [A-Za-z0-9_-] (and the dots) */
    uint16_t qtype, qclass;
    size_t question_off, question_len; /* the question's bytes in the query */
    bool edns;
    uint16_t edns_udp_size; /* the client's, when edns */
    const char *why;        /* for DNS_PARSE_FORMERR / NOTIMP: what was wrong */
};

enum dns_parse dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q);

/* The answer to q in out (at most cap bytes; for UDP, cap is the size the client
 * accepts: dns_udp_limit()). rcode is the response code; a non-NULL a adds one A
 * record (a NOERROR with no address is NODATA). ede >= 0 adds an extended error with
 * text (both only when the query had EDNS). Returns the length, or 0 when cap is too
 * small even for the header and the question. A query that could not be parsed at all
 * (no question read) is answered with an empty question section. */
size_t dns_build_answer(const uint8_t *query, const struct dns_query *q, int rcode,
                        const struct in_addr *a, uint32_t ttl, int ede, const char *ede_text,
                        uint8_t *out, size_t cap);

/* The largest UDP answer this client accepts. */
size_t dns_udp_limit(const struct dns_query *q);

/* "A", "AAAA", ... or "TYPE123" in buf. */
const char *dns_type_name(uint16_t type, char *buf, size_t len);
const char *dns_rcode_name(int rcode);

#endif
