/* Audit records as JSON lines with Elastic Common Schema field names, shared by the
 * hub and netproxy.
 *
 * A record is built as a jansson object; audit_set() takes dotted ECS paths
 * ("event.outcome") and nests them, which is the canonical ECS form. audit_write()
 * stamps @timestamp, ecs.version and service.name and writes the record as one line
 * with one write(2) per line on an O_APPEND descriptor, so concurrent writers never
 * interleave. A record that cannot be written whole is reported to the caller
 * (-1 and errno): the caller decides to refuse the action rather than run unlogged.
 * Nothing is dropped silently. A record cut short by a full disk is cut off the file
 * again (or, on a pipe, ended by a newline), so the log stays one record per line.
 * Failures are counted; a writer with many callers can have the outages themselves
 * said on stderr (audit_say_outages) instead of a warning per lost record. */
#ifndef ISOLATE_AUDIT_H
#define ISOLATE_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AUDIT_ECS_VERSION "8.11.0"
/* Default cap for any untrusted string placed into a record. */
#define AUDIT_STR_CAP 1024

struct audit;

/* path "-" writes to stdout. Returns NULL and fills err on failure. A file it creates
 * has mode 0640 (less the umask). */
struct audit *audit_open(const char *path, const char *service_name, char *err, size_t errlen);
/* The same with the file's mode; 0600 is also enforced on a file that was there (a
 * log only its owner may read, such as the hub's transcript). */
struct audit *audit_open_mode(const char *path, const char *service_name, mode_t mode, char *err,
                              size_t errlen);
/* Reopens the same path (logrotate's SIGHUP); on failure keeps the old descriptor. */
int audit_reopen(struct audit *a);
/* Replaces the descriptor with fd, opened elsewhere on the same path (a privileged
 * helper, when the writer may no longer open files itself). Takes ownership of fd;
 * for stdout it only closes fd. */
void audit_reopen_fd(struct audit *a, int fd);
void audit_close(struct audit *a);
const char *audit_path(const struct audit *a);

/* Takes ownership of rec. 0 on success, -1 with errno when the line was not written. */
int audit_write(struct audit *a, json_t *rec);
/* A record already formatted (lib/jsonline.h), newline included, with its @timestamp,
 * ecs.version and service.name: written and accounted like audit_write(). len 0 (a
 * record that did not fit its buffer) counts as a failure (EOVERFLOW). Safe to call
 * from several threads: lines never interleave. */
int audit_write_line(struct audit *a, const char *line, size_t len);
const char *audit_service(const struct audit *a);
uint64_t audit_written(const struct audit *a);
uint64_t audit_failed(const struct audit *a);
/* Records not written since the last one that was: 0 while the log works. */
uint64_t audit_outage(const struct audit *a);
/* From now on audit_write() says on stderr, once, when the log stops taking records
 * (why, and the consequence the caller gives, e.g. what it refuses meanwhile), and once
 * when it takes them again or is closed (how many were lost); callers then need not
 * warn per record. consequence is borrowed and must outlive a. */
void audit_say_outages(struct audit *a, const char *consequence);

/* Sets rec[path] where path is dotted ("destination.port"); intermediate objects are
 * created. Takes ownership of value; a NULL value is ignored. */
void audit_set(json_t *rec, const char *path, json_t *value);
void audit_set_str(json_t *rec, const char *path, const char *s);
void audit_set_int(json_t *rec, const char *path, int64_t v);

/* A JSON string safe to log from untrusted bytes: invalid UTF-8 becomes U+FFFD, the
 * result is capped at cap bytes (marked with "...[truncated]"). Control characters
 * are kept and escaped by the JSON encoder. Never NULL. */
json_t *audit_string(const char *s, size_t len, size_t cap);

/* A hash chain with signed checkpoints (lib/auditchain.h) hooks in here, so that the
 * binaries that do not chain their records need not link libcrypto. Each hook runs
 * with the writer's lock held; fd is the current descriptor. */
struct audit_chain_ops {
    /* Writes line (newline included) through audit_put_locked(), chained. */
    int (*write)(void *chain, struct audit *a, const char *line, size_t len);
    /* Before a reopen takes effect: the current descriptor is still the file written
     * so far (to be sealed), new_fd the file that follows it. */
    void (*rotate)(void *chain, struct audit *a, int new_fd);
    /* A checkpoint now if one is due (audit_tick), or for good (close). */
    void (*tick)(void *chain, struct audit *a, bool closing);
    void (*free)(void *chain);
};
void audit_attach_chain(struct audit *a, void *chain, const struct audit_chain_ops *ops);
/* For the chain's hooks: the descriptor, and one line written as is (counted as a
 * record when counted is set). */
int audit_fd_locked(const struct audit *a);
int audit_put_locked(struct audit *a, const char *line, size_t len, bool counted);
/* Writes a checkpoint when one is due by time (a timer of the writer's event loop
 * calls it); nothing without a chain. */
void audit_tick(struct audit *a);

/* 32 lowercase hex characters of fresh randomness plus NUL: ids shared by the
 * records of one event (a tunnel's decision and close, a call and its result). */
void audit_new_id(char out[33]);

#endif
