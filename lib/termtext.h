/* Showing untrusted text (app output, LLM answers, request bodies, and every log line,
 * lib/log.c) on the user's terminal as quoted data that cannot pass for the hub's own
 * words.
 *
 * Two rules make the hub's prompts unforgeable:
 *   1. untrusted text never starts a line: every line of it is printed after a
 *      prefix (e.g. "  ┊ "), and only the hub writes at column 0;
 *   2. untrusted text cannot move the cursor, change colours or reorder what is
 *      shown: C0 controls (ESC, CR, BS, ...) and DEL become caret notation ("^["),
 *      C1 controls and the Unicode bidirectional overrides and isolates become
 *      "\u202e"-style escapes, invalid UTF-8 becomes U+FFFD. Newlines start a new
 *      prefixed line; a tab becomes spaces.
 * A stream keeps its state across writes, so text that arrives in pieces (a streamed
 * answer, split in the middle of a UTF-8 sequence) is treated the same as whole. */
#ifndef ISOLATE_TERMTEXT_H
#define ISOLATE_TERMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct tt_stream {
    FILE *out;
    const char *prefix; /* printed before every line of the text */
    bool at_line_start;
    unsigned char pend[4]; /* an incomplete UTF-8 sequence from the last write */
    size_t npend;
    size_t max_bytes; /* 0: unbounded; else the rest is cut with a note */
    size_t written;
    bool cut;
};

void tt_stream_init(struct tt_stream *s, FILE *out, const char *prefix, size_t max_bytes);
void tt_stream_write(struct tt_stream *s, const char *text, size_t len);
/* Ends the text: flushes an incomplete sequence as U+FFFD and ends the line. */
void tt_stream_end(struct tt_stream *s);

/* The whole of text on the current line (no prefix), with newlines shown as "⏎" and
 * cut at max_cols code points ("..."). For untrusted words inside a hub line. */
void tt_inline(FILE *out, const char *text, size_t max_cols);

/* The same into dst (size bytes, always terminated; cut at a whole character, with
 * "..." when there is room): the length written. Allocates nothing, so a forked child
 * of a threaded process may call it (lib/log.c does for every line). */
size_t tt_inline_buf(char *dst, size_t size, const char *text, size_t len);

/* Neutralised copy of text as above, into a string (caller frees). */
char *tt_inline_str(const char *text, size_t max_cols);

/* Characters a reader does not see or that reorder what is seen, counted in untrusted
 * text (a tool's description, a spoke's question): Unicode tags (U+E0000..E007F, which
 * carry invisible copies of ASCII), bidirectional controls and marks, zero-width and
 * other invisible format characters, and controls (C0 but newline, CR and tab, DEL,
 * C1, invalid UTF-8). True when there is any. */
struct tt_hidden {
    size_t controls, tags, bidi, invisible;
};
bool tt_hidden_count(const char *text, size_t len, struct tt_hidden *h);

/* text for a reader other than a terminal (an MCP client shows it as it is): those
 * characters become visible escapes ("\u202e", "^["), a lone CR is dropped, runs of
 * blank lines become one, and it is cut at max_bytes ("..."). Caller frees. */
char *tt_visible_str(const char *text, size_t len, size_t max_bytes);

#endif
