/* Running a helper program from a sub-command (npm, umoci, skopeo): its stdin
 * /dev/null, its output into the command's log, what it prints read back if asked. */
#ifndef HUB_CLI_RUN_H
#define HUB_CLI_RUN_H

#include <stddef.h>

/* Runs argv, its stderr (and stdout unless out) appended to log_fd; with out, stdout
 * is read into *out (at most max bytes, *len). Its exit status, or -1. */
int cli_run(char *const argv[], int log_fd, char **out, size_t *len, size_t max);

#endif
