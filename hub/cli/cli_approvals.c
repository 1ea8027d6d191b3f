/* `hub approvals`: the questions a running hub serve could not put to a client, waiting
 * for an answer out of band (hub/serve/auth/serve_queue.c), listed and answered through its
 * control socket. */
#include "cmdline/cmdline.h"
#include "log.h"
#include "runtime/runtime.h"
#include "serve/serve.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_approvals(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f, "usage: hub approvals [--user U] [--json]\n"
               "       hub approvals allow ID [--for once|session|always]\n"
               "       hub approvals deny ID [--for once|always]\n"
               "The permission questions that the running hub serve of this host could not put\n"
               "to a client (it cannot ask, or hub.json serve.approvals_only), each waiting up\n"
               "to serve.approval_wait_s for an answer here; unanswered, --answers decides.\n"
               "Root sees every user's (or U's); another account only its own.\n\n"
               "  --for SCOPE        how long the answer holds: once (default), session (the\n"
               "                     client's session), always (the user's grant)\n"
               "  --json             the list as the hub gives it\n" CLI_COMMON_HELP);
}

static int show(const json_t *list)
{
    if (json_array_size(list) == 0) {
        printf("no questions are waiting\n");
        return EXIT_OK;
    }
    size_t i;
    json_t *a;
    json_array_foreach(list, i, a)
    {
        const char *q = json_string_value(json_object_get(a, "question"));
        const char *caller = json_string_value(json_object_get(a, "caller"));
        printf("%s  user %s  %s %s.%s%s%s  (%lld s left)\n%s\n\n",
               json_string_value(json_object_get(a, "id")),
               json_string_value(json_object_get(a, "user")),
               json_string_value(json_object_get(a, "category")),
               json_string_value(json_object_get(a, "app")),
               json_string_value(json_object_get(a, "tool")), caller && *caller ? " for " : "",
               caller ? caller : "",
               (long long)json_integer_value(json_object_get(a, "expires_in_s")), q ? q : "");
    }
    return EXIT_OK;
}

int cmd_approvals(int argc, char **argv)
{
    static const struct option opts[] = {{"for", required_argument, NULL, 'f'},
                                         {"json", no_argument, NULL, 'j'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    const char *scope = NULL;
    bool as_json = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'f':
            scope = optarg;
            break;
        case 'j':
            as_json = true;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *verb = optind < argc ? argv[optind] : NULL;
    const char *id = optind + 1 < argc ? argv[optind + 1] : NULL;
    bool answer = verb && (strcmp(verb, "allow") == 0 || strcmp(verb, "deny") == 0);
    if ((verb && !answer) || (answer && (!id || optind + 2 != argc)) || (!answer && scope)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    int rc = cli_load(&a.common, &cfg, NULL); /* hub.json alone: its control socket */
    if (rc != EXIT_OK)
        return rc;
    json_t *req = answer ? json_pack("{s:s,s:s,s:s,s:s}", "op", "answer", "id", id, "decision",
                                     verb, "for", scope ? scope : "once")
                         : json_pack("{s:s}", "op", "approvals");
    if (!answer && a.common.user)
        json_object_set_new(req, "user", json_string(a.common.user));
    json_t *ans = NULL;
    char err[600], path[200];
    int r = serve_control_call(&cfg, req, &ans, err, sizeof(err));
    json_decref(req);
    if (r == -2) {
        log_warnx("no hub serve is running here (nothing listens on %s)",
                  serve_control_path(&cfg, path, sizeof(path)));
        rc = EXIT_USAGE;
    } else if (r < 0) {
        log_warnx("%s", err);
        rc = EXIT_USAGE;
    } else if (!json_is_true(json_object_get(ans, "ok"))) {
        const char *why = json_string_value(json_object_get(ans, "error"));
        log_warnx("%s", why ? why : "refused");
        rc = EXIT_USAGE;
    } else if (answer) {
        printf("%s: answered %s\n", id, json_string_value(json_object_get(ans, "answer")));
    } else if (as_json) {
        char *t = json_dumps(json_object_get(ans, "approvals"), JSON_INDENT(2));
        printf("%s\n", t ? t : "[]");
        free(t);
    } else {
        rc = show(json_object_get(ans, "approvals"));
    }
    json_decref(ans);
    config_free(&cfg);
    return rc;
}
