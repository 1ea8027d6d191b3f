/* What the launcher's main() leaves for the rest of the command-line program. */
#ifndef NSJAIL_LITE_CLI_H
#define NSJAIL_LITE_CLI_H

/* main()'s argv, as given: the static launcher execs its dynamic twin with it when it
 * needs a scope from systemd (cgroup_scope_twin.c). */
extern char **nsjail_cli_argv;

#endif
