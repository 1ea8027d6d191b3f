/* The pure parts of transparent egress: the DNS wire format (netproxy/egress/dnsmsg.c), the
 * first-flight sniffer (netproxy/core/sniff.c) against a real ClientHello from OpenSSL and
 * hand-made hostile ones, the synthetic address map and the raw TCP grants. */
#include "tests/unit/test.h"

#include "netproxy/egress/egress.h"
#include "netproxy/core/core.h"

#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <stdlib.h>

static const struct req_limits lim = {8192, 32768, 100};

/* ---- DNS ---- */

static size_t query(uint8_t *q, uint16_t id, const char *name, uint16_t type, bool edns)
{
    uint8_t hdr[12] = {id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, edns ? 1 : 0};
    memcpy(q, hdr, 12);
    size_t n = 12;
    const char *p = name;
    while (*p) {
        size_t l = strcspn(p, ".");
        q[n++] = (uint8_t)l;
        memcpy(q + n, p, l);
        n += l;
        p += l + (p[l] == '.');
    }
    q[n++] = 0;
    q[n++] = type >> 8;
    q[n++] = type & 0xff;
    q[n++] = 0;
    q[n++] = 1;
    if (edns) {
        static const uint8_t opt[11] = {0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0};
        memcpy(q + n, opt, 11);
        n += 11;
    }
    return n;
}

