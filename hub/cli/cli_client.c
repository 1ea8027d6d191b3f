/* `hub client add|remove|list`: the hub in an MCP client's own configuration, so that
 * nobody writes its JSON by hand: a stdio server that runs this hub binary (`hub serve
 * --stdio`, which attaches to the host's running hub), or with --url the HTTP service
 * with a bearer token. The client's file is merged (its other servers and settings
 * kept), a copy of it made first (client_conf.c). */
#include "client_conf.h"
#include "cmdline/cmdline.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_client(int argc, char **argv);

#define TOKEN_MAX 512

static void usage(FILE *f)
{
    fprintf(f, "usage: hub client add CLIENT [--name N] [--file PATH] [--app APP] [--user U]\n"
               "                             [--config HUB_JSON] [--url URL --token-file F]\n"
               "       hub client remove CLIENT [--name N] [--file PATH]\n"
               "       hub client list [CLIENT] [--file PATH]\n"
               "Writes the hub into an MCP client's configuration (merged with what is there,\n"
               "the old file kept as FILE.isolategpt-DATE.bak): a stdio server running this\n"
               "hub (`hub serve --stdio`, served by the host's running hub when there is one),\n"
               "or with --url the HTTP service with the bearer token read from --token-file.\n\n"
               "Clients (their user-scope file below $HOME):\n");
    for (size_t i = 0; i < n_client_kinds; i++)
        fprintf(f, "  %-15s %s (~/%s)\n", client_kinds[i].name, client_kinds[i].title,
                client_kinds[i].path);
    fprintf(f, "\n  --name N           the server's name in the client (default isolategpt)\n"
               "  --file PATH        the client's file, when not the user-scope one (a\n"
               "                     project's .mcp.json, .vscode/mcp.json, ...)\n"
               "  --app APP          one app under its own tool names (hub serve --app)\n"
               "  --user U           the hub user of the stdio server (hub serve --user)\n"
               "  --config FILE      the hub.json the stdio server is to use\n"
               "  --url URL          the HTTP service's MCP endpoint instead of stdio\n"
               "  --token-file F     its bearer token (the first line of F)\n");
}

static char *home_file(const struct client_kind *k)
{
    const char *home = getenv("HOME");
    if (!home || home[0] != '/') {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : "/";
    }
    return xasprintf("%s/%s", home, k->path);
}

/* The token: F's first line, printable ASCII without spaces (RFC 6750's b64token and
 * then some). NULL after saying why. */
static char *read_token(const char *file)
{
    FILE *f = fopen(file, "re");
    if (!f) {
        log_warnx("--token-file %s: %s", file, strerror(errno));
        return NULL;
    }
    char buf[TOKEN_MAX + 2];
    bool got = fgets(buf, sizeof(buf), f) != NULL;
    fclose(f);
    size_t n = got ? strcspn(buf, "\r\n") : 0;
    buf[n] = '\0';
    bool ok = n > 0 && n <= TOKEN_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = buf[i] > ' ' && buf[i] < 0x7f;
    if (!ok) {
        log_warnx("--token-file %s: its first line must be the token (1 to %d printable "
                  "characters, no spaces)",
                  file, TOKEN_MAX);
        return NULL;
    }
    return xstrdup(buf);
}

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_'))
            return false;
    return true;
}

static int list_all(const char *name)
{
    for (size_t i = 0; i < n_client_kinds; i++) {
        const struct client_kind *k = &client_kinds[i];
        char *file = home_file(k);
        char err[600];
        json_t *servers =
            access(file, F_OK) == 0 ? client_conf_list(k, file, err, sizeof(err)) : NULL;
        const char *what = servers ? json_string_value(json_object_get(servers, name)) : NULL;
        printf("%-15s %s: %s\n", k->name, file,
               what                      ? what
               : servers                 ? "no isolategpt server"
               : access(file, F_OK) == 0 ? err
                                         : "no such file");
        json_decref(servers);
        free(file);
    }
    return EXIT_OK;
}

