/* `hub call APP.TOOL 'JSON-ARGS'`: one tool call through the whole path (manifest,
 * validation, spawn in the chosen isolation mode, MCP, mediation of whatever the spoke
 * asks, validation of the result), the result printed as JSON. --repeat, --cold and
 * --stats make it the measuring instrument of scripts/bench/hub and of the leak test. */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"
#include "termtext.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_call(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hub call [OPTIONS] APP.TOOL 'JSON-ARGS' [APP.TOOL 'JSON-ARGS' ...]\n"
            "       hub call [OPTIONS] APP.METHOD 'JSON-PARAMS'\n"
            "Runs one tool call through the hub and prints the MCP result as JSON.\n"
            "METHOD is a read-only MCP request instead of a tool: resources/list,\n"
            "resources/templates/list, resources/read, prompts/list, prompts/get,\n"
            "completion/complete or tools/list (e.g. notes.resources/read '{\"uri\":\"...\"}').\n"
            "Progress and log messages the spoke sends during the call go to stderr.\n"
            "With several calls they run in one hub, one after another (or all at once\n"
            "with --parallel), and each prints one line as it ends:\n"
            "  {\"index\":I,\"tool\":\"A.T\",\"duration_us\":N,\"result\":{...}}  or\n"
            "  "
            "{\"index\":I,\"tool\":\"A.T\",\"duration_us\":N,\"error\":{\"code\":C,\"message\":M,"
            "\"layer\":L}}\n"
            "The command line is the user's explicit request, so no exec permission is\n"
            "asked; what the spoke asks for (isolate/call) is decided by --answers.\n"
            "Exit status: 0 ok, 1 the tool answered isError, 2 usage or configuration\n"
            "error, 3 the call was refused or failed (stderr names the layer).\n\n"
            "  --timeout MS       deadline of the call (default: manifest, then hub.json)\n"
            "  --traceparent TP   continue this W3C trace: the records carry its trace.id\n"
            "  --instance ID      a separate instance of the app with its own data dir\n"
            "  --pretty           indent the printed result\n"
            "  --parallel         start all the calls at once\n"
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

struct pending_call {
    int index;
    bool request; /* tool is an MCP method (hub_request) */
    char app[MANIFEST_NAME_MAX + 1], tool[MANIFEST_NAME_MAX + 1];
    json_t *args;
    uint64_t t0;
    bool done;
    int code;
};

static int envelope_exit = EXIT_OK;
static size_t envelopes_left;

/* Several calls: one envelope line per call, in the order they end. */
static void envelope_done(void *ud, const struct call_result *r)
{
    struct pending_call *pc = ud;
    pc->done = true;
    envelopes_left--;
    json_t *line = json_pack("{s:i,s:s++,s:I}", "index", pc->index, "tool", pc->app, ".", pc->tool,
                             "duration_us", (json_int_t)((now_mono_ns() - pc->t0) / 1000));
    if (r->result) {
        json_object_set(line, "result", r->result);
        if (json_is_true(json_object_get(r->result, "isError")) && envelope_exit == EXIT_OK)
            envelope_exit = EXIT_TOOL_ERROR;
    } else {
        json_object_set_new(line, "error",
                            json_pack("{s:i,s:s,s:s}", "code", r->code, "message",
                                      r->message ? r->message : "", "layer",
                                      r->layer ? r->layer : "hub"));
        envelope_exit = EXIT_CALL_FAILED;
    }
    char *text = json_dumps(line, JSON_COMPACT);
    printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(line);
}

static int run_many(struct hub *h, struct event_base *base, const struct call_opts *o,
                    struct pending_call *pcs, size_t n, bool parallel)
{
    envelopes_left = n;
    for (size_t i = 0; i < n && !hub_quit_requested(h); i++) {
        pcs[i].t0 = now_mono_ns();
        if (pcs[i].request)
            hub_request(h, o, pcs[i].app, pcs[i].tool, pcs[i].args, envelope_done, &pcs[i]);
        else
            hub_call(h, o, pcs[i].app, pcs[i].tool, pcs[i].args, envelope_done, &pcs[i]);
        while (!parallel && !pcs[i].done && !hub_quit_requested(h))
            event_base_loop(base, EVLOOP_ONCE);
    }
    while (envelopes_left > 0 && !hub_quit_requested(h))
        event_base_loop(base, EVLOOP_ONCE);
    return envelopes_left > 0 ? EXIT_CALL_FAILED : envelope_exit;
}

