/* The CONNECT request as netproxy reads it from a spoke (netproxy/core/conn.c): the
 * incremental request-head parser, then for a CONNECT the authority, the canonical host
 * and the spoke's policy, and the redacted target that the audit log gets.
 *
 * Invariants beyond "no crash":
 * - incremental = one-shot: feeding the bytes in arbitrary pieces (as TCP delivers
 *   them) ends in the same status, error and head length as feeding them at once;
 * - the parser never reads or reports past the bytes it was given;
 * - the redacted target never contains the userinfo it replaced. */
#include "netproxy/core/core.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

static struct policy *policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[256];
    if (!policy_psl_init(NULL, err, sizeof(err)))
        fuzz_fail("psl: %s", err);
    static const char *const allow[] = {"example.com", "allowed.example", "192.0.2.7"};
    static const uint16_t ports[] = {443, 8443};
    policy = policy_new(allow, 3, ports, 2, err, sizeof(err));
    if (!policy)
        fuzz_fail("policy: %s", err);
    return 0;
}

/* Small limits so that 414 and 431 are within the fuzzer's reach. */
static const struct req_limits limits = {
    .max_line = 512, .max_header_bytes = 1024, .max_headers = 8};

static enum req_status feed_pieces(struct req_parser *p, const uint8_t *data, size_t size)
{
    /* Piece sizes from a cheap hash of the input, so they vary between inputs but are
     * reproducible for one. */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size && i < 64; i++)
        h = (h ^ data[i]) * 16777619u;
    size_t have = 0;
    enum req_status st = REQ_MORE;
    while (have < size && st == REQ_MORE) {
        h = h * 1103515245u + 12345u;
        size_t step = 1 + (h >> 16) % 7;
        have = have + step > size ? size : have + step;
        st = req_feed(p, (const char *)data, have);
    }
    return st;
}

static void check_target(const char *buf, const struct req_parser *p)
{
    const char *t = buf + p->target.off;
    size_t tlen = p->target.len;
    char red[300];
    size_t n = target_redact(t, tlen, red, sizeof(red));
    fuzz_assert(n < sizeof(red) && red[n] == '\0' && strlen(red) == n, "redact length");
    const char *at = memchr(t, '@', tlen);
    if (at) {
        fuzz_assert(strncmp(red, "[redacted]@", 11) == 0, "userinfo not redacted");
        /* Nothing before the last '@' of the target may survive. */
        const char *last = t + tlen;
        while (last > t && last[-1] != '@')
            last--;
        fuzz_assert(n == 11 + (size_t)(t + tlen - last) || n == sizeof(red) - 1,
                    "redacted copy keeps more than the host part");
    }

    struct authority a;
    const char *why = NULL;
    if (!authority_parse(t, tlen, &a, &why)) {
        fuzz_assert(why != NULL, "authority refused without a reason");
        return;
    }
    fuzz_assert(a.host >= t && a.host + a.host_len <= t + tlen, "host outside the target");
    fuzz_assert(a.port > 0, "port 0 accepted");
    fuzz_assert(!memchr(a.host, '@', a.host_len) && !memchr(a.host, '%', a.host_len),
                "userinfo or percent-encoding in an accepted host");
    struct host h;
    why = NULL;
    if (!host_canonicalise(a.host, a.host_len, a.bracketed, &h, &why)) {
        fuzz_assert(why != NULL, "host refused without a reason");
        return;
    }
    const char *rule = NULL, *registered = NULL;
    enum reason r = policy_check_host(policy, &h, &rule, &registered);
    fuzz_assert(r == R_ALLOWED || r == R_NOT_ALLOWED || r == R_PUBLIC_SUFFIX || r == R_IP_LITERAL,
                "policy verdict %d", (int)r);
    if (r == R_ALLOWED) {
        fuzz_assert(rule != NULL, "allowed without a rule");
        /* An allowed name ends in its rule at a label boundary. */
        if (h.kind == HOST_NAME) {
            size_t nl = strlen(h.name), rl = strlen(rule);
            fuzz_assert(nl >= rl && strcmp(h.name + nl - rl, rule) == 0 &&
                            (nl == rl || h.name[nl - rl - 1] == '.'),
                        "%s allowed by %s", h.name, rule);
        } else {
            fuzz_assert(strcmp(h.name, rule) == 0, "address %s allowed by %s", h.name, rule);
        }
    }
    (void)policy_port_allowed(policy, a.port);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct req_parser whole, pieces;
    req_init(&whole, &limits);
    req_init(&pieces, &limits);
    enum req_status s1 = req_feed(&whole, (const char *)data, size);
    enum req_status s2 = feed_pieces(&pieces, data, size);
    fuzz_assert(s1 == s2, "one-shot %d, in pieces %d", (int)s1, (int)s2);
    fuzz_assert(whole.pos <= size, "consumed %zu of %zu bytes", whole.pos, size);
    if (s1 == REQ_ERROR)
        fuzz_assert(whole.error == pieces.error && whole.detail == pieces.detail &&
                        whole.detail != NULL,
                    "errors differ: %s / %s", whole.detail ? whole.detail : "(none)",
                    pieces.detail ? pieces.detail : "(none)");
    if (s1 != REQ_DONE)
        return 0;
    fuzz_assert(whole.pos == pieces.pos, "head length %zu vs %zu", whole.pos, pieces.pos);
    fuzz_assert(whole.line_done, "done without a request line");
    fuzz_assert(whole.target.off + whole.target.len <= whole.pos &&
                    whole.method.off + whole.method.len <= whole.pos &&
                    whole.user_agent.off + whole.user_agent.len <= whole.pos,
                "a span reaches past the head");
    fuzz_assert(whole.line_len <= limits.max_line && whole.hdr_bytes <= limits.max_header_bytes &&
                    whole.headers <= limits.max_headers,
                "limits exceeded");
    if (req_is_connect(&whole, (const char *)data))
        check_target((const char *)data, &whole);
    return 0;
}
