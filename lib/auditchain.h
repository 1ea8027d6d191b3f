/* Tamper-evident audit files: a hash chain through every record and checkpoints signed
 * with Ed25519 (lib/auditkey.h), attached to a writer of lib/audit.h.
 *
 * Each record ends with "isolate.chain":{"seq":N,"prev":"HEX"}: N counts the records
 * of the chain, HEX is the SHA-256 of the previous record's line (its bytes, without
 * the newline). The chain is per file and shared by every process that appends to it
 * (hub call, hub serve, its LLM log): the writer takes flock(2) on the file, and when
 * the file grew since its own last record it reads the last line back to continue from
 * it. A new file (after logrotate and SIGHUP, or found empty) starts with a link record
 * (event.action "audit-link") whose chain continues the previous file's: same seq
 * count, prev the previous file's last hash; with no previous file known, a new chain
 * (seq 1, prev all zeros).
 *
 * A checkpoint (event.action "audit-checkpoint") is a record of the chain that also
 * ends with "isolate.signature":"BASE64": Ed25519 over every byte of its line before
 * ",\"isolate.signature\"". It is written every every_records records, when
 * every_s seconds passed since the last one (checked at each record and at
 * audit_tick()), before a rotation (reason "rotate") and when the writer closes
 * (reason "shutdown"). `hub audit verify` (lib/auditverify.h) checks a set of files. */
#ifndef ISOLATE_AUDITCHAIN_H
#define ISOLATE_AUDITCHAIN_H

#include "audit.h"

#include <openssl/evp.h>
#include <stdint.h>

#define AUDITCHAIN_EVERY_RECORDS 1024
#define AUDITCHAIN_EVERY_S 60
/* The longest last line a writer reads back to continue a chain. */
#define AUDITCHAIN_MAX_LINE (4u << 20)

struct auditchain_opts {
    uint64_t every_records; /* 0: AUDITCHAIN_EVERY_RECORDS */
    uint64_t every_s;       /* 0: AUDITCHAIN_EVERY_S */
};

/* Chains a's records from now on. key (may be NULL: chained, never signed) is shared,
 * not taken. 0, or -1 with err filled. */
int auditchain_attach(struct audit *a, EVP_PKEY *key, const struct auditchain_opts *o, char *err,
                      size_t errlen);

/* For the verifier and the writer alike: in line[0..len), the chain's seq and prev
 * (64 hex digits, not NUL-terminated) when the line ends with a chain (and maybe a
 * signature); false otherwise. */
bool auditchain_parse_tail(const char *line, size_t len, uint64_t *seq, const char **prev,
                           bool *signed_);

#endif