/* What the spoke says during a call, on stderr: its words after the hub's prefix,
 * through the terminal neutraliser (lib/termtext.h), as every log line. */
static void print_event(void *ud, const struct call_event *ev)
{
    (void)ud;
    char *text = tt_inline_str(ev->text, 600);
    if (ev->kind == CALL_EVENT_PROGRESS) {
        if (ev->total >= 0)
            fprintf(stderr, "hub: %s.%s: progress %g/%g%s%s\n", ev->app, ev->tool, ev->progress,
                    ev->total, text[0] ? ": " : "", text);
        else
            fprintf(stderr, "hub: %s.%s: progress %g%s%s\n", ev->app, ev->tool, ev->progress,
                    text[0] ? ": " : "", text);
    } else {
        char *level = tt_inline_str(ev->level ? ev->level : "", 40);
        char *logger = ev->logger ? tt_inline_str(ev->logger, 80) : NULL;
        fprintf(stderr, "hub: %s.%s: log %s%s%s: %s\n", ev->app, ev->tool, level,
                logger ? " " : "", logger ? logger : "", text);
        free(level);
        free(logger);
    }
    free(text);
}

/* "APP.METHOD" with METHOD one of hub_request()'s: split at the first dot. */
static bool split_request(const char *full, struct pending_call *pc)
{
    const char *dot = strchr(full, '.');
    if (!dot || !strchr(dot, '/') || !hub_request_method_known(dot + 1) ||
        (size_t)(dot - full) > MANIFEST_NAME_MAX || strlen(dot + 1) > MANIFEST_NAME_MAX)
        return false;
    snprintf(pc->app, sizeof(pc->app), "%.*s", (int)(dot - full), full);
    snprintf(pc->tool, sizeof(pc->tool), "%s", dot + 1);
    pc->request = manifest_valid_app_name(pc->app);
    return pc->request;
}

