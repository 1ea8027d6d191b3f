/* The repl-server's wire format: each message is a 4-byte big-endian length and then
 * that many bytes of UTF-8 JSON.
 *
 *   request  {"code": "...", "session_id": "optional", "close": optional boolean,
 *             "token": "the client's bearer token (a server with --tokens)"}
 *   response {"status": "ok"|"error", "output": "...", "error": "...", "session_id": "..."}
 *
 * These functions are pure (memory in, result out) so that the frame reader can be
 * tested and fuzzed apart from the server: repl_frame_next() finds a frame's bounds in
 * whatever bytes have arrived, repl_request_parse() checks one payload completely
 * (UTF-8, JSON, field types) and says what is wrong in a message fit for the client. */
#ifndef HUB_REPLFRAME_H
#define HUB_REPLFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPL_FRAME_HEADER 4
/* Default and ceiling of --max-frame. */
#define REPL_DEFAULT_MAX_FRAME (1024 * 1024)
#define REPL_MAX_MAX_FRAME (64 * 1024 * 1024)
/* The longest bearer token a request may carry. */
#define REPL_TOKEN_MAX 512
/* A session id: 128 bits from getrandom as 32 lowercase hex characters. */
#define REPL_SESSION_ID_LEN 32

enum repl_frame_status {
    REPL_FRAME_NEED_MORE, /* not a whole frame yet */
    REPL_FRAME_READY,     /* *payload_len bytes follow the header */
    REPL_FRAME_TOO_LONG,  /* the header announces more than max (in *payload_len) */
};

/* Looks at the bytes received so far (buf, len). READY: a whole frame is there, its
 * payload at buf + REPL_FRAME_HEADER. TOO_LONG is known from the header alone, so a
 * reader never buffers more than max + REPL_FRAME_HEADER bytes. */
enum repl_frame_status repl_frame_next(const unsigned char *buf, size_t len, size_t max,
                                       uint32_t *payload_len);

struct repl_request {
    char *code; /* NUL-terminated; code_len bytes (JSON cannot carry NUL here) */
    size_t code_len;
    bool has_session;
    char session_id[REPL_SESSION_ID_LEN + 1];
    bool close;        /* end the session after this execution */
    char *token;       /* NULL when absent; token_len bytes */
    size_t token_len;
    const char *error; /* on failure: "invalid-utf8", "invalid-json" or "invalid-request" */
};

/* 0 and *out filled (free with repl_request_free), or -1 and a message in err: invalid
 * UTF-8, invalid JSON, not an object, "code" missing or not a string, "session_id"
 * not a string (or null), "close" not a boolean. A session_id that cannot be one of
 * ours (wrong length or characters) parses, as an id no session has. */
int repl_request_parse(const char *payload, size_t len, struct repl_request *out, char *err,
                       size_t errlen);
void repl_request_free(struct repl_request *r);

/* True when s (len bytes) is well-formed UTF-8: no overlong forms, surrogates or
 * code points above U+10FFFF. */
bool repl_utf8_valid(const char *s, size_t len);

/* A whole response frame (header and JSON) in a new buffer, *len its size. Strings
 * are copied as given (the caller passes valid UTF-8); NULL strings become "". */
unsigned char *repl_response_encode(bool ok, const char *output, const char *error,
                                    const char *session_id, size_t *len);

#endif
