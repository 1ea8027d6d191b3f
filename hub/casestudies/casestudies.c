/* `hub casestudies`: runs the reference paper's four case studies, plus the malicious
 * apps' operating-system-level attacks, in each isolation mode, and prints what
 * succeeded and what stopped the rest (casestudies.h describes the parts). */
#include "casestudies.h"
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cmd_casestudies(int argc, char **argv);

#define EXIT_CASE_FAILED 3
#define EXIT_INTERRUPTED 130

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(
        f, "usage: hub casestudies [--isolation none|process|namespace|all] [--format table|json]\n"
           "                       [--llm replay:PATH|URL] [--case NAME] [--keep] [OPTIONS]\n"
           "Runs the four case studies of IsolateGPT (NDSS 2025) - app_compromise,\n"
           "data_stealing, inadvertent_data_exposure, uncontrolled_system_alteration - in\n"
           "each isolation mode: the LLM-level attacks of the paper and the malicious apps'\n"
           "own operating-system-level attacks. Each case and mode gets fresh data and a\n"
           "fresh hub; each step is judged from what is observed (files, processes, bytes\n"
           "at the attacker's loopback server, Redis), and is either SUCCEEDED or blocked\n"
           "by a named layer. Needs root for the namespace mode.\n\n"
           "  --isolation MODE   none | process | namespace | all (default all)\n"
           "  --format FMT       table (default) or json\n"
           "  --llm SPEC         replay:PATH: a recording, or a directory holding one per\n"
           "                     case (<case>.json); default replay:<cases-dir>. Or the URL of\n"
           "                     an OpenAI-compatible endpoint (model and key: hub.json llm)\n"
           "  --case NAME        only this case (repeatable)\n"
           "  --memory ADDR      the hub's Redis as unix:PATH (default: hub.json memory.redis\n"
           "                     if it is a unix socket, else a private redis-server for the\n"
           "                     run: the attack on the hub's memory goes through the socket)\n"
           "  --cases-dir DIR    seeds, answers, recordings (default: casestudies/ beside\n"
           "                     hub.json)\n"
           "  --keep             keep the run's directory (data, spoke logs, audit logs)\n"
           "The hub's and netproxy's audit lines of every run are appended to the logs\n"
           "hub.json names (--audit for the hub's). Exit status: 0 every case ran, 2 usage\n"
           "or configuration error, 3 a case or one of its steps could not run (an error\n"
           "outcome: the output says which and why), 130 interrupted.\n" CLI_COMMON_HELP);
}

/* The unix socket of the configured Redis, if it is one. */
static char *configured_redis(const char *opt, const struct hub_config *cfg)
{
    const char *spec = opt;
    if (!spec)
        spec = json_string_value(json_object_get(cfg->memory, "redis"));
    if (!spec)
        return NULL;
    if (strncmp(spec, "unix:", 5) == 0)
        return xstrdup(spec + 5);
    if (spec[0] == '/')
        return xstrdup(spec);
    return NULL;
}

static char *default_cases_dir(const struct cli_common *common)
{
    char *copy = common->config ? xstrdup(common->config) : paths_default_config("hub.json");
    char *dir = xasprintf("%s/casestudies", dirname(copy));
    free(copy);
    return dir;
}

static void ensure_parent(const char *path)
{
    if (!path)
        return;
    char *copy = xstrdup(path);
    mkdir_parents(dirname(copy), 0755);
    free(copy);
}

