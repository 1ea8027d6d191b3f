/* What the hub's sub-commands share: the common options, loading the configuration
 * and the manifests with those options applied, and the exit codes. */
#ifndef HUB_CMDLINE_H
#define HUB_CMDLINE_H

#include "runtime/runtime.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/* Exit codes of the sub-commands. */
enum {
    EXIT_OK = 0,
    EXIT_TOOL_ERROR = 1, /* hub call: the tool answered with isError */
    EXIT_USAGE = 2,      /* bad options, configuration or manifests */
    EXIT_CALL_FAILED = 3 /* hub call: refused or failed; stderr says by which layer */
};

struct cli_common {
    const char *config;
    bool config_given;
    const char *isolation, *spokes, *user, *answers, *audit, *data_root, *run_dir, *veth_pool;
    bool debug;
    /* The assistant's own options (--model, --api-key-env), applied by cli_load over
     * hub.json's llm object; NULL when not given. */
    const char *llm_model, *llm_key_env;
};

/* --model and --api-key-env, for the sub-commands that ask the hub's LLM (the
 * assistant, hub serve's --llm); cli_common_option() handles them too. */
#define CLI_LLM_OPTIONS                                                                            \
    {"model", required_argument, NULL, 1010},                                                      \
    {                                                                                              \
        "api-key-env", required_argument, NULL, 1011                                               \
    }

/* Long options every sub-command takes (ids >= 1000), terminated for appending. */
#define CLI_COMMON_OPTIONS                                                                         \
    {"config", required_argument, NULL, 1000}, {"isolation", required_argument, NULL, 1001},       \
        {"spokes", required_argument, NULL, 1002}, {"user", required_argument, NULL, 1003},        \
        {"answers", required_argument, NULL, 1004}, {"debug", no_argument, NULL, 1005},            \
        {"audit", required_argument, NULL, 1006}, {"data-root", required_argument, NULL, 1007},    \
        {"run-dir", required_argument, NULL, 1008}, {"veth-pool", required_argument, NULL, 1009},  \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }

#define CLI_COMMON_HELP                                                                            \
    "  --config FILE      hub configuration (default: the tree's config/hub.json beside\n"         \
    "                     the build directory, else /etc/isolategpt/hub.json)\n"                   \
    "  --isolation MODE   none | process | namespace (default: hub.json, else namespace)\n"        \
    "  --spokes DIR       directory of spoke manifests (default: hub.json spokes_dir)\n"           \
    "  --user ID          the user whose data and spokes are used\n"                               \
    "  --answers SPEC     scripted permission answers: allow | deny | FILE (default deny)\n"       \
    "  --audit FILE       the hub's audit log (JSON lines; - for stdout)\n"                        \
    "  --data-root DIR    spokes' data: DIR/<user>/<app>\n"                                        \
    "  --run-dir DIR      spoke logs and netproxy's log\n"                                         \
    "  --veth-pool CIDR   IPv4 range for the spokes' /30 veths (default 169.254.64.0/18)\n"        \
    "  --debug            say more, and put argument values in audit records\n"                    \
    "  -h, --help         this help\n"

/* A sub-command's option loop (one parser for all of them):
 *
 *     struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
 *     int opt;
 *     while ((opt = cli_next_option(&a)) >= 0)
 *         switch (opt) { ...the command's own options... }
 *     if (opt == CLI_OPTS_EXIT)
 *         return a.exit;
 *
 * The common options land in a.common; the operands start at optind afterwards. */
struct cli_args {
    int argc;
    char **argv;
    const struct option *opts; /* the command's own, then CLI_COMMON_OPTIONS, {0} */
    const char *shortopts;     /* NULL: "h" */
    void (*usage)(FILE *f);
    bool no_operands; /* an operand left after the options is a usage error */
    struct cli_common common;
    int exit; /* after CLI_OPTS_EXIT: the command's exit code */
    bool started;
};

enum {
    CLI_OPTS_DONE = -1, /* every option read */
    /* The command ends with a.exit: --help printed the usage on stdout (EXIT_OK), or an
     * unknown option, a missing argument or (no_operands) an operand had it printed on
     * stderr (EXIT_USAGE). */
    CLI_OPTS_EXIT = -2
};

/* The next of the command's own options (getopt_long's value; optarg its argument), after
 * taking the common ones into a->common; CLI_OPTS_DONE or CLI_OPTS_EXIT at the end. */
int cli_next_option(struct cli_args *a);

/* Handles a common option; false when opt is not one. */
bool cli_common_option(struct cli_common *c, int opt, const char *arg);
/* A numeric option's value in [min, max]; false after saying "--NAME must be MIN to
 * MAX" and unit (" seconds", "" for none). */
bool cli_u64_option(const char *name, const char *arg, uint64_t min, uint64_t max, const char *unit,
                    uint64_t *out);

/* Defaults, config file, then the options, into cfg and ms (cleared first; ms NULL: the
 * manifests are not read, for a command that needs hub.json alone, which a broken
 * manifest then does not stop). 0 (free both with config_free and manifest_set_free),
 * or EXIT_USAGE after printing why, with both freed already (freeing them again is
 * harmless). */
int cli_load(const struct cli_common *c, struct hub_config *cfg, struct manifest_set *ms);

struct event_base;
struct hub;
/* The hub of a command, on an event loop of its own (*base, NULL on failure too: free
 * it with event_base_free after the hub). NULL after printing why. */
struct hub *cli_hub_new(const struct cli_common *c, struct hub_config *cfg, struct manifest_set *ms,
                        struct event_base **base);

#endif
