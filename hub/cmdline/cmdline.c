#include "cmdline.h"
#include "log.h"
#include "paths.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

bool cli_common_option(struct cli_common *c, int opt, const char *arg)
{
    switch (opt) {
    case 1000:
        c->config = arg;
        c->config_given = true;
        return true;
    case 1001:
        c->isolation = arg;
        return true;
    case 1002:
        c->spokes = arg;
        return true;
    case 1003:
        c->user = arg;
        return true;
    case 1004:
        c->answers = arg;
        return true;
    case 1005:
        c->debug = true;
        log_set_debug(true);
        return true;
    case 1006:
        c->audit = arg;
        return true;
    case 1007:
        c->data_root = arg;
        return true;
    case 1010:
        c->llm_model = arg;
        return true;
    case 1011:
        c->llm_key_env = arg;
        return true;
    case 1008:
        c->run_dir = arg;
        return true;
    case 1009:
        c->veth_pool = arg;
        return true;
    }
    return false;
}

int cli_next_option(struct cli_args *a)
{
    if (!a->started) {
        optind = 1;
        a->started = true;
    }
    int opt;
    while ((opt = getopt_long(a->argc, a->argv, a->shortopts ? a->shortopts : "h", a->opts,
                              NULL)) != -1) {
        if (cli_common_option(&a->common, opt, optarg))
            continue;
        if (opt == 'h') {
            a->usage(stdout);
            a->exit = EXIT_OK;
            return CLI_OPTS_EXIT;
        }
        if (opt == '?' || opt == ':')
            break;
        return opt;
    }
    if (opt == -1 && !(a->no_operands && optind != a->argc))
        return CLI_OPTS_DONE;
    a->usage(stderr);
    a->exit = EXIT_USAGE;
    return CLI_OPTS_EXIT;
}

bool cli_u64_option(const char *name, const char *arg, uint64_t min, uint64_t max, const char *unit,
                    uint64_t *out)
{
    if (parse_u64(arg, min, max, out))
        return true;
    log_warnx("--%s must be %" PRIu64 " to %" PRIu64 "%s", name, min, max, unit);
    return false;
}

static int load(const struct cli_common *c, struct hub_config *cfg, struct manifest_set *ms)
{
    char err[1024];
    if (ms)
        memset(ms, 0, sizeof(*ms)); /* config_defaults() clears cfg */
    char *dir = paths_exe_dir();
    config_defaults(cfg, dir);
    free(dir);
    char *path = c->config ? xstrdup(c->config) : paths_default_config("hub.json");
    if (c->config_given || access(path, F_OK) == 0) {
        if (config_load(cfg, path, err, sizeof(err)) < 0) {
            log_warnx("%s", err);
            free(path);
            return EXIT_USAGE;
        }
    }
    free(path);
    if (c->isolation && !isolation_parse(c->isolation, &cfg->isolation)) {
        log_warnx("--isolation must be none, process or namespace");
        return EXIT_USAGE;
    }
    if (c->user) {
        if (!user_id_valid(c->user)) {
            log_warnx("--user must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -");
            return EXIT_USAGE;
        }
        config_set(&cfg->user, c->user);
    }
    if (c->spokes)
        config_set(&cfg->spokes_dir, c->spokes);
    if (c->audit)
        config_set(&cfg->audit_path, c->audit);
    if (c->data_root)
        config_set(&cfg->data_root, c->data_root);
    if (c->run_dir)
        config_set(&cfg->run_dir, c->run_dir);
    if (c->veth_pool && !config_set_veth_pool(cfg, c->veth_pool, err, sizeof(err))) {
        log_warnx("--veth-pool: %s", err);
        return EXIT_USAGE;
    }
    if (c->llm_key_env) {
        if (!*c->llm_key_env || strlen(c->llm_key_env) > 128 || strchr(c->llm_key_env, '=')) {
            log_warnx("--api-key-env must name an environment variable");
            return EXIT_USAGE;
        }
        config_set(&cfg->llm_key_env, c->llm_key_env);
    }
    if (c->llm_model) {
        if (!*c->llm_model || strlen(c->llm_model) > 256) {
            log_warnx("--model must be 1 to 256 characters");
            return EXIT_USAGE;
        }
        json_t *model = json_string(c->llm_model);
        if (!model) {
            log_warnx("--model must be UTF-8");
            return EXIT_USAGE;
        }
        if (!cfg->llm)
            cfg->llm = json_object();
        json_object_set_new(cfg->llm, "model", model);
    }
    /* Taken out of the environment before anything is started: no child of the hub,
     * and no reader of /proc/<hub>/environ, sees it. */
    cfg->llm_api_key = secret_env_take(cfg->llm_key_env);
    if (ms && manifest_set_load(cfg->spokes_dir, ms, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cli_load(const struct cli_common *c, struct hub_config *cfg, struct manifest_set *ms)
{
    int rc = load(c, cfg, ms);
    if (rc != EXIT_OK) { /* nothing left for the caller to free */
        config_free(cfg);
        if (ms)
            manifest_set_free(ms);
    }
    return rc;
}

struct hub *cli_hub_new(const struct cli_common *c, struct hub_config *cfg, struct manifest_set *ms,
                        struct event_base **base)
{
    char err[1024];
    *base = event_base_new();
    if (!*base) {
        log_warnx("event_base_new failed");
        return NULL;
    }
    struct hub *h = hub_new(cfg, ms, *base, c->debug, err, sizeof(err));
    if (!h)
        log_warnx("%s", err);
    return h;
}