int cmd_casestudies(int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
                                         {"llm", required_argument, NULL, 'l'},
                                         {"case", required_argument, NULL, 'C'},
                                         {"memory", required_argument, NULL, 'm'},
                                         {"cases-dir", required_argument, NULL, 'd'},
                                         {"keep", no_argument, NULL, 'k'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {
        .argc = argc, .argv = argv, .opts = opts, .usage = usage, .no_operands = true};
    const char *format = "table", *llm = NULL, *memory = NULL, *cases_dir_opt = NULL;
    const struct cs_case *only[8];
    size_t n_only = 0;
    bool keep = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'l':
            llm = optarg;
            break;
        case 'f':
            format = optarg;
            break;
        case 'C':
            if (!cs_case_find(optarg) || n_only == ARRAY_LEN(only)) {
                log_warnx("--case: no case \"%s\" (app_compromise, data_stealing, "
                          "inadvertent_data_exposure, uncontrolled_system_alteration)",
                          optarg);
                return EXIT_USAGE;
            }
            only[n_only++] = cs_case_find(optarg);
            break;
        case 'm':
            memory = optarg;
            break;
        case 'd':
            cases_dir_opt = optarg;
            break;
        case 'k':
            keep = true;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    /* --isolation takes "all" here, and each run sets its own mode. */
    const char *iso = a.common.isolation ? a.common.isolation : "all";
    a.common.isolation = NULL;
    bool json_out = strcmp(format, "json") == 0;
    if (!json_out && strcmp(format, "table") != 0) {
        log_warnx("--format must be table or json");
        return EXIT_USAGE;
    }
    enum isolation modes[3];
    size_t n_modes = 0;
    if (strcmp(iso, "all") == 0) {
        modes[n_modes++] = ISO_NONE;
        modes[n_modes++] = ISO_PROCESS;
        modes[n_modes++] = ISO_NAMESPACE;
    } else if (!isolation_parse(iso, &modes[n_modes++])) {
        log_warnx("--isolation must be none, process, namespace or all");
        return EXIT_USAGE;
    }
    if (memory && strncmp(memory, "unix:", 5) != 0 && memory[0] != '/') {
        log_warnx("--memory must be unix:PATH (the case studies read Redis through its socket)");
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < n_modes; i++)
        if (modes[i] == ISO_NAMESPACE && geteuid() != 0) {
            log_warnx("the namespace mode needs root (nsjail-lite maps each spoke to its own "
                      "host uid); run as root or with --isolation none|process");
            return EXIT_USAGE;
        }

    struct hub_config cfg;
    struct manifest_set ms;
    if (cli_load(&a.common, &cfg, &ms) != EXIT_OK)
        return EXIT_USAGE;
    manifest_set_free(&ms);
    char *cases_dir = cases_dir_opt ? xstrdup(cases_dir_opt) : default_cases_dir(&a.common);
    char *llm_spec = llm ? xstrdup(llm) : xasprintf("replay:%s", cases_dir);
    char *audit_out = xstrdup(a.common.audit ? a.common.audit : cfg.audit_path);
    char *proxy_out = cfg.netproxy_audit ? xstrdup(cfg.netproxy_audit) : NULL;
    char *redis_sock = configured_redis(memory, &cfg);
    config_free(&cfg);
    if (strcmp(audit_out, "-") == 0) { /* stdout carries the results */
        free(audit_out);
        audit_out = NULL;
    }
    ensure_parent(audit_out);
    ensure_parent(proxy_out);

    int rc = EXIT_OK;
    char err[1024];
    char *tmp = xasprintf("/tmp/isolategpt-cs-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(tmp) || chmod(tmp, 0711) < 0) {
        log_warn("cannot make a temporary directory");
        free(tmp);
        tmp = NULL;
        rc = EXIT_USAGE;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    signal(SIGPIPE, SIG_IGN);

    pid_t redis_pid = -1;
    if (rc == EXIT_OK && !redis_sock) {
        char *rdir = xasprintf("%s/redis", tmp);
        mkdir(rdir, 0700);
        redis_pid = cs_redis_start(rdir, &redis_sock, err, sizeof(err));
        free(rdir);
        if (redis_pid < 0) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        }
    }
    struct event_base *base = rc == EXIT_OK ? event_base_new() : NULL;
    struct cs_collector *collector = base ? cs_collector_new(base, err, sizeof(err)) : NULL;
    if (base && !collector) {
        log_warnx("%s", err);
        rc = EXIT_USAGE;
    }

    const struct cs_case *cases[8];
    size_t n_cases = 0;
    if (n_only) {
        for (size_t i = 0; i < n_only; i++)
            cases[n_cases++] = only[i];
    } else {
        for (size_t i = 0; i < cs_n_cases; i++)
            cases[n_cases++] = &cs_cases[i];
    }
    struct cs_case_result *results = xcalloc(n_cases * n_modes, sizeof(*results));
    size_t n_results = 0;
    struct cs_env env = {.common = &a.common,
                         .cases_dir = cases_dir,
                         .tmp = tmp,
                         .redis_socket = redis_sock,
                         .llm_spec = llm_spec,
                         .audit_out = audit_out,
                         .proxy_audit_out = proxy_out,
                         .base = base,
                         .collector = collector,
                         .keep = keep,
                         .debug = a.common.debug,
                         .stop = &stop_requested};
    bool ready = rc == EXIT_OK;
    for (size_t i = 0; ready && i < n_cases && !stop_requested; i++)
        for (size_t m = 0; m < n_modes && !stop_requested; m++) {
            uint64_t t0 = now_mono_ns();
            struct cs_case_result *r = &results[n_results++];
            cs_run_case(&env, cases[i], modes[m], r);
            fprintf(stderr, "[%2zu/%zu] %-31s %-9s %zu steps, %.1f s%s%s\n", n_results,
                    n_cases * n_modes, cases[i]->name, isolation_name(modes[m]), r->n_steps,
                    (double)(now_mono_ns() - t0) / 1e9, r->error ? ": " : "",
                    r->error ? r->error : "");
        }
    bool any_error = false;
    for (size_t i = 0; i < n_results; i++)
        any_error |= results[i].error != NULL || cs_result_errors(&results[i]) > 0;

    cs_collector_free(collector);
    if (base)
        event_base_free(base);
    cs_redis_stop(redis_pid);
    if (tmp && keep)
        fprintf(stderr, "kept: %s\n", tmp);
    else if (tmp && cs_remove_tree(tmp) < 0)
        log_warnx("cannot remove %s", tmp);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);

    if (n_results > 0) {
        const char *desc = cs_llm_describe(llm_spec);
        if (json_out) {
            json_t *doc = cs_results_json(desc, results, n_results);
            char *text = json_dumps(doc, JSON_INDENT(1));
            printf("%s\n", text);
            free(text);
            json_decref(doc);
        } else {
            cs_print_table(stdout, desc, results, n_results);
        }
        fflush(stdout);
    }
    if (rc == EXIT_OK && stop_requested)
        rc = EXIT_INTERRUPTED;
    else if (rc == EXIT_OK && any_error)
        rc = EXIT_CASE_FAILED;
    for (size_t i = 0; i < n_results; i++)
        cs_result_free(&results[i]);
    free(results);
    free(tmp);
    free(redis_sock);
    free(audit_out);
    free(proxy_out);
    free(llm_spec);
    free(cases_dir);
    return rc;
}
