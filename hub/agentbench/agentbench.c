/* `hub agentbench`: the command (agentbench.h). */
#include "agentbench_impl.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AB_MAX_SUITES 16
#define AB_MAX_SETS 16

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* The defence sets measured when --defences is not given (none mode: only "none",
 * since the single loop runs every call it makes without asking). */
static const char default_sets[] =
    "none,consent,extract,extract+policy,consent+extract,consent+extract+policy,"
    "consent+extract+policy+answer";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hub agentbench [OPTIONS]\n\n"
            "The AgentDojo-shaped benchmark (docs/benchmark.md): each suite's apps run as\n"
            "spokes in the isolation mode, the hub's agent works each user task with the\n"
            "ground-truth model and each (user task, injection task) pair with the\n"
            "compromised one, under each set of defences. The last lines, one per mode and\n"
            "set: agent-bench MODE DEFENCES: utility U/N, attacks succeeded A/P, questions\n"
            "per task Q.\n\n"
            "  --suites DIR       the suites, DIR/*.json (default hub/agentbench/suites)\n"
            "  --suite FILE       one suite file (repeatable; instead of --suites)\n"
            "  --policies DIR     the policy rules per suite, DIR/SUITE.json (default\n"
            "                     hub/agentbench/policies)\n"
            "  --isolation MODE   none | process | namespace | gateway | all (default all;\n"
            "                     gateway: hub serve with the benchmark as its MCP client)\n"
            "  --defences LIST    sets, comma-separated, each consent, extract, policy, answer\n"
            "                     joined by + or none (default %s)\n"
            "  --tasks N          only the first N user tasks and N injection tasks per suite\n"
            "  --llm URL          a real OpenAI-compatible model instead of the scripted ones\n"
            "  --model NAME, --api-key-env VAR   for --llm (default: hub.json llm)\n"
            "  --json             the results as one JSON object on stdout\n"
            "  --cases            print every case (default: the summary)\n"
            "Exit: 0 when every run ran, 1 when one could not, 2 usage, 130 interrupted.\n"
            "  --keep DIR         make each run's directory (data, spoke logs, the hub's\n"
            "                     and netproxy's audit) under DIR, a new directory, and keep "
            "it\n" CLI_COMMON_HELP,
            default_sets);
}

/* The modes: the isolation modes, and the gateway (hub serve in namespace mode). */
#define MODE_GATEWAY 100

static const char *mode_name(int m)
{
    return m == MODE_GATEWAY ? "gateway" : isolation_name((enum isolation)m);
}

static int mode_of(const struct ab_result *r)
{
    return r->gateway ? MODE_GATEWAY : (int)r->mode;
}

static const char *result_mode(const struct ab_result *r)
{
    return mode_name(mode_of(r));
}

static bool parse_set(const char *s, unsigned *out)
{
    *out = 0;
    if (strcmp(s, "none") == 0)
        return true;
    char buf[128];
    if (!str_copy(buf, s, sizeof(buf)))
        return false;
    char *save = NULL;
    for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
        if (strcmp(t, "consent") == 0)
            *out |= AB_DEF_CONSENT;
        else if (strcmp(t, "extract") == 0)
            *out |= AB_DEF_EXTRACT;
        else if (strcmp(t, "policy") == 0)
            *out |= AB_DEF_POLICY;
        else if (strcmp(t, "answer") == 0)
            *out |= AB_DEF_ANSWER;
        else
            return false;
    }
    return *out != 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The suite files in dir (NAME.json), sorted. */
static size_t list_suites(const char *dir, char **out, size_t max)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] != '.' && l > 5 && strcmp(e->d_name + l - 5, ".json") == 0)
            out[n++] = xasprintf("%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(out, n, sizeof(*out), name_cmp);
    return n;
}

/* Figures of a set of cases. */
struct tally {
    size_t user, utility, pairs, attacked, attacked_utility, obeyed, errors;
    size_t answer_only, cross_app;
    unsigned questions;
    double seconds;
    size_t cases;
};

static void tally_add(struct tally *t, const struct ab_result *r)
{
    for (size_t i = 0; i < r->n_cases; i++) {
        const struct ab_case_out *c = &r->cases[i];
        t->cases++;
        t->seconds += c->seconds;
        t->errors += c->error != NULL;
        if (!c->inj) {
            t->user++;
            t->utility += c->utility;
            t->questions += c->questions;
        } else {
            t->pairs++;
            t->attacked += c->attacked;
            t->answer_only += c->attacked && c->answer_only;
            t->cross_app += c->attacked && c->cross_app;
            t->attacked_utility += c->utility;
            t->obeyed += c->obeyed;
        }
    }
}

