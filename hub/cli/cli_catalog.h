/* The catalog on the command line (cli_catalog.c): `hub catalog [search WORDS]`, and
 * `hub spokes add NAME` with no command, which follows the catalog's entry NAME. */
#ifndef HUB_CLI_CATALOG_H
#define HUB_CLI_CATALOG_H

#include "cli_spokes_npm.h"
#include "cmdline/cmdline.h"

/* `hub spokes add NAME [OPTIONS]` without a command: argv as cmd_spokes_pin saw it
 * after its options (argv[optind] is NAME), vars the --var NAME=VALUE given. Builds
 * the add of the entry (its hosts, keys, grants, programs, limits and package, then
 * the options given, which replace or add to the entry's) and runs it; refuses, saying
 * what to do, when the entry's keys are not in the secret store or a variable without
 * a default is not set. An exit code. */
int catalog_spokes_add(struct hub_config *cfg, int argc, char **argv, int optind_name,
                       const char *const *vars, size_t n_vars);

/* npm:SPEC taken from an npm prefix where it is installed already (npm ci of a
 * lockfile: PREFIX/package-lock.json and PREFIX/node_modules), instead of installing
 * it: the version in the lockfile and in the package's package.json must be SPEC's,
 * and out->package pins that version, the lockfile's integrity and PREFIX. 0, or -1
 * with err. */
int npm_installed(const char *prefix, const char *spec, struct npm_install *out, char *err,
                  size_t errlen);

/* The checks `hub spokes add --catalog-entry FILE` makes: the package's integrity is
 * the entry's (0, or -1 with err)... */
int catalog_check_package(const char *entry_path, const json_t *package, char *err, size_t errlen);
/* ... and the server lists exactly the entry's tools (0, or -1 with the first
 * difference in err). */
int catalog_check_tools(const char *entry_path, const json_t *listed, char *err, size_t errlen);

#endif
