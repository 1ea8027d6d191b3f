/* The first bytes of a transparent connection as netproxy reads them from a spoke
 * (netproxy/core/sniff.c): a TLS ClientHello (its server_name) or an HTTP/1 request (its
 * Host), fed incrementally.
 *
 * Invariants beyond "no crash":
 * - incremental = one-shot: feeding the bytes in pieces (as TCP delivers them) ends in
 *   the same status, protocol and name as feeding them at once;
 * - a name found is shorter than its buffer; a refusal has a reason;
 * - the hello parser alone (sniff_client_hello) on the same bytes never breaks either. */
#include "netproxy/core/core.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

static const struct req_limits limits = {
    .max_line = 512, .max_header_bytes = 1024, .max_headers = 8};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sniff one, inc;
    sniff_init(&one, &limits);
    enum sniff_status st1 = sniff_feed(&one, data, size);
    sniff_init(&inc, &limits);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size && i < 64; i++)
        h = (h ^ data[i]) * 16777619u;
    size_t have = 0;
    enum sniff_status st2 = SNIFF_MORE;
    while (have < size && st2 == SNIFF_MORE) {
        h = h * 1103515245u + 12345u;
        size_t step = 1 + (h >> 16) % 97;
        have = have + step > size ? size : have + step;
        st2 = sniff_feed(&inc, data, have);
    }
    fuzz_assert(st1 == st2, "one-shot %d, incremental %d", (int)st1, (int)st2);
    if (st1 == SNIFF_DONE) {
        fuzz_assert(one.proto == inc.proto && one.have_name == inc.have_name &&
                        strcmp(one.name, inc.name) == 0,
                    "different results");
        fuzz_assert(strlen(one.name) < sizeof(one.name), "name length");
    }
    if (st1 == SNIFF_ERROR)
        fuzz_assert(one.why != NULL && inc.why != NULL, "refused without a reason");
    sniff_free(&one);
    sniff_free(&inc);
    char name[256];
    const char *why = NULL;
    int rc = sniff_client_hello(data, size, name, sizeof(name), &why);
    fuzz_assert(rc == -1 ? why != NULL : rc == 0 || (rc == 1 && strlen(name) < sizeof(name)),
                "hello parser result %d", rc);
    return 0;
}