static void test_dns(void)
{
    uint8_t q[600], a[1300];
    struct dns_query dq;
    size_t n = query(q, 0xbeef, "Api.Example.COM", DNS_T_A, true);
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_OK, "a query with EDNS parses");
    CHECK_STR(dq.name, "Api.Example.COM", "the name as sent");
    CHECK(dq.id == 0xbeef && dq.qtype == DNS_T_A && dq.edns && dq.edns_udp_size == 4096 && dq.rd &&
              dq.name_ok,
          "id, type, EDNS size, RD");
    CHECK(dns_udp_limit(&dq) == DNS_UDP_EDNS, "UDP answers are capped at 1232 with EDNS");
    struct in_addr ip = {htonl(0xf0f00001)};
    size_t m = dns_build_answer(q, &dq, DNS_NOERROR, &ip, 300, DNS_EDE_NONE, NULL, a, sizeof(a));
    CHECK(m == 12 + dq.question_len + 16 + 11, "answer: header, question, A record, OPT");
    CHECK(a[0] == 0xbe && a[1] == 0xef && (a[2] & 0x80) && (a[2] & 0x04) && (a[2] & 0x01) &&
              (a[3] & 0x0f) == 0 && a[7] == 1 && a[11] == 1,
          "id echoed, QR, AA, RD, NOERROR, one answer, one additional");
    CHECK(memcmp(a + 12, q + 12, dq.question_len) == 0, "the question echoed byte for byte");
    CHECK(memcmp(a + 12 + dq.question_len + 12, &ip.s_addr, 4) == 0, "the address");
    m = dns_build_answer(q, &dq, DNS_NXDOMAIN, NULL, 0, DNS_EDE_PROHIBITED, "no", a, sizeof(a));
    size_t opt = 12 + dq.question_len;
    CHECK((a[3] & 0x0f) == 3 && a[7] == 0 && a[opt + 2] == 41 && a[opt + 12] == 15 &&
              a[opt + 16] == 18 && memcmp(a + opt + 17, "no", 2) == 0 && m == opt + 19,
          "NXDOMAIN with an extended error 18 and its text");
    m = dns_build_answer(q, &dq, DNS_NOERROR, &ip, 300, DNS_EDE_NONE, NULL, a,
                         12 + dq.question_len);
    CHECK(m == 12 + dq.question_len && (a[2] & 0x02), "no room for the record: TC set");
    CHECK(dns_build_answer(q, &dq, 0, NULL, 0, -1, NULL, a, 11) == 0, "no room at all: 0");

    n = query(q, 1, "example.com", DNS_T_AAAA, false);
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_OK && !dq.edns &&
              dns_udp_limit(&dq) == DNS_UDP_PLAIN,
          "without EDNS: 512 bytes");
    m = dns_build_answer(q, &dq, DNS_NXDOMAIN, NULL, 0, DNS_EDE_PROHIBITED, "x", a, sizeof(a));
    CHECK(m == 12 + dq.question_len && a[11] == 0, "no extended error without EDNS");

    /* Hostile and odd queries. */
    n = query(q, 2, "a.b", DNS_T_A, false);
    q[2] |= 0x80;
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_DROP, "a response is dropped");
    CHECK(dns_parse_query(q, 11, &dq) == DNS_PARSE_DROP, "a runt is dropped");
    n = query(q, 3, "a.b", DNS_T_A, false);
    q[2] = (q[2] & 0x87) | (5 << 3);
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_NOTIMP, "opcode UPDATE: NOTIMP");
    n = query(q, 4, "a.b", DNS_T_A, false);
    q[n - 1] = 3;
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_NOTIMP, "class CHAOS: NOTIMP");
    n = query(q, 5, "a.b", DNS_T_A, false);
    q[5] = 2;
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_FORMERR && dq.question_len == 0,
          "two questions: FORMERR, no question echoed");
    n = query(q, 6, "a.b", DNS_T_A, false);
    CHECK(dns_parse_query(q, n - 1, &dq) == DNS_PARSE_FORMERR, "a truncated question: FORMERR");
    uint8_t ptr[] = {0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1};
    CHECK(dns_parse_query(ptr, sizeof(ptr), &dq) == DNS_PARSE_FORMERR,
          "a compression pointer (here to itself): FORMERR, no loop");
    uint8_t longlab[300] = {0, 8, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 64};
    CHECK(dns_parse_query(longlab, 12 + 1 + 64 + 5, &dq) == DNS_PARSE_FORMERR,
          "a 64-byte label: FORMERR");
    char big[300];
    memset(big, 'a', sizeof(big));
    for (int i = 50; i < 299; i += 51)
        big[i] = '.';
    big[299] = '\0';
    n = query(q, 9, big, DNS_T_A, false);
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_FORMERR, "a name over 255 bytes: FORMERR");
    n = query(q, 10, "a\x01z.b", DNS_T_A, false);
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_OK && !dq.name_ok && !strchr(dq.name, 1),
          "a control byte in a label: parsed, marked unusable, not copied raw");
    n = query(q, 11, "a.b", DNS_T_A, true);
    q[n - 1] = 4; /* an OPT rdlength past the end */
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_FORMERR, "an OPT record cut short: FORMERR");
    n = query(q, 12, "a.b", DNS_T_A, false);
    q[n++] = 0;
    CHECK(dns_parse_query(q, n, &dq) == DNS_PARSE_FORMERR, "trailing bytes: FORMERR");
    /* Every prefix of a valid query is refused or dropped, never read past. */
    n = query(q, 13, "www.example.com", DNS_T_A, true);
    bool all = true;
    for (size_t i = 0; i < n; i++)
        all = all && dns_parse_query(q, i, &dq) != DNS_PARSE_OK;
    CHECK(all, "no prefix of a query parses");
    char tb[16];
    CHECK_STR(dns_type_name(65, tb, sizeof(tb)), "HTTPS", "type names");
    CHECK_STR(dns_type_name(999, tb, sizeof(tb)), "TYPE999", "unknown type names");
}

/* ---- sniffing ---- */

/* A real ClientHello: OpenSSL's, for server_name sni (NULL: none). */
static size_t openssl_hello(const char *sni, uint8_t *out, size_t cap)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rb, wb);
    if (sni)
        SSL_set_tlsext_host_name(ssl, sni);
    SSL_connect(ssl);
    int n = BIO_read(wb, out, (int)cap);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return n > 0 ? (size_t)n : 0;
}

static enum sniff_status sniff_all(const uint8_t *b, size_t n, struct sniff *s)
{
    sniff_init(s, &lim);
    enum sniff_status st = sniff_feed(s, b, n);
    sniff_free(s);
    return st;
}

