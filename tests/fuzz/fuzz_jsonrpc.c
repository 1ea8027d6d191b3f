/* The MCP stdio frame reader (lib/jsonrpc): what the hub runs on every byte a spoke
 * writes (hub/runtime/spoke.c, hub/runtime/mcp.c) and a spoke on every byte from the hub
 * (spokes/sdk).
 * The input arrives in pieces through lr_feed(); every complete line goes through
 * jrpc_parse().
 *
 * Invariants beyond "no crash":
 * - the lines returned, each followed by '\n', are exactly the input's prefix: no byte
 *   lost, duplicated or reordered, none with a '\n' inside, none over the maximum;
 * - the reader never holds more than one maximum line (LR_TOO_LONG instead);
 * - an accepted frame re-serialised by jrpc_dump_line() is one line that parses again
 *   to an equal message of the same kind (what the hub relays is what it checked);
 * - and that line is, byte for byte, what json_dumps() writes: jrpc_dump_line() goes
 *   through lib/jsonline's own writer (jl_json_line), which must say what jansson says. */
#include "jsonrpc.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

#define MAX_LINE 1024

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void check_frame(const char *line, size_t len)
{
    struct jrpc_msg m;
    int code = 0;
    char err[256];
    err[0] = '\0';
    if (jrpc_parse(line, len, &m, &code, err, sizeof(err)) < 0) {
        fuzz_assert(code == JRPC_PARSE_ERROR || code == JRPC_INVALID_REQUEST, "code %d", code);
        fuzz_assert(err[0] != '\0' && memchr(err, '\0', sizeof(err)), "no message");
        fuzz_assert(m.root == NULL, "root kept on failure");
        return;
    }
    fuzz_assert(json_is_object(m.root), "accepted a non-object");
    if (m.kind == JRPC_REQUEST || m.kind == JRPC_NOTIFICATION)
        fuzz_assert(m.method && strlen(m.method) <= JRPC_MAX_METHOD, "method");
    size_t out_len;
    char *out = jrpc_dump_line(json_incref(m.root), &out_len);
    fuzz_assert(out && out_len >= 1 && out[out_len - 1] == '\n', "dump");
    fuzz_assert(memchr(out, '\n', out_len - 1) == NULL, "a newline inside a dumped frame");
    char *ref = json_dumps(m.root, JSON_COMPACT);
    fuzz_assert(ref && strlen(ref) == out_len - 1 && memcmp(ref, out, out_len - 1) == 0,
                "jl_json_line wrote other bytes than json_dumps");
    free(ref);
    struct jrpc_msg again;
    fuzz_assert(jrpc_parse(out, out_len - 1, &again, &code, err, sizeof(err)) == 0,
                "re-serialised frame refused: %s", err);
    fuzz_assert(again.kind == m.kind && json_equal(again.root, m.root),
                "re-serialised frame differs");
    jrpc_msg_free(&again);
    free(out);
    jrpc_msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct line_reader lr;
    lr_init(&lr, MAX_LINE);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size && i < 32; i++)
        h = (h ^ data[i]) * 16777619u;
    size_t fed = 0, consumed = 0;
    bool stop = false;
    while (!stop && (fed < size || lr_pending(&lr) > 0)) {
        h = h * 1103515245u + 12345u;
        size_t step = 1 + (h >> 16) % 300;
        if (step > size - fed)
            step = size - fed;
        if (step > 0 && lr_feed(&lr, data + fed, step))
            fed += step;
        else if (step > 0 && lr_pending(&lr) <= MAX_LINE) {
            /* Full only after lines were taken: smaller pieces must go in. */
            if (!lr_feed(&lr, data + fed, 1))
                fuzz_fail("buffer full with %zu bytes pending", lr_pending(&lr));
            fed++;
        }
        fuzz_assert(lr_pending(&lr) <= MAX_LINE + 1, "holds %zu bytes", lr_pending(&lr));
        for (;;) {
            const char *line;
            size_t len;
            enum lr_status st = lr_next(&lr, &line, &len);
            if (st == LR_NEED_MORE) {
                if (fed == size)
                    stop = true; /* the rest is an unterminated line */
                break;
            }
            if (st == LR_TOO_LONG) {
                stop = true; /* the hub kills the spoke here */
                break;
            }
            fuzz_assert(len <= MAX_LINE, "line of %zu bytes", len);
            fuzz_assert(consumed + len < size && memcmp(line, data + consumed, len) == 0 &&
                            data[consumed + len] == '\n',
                        "line does not match the input at %zu", consumed);
            consumed += len + 1;
            check_frame(line, len);
        }
    }
    lr_free(&lr);
    return 0;
}
