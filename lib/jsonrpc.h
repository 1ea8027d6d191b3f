/* JSON-RPC 2.0 over newline-delimited frames: the MCP stdio transport that the hub and
 * every spoke speak.
 *
 * The line reader never buffers more than its maximum: a frame that grows past it is
 * reported (LR_TOO_LONG) so the reader can kill the sender instead of growing without
 * bound. jrpc_parse() checks the envelope strictly and says what is wrong. */
#ifndef ISOLATE_JSONRPC_H
#define ISOLATE_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JRPC_DEFAULT_MAX_FRAME (1024 * 1024)
#define JRPC_MAX_METHOD 128

enum {
    JRPC_PARSE_ERROR = -32700,
    JRPC_INVALID_REQUEST = -32600,
    JRPC_METHOD_NOT_FOUND = -32601,
    JRPC_INVALID_PARAMS = -32602,
    JRPC_INTERNAL_ERROR = -32603,
};

struct line_reader {
    char *buf;
    size_t len;   /* bytes held */
    size_t start; /* first byte not yet returned as a line */
    size_t scan;  /* bytes from start already searched for '\n' */
    size_t max;   /* longest line accepted, without its '\n' */
};

enum lr_status { LR_LINE, LR_NEED_MORE, LR_TOO_LONG };

void lr_init(struct line_reader *lr, size_t max_line);
void lr_free(struct line_reader *lr);
/* Reads once from fd into the buffer: bytes read, 0 at end of file, -1 with errno
 * (EAGAIN on a non-blocking descriptor with nothing to read, ENOBUFS when the buffer
 * already holds a full line's worth without a newline). */
ssize_t lr_fill(struct line_reader *lr, int fd);
/* Appends bytes from memory (for tests and fuzzers); false when the buffer is full. */
bool lr_feed(struct line_reader *lr, const void *data, size_t len);
/* The next complete line, without '\n' (a trailing '\r' is kept: MCP forbids it and
 * the JSON parser will reject it). The pointer stays valid until the next lr_ call. */
enum lr_status lr_next(struct line_reader *lr, const char **line, size_t *len);
/* Bytes buffered that are not yet part of a returned line. */
size_t lr_pending(const struct line_reader *lr);

enum jrpc_kind { JRPC_REQUEST, JRPC_NOTIFICATION, JRPC_RESULT, JRPC_ERROR };

struct jrpc_msg {
    enum jrpc_kind kind;
    json_t *root;   /* owns everything below */
    json_t *id;     /* integer or string; NULL for notifications */
    const char *method;
    json_t *params; /* object or array, or NULL */
    json_t *result; /* JRPC_RESULT */
    json_t *error;  /* JRPC_ERROR: the error object */
    long error_code;
    const char *error_message;
};

/* Parses one frame. On failure returns -1, fills err and sets *code to the JSON-RPC
 * error code to answer with (parse error or invalid request). */
int jrpc_parse(const char *line, size_t len, struct jrpc_msg *out, int *code, char *err,
               size_t errlen);
/* A line from a peer that may print other things on the same stream (a stdio MCP
 * server's banner or console.log, which the SDKs skip): JRPC_LINE_MESSAGE (out
 * filled), JRPC_LINE_BATCH (*batch: the JSON array, the caller's), JRPC_LINE_NOISE
 * (not JSON, or JSON that is not an object with a "jsonrpc" member: not meant as a
 * message), or JRPC_LINE_INVALID (claims to be a message and breaks the envelope:
 * err and *code say how). */
enum jrpc_line { JRPC_LINE_MESSAGE, JRPC_LINE_BATCH, JRPC_LINE_NOISE, JRPC_LINE_INVALID };
enum jrpc_line jrpc_parse_line(const char *line, size_t len, struct jrpc_msg *out, json_t **batch,
                               int *code, char *err, size_t errlen);
/* The same for a value already parsed (an element of a batch): root is stolen, and
 * freed on failure. */
int jrpc_parse_value(json_t *root, struct jrpc_msg *out, int *code, char *err, size_t errlen);
void jrpc_msg_free(struct jrpc_msg *m);

/* Builders. Arguments named "stolen" are owned by the result afterwards; id is
 * copied. */
json_t *jrpc_request(json_int_t id, const char *method, json_t *params_stolen);
json_t *jrpc_notification(const char *method, json_t *params_stolen);
json_t *jrpc_result(json_t *id, json_t *result_stolen);
json_t *jrpc_error(json_t *id, long code, const char *message, json_t *data_stolen);

/* Serialises msg (stolen) as one compact line ending in '\n'; NULL on failure. */
char *jrpc_dump_line(json_t *msg, size_t *len);
/* jrpc_dump_line() then a blocking write of the whole line: 0 or -1 with errno. */
int jrpc_send(int fd, json_t *msg);

#endif
