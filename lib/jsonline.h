/* A JSON object written straight into a caller's buffer, one field after another: for
 * records written on a hot path (netproxy writes two per tunnel), where building a
 * jansson object field by field, dumping and freeing it cost more than the tunnel.
 *
 * Output is compact JSON (no spaces), the same bytes json_dumps(JSON_COMPACT) gives
 * for the same fields in the same order: strings are escaped as jansson escapes them
 * (\" \\ \b \f \n \r \t, other control characters as \u00XX, UTF-8 kept as is). Nested
 * objects are opened and closed explicitly (ECS's "event.action" is event{action}).
 * Every untrusted string goes through jl_strn(), which sanitises exactly like
 * audit_string(): invalid UTF-8 and NUL become U+FFFD, and past `cap` bytes the
 * string is cut at a character boundary and marked "...[truncated]".
 *
 * Nothing allocates. A buffer too small makes jl_end() return 0 (nothing to write)
 * instead of a cut record. */
#ifndef ISOLATE_JSONLINE_H
#define ISOLATE_JSONLINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JL_MAX_DEPTH 8

struct jline {
    char *buf;
    size_t cap, len;
    bool overflow;
    int depth;
    bool need_comma[JL_MAX_DEPTH];
};

/* Starts the object ("{"). */
void jl_begin(struct jline *j, char *buf, size_t cap);
/* Opens a nested object under key; jl_close() ends it. */
void jl_open(struct jline *j, const char *key);
void jl_close(struct jline *j);
/* A string from the program itself (names, codes): sanitised with a 1024-byte cap. */
void jl_str(struct jline *j, const char *key, const char *s);
/* Untrusted bytes, sanitised and capped at cap bytes (as audit_string). */
void jl_strn(struct jline *j, const char *key, const char *s, size_t len, size_t cap);
void jl_int(struct jline *j, const char *key, int64_t v);
void jl_bool(struct jline *j, const char *key, bool v);
/* An array of one or two strings from the program (b may be NULL). */
void jl_strs(struct jline *j, const char *key, const char *a, const char *b);
/* Ends the object with "}\n" and returns the line's length, newline included; 0 when
 * the buffer was too small or an object is still open. */
size_t jl_end(struct jline *j);
/* A whole jansson object as one line into buf, "}\n" included: the bytes json_dumps(obj,
 * JSON_COMPACT) gives (keys in their order, jansson's escapes, its digits), and a
 * newline. For the hub's audit records and JSON-RPC lines, which are built as jansson
 * objects and cost twice as much through jansson's dumper. Returns the length, or 0
 * when obj is not an object, does not fit, holds a string that is not valid UTF-8
 * (which jansson refuses to dump) or nests deeper than JL_JSON_MAX_DEPTH: the caller
 * then asks json_dumps(). */
#define JL_JSON_MAX_DEPTH 64
size_t jl_json_line(const json_t *obj, char *buf, size_t cap);
/* jl_json_line() into a buffer of the calling thread (JL_THREAD_LINE bytes), valid
 * until the thread's next call: the audit's and JSON-RPC's hot paths, which write or
 * copy the line at once. NULL (and *len 0) when it gives no line. */
#define JL_THREAD_LINE 65536
const char *jl_json_line_here(const json_t *obj, size_t *len);

/* Length of the valid UTF-8 sequence at s (1..4 bytes), or 0 when it is not one. */
size_t utf8_valid_len(const unsigned char *s, size_t avail);

#endif