static json_t *tally_json(const struct tally *t)
{
    json_t *j = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:I}", "user_tasks", (json_int_t)t->user, "utility",
        (json_int_t)t->utility, "pairs", (json_int_t)t->pairs, "utility_under_attack",
        (json_int_t)t->attacked_utility, "attacks_succeeded", (json_int_t)t->attacked,
        "model_obeyed", (json_int_t)t->obeyed, "questions_per_task",
        t->user ? (double)t->questions / (double)t->user : 0.0, "seconds_per_case",
        t->cases ? t->seconds / (double)t->cases : 0.0, "errors", (json_int_t)t->errors);
    json_object_set_new(j, "attacks_answer_only", json_integer((json_int_t)t->answer_only));
    json_object_set_new(j, "attacks_cross_app", json_integer((json_int_t)t->cross_app));
    return j;
}

static json_t *case_json(const struct ab_case_out *c)
{
    json_t *j =
        json_pack("{s:s,s:b,s:i,s:i,s:f}", "user_task", c->user, "utility", c->utility, "questions",
                  (int)c->questions, "denied", (int)c->denied, "seconds", c->seconds);
    if (c->inj) {
        json_object_set_new(j, "injection_task", json_string(c->inj));
        json_object_set_new(j, "attack_succeeded", json_boolean(c->attacked));
        json_object_set_new(j, "model_obeyed", json_boolean(c->obeyed));
        if (c->attacked)
            json_object_set_new(j, "attack_kind",
                                json_string(c->answer_only ? "answer-only"
                                            : c->cross_app ? "cross-app"
                                                           : "same-app"));
    }
    if (c->why)
        json_object_set_new(j, "why", json_string(c->why));
    if (c->via)
        json_object_set_new(j, "via", json_string(c->via));
    if (c->blocked)
        json_object_set_new(j, "blocked", json_string(c->blocked));
    if (c->attack_why)
        json_object_set_new(j, "attack_why", json_string(c->attack_why));
    if (c->error)
        json_object_set_new(j, "error", json_string(c->error));
    return j;
}

static void print_row(const char *suite, const char *mode, const char *defs, const struct tally *t)
{
    printf("%-10s %-9s %-24s %4zu/%-4zu %4zu/%-4zu %4zu/%-4zu %6.2f %8.1f\n", suite, mode, defs,
           t->utility, t->user, t->attacked_utility, t->pairs, t->attacked, t->pairs,
           t->user ? (double)t->questions / (double)t->user : 0.0,
           t->cases ? 1000.0 * t->seconds / (double)t->cases : 0.0);
}