/* A hand-made ClientHello with the given extensions block. */
static size_t make_hello(const uint8_t *ext, size_t ext_len, uint8_t *out)
{
    size_t body = 2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + ext_len;
    size_t n = 0;
    out[n++] = 22, out[n++] = 3, out[n++] = 1;
    out[n++] = (uint8_t)((body + 4) >> 8), out[n++] = (uint8_t)(body + 4);
    out[n++] = 1, out[n++] = 0, out[n++] = (uint8_t)(body >> 8), out[n++] = (uint8_t)body;
    out[n++] = 3, out[n++] = 3;
    memset(out + n, 0x5a, 32), n += 32;
    out[n++] = 0;                                                 /* session id */
    out[n++] = 0, out[n++] = 2, out[n++] = 0x13, out[n++] = 0x01; /* one suite */
    out[n++] = 1, out[n++] = 0;                                   /* null compression */
    out[n++] = (uint8_t)(ext_len >> 8), out[n++] = (uint8_t)ext_len;
    memcpy(out + n, ext, ext_len);
    return n + ext_len;
}

static void test_sniff(void)
{
    uint8_t hello[8192];
    struct sniff s;
    size_t n = openssl_hello("api.example.com", hello, sizeof(hello));
    CHECK(n > 100, "OpenSSL made a ClientHello (%zu bytes)", n);
    CHECK(sniff_all(hello, n, &s) == SNIFF_DONE && s.proto == SNIFF_TLS && s.have_name,
          "its server_name is found");
    CHECK_STR(s.name, "api.example.com", "the name");
    /* Byte by byte: more, more, ..., done at the last byte, never before. */
    sniff_init(&s, &lim);
    enum sniff_status st = SNIFF_MORE;
    size_t at = 0;
    while (st == SNIFF_MORE && at < n)
        st = sniff_feed(&s, hello, ++at);
    sniff_free(&s);
    CHECK(st == SNIFF_DONE && at == n, "fed a byte at a time it decides at the last byte");
    n = openssl_hello(NULL, hello, sizeof(hello));
    CHECK(sniff_all(hello, n, &s) == SNIFF_DONE && !s.have_name, "no SNI: done, no name");

    /* The hello split over two records, as large post-quantum ones are. */
    n = openssl_hello("split.example", hello, sizeof(hello));
    size_t rec = ((size_t)hello[3] << 8 | hello[4]), half = rec / 2;
    uint8_t two[8200];
    memcpy(two, hello, 5 + half);
    two[3] = (uint8_t)(half >> 8), two[4] = (uint8_t)half;
    two[5 + half] = 22, two[6 + half] = 3, two[7 + half] = 1;
    two[8 + half] = (uint8_t)((rec - half) >> 8), two[9 + half] = (uint8_t)(rec - half);
    memcpy(two + 10 + half, hello + 5 + half, rec - half);
    CHECK(sniff_all(two, 10 + rec, &s) == SNIFF_DONE && strcmp(s.name, "split.example") == 0,
          "a ClientHello over two records is reassembled");
    CHECK(sniff_all(two, 9 + rec, &s) == SNIFF_MORE, "... and waited for");

    static const uint8_t sni_one[] = {0,   0,   0,   14,  0,   12,  0,   0,   9,
                                      'a', '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e'};
    n = make_hello(sni_one, sizeof(sni_one), hello);
    CHECK(sniff_all(hello, n, &s) == SNIFF_DONE && strcmp(s.name, "a.example") == 0,
          "a minimal hand-made hello");
    uint8_t dup[64];
    memcpy(dup, sni_one, sizeof(sni_one));
    memcpy(dup + sizeof(sni_one), sni_one, sizeof(sni_one));
    n = make_hello(dup, 2 * sizeof(sni_one), hello);
    CHECK(sniff_all(hello, n, &s) == SNIFF_ERROR && s.error == R_PROTOCOL,
          "server_name twice: refused");
    static const uint8_t two_names[] = {0, 0, 0, 20,  0,   18,  0, 0, 3, 'a', '.', 'b',
                                        0, 0, 3, 'c', '.', 'd', 1, 0, 1, 'x', 0,   0};
    n = make_hello(two_names, 24, hello);
    CHECK(sniff_all(hello, n, &s) == SNIFF_ERROR, "two host names in server_name: refused");
    static const uint8_t nul[] = {0, 0, 0, 8, 0, 6, 0, 0, 3, 'a', 0, 'b'};
    n = make_hello(nul, sizeof(nul), hello);
    CHECK(sniff_all(hello, n, &s) == SNIFF_ERROR, "a NUL in the name: refused");
    static const uint8_t overrun[] = {0, 0, 0, 9, 0, 7, 0, 0, 40, 'a', '.', 'b', 'c'};
    n = make_hello(overrun, sizeof(overrun), hello);
    CHECK(sniff_all(hello, n, &s) == SNIFF_ERROR, "a name length past its list: refused");
    n = make_hello(sni_one, sizeof(sni_one), hello);
    hello[5] = 2; /* ServerHello */
    CHECK(sniff_all(hello, n, &s) == SNIFF_ERROR, "another handshake message: refused");
    n = make_hello(sni_one, sizeof(sni_one), hello);
    hello[0] = 23; /* application data */
    CHECK(sniff_all(hello, n, &s) == SNIFF_ERROR, "a record that is not a handshake: refused");
    uint8_t huge[5] = {22, 3, 1, 0x40, 0x01};
    CHECK(sniff_all(huge, 5, &s) == SNIFF_ERROR, "a record over 16 KiB: refused at its header");
    uint8_t bighello[9] = {22, 3, 1, 0, 4, 1, 0x01, 0, 0};
    CHECK(sniff_all(bighello, 9, &s) == SNIFF_ERROR, "a hello announced over 16 KiB: refused");
    /* Every prefix of the OpenSSL hello is MORE, and every corruption of a length byte
     * is refused or waited for, never read past (ASan watches). */
    n = openssl_hello("api.example.com", hello, sizeof(hello));
    bool all = true;
    for (size_t i = 0; i < n; i++)
        all = all && sniff_all(hello, i, &s) == SNIFF_MORE;
    CHECK(all, "no prefix of a hello decides");
    for (size_t i = 0; i < n; i++) {
        uint8_t copy[8192];
        memcpy(copy, hello, n);
        copy[i] ^= 0xff;
        (void)sniff_all(copy, n, &s);
    }
    CHECK(1, "every byte of a hello flipped: no crash");

    const char *get = "GET /x HTTP/1.1\r\nHost: API.example.com:8080\r\nAccept: */*\r\n\r\n";
    CHECK(sniff_all((const uint8_t *)get, strlen(get), &s) == SNIFF_DONE && s.proto == SNIFF_HTTP &&
              strcmp(s.name, "API.example.com") == 0,
          "HTTP: the Host's host part, port removed");
    const char *v6 = "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n";
    CHECK(sniff_all((const uint8_t *)v6, strlen(v6), &s) == SNIFF_DONE &&
              strcmp(s.name, "[::1]") == 0,
          "HTTP: a bracketed address kept whole");
    const char *twohosts = "GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n";
    CHECK(sniff_all((const uint8_t *)twohosts, strlen(twohosts), &s) == SNIFF_ERROR,
          "HTTP: two Host fields refused");
    const char *nohost = "GET / HTTP/1.0\r\n\r\n";
    CHECK(sniff_all((const uint8_t *)nohost, strlen(nohost), &s) == SNIFF_ERROR,
          "HTTP: no Host refused");
    const char *connect = "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n";
    CHECK(sniff_all((const uint8_t *)connect, strlen(connect), &s) == SNIFF_ERROR &&
              s.error == R_PROTOCOL,
          "CONNECT to a destination address: refused");
    CHECK(sniff_all((const uint8_t *)"\x00\x01", 2, &s) == SNIFF_ERROR && s.error == R_PROTOCOL,
          "neither TLS nor HTTP: protocol-not-allowed");
    CHECK(sniff_all((const uint8_t *)"GET / HTTP/1.1\r\nHo", 18, &s) == SNIFF_MORE,
          "an HTTP head in progress: more");
    /* The absolute form: its host is the name to check too (issue 34, finding 9). */
    const char *abs = "GET http://Evil.example:81/s?q HTTP/1.1\r\nHost: a.example\r\n\r\n";
    CHECK(sniff_all((const uint8_t *)abs, strlen(abs), &s) == SNIFF_DONE && s.have_target_name &&
              strcmp(s.target_name, "Evil.example") == 0 && strcmp(s.name, "a.example") == 0,
          "HTTP: an absolute-form target's host is kept beside Host's");
    CHECK(sniff_all((const uint8_t *)get, strlen(get), &s) == SNIFF_DONE && !s.have_target_name,
          "HTTP: an origin-form target names no host");
    const char *const bad_targets[] = {
        "GET https://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n",
        "GET ftp://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n",
        "GET http://u@a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n",
        "GET http:///x HTTP/1.1\r\nHost: a.example\r\n\r\n",
        "GET http:// HTTP/1.1\r\nHost: a.example\r\n\r\n",
        "GET a.example/x HTTP/1.1\r\nHost: a.example\r\n\r\n",
    };
    bool refused = true;
    for (size_t i = 0; i < sizeof(bad_targets) / sizeof(bad_targets[0]); i++)
        refused =
            refused &&
            sniff_all((const uint8_t *)bad_targets[i], strlen(bad_targets[i]), &s) == SNIFF_ERROR &&
            s.error == R_BAD_REQUEST;
    CHECK(refused, "HTTP: another scheme, userinfo, an empty host or a bare name as the target: "
                   "refused");
}

