/* The hub configuration the C tests of the hub (tests/hub/test_*.c, tests/load/
 * hub_load.c) start from: the defaults, with everything the hub writes (data, logs,
 * audit) under the test's own directory and its spokes from spokes_dir, started from
 * the build's test spokes. */
#ifndef TESTS_HUB_HUB_FIXTURE_H
#define TESTS_HUB_HUB_FIXTURE_H

#include "runtime/config.h"

/* bin: the build directory (its tests/hub holds the test spokes); dir: the test's own
 * directory (data/, run/ and audit.jsonl go there). */
void hub_fixture_config(struct hub_config *cfg, const char *bin, const char *dir,
                        const char *spokes_dir);

#endif
