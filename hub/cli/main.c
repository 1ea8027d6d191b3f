/* hub: the trusted party of IsolateGPT-C. This file only dispatches sub-commands;
 * each lives in its own file (cli_call.c, cli_spokes.c, ...). */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

int cmd_call(int argc, char **argv);
int cmd_spokes(int argc, char **argv);
int cmd_casestudies(int argc, char **argv);
int cmd_agentbench(int argc, char **argv);
int cmd_repl_server(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_client(int argc, char **argv);
int cmd_approvals(int argc, char **argv);
int cmd_secrets(int argc, char **argv);
int cmd_catalog(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_assistant(int argc, char **argv); /* agent_cli.c: no sub-command */
void cmd_assistant_usage(FILE *f);

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

/* `casestudies` joins this table when it is built (issue 6); with no sub-command (or
 * only options) the hub is the assistant. */
static const struct command commands[] = {
    {"call", cmd_call, "run one tool call through the hub and print the result as JSON"},
    {"spokes", cmd_spokes, "list the installed spokes, their tools, network policy, limits"},
    {"casestudies", cmd_casestudies, "the paper's four case studies in each isolation mode"},
    {"agentbench", cmd_agentbench, "the AgentDojo-shaped benchmark: utility, attacks, questions"},
    {"serve", cmd_serve, "the sandboxed apps for any MCP client (stdio or Streamable HTTP)"},
    {"repl-server", cmd_repl_server, "serve sandboxed Python sessions over TCP (length + JSON)"},
    {"approvals", cmd_approvals, "list and answer the questions hub serve waits on (out of band)"},
    {"client", cmd_client, "write the hub into an MCP client's configuration (add/remove/list)"},
    {"schema", cmd_schema, "validate JSON values (one per line on stdin) against a JSON Schema"},
    {"secrets", cmd_secrets, "the tools' keys: set (from stdin), list, rm; never shown"},
    {"catalog", cmd_catalog, "vetted MCP servers: list, search; `hub spokes add NAME` adds one"},
    {"audit", cmd_audit, "verify the audit files' hash chain and signatures; the public key"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: hub COMMAND [OPTIONS] ...\n\n"
               "The hub starts each app as a spoke in the chosen isolation mode, speaks MCP\n"
               "to it over its own socket, and mediates every message between spokes.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`hub COMMAND --help` describes each command and its options.\n\n");
    cmd_assistant_usage(f);
}

int main(int argc, char **argv)
{
    log_init("hub", false);
    log_set_fatal_status(EXIT_USAGE);
    if (argc >= 2 && (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
                      strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return EXIT_OK;
    }
    if (argc < 2 || argv[1][0] == '-')
        return cmd_assistant(argc, argv);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    log_warnx("unknown command \"%s\"", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
