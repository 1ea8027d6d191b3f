/* The repl-server's frame reader (hub/repl/replframe.c): a stream of 4-byte big-endian
 * lengths and UTF-8 JSON requests from any TCP client, cut into frames as the server
 * does (hub/repl/replserver.c), each request checked, and each answer encoded.
 *
 * Invariants beyond "no crash":
 * - frames are found only whole, never past the bytes received, never over the
 *   maximum (TOO_LONG is known from the header alone);
 * - the UTF-8 check agrees with jansson's own (an independent implementation);
 * - an accepted request's code, sent back as the output of a response frame, decodes
 *   to the same bytes (what a client reads is what was run). */
#include "repl/replframe.h"
#include "tests/fuzz/fuzz.h"

#include <jansson.h>
#include <string.h>

#define MAX_FRAME 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void check_roundtrip(const struct repl_request *rq)
{
    size_t len;
    unsigned char *frame =
        repl_response_encode(true, rq->code, NULL, rq->session_id[0] ? rq->session_id : NULL, &len);
    uint32_t plen = 0;
    fuzz_assert(repl_frame_next(frame, len, REPL_MAX_MAX_FRAME, &plen) == REPL_FRAME_READY &&
                    plen == len - REPL_FRAME_HEADER,
                "response frame header");
    json_t *o = json_loadb((const char *)frame + REPL_FRAME_HEADER, plen, 0, NULL);
    fuzz_assert(o, "response frame is not JSON");
    const char *status = json_string_value(json_object_get(o, "status"));
    json_t *out = json_object_get(o, "output");
    fuzz_assert(status && strcmp(status, "ok") == 0, "status");
    fuzz_assert(json_string_length(out) == rq->code_len &&
                    memcmp(json_string_value(out), rq->code, rq->code_len) == 0,
                "output differs from the code sent");
    json_decref(o);
    free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The whole input as one payload: the UTF-8 check against jansson's. */
    json_t *s = json_stringn((const char *)data, size);
    bool jansson_ok = s != NULL;
    json_decref(s);
    fuzz_assert(repl_utf8_valid((const char *)data, size) == jansson_ok,
                "UTF-8 verdict differs from jansson's (%d)", jansson_ok);

    /* The input as a stream of frames. */
    size_t off = 0;
    while (off < size) {
        uint32_t plen = 0;
        enum repl_frame_status st = repl_frame_next(data + off, size - off, MAX_FRAME, &plen);
        if (st == REPL_FRAME_NEED_MORE) {
            fuzz_assert(size - off < REPL_FRAME_HEADER || plen > size - off - REPL_FRAME_HEADER,
                        "NEED_MORE with a whole frame there");
            break;
        }
        if (st == REPL_FRAME_TOO_LONG) {
            fuzz_assert(plen > MAX_FRAME, "TOO_LONG for %u bytes", plen);
            break; /* the server answers and closes */
        }
        fuzz_assert(plen <= MAX_FRAME && plen <= size - off - REPL_FRAME_HEADER,
                    "READY past the data");
        const char *payload = (const char *)data + off + REPL_FRAME_HEADER;
        struct repl_request rq;
        char err[256];
        err[0] = '\0';
        if (repl_request_parse(payload, plen, &rq, err, sizeof(err)) == 0) {
            fuzz_assert(rq.code && strlen(rq.code) == rq.code_len, "code with a NUL accepted");
            fuzz_assert(rq.session_id[0] == '\0' || strlen(rq.session_id) == REPL_SESSION_ID_LEN,
                        "session id");
            check_roundtrip(&rq);
            repl_request_free(&rq);
        } else {
            fuzz_assert(err[0] != '\0' && rq.error != NULL, "refused without a reason");
            fuzz_assert(rq.code == NULL, "code kept on failure");
        }
        off += REPL_FRAME_HEADER + plen;
    }
    return 0;
}