/* ---- synthetic addresses ---- */

static void test_synth(void)
{
    struct cidr range;
    char err[200], name[300];
    cidr_parse("240.240.0.0/16", &range);
    struct synth_map *m = synth_new(&range, 300, err, sizeof(err));
    CHECK(m != NULL, "a map of 300 names in 240.240.0.0/16");
    struct in_addr a, b, c;
    bool fresh;
    CHECK(synth_assign(m, "a.example", &a, &fresh) == 0 && fresh && ntohl(a.s_addr) == 0xf0f00001,
          "the first name gets 240.240.0.1");
    CHECK(synth_assign(m, "a.example", &b, &fresh) == 0 && !fresh && a.s_addr == b.s_addr,
          "the same name, the same address, not fresh");
    CHECK(synth_lookup(m, a, name, sizeof(name)) && strcmp(name, "a.example") == 0,
          "the address stands for the name");
    char n2[32];
    for (int i = 0; i < 298; i++) {
        snprintf(n2, sizeof(n2), "n%d.example", i);
        synth_assign(m, n2, &c, &fresh);
    }
    /* 299 names: .1-.254 of 240.240.0, then .1-.45 of 240.240.1. */
    CHECK(ntohl(c.s_addr) == 0xf0f0012d, "the 299th name gets 240.240.1.45 (%s)", inet_ntoa(c));
    bool skipped = true;
    for (uint32_t x = 0xf0f00000; x < 0xf0f00200; x++) {
        struct in_addr y = {htonl(x)};
        if (((x & 0xff) == 0 || (x & 0xff) == 255) && synth_lookup(m, y, name, sizeof(name)))
            skipped = false;
    }
    CHECK(skipped, "no name sits on .0 or .255");
    CHECK(synth_count(m) == 299, "299 names");
    CHECK(synth_assign(m, "last.example", &c, &fresh) == 0, "the 300th fits");
    CHECK(synth_assign(m, "over.example", &c, &fresh) < 0, "the 301st does not");
    struct in_addr unknown = {htonl(0xf0f0fe01)}, outside = {htonl(0x0a000001)};
    CHECK(!synth_lookup(m, unknown, name, sizeof(name)) && synth_in_range(m, unknown),
          "an unassigned address in the range is synthetic, and stands for nothing");
    CHECK(!synth_in_range(m, outside), "10.0.0.1 is not synthetic");
    synth_free(m);

    m = synth_new(&range, 10, err, sizeof(err));
    struct in_addr p = {htonl(0xf0f00005)};
    CHECK(synth_preset(m, "p.example", p) == 0, "preset a name at .5");
    CHECK(synth_preset(m, "q.example", p) < 0, "the same address for another name: refused");
    CHECK(synth_preset(m, "p.example", (struct in_addr){htonl(0xf0f00006)}) < 0,
          "another address for the same name: refused");
    CHECK(synth_preset(m, "p.example", p) == 0, "the same pair again: accepted");
    CHECK(synth_preset(m, "z.example", (struct in_addr){htonl(0xf0f000ff)}) < 0,
          "a .255 address: refused");
    CHECK(synth_preset(m, "z.example", (struct in_addr){htonl(0x0a000001)}) < 0,
          "an address outside the range: refused");
    bool saw5 = false;
    for (int i = 0; i < 6; i++) {
        snprintf(n2, sizeof(n2), "m%d.example", i);
        synth_assign(m, n2, &c, &fresh);
        saw5 = saw5 || c.s_addr == p.s_addr;
    }
    CHECK(!saw5, "new names skip the preset address");
    synth_free(m);
    cidr_parse("10.0.0.0/30", &range);
    CHECK(synth_new(&range, 1, err, sizeof(err)) == NULL, "a range under /24: refused");
    cidr_parse("240.240.0.0/24", &range);
    CHECK(synth_new(&range, 255, err, sizeof(err)) == NULL, "more names than a /24 holds: refused");
}

