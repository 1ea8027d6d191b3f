#include "dnsmsg.h"

#include <stdio.h>
#include <string.h>

#define FLAG_QR 0x8000
#define FLAG_AA 0x0400
#define FLAG_TC 0x0200
#define FLAG_RD 0x0100
#define FLAG_RA 0x0080
#define OPCODE(f) (((f) >> 11) & 0xf)
#define CLASS_IN 1
#define EDNS_OPT_EDE 15

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

static bool name_byte_ok(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* Reads the uncompressed name at *off into q->name. false: FORMERR with q->why. */
static bool read_name(const uint8_t *msg, size_t len, size_t *off, struct dns_query *q)
{
    size_t pos = *off, wire = 0, text = 0;
    q->name_ok = true;
    for (;;) {
        if (pos >= len) {
            q->why = "the question name runs past the end of the message";
            return false;
        }
        uint8_t l = msg[pos++];
        wire++;
        if (l == 0)
            break;
        if ((l & 0xc0) != 0) {
            q->why = "compressed or extended labels are not accepted in a query";
            return false;
        }
        if (pos + l > len) {
            q->why = "a label runs past the end of the message";
            return false;
        }
        wire += l;
        if (wire > 255) {
            q->why = "the name is longer than 255 bytes";
            return false;
        }
        if (text + (text ? 1 : 0) + l > DNS_NAME_MAX) {
            q->why = "the name is longer than 253 characters";
            return false;
        }
        if (text)
            q->name[text++] = '.';
        for (unsigned i = 0; i < l; i++) {
            uint8_t c = msg[pos + i];
            if (!name_byte_ok(c))
                q->name_ok = false;
            /* Kept printable for the record; name_ok says whether it is usable. */
            q->name[text++] = c >= 0x21 && c < 0x7f && c != '.' ? (char)c : '?';
        }
        pos += l;
    }
    q->name[text] = '\0';
    *off = pos;
    return true;
}

/* The OPT record of the additional section at *off (RFC 6891 6.1.2). */
static bool read_opt(const uint8_t *msg, size_t len, size_t off, struct dns_query *q)
{
    if (off + 11 > len || msg[off] != 0) {
        q->why = "the additional record is not an EDNS OPT record on the root name";
        return false;
    }
    uint16_t type = get16(msg + off + 1);
    uint16_t rdlen = get16(msg + off + 9);
    if (type != DNS_T_OPT) {
        q->why = "the additional record is not an EDNS OPT record";
        return false;
    }
    if (off + 11 + rdlen != len) {
        q->why = "the OPT record's length does not match the message";
        return false;
    }
    q->edns = true;
    q->edns_udp_size = get16(msg + off + 3);
    return true;
}

enum dns_parse dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q)
{
    memset(q, 0, sizeof(*q));
    if (len < DNS_HEADER_LEN || len > DNS_MSG_MAX)
        return DNS_PARSE_DROP; /* nothing we could even address an answer to, or a flood */
    q->id = get16(msg);
    uint16_t flags = get16(msg + 2);
    if (flags & FLAG_QR)
        return DNS_PARSE_DROP; /* a response: answering it could loop */
    q->rd = (flags & FLAG_RD) != 0;
    if (OPCODE(flags) != 0) {
        q->why = "only standard queries (opcode QUERY) are answered";
        return DNS_PARSE_NOTIMP;
    }
    uint16_t qd = get16(msg + 4), an = get16(msg + 6), ns = get16(msg + 8), ar = get16(msg + 10);
    if (qd != 1) {
        q->why = "a query must ask exactly one question";
        return DNS_PARSE_FORMERR;
    }
    if (an || ns || ar > 1) {
        q->why = "a query carries no answer or authority records and at most one OPT";
        return DNS_PARSE_FORMERR;
    }
    size_t off = DNS_HEADER_LEN;
    if (!read_name(msg, len, &off, q))
        return DNS_PARSE_FORMERR;
    if (off + 4 > len) {
        q->why = "the question's type and class are missing";
        return DNS_PARSE_FORMERR;
    }
    q->qtype = get16(msg + off);
    q->qclass = get16(msg + off + 2);
    off += 4;
    q->question_off = DNS_HEADER_LEN;
    q->question_len = off - DNS_HEADER_LEN;
    if (ar == 1) {
        if (!read_opt(msg, len, off, q))
            return DNS_PARSE_FORMERR;
    } else if (off != len) {
        q->why = "bytes follow the question";
        return DNS_PARSE_FORMERR;
    }
    if (q->qclass != CLASS_IN) {
        q->why = "only class IN is answered";
        return DNS_PARSE_NOTIMP;
    }
    return DNS_PARSE_OK;
}

