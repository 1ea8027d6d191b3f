/* The hub the C tests of the hub (tests/hub/test_*.c, tests/load/hub_load.c) start
 * from: the defaults, with everything the hub writes (data, logs, audit) under the
 * test's own directory and its spokes from spokes_dir, started from the build's test
 * spokes. */
#ifndef TESTS_HUB_HUB_FIXTURE_H
#define TESTS_HUB_HUB_FIXTURE_H

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>

/* bin: the build directory (its tests/hub holds the test spokes); dir: the test's own
 * directory (data/, run/ and audit.jsonl go there). */
void hub_fixture_config(struct hub_config *cfg, const char *bin, const char *dir,
                        const char *spokes_dir);

/* A hub of tests/hub/manifests on an event loop of its own, in mode none (what the
 * API tests need is the loop and the protocol, not a jail), everything it writes under
 * a temporary directory of the test's:
 *
 *     struct hub_fixture f;
 *     if (!hub_fixture_init(&f, "name"))
 *         return 1;
 *     f.cfg.max_spokes = ...;            (changes before the start)
 *     if (!hub_fixture_start(&f, err, sizeof(err)))
 *         ...CHECK it, hub_fixture_end(&f), return test_done()
 *     ...f.hub, f.base...
 *     hub_fixture_end(&f);
 *
 * BIN and ROOT in the environment: the build directory and the source tree (default
 * build and .). */
struct hub_fixture {
    char dir[64];
    struct hub_config cfg;
    struct manifest_set ms;
    struct event_base *base;
    struct hub *hub;
};

/* The directory /tmp/itest-NAME.XXXXXX and the configuration; false when the
 * directory cannot be made. */
bool hub_fixture_init(struct hub_fixture *f, const char *name);
/* Loads the manifests and starts the hub; false with err saying which failed. */
bool hub_fixture_start(struct hub_fixture *f, char *err, size_t errlen);
/* Lines of a file (an audit log, a spoke's log) holding a, and b too unless b is NULL;
 * 0 when the file cannot be read. */
int hub_fixture_count_lines(const char *path, const char *a, const char *b);
/* Frees the hub, its loop, the manifests and the configuration, and removes the
 * directory. */
void hub_fixture_end(struct hub_fixture *f);

#endif