static void test_tcp_grants(void)
{
    char err[200];
    static const uint16_t ports[] = {443};
    struct policy *p = policy_new(NULL, 0, ports, 1, err, sizeof(err));
    CHECK(policy_add_tcp(p, "DB.Example.com:5432", err, sizeof(err)), "a name grant");
    CHECK(policy_add_tcp(p, "0x7f.1:6379", err, sizeof(err)), "an address grant in odd spelling");
    CHECK(policy_add_tcp(p, "[::1]:6379", err, sizeof(err)), "an IPv6 grant");
    CHECK(!policy_add_tcp(p, "db.example.com", err, sizeof(err)), "no port: refused (%s)", err);
    CHECK(!policy_add_tcp(p, "user@db:1", err, sizeof(err)), "userinfo: refused");
    CHECK(!policy_add_tcp(p, "db:0", err, sizeof(err)), "port 0: refused");
    struct host h;
    const char *why;
    host_canonicalise("db.example.com", 14, false, &h, &why);
    CHECK_STR(policy_tcp_grant(p, &h, 5432), "db.example.com:5432", "matched, canonical");
    CHECK(policy_tcp_grant(p, &h, 5433) == NULL, "another port: no");
    host_canonicalise("x.db.example.com", 16, false, &h, &why);
    CHECK(policy_tcp_grant(p, &h, 5432) == NULL, "a subdomain: no (exact names only)");
    host_canonicalise("127.0.0.1", 9, false, &h, &why);
    CHECK_STR(policy_tcp_grant(p, &h, 6379), "127.0.0.1:6379", "the address, however spelled");
    host_canonicalise("::1", 3, true, &h, &why);
    CHECK_STR(policy_tcp_grant(p, &h, 6379), "[::1]:6379", "IPv6 bracketed in the rule");
    const char *rule = NULL;
    CHECK(policy_tcp_names(p, "db.example.com", &rule) && !policy_tcp_names(p, "127.0.0.1", &rule),
          "the resolver knows grant names, not addresses");
    policy_free(p);
}

int main(void)
{
    char err[200];
    policy_psl_init(NULL, err, sizeof(err));
    test_dns();
    test_sniff();
    test_synth();
    test_tcp_grants();
    policy_psl_free();
    return test_done();
}
