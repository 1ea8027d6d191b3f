/* The escape matrix's attempts: a hostile spoke attacking the host, the hub and the
 * other spokes at the operating-system level. Each runs in a child process of the
 * spoke (tests/nsjail/probes.h: probe_run) and reports one outcome string; targets
 * (paths, pids, addresses, tokens) come from the tool call's "target" object, which
 * scripts/escape-matrix fills with things it created itself, so that every attempt
 * can only touch what the script owns and checks from outside afterwards. */
#ifndef TESTS_MATRIX_ESCAPE_ATTEMPTS_H
#define TESTS_MATRIX_ESCAPE_ATTEMPTS_H

#include <jansson.h>

struct escape_ctx {
    const json_t *target; /* the call's "target" object (borrowed) */
    const char *data_dir; /* this spoke's SPOKE_DATA */
    int own_fd;           /* the SDK's descriptor for protocol frames */
};

struct escape_attempt {
    const char *name;
    void (*fn)(const struct escape_ctx *c); /* reports with probe_report(), never returns */
};

extern const struct escape_attempt escape_attempts[];
extern const size_t escape_attempt_count;

#endif
