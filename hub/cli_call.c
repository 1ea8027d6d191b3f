/* `hub call APP.TOOL 'JSON-ARGS'`: one tool call through the whole path (manifest,
 * validation, spawn in the chosen isolation mode, MCP, mediation of whatever the spoke
 * asks, validation of the result), the result printed as JSON. --repeat, --cold and
 * --stats make it the measuring instrument of scripts/bench/hub and of the leak test. */
#include "answers.h"
#include "cli.h"
#include "hub.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_call(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hub call [OPTIONS] APP.TOOL 'JSON-ARGS'\n"
            "Runs one tool call through the hub and prints the MCP result as JSON.\n"
            "The command line is the user's explicit request, so no exec permission is\n"
            "asked; what the spoke asks for (isolate/call) is decided by --answers.\n"
            "Exit status: 0 ok, 1 the tool answered isError, 2 usage or configuration\n"
            "error, 3 the call was refused or failed (stderr names the layer).\n\n"
            "  --timeout MS       deadline of the call (default: manifest, then hub.json)\n"
            "  --instance ID      a separate instance of the app with its own data dir\n"
            "  --pretty           indent the printed result\n"
            "  --repeat N         make the call N times in one hub (prints the last result)\n"
            "  --cold             stop the spoke before each call, so each one starts it\n"
            "  --stats            timing and resource counts as JSON on stderr\n" CLI_COMMON_HELP);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static json_t *summary(uint64_t *v, size_t n)
{
    if (n == 0)
        return json_null();
    qsort(v, n, sizeof(*v), cmp_u64);
    size_t p99 = (n * 99 + 99) / 100;
    if (p99 >= n)
        p99 = n - 1;
    return json_pack("{s:f,s:f,s:f,s:f,s:I}", "median_us", v[n / 2] / 1000.0, "p99_us",
                     v[p99] / 1000.0, "min_us", v[0] / 1000.0, "max_us", v[n - 1] / 1000.0, "n",
                     (json_int_t)n);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

int cmd_call(int argc, char **argv)
{
    static const struct option opts[] = {{"timeout", required_argument, NULL, 't'},
                                         {"instance", required_argument, NULL, 'i'},
                                         {"pretty", no_argument, NULL, 'p'},
                                         {"repeat", required_argument, NULL, 'r'},
                                         {"cold", no_argument, NULL, 'c'},
                                         {"stats", no_argument, NULL, 's'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_common common = {0};
    uint64_t timeout_ms = 0, repeat = 1;
    const char *instance = NULL;
    bool pretty = false, cold = false, stats = false;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (cli_common_option(&common, opt, optarg))
            continue;
        switch (opt) {
        case 't':
            if (!parse_u64(optarg, 1, 86400000, &timeout_ms)) {
                log_warnx("--timeout must be 1 to 86400000 milliseconds");
                return EXIT_USAGE;
            }
            break;
        case 'i':
            instance = optarg;
            break;
        case 'p':
            pretty = true;
            break;
        case 'r':
            if (!parse_u64(optarg, 1, 10000000, &repeat)) {
                log_warnx("--repeat must be 1 to 10000000");
                return EXIT_USAGE;
            }
            break;
        case 'c':
            cold = true;
            break;
        case 's':
            stats = true;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *full = argv[optind];
    char app[MANIFEST_NAME_MAX + 1], tool[MANIFEST_NAME_MAX + 1], err[1024];
    if (!manifest_split_name(full, app, sizeof(app), tool, sizeof(tool), err, sizeof(err))) {
        log_warnx("%s", err);
        return EXIT_USAGE;
    }
    json_error_t jerr;
    json_t *args = json_loads(argv[optind + 1], JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(args)) {
        log_warnx("JSON-ARGS must be a JSON object%s%s", args ? "" : ": ", args ? "" : jerr.text);
        json_decref(args);
        return EXIT_USAGE;
    }

    struct hub_config cfg;
    struct manifest_set ms = {0};
    int rc = cli_load(&common, &cfg, &ms);
    struct perm_hook *perm = NULL;
    struct elicit_hook *elicit = NULL;
    if (rc == EXIT_OK && answers_hooks(common.answers ? common.answers : "deny", &perm, &elicit,
                                       err, sizeof(err)) < 0) {
        log_warnx("--answers: %s", err);
        rc = EXIT_USAGE;
    }
    if (rc != EXIT_OK) {
        json_decref(args);
        manifest_set_free(&ms);
        config_free(&cfg);
        return rc;
    }
    int fds_before = count_fds();
    struct event_base *base = event_base_new();
    struct hub *h = hub_new(&cfg, &ms, base, common.debug, err, sizeof(err));
    if (!h) {
        log_warnx("%s", err);
        perm->free(perm);
        elicit->free(elicit);
        event_base_free(base);
        json_decref(args);
        manifest_set_free(&ms);
        config_free(&cfg);
        return EXIT_USAGE;
    }
    hub_set_permission_hook(h, perm);
    hub_set_elicit_hook(h, elicit);

    struct call_opts o = {.user = cfg.user, .instance = instance, .timeout_ms = timeout_ms};
    uint64_t *call_ns = xcalloc(repeat, sizeof(uint64_t));
    uint64_t *init_ns = xcalloc(repeat, sizeof(uint64_t));
    uint64_t *ready_ns = xcalloc(repeat, sizeof(uint64_t));
    size_t n_ok = 0, n_failed = 0, n_cold = 0;
    json_t *last = NULL;
    int last_code = 0;
    const char *last_layer = NULL;
    char last_err[1024] = "";
    for (uint64_t i = 0; i < repeat && !hub_quit_requested(h); i++) {
        if (cold && i > 0)
            hub_spoke_stop(h, cfg.user, app, instance);
        json_decref(last);
        last = NULL;
        uint64_t t0 = now_mono_ns();
        last_code =
            hub_call_sync(h, &o, app, tool, args, &last, last_err, sizeof(last_err), &last_layer);
        call_ns[i] = now_mono_ns() - t0;
        if (last_code == 0)
            n_ok++;
        else
            n_failed++;
        if (cold) {
            hub_spoke_timing(h, cfg.user, app, instance, &init_ns[n_cold], &ready_ns[n_cold]);
            n_cold++;
        }
    }
    if (cold)
        hub_spoke_stop(h, cfg.user, app, instance);
    size_t procs = 0, slots = 0;
    hub_resource_counts(h, &procs, &slots);
    bool interrupted = hub_quit_requested(h);
    hub_free(h);
    event_base_free(base);
    if (stats) {
        size_t n = n_ok + n_failed;
        json_t *st = json_pack("{s:I,s:I,s:I,s:s,s:o,s:I,s:I,s:i,s:i}", "calls", (json_int_t)n,
                               "ok", (json_int_t)n_ok, "failed", (json_int_t)n_failed, "isolation",
                               isolation_name(cfg.isolation), "call", summary(call_ns, n),
                               "procs_after", (json_int_t)procs, "slots_after", (json_int_t)slots,
                               "fds_before", fds_before, "fds_after", count_fds());
        if (cold) {
            json_object_set_new(st, "start_initialize", summary(init_ns, n_cold));
            json_object_set_new(st, "start_ready", summary(ready_ns, n_cold));
        }
        char *s = json_dumps(st, JSON_COMPACT);
        fprintf(stderr, "%s\n", s);
        free(s);
        json_decref(st);
    }
    free(call_ns);
    free(init_ns);
    free(ready_ns);
    json_decref(args);
    int exit_code;
    if (last) {
        char *s = json_dumps(last, pretty ? JSON_INDENT(2) : JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        exit_code = json_is_true(json_object_get(last, "isError")) ? EXIT_TOOL_ERROR : EXIT_OK;
        json_decref(last);
    } else {
        log_warnx("%s.%s failed [%s]: %s", app, tool, last_layer ? last_layer : "hub",
                  interrupted ? "interrupted" : last_err);
        exit_code = EXIT_CALL_FAILED;
    }
    manifest_set_free(&ms);
    config_free(&cfg);
    (void)last_code;
    return exit_code;
}
