/* A line of an audit file as `hub audit verify` reads it (an attacker may have written
 * it: lib/auditchain.h's parse of the chain fields), and a tool's arguments or result
 * as the hub's secret scan walks them (hub/secrets/secretscan.h: a hostile spoke's
 * result), every kind redacted.
 *
 * Invariants beyond "no crash": a parsed chain tail lies inside the line (its 64 hex
 * digits too), and after redaction no registered stand-in is left in any string. */
#include "auditchain.h"
#include "secrets/secrets.h"
#include "tests/fuzz/fuzz_json.h"

#include <stdlib.h>
#include <string.h>

static const char standin[] = "ghp_STANDINfuzz0123456789abcdefghijklmno";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void no_standin_left(const json_t *v)
{
    if (json_is_string(v)) {
        if (memmem(json_string_value(v), json_string_length(v), standin, sizeof(standin) - 1))
            abort();
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) no_standin_left(x);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) no_standin_left(x);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    uint64_t seq;
    const char *prev;
    bool sig;
    if (auditchain_parse_tail(line, size, &seq, &prev, &sig) &&
        (prev < line || prev + 64 > line + size))
        abort();
    json_t *v = json_loadb(line, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v) {
        struct scan_standin st = {standin, "fuzz"};
        bool redact[SCAN_NKINDS] = {true, true, true, true};
        struct scan_report r = {0};
        secretscan_json(v, &st, 1, redact, &r);
        no_standin_left(v);
        json_decref(v);
    }
    return 0;
}
