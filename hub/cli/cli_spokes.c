/* `hub spokes`: the installed spokes, their tools, network policy and limits, from the
 * manifests alone (nothing is started). */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_spokes(int argc, char **argv);
int cmd_spokes_pin(int argc, char **argv);   /* cli_spokes_pin.c: add, update, verify */
int cmd_spokes_login(int argc, char **argv); /* cli_spokes_login.c: a remote's OAuth */

static void usage(FILE *f)
{
    fprintf(f, "usage: hub spokes [OPTIONS]\n"
               "       hub spokes add NAME [OPTIONS] -- COMMAND [ARG...]\n"
               "       hub spokes update NAME | verify [NAME]   (see hub spokes add --help)\n"
               "       hub spokes login NAME [URL]   (a remote server's OAuth; see --help)\n"
               "Lists the installed spokes (config/spokes/*.json): tools, network policy,\n"
               "limits. Nothing is started.\n\n"
               "  --format FMT       text (default) or json\n" CLI_COMMON_HELP);
}

static json_t *limits_json(const struct manifest_limits *l)
{
    json_t *o = json_object();
    struct {
        const char *k;
        uint64_t v;
    } f[] = {{"cpu_s", l->cpu_s},       {"as_mb", l->as_mb},
             {"fsize_mb", l->fsize_mb}, {"nofile", l->nofile},
             {"nproc", l->nproc},       {"wall_s", l->wall_s},
             {"call_s", l->call_s},     {"memory_mb", l->memory_mb},
             {"pids", l->pids},         {"cpu_percent", l->cpu_percent},
             {"start_s", l->start_s}};
    for (size_t i = 0; i < ARRAY_LEN(f); i++)
        if (f[i].v)
            json_object_set_new(o, f[i].k, json_integer((json_int_t)f[i].v));
    return o;
}

static json_t *manifest_json(const struct manifest *m)
{
    json_t *allow = json_array();
    for (char **a = m->allow; *a; a++)
        json_array_append_new(allow, json_string(*a));
    json_t *ports = json_array();
    for (size_t i = 0; m->n_allow && i < m->n_ports; i++)
        json_array_append_new(ports, json_integer(m->ports[i]));
    json_t *tools = json_array();
    for (size_t i = 0; i < m->n_tools; i++)
        json_array_append_new(tools, json_pack("{s:s,s:s,s:b}", "name", m->tools[i].name,
                                               "description", m->tools[i].description,
                                               "irreversible", m->tools[i].irreversible));
    json_t *cmd = json_array();
    for (char **c = m->command; *c; c++)
        json_array_append_new(cmd, json_string(*c));
    json_t *mounts = json_array();
    for (size_t i = 0; i < m->n_mounts; i++)
        json_array_append_new(
            mounts, json_pack("{s:s,s:s}", "host", m->mounts[i].src, "path", m->mounts[i].dst));
    json_t *secrets = json_object();
    for (size_t i = 0; i < m->n_secret_env; i++)
        json_object_set_new(secrets, m->secret_env[i].var, json_string(m->secret_env[i].secret));
    json_t *tcp = json_array(), *exec = json_array();
    for (char **t = m->tcp; t && *t; t++)
        json_array_append_new(tcp, json_string(*t));
    for (char **e = m->exec; e && *e; e++)
        json_array_append_new(exec, json_string(*e));
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:{s:o,s:o,s:o},s:o,s:o,s:o,s:o}", "name", m->name,
                     "description", m->description, "runtime", m->runtime, "command", cmd, "mounts",
                     mounts, "network", "allow", allow, "ports", ports, "tcp", tcp, "exec", exec,
                     "secrets", secrets, "limits", limits_json(&m->limits), "tools", tools);
}

static void print_text(const struct manifest_set *ms, const struct hub_config *cfg)
{
    printf("%zu spokes in %s (isolation %s)\n", ms->n, cfg->spokes_dir,
           isolation_name(cfg->isolation));
    for (size_t i = 0; i < ms->n; i++) {
        const struct manifest *m = ms->v[i];
        printf("\n%s - %s\n", m->name, m->description);
        printf("  command:  %s", m->command[0]);
        for (char **c = m->command + 1; *c; c++)
            printf(" %s", *c);
        printf("   (runtime %s)\n", m->runtime);
        for (size_t k = 0; k < m->n_mounts; k++)
            printf("  mounts:   %s%s%s (read-only)\n", m->mounts[k].src,
                   strcmp(m->mounts[k].src, m->mounts[k].dst) ? " at " : "",
                   strcmp(m->mounts[k].src, m->mounts[k].dst) ? m->mounts[k].dst : "");
        if (m->n_allow) {
            printf("  network:  ");
            for (char **a = m->allow; *a; a++)
                printf("%s%s", a == m->allow ? "" : ", ", *a);
            printf(" (ports");
            for (size_t p = 0; p < m->n_ports; p++)
                printf(" %u", m->ports[p]);
            printf(")\n");
        } else if (!m->n_tcp) {
            printf("  network:  none\n");
        }
        for (size_t k = 0; k < m->n_secret_env; k++)
            printf("  secret:   %s from the store's %s%s\n", m->secret_env[k].var,
                   m->secret_env[k].secret,
                   m->secret_env[k].plain ? " (plain: the value itself, on purpose)" : "");
        char *keys = manifest_keylike_env(m); /* this app's, where it is shown */
        if (keys) {
            keys[strlen(keys) - 1] = '\0';
            fflush(stdout);
            log_warnx("%s", keys);
            free(keys);
        }
        for (size_t k = 0; k < m->n_tcp; k++)
            printf("  raw TCP:  %s\n", m->tcp[k]);
        for (size_t k = 0; k < m->n_exec; k++)
            printf("  may run:  %s\n", m->exec[k]);
        json_t *l = limits_json(&m->limits);
        char *ls = json_dumps(l, JSON_COMPACT);
        printf("  limits:   %s\n", json_object_size(l) ? ls : "profile defaults");
        free(ls);
        json_decref(l);
        printf("  tools:\n");
        for (size_t t = 0; t < m->n_tools; t++) {
            /* A server wrote the description: no control sequence reaches the terminal. */
            char desc[512];
            json_t *d = json_string(m->tools[t].description);
            hub_text_neutral(d, desc, sizeof(desc));
            json_decref(d);
            printf("    %-20s %s%s\n", m->tools[t].name, desc,
                   m->tools[t].irreversible ? "  [irreversible]" : "");
        }
    }
}

int cmd_spokes(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'}, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    const char *format = "text";
    if (argc >= 2 && (strcmp(argv[1], "add") == 0 || strcmp(argv[1], "update") == 0 ||
                      strcmp(argv[1], "verify") == 0))
        return cmd_spokes_pin(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "login") == 0)
        return cmd_spokes_login(argc - 1, argv + 1);
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'f':
            format = optarg;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    if (optind != argc || (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    if (rc == EXIT_OK && strcmp(format, "json") == 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < ms.n; i++)
            json_array_append_new(arr, manifest_json(ms.v[i]));
        char *s = json_dumps(arr, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(arr);
    } else if (rc == EXIT_OK) {
        print_text(&ms, &cfg);
    }
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