int cmd_call(int argc, char **argv)
{
    static const struct option opts[] = {{"timeout", required_argument, NULL, 't'},
                                         {"instance", required_argument, NULL, 'i'},
                                         {"pretty", no_argument, NULL, 'p'},
                                         {"repeat", required_argument, NULL, 'r'},
                                         {"cold", no_argument, NULL, 'c'},
                                         {"stats", no_argument, NULL, 's'},
                                         {"parallel", no_argument, NULL, 'P'},
                                         {"traceparent", required_argument, NULL, 'T'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    uint64_t timeout_ms = 0, repeat = 1;
    const char *instance = NULL, *traceparent = NULL;
    bool pretty = false, cold = false, stats = false, parallel = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 't':
            if (!cli_u64_option("timeout", optarg, 1, 86400000, " milliseconds", &timeout_ms))
                return EXIT_USAGE;
            break;
        case 'i':
            instance = optarg;
            break;
        case 'p':
            pretty = true;
            break;
        case 'r':
            if (!cli_u64_option("repeat", optarg, 1, 10000000, "", &repeat))
                return EXIT_USAGE;
            break;
        case 'c':
            cold = true;
            break;
        case 's':
            stats = true;
            break;
        case 'P':
            parallel = true;
            break;
        case 'T':
            traceparent = optarg;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    int npairs = (argc - optind) / 2;
    if (npairs < 1 || (argc - optind) % 2 != 0 || (npairs > 1 && (repeat > 1 || cold))) {
        if (npairs > 1)
            log_warnx("--repeat and --cold take a single call");
        usage(stderr);
        return EXIT_USAGE;
    }
    char err[1024];
    struct pending_call *pcs = xcalloc((size_t)npairs, sizeof(*pcs));
    int rc = EXIT_OK;
    for (int i = 0; i < npairs && rc == EXIT_OK; i++) {
        const char *full = argv[optind + 2 * i];
        pcs[i].index = i;
        if (!split_request(full, &pcs[i]) &&
            !manifest_split_name(full, pcs[i].app, sizeof(pcs[i].app), pcs[i].tool,
                                 sizeof(pcs[i].tool), err, sizeof(err))) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
            break;
        }
        json_error_t jerr;
        pcs[i].args = json_loads(argv[optind + 2 * i + 1], JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(pcs[i].args)) {
            log_warnx("JSON-ARGS of %s must be a JSON object%s%s", full, pcs[i].args ? "" : ": ",
                      pcs[i].args ? "" : jerr.text);
            rc = EXIT_USAGE;
        }
    }
    struct hub_config cfg = {0};
    struct manifest_set ms = {0};
    if (rc == EXIT_OK)
        rc = cli_load(&a.common, &cfg, &ms);
    struct perm_hook *perm = NULL;
    struct elicit_hook *elicit = NULL;
    if (rc == EXIT_OK && answers_hooks(a.common.answers ? a.common.answers : "deny", &perm, &elicit,
                                       err, sizeof(err)) < 0) {
        log_warnx("--answers: %s", err);
        rc = EXIT_USAGE;
    }
    struct event_base *base = NULL;
    struct hub *h = NULL;
    int fds_before = count_fds();
    if (rc == EXIT_OK) {
        if (!(h = cli_hub_new(&a.common, &cfg, &ms, &base)))
            rc = EXIT_USAGE;
    }
    if (rc != EXIT_OK) {
        if (perm)
            perm->free(perm);
        if (elicit)
            elicit->free(elicit);
        goto out;
    }
    hub_set_permission_hook(h, perm);
    hub_set_elicit_hook(h, elicit);
    struct call_opts o = {.user = cfg.user,
                          .instance = instance,
                          .timeout_ms = timeout_ms,
                          .on_event = print_event,
                          .traceparent = traceparent};

    if (npairs > 1) {
        rc = run_many(h, base, &o, pcs, (size_t)npairs, parallel);
        hub_free(h);
        goto out;
    }

    const char *app = pcs[0].app, *tool = pcs[0].tool;
    uint64_t *call_ns = xcalloc(repeat, sizeof(uint64_t));
    uint64_t *init_ns = xcalloc(repeat, sizeof(uint64_t));
    uint64_t *ready_ns = xcalloc(repeat, sizeof(uint64_t));
    size_t n_ok = 0, n_failed = 0, n_cold = 0;
    json_t *last = NULL;
    const char *last_layer = NULL;
    char last_err[1024] = "";
    for (uint64_t i = 0; i < repeat && !hub_quit_requested(h); i++) {
        if (cold && i > 0)
            hub_spoke_stop(h, cfg.user, app, instance);
        json_decref(last);
        last = NULL;
        uint64_t t0 = now_mono_ns();
        int code = pcs[0].request ? hub_request_sync(h, &o, app, tool, pcs[0].args, &last, last_err,
                                                     sizeof(last_err), &last_layer)
                                  : hub_call_sync(h, &o, app, tool, pcs[0].args, &last, last_err,
                                                  sizeof(last_err), &last_layer);
        call_ns[i] = now_mono_ns() - t0;
        if (code == 0)
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
    base = NULL;
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
        char *text = json_dumps(st, JSON_COMPACT);
        fprintf(stderr, "%s\n", text);
        free(text);
        json_decref(st);
    }
    free(call_ns);
    free(init_ns);
    free(ready_ns);
    if (last) {
        char *text = json_dumps(last, pretty ? JSON_INDENT(2) : JSON_COMPACT);
        printf("%s\n", text);
        free(text);
        rc = json_is_true(json_object_get(last, "isError")) ? EXIT_TOOL_ERROR : EXIT_OK;
        json_decref(last);
    } else {
        log_warnx("%s.%s failed [%s]: %s", app, tool, last_layer ? last_layer : "hub",
                  interrupted ? "interrupted" : last_err);
        rc = EXIT_CALL_FAILED;
    }
out:
    if (base)
        event_base_free(base);
    for (int i = 0; i < npairs; i++)
        json_decref(pcs[i].args);
    free(pcs);
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
