/* A DNS query as the jail's resolver reads it from a spoke (netproxy/egress/dnsmsg.c), and the
 * answer it builds for it.
 *
 * Invariants beyond "no crash":
 * - a message shorter than a header, longer than DNS_MSG_MAX or with QR set is dropped;
 * - an accepted question lies within the message and its text name fits its buffer;
 * - every answer fits the buffer it was given (also a UDP size the client asks for),
 *   starts with the query's id and QR set, and repeats the question byte for byte. */
#include "netproxy/egress/egress.h"
#include "tests/fuzz/fuzz.h"

#include <arpa/inet.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dns_query q;
    enum dns_parse pr = dns_parse_query(data, size, &q);
    if (size < DNS_HEADER_LEN || size > DNS_MSG_MAX || (data[2] & 0x80))
        fuzz_assert(pr == DNS_PARSE_DROP, "a runt, giant or response was not dropped");
    if (pr == DNS_PARSE_DROP)
        return 0;
    fuzz_assert(q.question_off + q.question_len <= size, "question past the message");
    fuzz_assert(strlen(q.name) <= DNS_NAME_MAX, "name too long");
    if (pr == DNS_PARSE_OK)
        fuzz_assert(q.question_len > 4, "an accepted query without a question");
    static const int rcodes[] = {DNS_NOERROR, DNS_NXDOMAIN, DNS_FORMERR, DNS_REFUSED};
    struct in_addr a = {htonl(0xf0f00001)};
    uint8_t out[DNS_MSG_MAX + 64];
    size_t caps[] = {dns_udp_limit(&q), sizeof(out), DNS_HEADER_LEN + q.question_len, 11};
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        for (size_t r = 0; r < sizeof(rcodes) / sizeof(rcodes[0]); r++) {
            size_t n = dns_build_answer(data, &q, rcodes[r], r == 0 ? &a : NULL, 300,
                                        r == 1 ? DNS_EDE_PROHIBITED : DNS_EDE_NONE, "policy", out,
                                        caps[c]);
            fuzz_assert(n <= caps[c], "answer of %zu bytes for a buffer of %zu", n, caps[c]);
            if (n == 0) {
                fuzz_assert(caps[c] < DNS_HEADER_LEN + q.question_len, "no answer with room");
                continue;
            }
            fuzz_assert(memcmp(out, data, 2) == 0 && (out[2] & 0x80), "id or QR");
            fuzz_assert(memcmp(out + DNS_HEADER_LEN, data + q.question_off, q.question_len) == 0,
                        "question not repeated as sent");
        }
    }
    return 0;
}