int cmd_client(int argc, char **argv)
{
    static const struct option opts[] = {{"name", required_argument, NULL, 'n'},
                                         {"file", required_argument, NULL, 'f'},
                                         {"app", required_argument, NULL, 'a'},
                                         {"user", required_argument, NULL, 'u'},
                                         {"config", required_argument, NULL, 'c'},
                                         {"url", required_argument, NULL, 'U'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    const char *name = "isolategpt", *file = NULL, *app = NULL, *user = NULL, *config = NULL,
               *url = NULL, *token_file = NULL;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'n':
            name = optarg;
            break;
        case 'f':
            file = optarg;
            break;
        case 'a':
            app = optarg;
            break;
        case 'u':
            user = optarg;
            break;
        case 'c':
            config = optarg;
            break;
        case 'U':
            url = optarg;
            break;
        case 't':
            token_file = optarg;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *verb = optind < argc ? argv[optind] : NULL;
    const char *which = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (!verb || optind + 2 < argc ||
        (strcmp(verb, "list") != 0 && strcmp(verb, "add") != 0 && strcmp(verb, "remove") != 0) ||
        (strcmp(verb, "list") != 0 && !which)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!name_ok(name)) {
        log_warnx("--name must be 1 to 64 of a-z, A-Z, 0-9, - and _");
        return EXIT_USAGE;
    }
    if (strcmp(verb, "list") == 0 && !which)
        return list_all(name);
    const struct client_kind *k = client_kind_find(which);
    if (!k) {
        log_warnx("unknown client %s (hub client --help lists them)", which);
        return EXIT_USAGE;
    }
    char *path = file ? xstrdup(file) : home_file(k);
    char err[1200];
    char *bak = NULL;
    int rc = EXIT_OK;
    if (strcmp(verb, "list") == 0) {
        json_t *servers = client_conf_list(k, path, err, sizeof(err));
        if (!servers) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        } else {
            const char *n;
            json_t *v;
            json_object_foreach(servers, n, v) printf("%s\t%s\n", n, json_string_value(v));
            json_decref(servers);
        }
    } else if (strcmp(verb, "remove") == 0) {
        int r = client_conf_remove(k, path, name, &bak, err, sizeof(err));
        if (r < 0) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        } else if (r == 0) {
            printf("%s: %s has no server %s\n", k->title, path, name);
        } else {
            printf("%s: removed %s from %s%s%s\n", k->title, name, path,
                   bak ? " (the old file is " : "", bak ? bak : "");
            if (bak)
                printf(")\n");
        }
    } else {
        struct client_entry e = {0};
        char *token = NULL, *exe = NULL, *conf = NULL;
        const char *args[12];
        size_t n = 0;
        if ((url || token_file) && !(url && token_file)) {
            log_warnx("--url and --token-file go together");
            rc = EXIT_USAGE;
        } else if (url && !k->url_key) {
            log_warnx("%s takes no HTTP servers from its file: add the stdio server (without "
                      "--url), which reaches the running hub on this host",
                      k->title);
            rc = EXIT_USAGE;
        } else if (url && strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0) {
            log_warnx("--url must be an http:// or https:// URL");
            rc = EXIT_USAGE;
        } else if (url) {
            if (!(token = read_token(token_file)))
                rc = EXIT_USAGE;
            e.url = url;
            e.token = token;
        } else if (!(exe = realpath("/proc/self/exe", NULL))) {
            log_warnx("the hub's own path: %s", strerror(errno));
            rc = EXIT_USAGE;
        } else {
            e.command = exe;
            args[n++] = "serve";
            args[n++] = "--stdio";
            if (config) {
                if (!(conf = realpath(config, NULL))) {
                    log_warnx("--config %s: %s", config, strerror(errno));
                    rc = EXIT_USAGE;
                }
                args[n++] = "--config";
                args[n++] = conf;
            }
            if (user) {
                args[n++] = "--user";
                args[n++] = user;
            }
            if (app) {
                args[n++] = "--app";
                args[n++] = app;
            }
            args[n] = NULL;
            e.args = args;
        }
        if (rc == EXIT_OK && client_conf_add(k, path, name, &e, &bak, err, sizeof(err)) < 0) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        }
        if (rc == EXIT_OK) {
            printf("%s: %s in %s (%s)\n", k->title, name, path, url ? url : "stdio");
            if (bak)
                printf("the old file is %s\n", bak);
            if (k->verify)
                printf("to check it: %s\n", k->verify);
            if (token)
                printf("the bearer token is written in the file: keep it private (mode %s)\n",
                       "as it was, 0600 when new");
        }
        if (token)
            memset(token, 0, strlen(token));
        free(token);
        free(exe);
        free(conf);
    }
    free(bak);
    free(path);
    return rc;
}
