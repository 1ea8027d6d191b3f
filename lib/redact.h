/* Values a process must never write: the secrets it holds. The hub registers the
 * value of every secret it hands out (to a spoke's environment, or to netproxy for
 * injection), and every line its audit writers write (the audit log, the transcript of
 * audit.content "full", the LLM's records) and every byte of a spoke's log it copies is
 * scanned: a value found is replaced by "[secret NAME]". So a tool that echoes its key
 * in a result, or an error that quotes a header, leaves the name and not the key.
 *
 * Values are kept in secret memory (lib/secret.h) and matched as they are and as JSON
 * escapes them. Values under REDACT_MIN_LEN bytes are not registered: a short value
 * would redact ordinary words. Thread-safe; a process with nothing registered pays one
 * atomic load per line. */
#ifndef ISOLATE_REDACT_H
#define ISOLATE_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACT_MIN_LEN 8

/* Registers value under label (a secret's name); registering the same value again
 * counts a reference. */
void redact_add(const char *value, size_t len, const char *label);
/* Drops one reference to value. */
void redact_remove(const char *value, size_t len);
/* Whether any value is registered. */
bool redact_active(void);
/* buf with every registered value replaced, in a malloc'd copy (*out_len its length,
 * a NUL after it), or NULL when none occurs in it. */
char *redact_copy(const char *buf, size_t len, size_t *out_len);

/* A byte stream scanned across chunk boundaries (a spoke's stderr into its log): up to
 * the longest value less one byte is held back until the next chunk or the end. */
struct redact_stream {
    char *held;
    size_t held_len;
};
typedef int (*redact_write_fn)(void *ud, const char *buf, size_t len);
/* Writes what can be written of held + buf through fn, redacted; returns fn's status. */
int redact_stream_feed(struct redact_stream *rs, const char *buf, size_t len, redact_write_fn fn,
                       void *ud);
/* Writes what is held (end of stream) and frees it. */
int redact_stream_flush(struct redact_stream *rs, redact_write_fn fn, void *ud);

#endif
