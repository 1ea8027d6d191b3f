/* Host canonicalisation (netproxy/core/host.c): the one spelling of a destination that the
 * policy, DNS and the audit record all use, and the registrable domain libpsl gives it.
 * The first input byte chooses bracketed ("[v6]") or not; the rest is the raw host.
 *
 * Invariants beyond "no crash":
 * - a canonical name is lowercase LDH (and '_') labels of 1..63 bytes, at most 253
 *   bytes, no trailing dot, never an IPv4 address in any spelling;
 * - canonicalisation is idempotent: the canonical form canonicalises to itself, so the
 *   policy check and the audit record cannot disagree about which host it is;
 * - an address's canonical text parses back to the same address;
 * - the registrable domain is a suffix of the name at a label boundary. */
#include "netproxy/core/core.h"
#include "tests/fuzz/fuzz.h"

#include <arpa/inet.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[256];
    if (!policy_psl_init(NULL, err, sizeof(err)))
        fuzz_fail("psl: %s", err);
    return 0;
}

static void check_name(const char *name)
{
    size_t n = strlen(name);
    fuzz_assert(n >= 1 && n <= HOST_NAME_MAX_LEN, "name length %zu", n);
    fuzz_assert(name[n - 1] != '.' && name[0] != '.', "edge dot in %s", name);
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c == '.') {
            fuzz_assert(label > 0, "empty label in %s", name);
            label = 0;
            continue;
        }
        fuzz_assert((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_',
                    "byte 0x%02x in canonical name %s", (unsigned char)c, name);
        fuzz_assert(++label <= 63, "label over 63 bytes in %s", name);
    }
    struct in_addr a4;
    fuzz_assert(inet_aton(name, &a4) == 0, "canonical name %s reads as an address", name);
    const char *reg = policy_registrable_domain(name);
    if (reg) {
        fuzz_assert(reg >= name && reg < name + n && (reg == name || reg[-1] == '.'),
                    "registrable domain %s of %s", reg, name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool bracketed = data[0] & 1;
    const char *raw = (const char *)data + 1;
    size_t len = size - 1;
    struct host h, again;
    const char *why = NULL;
    if (!host_canonicalise(raw, len, bracketed, &h, &why)) {
        fuzz_assert(why != NULL, "refused without a reason");
        return 0;
    }
    fuzz_assert(memchr(h.name, '\0', sizeof(h.name)) != NULL, "unterminated canonical form");
    if (h.kind == HOST_NAME) {
        fuzz_assert(!bracketed, "a bracketed host became a name");
        check_name(h.name);
        why = NULL;
        fuzz_assert(host_canonicalise(h.name, strlen(h.name), false, &again, &why),
                    "canonical %s refused on the second pass: %s", h.name, why);
        fuzz_assert(again.kind == HOST_NAME && strcmp(again.name, h.name) == 0,
                    "not idempotent: %s -> %s", h.name, again.name);
        return 0;
    }
    /* An address: its text is inet_ntop's and parses back to the same address. */
    int fam = h.addr.ss_family;
    fuzz_assert(fam == AF_INET || fam == AF_INET6, "family %d", fam);
    why = NULL;
    fuzz_assert(host_canonicalise(h.name, strlen(h.name), fam == AF_INET6, &again, &why),
                "canonical address %s refused on the second pass: %s", h.name, why);
    fuzz_assert(again.kind == HOST_IP &&
                    host_addr_equal((struct sockaddr *)&h.addr, (struct sockaddr *)&again.addr) &&
                    strcmp(again.name, h.name) == 0,
                "address not idempotent: %s -> %s", h.name, again.name);
    return 0;
}
