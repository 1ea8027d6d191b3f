/* The tail of a helper program's log (npm's, skopeo's and umoci's) on stderr, each line
 * marked, where a step of `hub spokes add` that ran it failed. */
#ifndef HUB_CLI_LOGTAIL_H
#define HUB_CLI_LOGTAIL_H

/* The last CLI_LOG_TAIL bytes of the file at path, control characters made visible. */
#define CLI_LOG_TAIL 2048
void cli_show_log_tail(const char *path);

#endif
