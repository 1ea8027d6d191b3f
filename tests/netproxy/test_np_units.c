/* netproxy's pure parts: the CONNECT parser, authority form, host canonicalisation,
 * the eTLD+1 policy, the address guard, answers and durations. */
#include "tests/unit/test.h"

#include "netproxy/core/core.h"
#include "netproxy/control/control.h"

#include <arpa/inet.h>
#include <stdlib.h>

static const struct req_limits lim = {8192, 32768, 100};

/* Feeds the whole request at once and returns status, reason. */
static enum req_status parse(const char *req, size_t len, struct req_parser *p)
{
    req_init(p, &lim);
    return req_feed(p, req, len);
}

static void test_parser(void)
{
    struct req_parser p;
    const char *ok = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
                     "User-Agent: curl/7.88\r\n\r\nEARLY";
    CHECK(parse(ok, strlen(ok), &p) == REQ_DONE, "a well-formed CONNECT parses");
    CHECK(req_is_connect(&p, ok), "method is CONNECT");
    CHECK(p.pos == strlen(ok) - 5, "early data starts after the head");
    CHECK(p.target.len == 15 && memcmp(ok + p.target.off, "example.com:443", 15) == 0,
          "target span");
    CHECK(p.user_agent.len == 9 && memcmp(ok + p.user_agent.off, "curl/7.88", 9) == 0,
          "user agent captured and trimmed");
    CHECK(p.version_minor == 1, "HTTP/1.1");

    /* Byte-at-a-time gives the same result (the slowloris path). */
    req_init(&p, &lim);
    enum req_status st = REQ_MORE;
    for (size_t i = 1; i <= strlen(ok) - 5 && st == REQ_MORE; i++)
        st = req_feed(&p, ok, i);
    CHECK(st == REQ_DONE && p.pos == strlen(ok) - 5, "incremental feeding completes");

    static const struct {
        const char *req;
        enum reason want;
        const char *what;
    } bad[] = {
        {"CONNECT a.com:443 HTTP/1.1\n\n", R_BAD_REQUEST, "bare LF after request line"},
        {"CONNECT a.com:443 HTTP/1.1\r\nHost: a\n\r\n", R_BAD_REQUEST, "bare LF in header"},
        {"CONNECT a.com:443 HTTP/1.1\r\nHost: a\r\r\n\r\n", R_BAD_REQUEST, "bare CR in header"},
        {"CONNECT a.com:443 HTTP/1.1\r\nHo st: a\r\n\r\n", R_BAD_REQUEST, "space in field name"},
        {"CONNECT a.com:443 HTTP/1.1\r\nHost : a\r\n\r\n", R_BAD_REQUEST, "space before colon"},
        {"CONNECT a.com:443 HTTP/1.1\r\n folded\r\n\r\n", R_BAD_REQUEST, "obs-fold"},
        {"CONNECT a.com:443 HTTP/1.1\r\nX: a\x01"
         "b\r\n\r\n",
         R_BAD_REQUEST, "control in value"},
        {"CONNECT a.com:443 HTTP/1.1\r\nX: a\x7f\r\n\r\n", R_BAD_REQUEST, "DEL in value"},
        {"CONNECT a.com:443 HTTP/1.1\r\n: a\r\n\r\n", R_BAD_REQUEST, "empty field name"},
        {"CONNECT  a.com:443 HTTP/1.1\r\n\r\n", R_BAD_REQUEST, "double space"},
        {"CONNECT a.com:443  HTTP/1.1\r\n\r\n", R_BAD_REQUEST, "space before version"},
        {"CONNECT a.com:443 HTTP/1.1 \r\n\r\n", R_BAD_REQUEST, "space after version"},
        {"CONNECT a.com:443\r\n\r\n", R_BAD_REQUEST, "no version"},
        {"CONNECT a.com:443 HTTP/1.1x\r\n\r\n", R_BAD_REQUEST, "junk version"},
        {"CONNECT a.com:443 http/1.1\r\n\r\n", R_BAD_REQUEST, "lowercase version"},
        {"CONNECT a.com:443 HTTP/2.0\r\n\r\n", R_VERSION, "HTTP/2.0 is 505"},
        {"CONNECT a.com:443 HTTP/0.9\r\n\r\n", R_VERSION, "HTTP/0.9 is 505"},
        {"CON\x01NECT a.com:443 HTTP/1.1\r\n\r\n", R_BAD_REQUEST, "control in method"},
        {"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", R_BAD_REQUEST, "TLS ClientHello"},
        {"CONNECT a\x00.com:443 HTTP/1.1\r\n\r\n", R_BAD_REQUEST, "NUL in target"},
        {"CONNECT a\t.com:443 HTTP/1.1\r\n\r\n", R_BAD_REQUEST, "tab in target"},
        {"\r\nCONNECT a.com:443 HTTP/1.1\r\n\r\n", R_BAD_REQUEST, "leading CRLF"},
        {"CONNECT a.com:443 HTTP/1.1\r\nX: a\x00"
         "b\r\n\r\n",
         R_BAD_REQUEST, "NUL in header"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = strlen(bad[i].req);
        if (strstr(bad[i].what, "NUL"))
            len = strlen(bad[i].req) + 1 + strlen(bad[i].req + strlen(bad[i].req) + 1);
        st = parse(bad[i].req, len, &p);
        CHECK(st == REQ_ERROR && p.error == bad[i].want, "refused: %s (%s)", bad[i].what,
              reason_code(bad[i].want));
    }

    /* A ClientHello is refused at its first byte, without waiting for more. */
    st = parse("\x16", 1, &p);
    CHECK(st == REQ_ERROR, "ClientHello refused on the first byte");

    /* Limits. */
    char *big = malloc(300000);
    memcpy(big, "CONNECT ", 8);
    memset(big + 8, 'a', 9000);
    st = parse(big, 9008, &p);
    CHECK(st == REQ_ERROR && p.error == R_LINE_TOO_LONG, "request line over 8 KiB is 414");
    size_t n = (size_t)sprintf(big, "CONNECT a.com:443 HTTP/1.1\r\nX: ");
    memset(big + n, 'b', 200000);
    st = parse(big, n + 200000, &p);
    CHECK(st == REQ_ERROR && p.error == R_HEADERS_TOO_LARGE, "200 KB header is 431");
    n = (size_t)sprintf(big, "CONNECT a.com:443 HTTP/1.1\r\n");
    for (int i = 0; i < 101; i++)
        n += (size_t)sprintf(big + n, "X%d: y\r\n", i);
    n += (size_t)sprintf(big + n, "\r\n");
    st = parse(big, n, &p);
    CHECK(st == REQ_ERROR && p.error == R_HEADERS_TOO_LARGE, "101 headers is 431");
    n = (size_t)sprintf(big, "CONNECT a.com:443 HTTP/1.1\r\n");
    for (int i = 0; i < 100; i++)
        n += (size_t)sprintf(big + n, "X%d: y\r\n", i);
    n += (size_t)sprintf(big + n, "\r\n");
    st = parse(big, n, &p);
    CHECK(st == REQ_DONE, "100 headers are fine");
    free(big);

    st = parse("GET http://a.com/ HTTP/1.1\r\n\r\n", 30, &p);
    CHECK(st == REQ_DONE && !req_is_connect(&p, "GET"), "GET parses but is not CONNECT");
}

static void test_authority(void)
{
    struct authority a;
    const char *why = NULL;
    CHECK(authority_parse("example.com:443", 15, &a, &why) && a.port == 443 && a.host_len == 11,
          "host:port");
    CHECK(authority_parse("[2001:db8::1]:8443", 18, &a, &why) && a.bracketed && a.port == 8443,
          "[v6]:port");
    static const struct {
        const char *t;
        const char *what;
    } bad[] = {
        {"example.com", "no port"},
        {"example.com:", "empty port"},
        {"example.com:0", "port 0"},
        {"example.com:65536", "port 65536"},
        {"example.com:0443", "leading zero port"},
        {"example.com:+443", "signed port"},
        {"example.com:44a", "non-digit port"},
        {"example.com:443:443", "two ports"},
        {"user:pass@example.com:443", "userinfo"},
        {"@example.com:443", "bare @"},
        {"exa%6dple.com:443", "percent-encoding"},
        {"[example.com]:443", "brackets around a name"},
        {"[::1]443", "bracket without colon"},
        {"[::1:443", "unclosed bracket"},
        {"::1:443", "unbracketed IPv6"},
        {"http://example.com:443", "absolute URI"},
        {"example.com/:443", "slash"},
        {":443", "empty host"},
        {"exa*mple.com:443", "asterisk"},
        {"exa\\mple.com:443", "backslash"},
        {"example.com,evil.com:443", "comma"},
        {"a]b.com:443", "stray bracket"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!authority_parse(bad[i].t, strlen(bad[i].t), &a, &why), "authority refused: %s (%s)",
              bad[i].what, why ? why : "?");

    char out[64];
    target_redact("user:secret@example.com:443", 27, out, sizeof(out));
    CHECK_STR(out, "[redacted]@example.com:443", "userinfo redacted for the log");
    target_redact("a@b@c:1", 7, out, sizeof(out));
    CHECK(strstr(out, "a@") == NULL && strstr(out, "b@") == NULL, "every userinfo part redacted");
}

static void canon(const char *raw, bool ok, const char *want)
{
    struct host h;
    const char *why = NULL;
    size_t len = strlen(raw);
    bool br = len >= 2 && raw[0] == '[';
    bool got = host_canonicalise(br ? raw + 1 : raw, br ? len - 2 : len, br, &h, &why);
    if (ok)
        CHECK(got && strcmp(h.name, want) == 0, "canonical %s -> %s (got %s)", raw, want,
              got ? h.name : why);
    else
        CHECK(!got, "refused host %s (%s)", raw, why ? why : "accepted!");
}

static void canon_ip(const char *raw, const char *want)
{
    struct host h;
    const char *why = NULL;
    size_t len = strlen(raw);
    bool br = raw[0] == '[';
    bool got = host_canonicalise(br ? raw + 1 : raw, br ? len - 2 : len, br, &h, &why);
    CHECK(got && h.kind == HOST_IP && strcmp(h.name, want) == 0, "%s is the IP literal %s", raw,
          want);
}

static void test_host(void)
{
    canon("Example.COM", true, "example.com");
    canon("example.com.", true, "example.com");
    canon("b\xc3\xbc"
          "cher.de",
          true, "xn--bcher-kva.de");
    canon("B\xc3\x9c"
          "CHER.de",
          true, "xn--bcher-kva.de");
    canon("xn--bcher-kva.de", true, "xn--bcher-kva.de");
    canon("_dmarc.example.com", true, "_dmarc.example.com");
    canon("example..com", false, NULL);
    canon(".example.com", false, NULL);
    canon("example.com..", false, NULL);
    canon(".", false, NULL);
    canon("-a.example.com", false, NULL);
    canon("a-.example.com", false, NULL);
    canon("xn--zz.example.com", false, NULL); /* invalid punycode */
    canon("\xff\xfe.com", false, NULL);       /* not UTF-8 */
    char label[80];
    memset(label, 'a', 64);
    strcpy(label + 64, ".com");
    canon(label, false, NULL);
    char name[300];
    for (int i = 0; i < 130; i++)
        memcpy(name + 2 * i, "a.", 2);
    strcpy(name + 260, "com");
    canon(name, false, NULL);
    canon("1.2.3.4.5", false, NULL);
    canon("example.123", false, NULL);
    canon("example.0x1f", false, NULL);
    canon("999.1.1.1", false, NULL);
    canon("\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", false, NULL); /* fullwidth digits */
    canon_ip("127.0.0.1", "127.0.0.1");
    canon_ip("2130706433", "127.0.0.1");
    canon_ip("0x7f000001", "127.0.0.1");
    canon_ip("0177.0.0.1", "127.0.0.1");
    canon_ip("127.1", "127.0.0.1");
    canon_ip("0x7f.1", "127.0.0.1");
    canon_ip("127.0.0.1.", "127.0.0.1");
    canon_ip("0", "0.0.0.0");
    canon_ip("[::1]", "::1");
    canon_ip("[::ffff:169.254.169.254]", "169.254.169.254");
    canon_ip("[0:0:0:0:0:0:0:1]", "::1");
    canon("[example.com]", false, NULL);
}

static void test_policy(void)
{
    char err[256];
    const char *entries[] = {"Example.com", "metrohail.example", "93.184.216.34", "[2001:db8::7]",
                             "b\xc3\xbc\x63her.de"};
    uint16_t ports[] = {443, 8443};
    struct policy *p = policy_new(entries, 5, ports, 2, err, sizeof(err));
    CHECK(p != NULL, "policy loads (%s)", p ? "ok" : err);
    if (!p)
        return;
    static const struct {
        const char *host;
        enum reason want;
    } cases[] = {
        {"example.com", R_ALLOWED},
        {"api.example.com", R_ALLOWED},
        {"a.b.c.example.com", R_ALLOWED},
        {"example.com.evil.net", R_NOT_ALLOWED},
        {"evilexample.com", R_NOT_ALLOWED},
        {"example.co.uk", R_NOT_ALLOWED},
        {"metrohail.example", R_ALLOWED},
        {"x.metrohail.example", R_ALLOWED},
        {"com", R_PUBLIC_SUFFIX},
        {"co.uk", R_PUBLIC_SUFFIX},
        {"93.184.216.34", R_ALLOWED},
        {"1572395042", R_ALLOWED}, /* 93.184.216.34 in decimal */
        {"93.184.216.35", R_IP_LITERAL},
        {"127.0.0.1", R_IP_LITERAL},
        {"[2001:db8::7]", R_ALLOWED},
        {"[2001:db8::8]", R_IP_LITERAL},
        {"www.xn--bcher-kva.de", R_ALLOWED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct host h;
        const char *why, *rule, *reg;
        const char *s = cases[i].host;
        size_t len = strlen(s);
        bool br = s[0] == '[';
        bool ok = host_canonicalise(br ? s + 1 : s, br ? len - 2 : len, br, &h, &why);
        enum reason r = ok ? policy_check_host(p, &h, &rule, &reg) : R_BAD_HOST;
        CHECK(r == cases[i].want, "policy: %s -> %s (got %s)", s, reason_code(cases[i].want),
              reason_code(r));
    }
    struct host h;
    const char *why, *rule, *reg;
    host_canonicalise("api.example.com", 15, false, &h, &why);
    policy_check_host(p, &h, &rule, &reg);
    CHECK(rule && strcmp(rule, "example.com") == 0 && reg && strcmp(reg, "example.com") == 0,
          "rule and registrable domain reported");
    CHECK(policy_port_allowed(p, 8443) && !policy_port_allowed(p, 80), "ports");
    policy_free(p);

    static const char *const refused[] = {"com",          "co.uk",           "github.io",
                                          "blogspot.com", "api.example.com", "*.example.com",
                                          "example..com", "example"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        p = policy_new(&refused[i], 1, ports, 1, err, sizeof(err));
        CHECK(p == NULL, "policy entry %s refused at load: %s", refused[i], p ? "loaded!" : err);
        policy_free(p);
    }
    const char *gh[] = {"someone.github.io"};
    p = policy_new(gh, 1, ports, 1, err, sizeof(err));
    CHECK(p != NULL, "a name under a private suffix (someone.github.io) is registrable");
    if (p) {
        host_canonicalise("other.github.io", 15, false, &h, &why);
        CHECK(policy_check_host(p, &h, &rule, &reg) == R_NOT_ALLOWED,
              "other.github.io is not allowed by someone.github.io");
        policy_free(p);
    }
    uint16_t zero = 0;
    p = policy_new(gh, 1, &zero, 1, err, sizeof(err));
    CHECK(p == NULL, "port 0 refused");
}

static struct sockaddr_storage sa(const char *ip, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
    } else {
        inet_pton(AF_INET6, ip, &in6->sin6_addr);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
    }
    return ss;
}

static void test_guard(void)
{
    struct addrguard *g = addrguard_new();
    struct sockaddr_storage own = sa("93.184.216.34", 0);
    addrguard_add_own(g, (struct sockaddr *)&own);
    struct sockaddr_storage ep = sa("0.0.0.0", 3128);
    addrguard_add_endpoint(g, (struct sockaddr *)&ep);
    static const struct {
        const char *ip;
        uint16_t port;
        enum guard_verdict want;
    } cases[] = {
        {"1.1.1.1", 443, GUARD_PUBLIC},
        {"2606:4700::1111", 443, GUARD_PUBLIC},
        {"127.0.0.1", 443, GUARD_DENY_CLASS},
        {"0.0.0.0", 443, GUARD_DENY_CLASS},
        {"::1", 443, GUARD_DENY_CLASS},
        {"::", 443, GUARD_DENY_CLASS},
        {"10.0.0.1", 443, GUARD_DENY_CLASS},
        {"192.168.1.1", 443, GUARD_DENY_CLASS},
        {"172.16.5.4", 443, GUARD_DENY_CLASS},
        {"169.254.169.254", 80, GUARD_DENY_CLASS},
        {"100.64.0.1", 443, GUARD_DENY_CLASS},
        {"fd00::1", 443, GUARD_DENY_CLASS},
        {"fe80::1", 443, GUARD_DENY_CLASS},
        {"224.0.0.1", 443, GUARD_DENY_CLASS},
        {"198.18.0.1", 443, GUARD_DENY_CLASS},
        {"192.0.2.1", 443, GUARD_DENY_CLASS},
        {"64:ff9b::a9fe:a9fe", 443, GUARD_DENY_CLASS},
        {"2002:a9fe:a9fe::", 443, GUARD_DENY_CLASS},
        {"2001::1", 443, GUARD_DENY_CLASS},
        {"::ffff:127.0.0.1", 443, GUARD_DENY_CLASS},
        {"::ffff:10.1.2.3", 443, GUARD_DENY_CLASS},
        {"93.184.216.34", 443, GUARD_DENY_OWN},
        {"::ffff:93.184.216.34", 443, GUARD_DENY_OWN},
        {"93.184.216.34", 3128, GUARD_DENY_LOOP},
        {"127.0.0.1", 3128, GUARD_DENY_LOOP},
        {"1.1.1.1", 3128, GUARD_PUBLIC},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sockaddr_storage d = sa(cases[i].ip, cases[i].port);
        enum addr_class cls;
        enum guard_verdict v = addrguard_check(g, (struct sockaddr *)&d, &cls);
        CHECK(v == cases[i].want, "guard: %s port %u -> %d (got %d, %s)", cases[i].ip,
              cases[i].port, cases[i].want, v, guard_verdict_name(v, cls));
    }
    struct cidr c;
    cidr_parse("127.0.0.0/8", &c);
    addrguard_allow_cidr(g, &c);
    struct sockaddr_storage d = sa("127.0.0.2", 443);
    enum addr_class cls;
    CHECK(addrguard_check(g, (struct sockaddr *)&d, &cls) == GUARD_ALLOW_CIDR &&
              cls == ADDR_LOOPBACK,
          "--upstream-allow-cidr covers loopback");
    d = sa("127.0.0.1", 3128);
    CHECK(addrguard_check(g, (struct sockaddr *)&d, &cls) == GUARD_DENY_LOOP,
          "the proxy's own listener is refused even inside an allowed CIDR");
    d = sa("::1", 443);
    CHECK(addrguard_check(g, (struct sockaddr *)&d, &cls) == GUARD_DENY_CLASS,
          "a v4 CIDR does not cover ::1");
    addrguard_remove_endpoint(g, (struct sockaddr *)&ep);
    d = sa("127.0.0.1", 3128);
    CHECK(addrguard_check(g, (struct sockaddr *)&d, &cls) == GUARD_ALLOW_CIDR,
          "a removed listener is no longer a loop");
    addrguard_free(g);
}

static void test_misc(void)
{
    size_t len;
    char *r = response_build(R_LIMIT_SPOKE, "spoke x is at its limit\r\nInjected: 1", 7, &len);
    CHECK(strncmp(r, "HTTP/1.1 429 Too Many Requests\r\n", 32) == 0, "429 status line");
    CHECK(strstr(r, "\r\nRetry-After: 7\r\n") != NULL, "Retry-After header");
    CHECK(strstr(r, "\r\nX-Proxy-Error: spoke-tunnel-limit\r\n") != NULL, "X-Proxy-Error header");
    CHECK(strstr(r, "\r\nInjected") == NULL, "no header injection through the detail");
    const char *body = strstr(r, "\r\n\r\n");
    CHECK(body && strchr(body + 4, '\n') == body + 4 + strlen(body + 4) - 1, "one-line body");
    free(r);
    r = response_build(R_METHOD, "only CONNECT", 1, &len);
    CHECK(strstr(r, "\r\nAllow: CONNECT\r\n") && !strstr(r, "Retry-After"), "405 has Allow");
    free(r);
    uint64_t ms;
    CHECK(parse_duration_ms("250ms", 1000000, &ms) && ms == 250, "250ms");
    CHECK(parse_duration_ms("10s", 1000000, &ms) && ms == 10000, "10s");
    CHECK(parse_duration_ms("2m", 1000000, &ms) && ms == 120000, "2m");
    CHECK(parse_duration_ms("3", 1000000, &ms) && ms == 3000, "bare seconds");
    CHECK(!parse_duration_ms("3x", 1000000, &ms) && !parse_duration_ms("", 10, &ms) &&
              !parse_duration_ms("-1s", 1000000, &ms) && !parse_duration_ms("2h", 1000, &ms),
          "bad durations refused");
}

int main(void)
{
    char err[256];
    CHECK(policy_psl_init(NULL, err, sizeof(err)), "public suffix list loads");
    test_parser();
    test_authority();
    test_host();
    test_policy();
    test_guard();
    test_misc();
    policy_psl_free();
    return test_done();
}