size_t dns_udp_limit(const struct dns_query *q)
{
    if (!q->edns || q->edns_udp_size < DNS_UDP_PLAIN)
        return DNS_UDP_PLAIN;
    return q->edns_udp_size < DNS_UDP_EDNS ? q->edns_udp_size : DNS_UDP_EDNS;
}

size_t dns_build_answer(const uint8_t *query, const struct dns_query *q, int rcode,
                        const struct in_addr *a, uint32_t ttl, int ede, const char *ede_text,
                        uint8_t *out, size_t cap)
{
    size_t qlen = q->question_len;
    size_t need = DNS_HEADER_LEN + qlen;
    if (cap < need)
        return 0;
    memset(out, 0, DNS_HEADER_LEN);
    put16(out, q->id);
    uint16_t flags = FLAG_QR | FLAG_AA | FLAG_RA | (q->rd ? FLAG_RD : 0) | (uint16_t)(rcode & 0xf);
    put16(out + 4, qlen ? 1 : 0);
    memcpy(out + DNS_HEADER_LEN, query + q->question_off, qlen);
    size_t pos = need;
    /* The A record: a pointer to the question's name, type, class, TTL, the address. */
    if (a && qlen && pos + 16 <= cap) {
        put16(out + pos, 0xc000 | DNS_HEADER_LEN);
        put16(out + pos + 2, DNS_T_A);
        put16(out + pos + 4, CLASS_IN);
        put32(out + pos + 6, ttl);
        put16(out + pos + 10, 4);
        memcpy(out + pos + 12, &a->s_addr, 4);
        pos += 16;
        put16(out + 6, 1);
    } else if (a && qlen) {
        flags |= FLAG_TC; /* cannot happen with our sizes; said rather than dropped */
    }
    if (q->edns) {
        size_t text_len = ede >= 0 && ede_text ? strnlen(ede_text, 200) : 0;
        size_t opt_len = ede >= 0 ? 4 + 2 + text_len : 0;
        /* Without room for the extended error, the OPT record alone. */
        if (pos + 11 + opt_len > cap)
            opt_len = 0;
        if (pos + 11 + opt_len <= cap) {
            out[pos] = 0;
            put16(out + pos + 1, DNS_T_OPT);
            put16(out + pos + 3, DNS_UDP_EDNS);
            put32(out + pos + 5, 0);
            put16(out + pos + 9, (uint16_t)opt_len);
            if (opt_len) {
                put16(out + pos + 11, EDNS_OPT_EDE);
                put16(out + pos + 13, (uint16_t)(2 + text_len));
                put16(out + pos + 15, (uint16_t)ede);
                memcpy(out + pos + 17, ede_text, text_len);
            }
            pos += 11 + opt_len;
            put16(out + 10, 1);
        }
    }
    put16(out + 2, flags);
    return pos;
}

const char *dns_type_name(uint16_t type, char *buf, size_t len)
{
    static const struct {
        uint16_t t;
        const char *n;
    } names[] = {{DNS_T_A, "A"},     {DNS_T_NS, "NS"},     {DNS_T_CNAME, "CNAME"},
                 {DNS_T_SOA, "SOA"}, {DNS_T_PTR, "PTR"},   {DNS_T_MX, "MX"},
                 {DNS_T_TXT, "TXT"}, {DNS_T_AAAA, "AAAA"}, {DNS_T_SRV, "SRV"},
                 {DNS_T_OPT, "OPT"}, {DNS_T_SVCB, "SVCB"}, {DNS_T_HTTPS, "HTTPS"},
                 {DNS_T_ANY, "ANY"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].t == type)
            return names[i].n;
    snprintf(buf, len, "TYPE%u", type);
    return buf;
}

const char *dns_rcode_name(int rcode)
{
    static const char *const names[] = {"NOERROR",  "FORMERR", "SERVFAIL",
                                        "NXDOMAIN", "NOTIMP",  "REFUSED"};
    return rcode >= 0 && rcode < 6 ? names[rcode] : "UNKNOWN";
}
