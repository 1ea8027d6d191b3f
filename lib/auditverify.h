/* Checks a set of audit files written through lib/auditchain.h: every record linked to
 * the one before it (across the files, put in chain order whatever order they are
 * given in), every checkpoint's signature, and a signed checkpoint after the last
 * record. Stops at the first fault and names it (file:line, what). */
#ifndef ISOLATE_AUDITVERIFY_H
#define ISOLATE_AUDITVERIFY_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

/* The statuses double as `hub audit verify`'s exit codes (2 is its usage error). */
enum auditverify_status {
    AV_OK = 0,
    AV_BROKEN = 1,     /* a record changed, deleted, inserted or reordered; a file missing */
    AV_SIGNATURE = 3,  /* a checkpoint's signature is bad, or made with a key not given */
    AV_UNSEALED = 4,   /* records after the last checkpoint: a cut tail (or a live writer) */
    AV_UNREADABLE = 5, /* a file could not be read */
};

struct auditverify_report {
    enum auditverify_status status;
    char what[1024];  /* "FILE:LINE: what", for a fault */
    uint64_t records; /* lines checked */
    uint64_t checkpoints;
    uint64_t first_seq, last_seq;
    char sealed_at[600]; /* FILE:LINE of the last good checkpoint */
};

enum auditverify_status auditverify_files(const char *const *files, size_t nfiles,
                                          EVP_PKEY *const *keys, size_t nkeys,
                                          struct auditverify_report *r);

#endif
