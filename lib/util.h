/* Small helpers every binary needs: checked allocation, clocks, fd flags, bounded
 * number parsing, whole reads and writes. */
#ifndef ISOLATE_UTIL_H
#define ISOLATE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Allocation failure is fatal: the callers are small daemons that cannot do anything
 * useful without memory, and a clear message beats a NULL dereference. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The message into err (errlen bytes, always terminated) and -1: the usual way out of a
 * function that reports what went wrong to its caller. */
int err_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Copies at most size-1 bytes and always terminates; returns false on truncation. */
bool str_copy(char *dst, const char *src, size_t size);

uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);
/* "2026-11-29T08:03:58.123456Z" into buf (at least 32 bytes). */
void format_iso8601(uint64_t real_ns, char *buf, size_t size);

/* Closes every descriptor >= 3 except those listed (at most 64, need not be sorted):
 * a daemon or sandbox must not hold what its parent happened to leave open. Async-signal
 * safe (close_range(2) and a stack copy), so forked children may call it. */
int close_fds_except(const int *keep, size_t n);

int set_cloexec(int fd, bool on);
int set_nonblock(int fd, bool on);

/* Parses a whole decimal string into [min, max]; false on junk, sign or range errors. */
bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
bool parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* The value of one hexadecimal digit (either case), or -1. */
int hex_digit_value(char c);
/* n bytes as 2n lowercase hexadecimal digits and a NUL (out holds 2n + 1). */
void hex_encode(const unsigned char *raw, size_t n, char *out);

/* Loops over short writes and EINTR; returns 0 or -1 with errno. */
int write_all(int fd, const void *buf, size_t len);
/* Reads exactly len bytes; returns len, a smaller count at EOF, or -1. */
ssize_t read_full(int fd, void *buf, size_t len);

/* Creates every missing directory of path with mode; 0 or -1 with errno. */
int mkdir_p(const char *path, mode_t mode);
/* mkdir for the hub's own directories: missing parents are created 0711 (traversable,
 * not listable) so that a jail's uid can still pass through them to its /data. */
int mkdir_parents(const char *path, mode_t mode);

/* User ids name directories (<data_root>/<user>) and appear in tokens files:
 * [A-Za-z0-9_-]{1,64}, no leading '-'. */
bool user_id_valid(const char *s);
/* The first n bytes of s: 1 to max of them, each an ASCII letter, a digit or one of punct. */
bool name_chars_valid(const char *s, size_t n, size_t max, const char *punct);
/* A DNS name as policies write them: lower-case letters, digits, '-' and '.', at least
 * two labels, at most 253 characters, no empty label, not starting with '-'; "*." before
 * it covers the names below it. The hub checks what an operator gives, netproxy what the
 * hub sends it. */
bool host_pattern_valid(const char *s);
/* A copy of a NULL-terminated vector of strings (of an empty one when v is NULL). */
char **strv_dup(char *const *v);

#endif