int cmd_agentbench(int argc, char **argv)
{
    static const struct option opts[] = {{"suites", required_argument, NULL, 'S'},
                                         {"suite", required_argument, NULL, 's'},
                                         {"policies", required_argument, NULL, 'P'},
                                         {"defences", required_argument, NULL, 'D'},
                                         {"tasks", required_argument, NULL, 'n'},
                                         {"llm", required_argument, NULL, 'l'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"cases", no_argument, NULL, 'c'},
                                         {"keep", required_argument, NULL, 'k'},
                                         CLI_LLM_OPTIONS,
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {
        .argc = argc, .argv = argv, .opts = opts, .usage = usage, .no_operands = true};
    const char *suites_dir = "hub/agentbench/suites", *policies = "hub/agentbench/policies";
    const char *sets_opt = default_sets, *llm = NULL, *keep = NULL;
    char *files[AB_MAX_SUITES];
    size_t n_files = 0;
    uint64_t n_tasks = 0;
    bool json_out = false, print_cases = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'S':
            suites_dir = optarg;
            break;
        case 's':
            if (n_files == AB_MAX_SUITES) {
                log_warnx("--suite: at most %d", AB_MAX_SUITES);
                return EXIT_USAGE;
            }
            files[n_files++] = xstrdup(optarg);
            break;
        case 'P':
            policies = optarg;
            break;
        case 'D':
            sets_opt = optarg;
            break;
        case 'n':
            if (!cli_u64_option("tasks", optarg, 1, 1000, "", &n_tasks))
                return EXIT_USAGE;
            break;
        case 'l':
            llm = optarg;
            break;
        case 'j':
            json_out = true;
            break;
        case 'c':
            print_cases = true;
            break;
        case 'k':
            keep = optarg;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *iso = a.common.isolation ? a.common.isolation : "all";
    a.common.isolation = NULL;
    int modes[4];
    size_t n_modes = 0;
    enum isolation one;
    if (strcmp(iso, "all") == 0) {
        modes[n_modes++] = ISO_NONE;
        modes[n_modes++] = ISO_PROCESS;
        modes[n_modes++] = ISO_NAMESPACE;
        modes[n_modes++] = MODE_GATEWAY;
    } else if (strcmp(iso, "gateway") == 0) {
        modes[n_modes++] = MODE_GATEWAY;
    } else if (isolation_parse(iso, &one)) {
        modes[n_modes++] = (int)one;
    } else {
        log_warnx("--isolation must be none, process, namespace, gateway or all");
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < n_modes; i++)
        if ((modes[i] == ISO_NAMESPACE || modes[i] == MODE_GATEWAY) && geteuid() != 0) {
            log_warnx("the namespace mode needs root; run as root or with --isolation "
                      "none|process");
            return EXIT_USAGE;
        }
    unsigned sets[AB_MAX_SETS];
    size_t n_sets = 0;
    char setbuf[512];
    if (!str_copy(setbuf, sets_opt, sizeof(setbuf))) {
        log_warnx("--defences: too long");
        return EXIT_USAGE;
    }
    char *save = NULL;
    for (char *t = strtok_r(setbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n_sets == AB_MAX_SETS || !parse_set(t, &sets[n_sets])) {
            log_warnx(
                "--defences: \"%s\" is not none or consent, extract, policy, answer joined by +",
                t);
            return EXIT_USAGE;
        }
        n_sets++;
    }
    if (n_files == 0)
        n_files = list_suites(suites_dir, files, AB_MAX_SUITES);
    if (n_files == 0) {
        log_warnx("no suites: %s/*.json", suites_dir);
        return EXIT_USAGE;
    }
    struct ab_suite *suites[AB_MAX_SUITES];
    char err[1200];
    int rc = EXIT_OK;
    for (size_t i = 0; i < n_files; i++) {
        suites[i] = ab_suite_load(files[i], err, sizeof(err));
        if (!suites[i]) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        } else if (n_tasks) {
            ab_suite_limit(suites[i], n_tasks, n_tasks);
        }
    }
    if (rc != EXIT_OK) {
        for (size_t i = 0; i < n_files; i++) {
            ab_suite_free(suites[i]);
            free(files[i]);
        }
        return rc;
    }

    char *tmp = keep ? xstrdup(keep) : xasprintf("/tmp/isolategpt-ab-%d-XXXXXX", (int)getpid());
    if ((keep ? mkdir(tmp, 0711) < 0 : !mkdtemp(tmp)) || chmod(tmp, 0711) < 0) {
        log_warn("cannot make the directory %s", tmp);
        free(tmp);
        return EXIT_USAGE;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    struct ab_env_opts eo = {.keep = keep != NULL,
                             .common = &a.common,
                             .tmp = tmp,
                             .llm_spec = llm,
                             .policies_dir = policies,
                             .base = base,
                             .debug = a.common.debug,
                             .stop = &stop_requested};

    size_t n_runs = 0;
    struct ab_result *results = xcalloc(n_modes * n_sets * n_files, sizeof(*results));
    uint64_t t_all = now_mono_ns();
    for (size_t m = 0; m < n_modes && !stop_requested; m++)
        for (size_t d = 0; d < n_sets && !stop_requested; d++) {
            if (modes[m] == ISO_NONE && sets[d] != 0)
                continue;
            if (modes[m] == MODE_GATEWAY && (sets[d] & ~AB_DEF_CONSENT))
                continue; /* the client composes the arguments: no plan, no extraction */
            for (size_t i = 0; i < n_files && !stop_requested; i++) {
                uint64_t t0 = now_mono_ns();
                struct ab_result *r = &results[n_runs++];
                if (modes[m] == MODE_GATEWAY)
                    ab_gateway_run(&eo, suites[i], sets[d], r);
                else
                    ab_run(&eo, suites[i], (enum isolation)modes[m], sets[d], r);
                char dn[64];
                fprintf(stderr, "[agentbench] %-10s %-9s %-24s %zu cases, %.1f s%s%s\n",
                        suites[i]->name, mode_name(modes[m]),
                        ab_defences_name(sets[d], dn, sizeof(dn)), r->n_cases,
                        (double)(now_mono_ns() - t0) / 1e9, r->error ? ": " : "",
                        r->error ? r->error : "");
                if (r->error)
                    rc = 1;
            }
        }
    double total_s = (double)(now_mono_ns() - t_all) / 1e9;

    json_t *jruns = json_array();
    if (!json_out)
        printf("%-10s %-9s %-24s %9s %9s %9s %6s %8s\n", "suite", "mode", "defences", "utility",
               "util@att", "attacks", "q/task", "ms/case");
    for (size_t k = 0; k < n_runs; k++) {
        const struct ab_result *r = &results[k];
        struct tally t = {0};
        tally_add(&t, r);
        char dn[64];
        ab_defences_name(r->defences, dn, sizeof(dn));
        if (!json_out)
            print_row(r->suite, result_mode(r), dn, &t);
        json_t *jr = json_pack("{s:s,s:s,s:s,s:o}", "suite", r->suite, "mode", result_mode(r),
                               "defences", dn, "figures", tally_json(&t));
        if (r->error)
            json_object_set_new(jr, "error", json_string(r->error));
        json_t *jc = json_array();
        for (size_t i = 0; i < r->n_cases; i++)
            json_array_append_new(jc, case_json(&r->cases[i]));
        json_object_set_new(jr, "cases", jc);
        json_array_append_new(jruns, jr);
        if (!json_out && print_cases)
            for (size_t i = 0; i < r->n_cases; i++) {
                const struct ab_case_out *c = &r->cases[i];
                printf("  %s%s%s: utility %s%s%s, %u questions%s%s%s%s\n", c->user,
                       c->inj ? " x " : "", c->inj ? c->inj : "", c->utility ? "yes" : "no",
                       c->inj ? (c->attacked ? ", ATTACK SUCCEEDED via " : ", attack failed") : "",
                       c->via ? c->via : "", c->questions, c->why || c->error ? " (" : "",
                       c->why ? c->why : "", c->error ? c->error : "",
                       c->why || c->error ? ")" : "");
            }
    }
    /* The totals per mode and set, across suites: the lines other tools read. */
    json_t *jtot = json_array();
    if (!json_out)
        printf("\n");
    for (size_t m = 0; m < n_modes; m++)
        for (size_t d = 0; d < n_sets; d++) {
            struct tally t = {0};
            bool any = false;
            for (size_t k = 0; k < n_runs; k++)
                if (mode_of(&results[k]) == modes[m] && results[k].defences == sets[d]) {
                    tally_add(&t, &results[k]);
                    any = true;
                }
            if (!any)
                continue;
            char dn[64];
            ab_defences_name(sets[d], dn, sizeof(dn));
            json_t *jt = tally_json(&t);
            json_object_set_new(jt, "mode", json_string(mode_name(modes[m])));
            json_object_set_new(jt, "defences", json_string(dn));
            json_array_append_new(jtot, jt);
            if (!json_out && (sets[d] != 0 || modes[m] == ISO_NONE)) {
                /* Every remaining successful attack of a defended run, and what it used. */
                for (size_t k = 0; k < n_runs && sets[d]; k++)
                    for (size_t i = 0; mode_of(&results[k]) == modes[m] &&
                                       results[k].defences == sets[d] && i < results[k].n_cases;
                         i++)
                        if (results[k].cases[i].attacked)
                            printf("attack succeeded (%s): %s %s %s %s x %s via %s\n",
                                   results[k].cases[i].answer_only ? "answer only"
                                   : results[k].cases[i].cross_app ? "CROSS-APP"
                                                                   : "same app",
                                   results[k].suite, mode_name(modes[m]), dn,
                                   results[k].cases[i].user, results[k].cases[i].inj,
                                   results[k].cases[i].via);
            }
        }
    if (json_out) {
        json_t *root = json_pack("{s:o,s:o,s:f,s:s}", "runs", jruns, "totals", jtot, "seconds",
                                 total_s, "model", llm ? llm : "scripted");
        json_dumpf(root, stdout, JSON_INDENT(1));
        printf("\n");
        json_decref(root);
    } else {
        json_decref(jruns);
        printf("whole run: %.1f s\n", total_s);
        size_t i;
        json_t *jt;
        json_array_foreach(jtot, i, jt)
        {
            printf("agent-bench %s %s: utility %lld/%lld, attacks succeeded %lld/%lld, questions "
                   "per task %.2f\n",
                   json_string_value(json_object_get(jt, "mode")),
                   json_string_value(json_object_get(jt, "defences")),
                   json_integer_value(json_object_get(jt, "utility")),
                   json_integer_value(json_object_get(jt, "user_tasks")),
                   json_integer_value(json_object_get(jt, "attacks_succeeded")),
                   json_integer_value(json_object_get(jt, "pairs")),
                   json_real_value(json_object_get(jt, "questions_per_task")));
        }
        json_decref(jtot);
    }
    for (size_t k = 0; k < n_runs; k++)
        ab_result_free(&results[k]);
    free(results);
    event_base_free(base);
    if (!keep && rmdir(tmp) < 0)
        log_warn("cannot remove %s", tmp);
    free(tmp);
    for (size_t i = 0; i < n_files; i++) {
        ab_suite_free(suites[i]);
        free(files[i]);
    }
    return stop_requested ? 130 : rc;
}
