/* `hub secrets set|list|rm`: the store of the tools' keys (hub/secrets/secrets.h).
 *
 * A value is read from standard input, never from the command line (where ps, the
 * shell's history and /proc/PID/cmdline would keep it); at a terminal it is read with
 * echo off. list shows names, hosts, header, query parameter, when each was set and
 * which spokes use it, never a value. */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "jsonfile.h"
#include "log.h"
#include "secret.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

int cmd_secrets(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hub secrets set NAME [--hosts H,...] [--header NAME] [--query NAME] < VALUE\n"
            "       hub secrets list [--format text|json]\n"
            "       hub secrets rm NAME\n\n"
            "The keys of the tools, kept by the hub (secrets.dir in hub.json, encrypted with\n"
            "the key in secrets.key_file or the systemd credential " SECRET_CREDENTIAL_ID
            "). A manifest\n"
            "names one with \"env\": {\"VAR\": {\"secret\": \"NAME\"}} (hub spokes add --secret\n"
            "VAR=NAME); its value never goes into a manifest, a log or an audit record.\n\n"
            "set reads the value from standard input (at a terminal, without echo; one\n"
            "trailing newline is dropped) and stores it, replacing the one of that name.\n"
            "  --hosts H,...      netproxy puts the value into requests to these hosts (exact\n"
            "                     names, or *.example.com); the spoke only ever holds a\n"
            "                     stand-in of the same shape, worthless anywhere else. Without\n"
            "                     --hosts the spoke's environment gets the value itself.\n"
            "  --header NAME      only in this request header (default: Authorization, or\n"
            "                     the header a known key shape is sent in: x-api-key for an\n"
            "                     Anthropic key); --header any: wherever the stand-in appears\n"
            "                     among the request's headers (an API that reflects a header\n"
            "                     can then hand the value back to the spoke)\n"
            "  --query NAME       also in this query parameter of the request's URL\n"
            "Setting a secret again keeps its hosts, header and query unless they are\n"
            "given; a running hub puts the new value into the next request.\n"
            "list shows every secret's name, hosts, header, query parameter, when it was\n"
            "set and the spokes whose manifests use it; never a value.\n"
            "rm removes a secret (a spoke that uses it no longer starts).\n\n"
            "  --format FMT       list: text (default) or json\n" CLI_COMMON_HELP);
}

/* ---- reading the value ---- */

static struct termios saved_tty;
static volatile sig_atomic_t tty_changed;

static void restore_tty(int sig)
{
    if (tty_changed)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The value into secret memory: a line at a terminal (echo off), else all of stdin
 * with one trailing newline dropped. NULL after saying why. */
static char *read_value(const char *name, size_t *len)
{
    char *buf = secret_alloc(SECRET_VALUE_MAX + 2);
    size_t n = 0;
    bool tty = isatty(STDIN_FILENO);
    if (tty) {
        /* Echo off before the prompt: what is typed after it is never shown. */
        if (tcgetattr(STDIN_FILENO, &saved_tty) == 0) {
            struct termios quiet = saved_tty;
            quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
            signal(SIGINT, restore_tty);
            signal(SIGTERM, restore_tty);
            signal(SIGTSTP, restore_tty);
            tty_changed = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
        }
        fprintf(stderr, "value of secret %s (not shown): ", name);
        fflush(stderr);
    }
    for (;;) {
        ssize_t r = read(STDIN_FILENO, buf + n, SECRET_VALUE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n > SECRET_VALUE_MAX || (tty && memchr(buf + n - (size_t)r, '\n', (size_t)r)))
            break;
    }
    if (tty) {
        if (tty_changed)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
        tty_changed = 0;
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGTSTP, SIG_DFL);
        fputc('\n', stderr);
        char *nl = memchr(buf, '\n', n);
        if (nl)
            n = (size_t)(nl - buf) + 1;
    }
    if (n > SECRET_VALUE_MAX) {
        log_warnx("the value is longer than %d bytes", SECRET_VALUE_MAX);
        secret_free(buf);
        return NULL;
    }
    if (n && buf[n - 1] == '\n')
        n--;
    if (n && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    if (n == 0) {
        log_warnx("no value on standard input (hub secrets set %s < FILE, or type it)", name);
        secret_free(buf);
        return NULL;
    }
    if (memchr(buf, '\0', n)) {
        log_warnx("the value holds a NUL byte");
        secret_free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* "a,b,c" into a NULL-terminated list; NULL after saying why. */
static char **parse_hosts(const char *csv)
{
    char **hosts = xcalloc(SECRET_MAX_HOSTS + 1, sizeof(char *));
    size_t n = 0;
    char *copy = xstrdup(csv), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (char *c = tok; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        if (!secret_host_valid(tok)) {
            log_warnx("--hosts: \"%.80s\" is not a host name (api.example.com, or "
                      "*.example.com for every name under example.com)",
                      tok);
            goto fail;
        }
        if (n == SECRET_MAX_HOSTS) {
            log_warnx("--hosts: at most %d hosts", SECRET_MAX_HOSTS);
            goto fail;
        }
        hosts[n++] = xstrdup(tok);
    }
    free(copy);
    if (n == 0) {
        log_warnx("--hosts needs at least one host");
        jf_strv_free(hosts);
        return NULL;
    }
    return hosts;
fail:
    free(copy);
    jf_strv_free(hosts);
    return NULL;
}

/* ---- the sub-commands ---- */

struct set_opts {
    const char *hosts, *header, *query;
};

static int cmd_set(struct hub_config *cfg, const char *name, const struct set_opts *o)
{
    char err[1024];
    if (!secret_name_valid(name)) {
        log_warnx("NAME must be 1 to 64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)");
        return EXIT_USAGE;
    }
    if ((o->header && !secret_header_valid(o->header)) ||
        (o->query && !secret_query_valid(o->query))) {
        log_warnx("--%s must be a %s name", o->header ? "header" : "query",
                  o->header ? "header" : "query parameter");
        return EXIT_USAGE;
    }
    struct secret_store *st = secret_store_new(cfg);
    struct secret_meta meta = {0};
    /* Set again: the hosts, header and query stay unless given, so that a rotation
     * (a new value alone) never turns an injected secret into one in the environment. */
    struct secret_meta old;
    int had = secret_store_get(st, name, &old, NULL, NULL, err, sizeof(err));
    if (had < 0) {
        log_warnx("%s", err);
        secret_store_free(st);
        return EXIT_USAGE;
    }
    if (had)
        secret_meta_copy(&meta, &old);
    str_copy(meta.name, name, sizeof(meta.name));
    int rc = EXIT_USAGE;
    char *value = NULL;
    if (o->hosts) {
        char **hosts = parse_hosts(o->hosts);
        if (!hosts)
            goto out;
        jf_strv_free(meta.hosts);
        meta.hosts = hosts;
    }
    if (!meta.hosts)
        meta.hosts = xcalloc(1, sizeof(char *));
    if (o->header)
        config_set(&meta.header, strcmp(o->header, "any") == 0 ? SECRET_HEADER_ANY : o->header);
    if (o->query)
        config_set(&meta.query, o->query);
    bool host_mode = meta.hosts[0] != NULL;
    if (!host_mode && (meta.header || meta.query)) {
        log_warnx("--header and --query need --hosts: they say where netproxy puts the value");
        goto out;
    }
    size_t len = 0;
    value = read_value(name, &len);
    if (!value)
        goto out;
    if (host_mode) {
        const char *why = secret_injectable(value, len);
        char *probe = why ? NULL : standin_make(value, len, err, sizeof(err));
        if (why || !probe) {
            log_warnx("secret %s cannot be put into requests (--hosts): %s", name, why ? why : err);
            goto out;
        }
        free(probe);
        /* Only one header unless the operator says any: a header the API reflects
         * (an echoed Origin, a request id) would otherwise hand the value back. */
        if (!meta.header)
            config_set(&meta.header, keylike_header(value));
    }
    bool created = false;
    if (secret_store_set(st, &meta, value, len, &created, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        goto out;
    }
    if (created)
        log_info("made the store key %s: keep a copy elsewhere (without it no secret can be "
                 "read again), or move it and name it in hub.json secrets.key_file",
                 secret_store_key_path(st));
    printf("secret %s %s (%s)\n", name, had ? "replaced" : "stored",
           host_mode ? "put into requests by netproxy" : "given to the spoke's environment");
    rc = EXIT_OK;
out:
    secret_free(value);
    if (had)
        secret_meta_clear(&old);
    secret_meta_clear(&meta);
    secret_store_free(st);
    return rc;
}

/* The spokes whose manifests name the secret, as a JSON array of "spoke (VAR)". */
static json_t *users_of(const struct manifest_set *ms, const char *name)
{
    json_t *out = json_array();
    for (size_t i = 0; i < ms->n; i++)
        for (size_t k = 0; k < ms->v[i]->n_secret_env; k++)
            if (strcmp(ms->v[i]->secret_env[k].secret, name) == 0) {
                char *u = xasprintf("%s (%s)", ms->v[i]->name, ms->v[i]->secret_env[k].var);
                json_array_append_new(out, json_string(u));
                free(u);
            }
    return out;
}

static char *join(const json_t *arr)
{
    size_t i, n = 0;
    json_t *v;
    json_array_foreach(arr, i, v) n += strlen(json_string_value(v)) + 2;
    char *s = xcalloc(n + 2, 1);
    json_array_foreach(arr, i, v)
    {
        if (i)
            strcat(s, ", ");
        strcat(s, json_string_value(v));
    }
    return s;
}

static int cmd_list(struct hub_config *cfg, const struct manifest_set *ms, bool json)
{
    char err[1024];
    struct secret_store *st = secret_store_new(cfg);
    struct secret_meta *v;
    size_t n;
    if (secret_store_list(st, &v, &n, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        secret_store_free(st);
        return EXIT_USAGE;
    }
    json_t *all = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *hosts = json_array();
        for (char **h = v[i].hosts; h && *h; h++)
            json_array_append_new(hosts, json_string(*h));
        json_t *o = json_pack("{s:s,s:o,s:s,s:o}", "name", v[i].name, "hosts", hosts, "set",
                              v[i].set_at, "used_by", users_of(ms, v[i].name));
        json_object_set_new(o, "mode", json_string(v[i].hosts[0] ? "inject" : "env"));
        if (v[i].header)
            json_object_set_new(o, "header", json_string(v[i].header));
        if (v[i].query)
            json_object_set_new(o, "query", json_string(v[i].query));
        json_array_append_new(all, o);
    }
    if (json) {
        char *text = json_dumps(all, JSON_INDENT(2));
        printf("%s\n", text);
        free(text);
    } else {
        printf("%zu secrets in %s\n", n, secret_store_dir(st));
        size_t i;
        json_t *o;
        json_array_foreach(all, i, o)
        {
            printf("\n%s\n", json_string_value(json_object_get(o, "name")));
            char *hosts = join(json_object_get(o, "hosts"));
            if (hosts[0])
                printf("  put into requests to %s", hosts);
            else
                printf("  given to the spoke's environment");
            const char *hdr = json_string_value(json_object_get(o, "header"));
            const char *q = json_string_value(json_object_get(o, "query"));
            /* No header in a record set before Authorization was the default: the
             * hub gives netproxy the one for the key's shape (spoke_secrets.c). */
            bool any = hdr && strcmp(hdr, SECRET_HEADER_ANY) == 0;
            const char *which = hdr ? hdr : "Authorization or the key's own";
            if (hosts[0])
                printf(" (%s%s%s%s)", any ? "any header" : "header ", any ? "" : which,
                       q ? ", query parameter " : "", q ? q : "");
            printf("\n  set:     %s\n", json_string_value(json_object_get(o, "set")));
            char *users = join(json_object_get(o, "used_by"));
            printf("  used by: %s\n", users[0] ? users : "no spoke");
            free(hosts);
            free(users);
        }
    }
    json_decref(all);
    secret_meta_list_free(v, n);
    secret_store_free(st);
    return EXIT_OK;
}

static int cmd_rm(struct hub_config *cfg, const struct manifest_set *ms, const char *name)
{
    char err[1024];
    struct secret_store *st = secret_store_new(cfg);
    int r = secret_store_rm(st, name, err, sizeof(err));
    secret_store_free(st);
    if (r < 0) {
        log_warnx("%s", err);
        return EXIT_USAGE;
    }
    if (r == 0) {
        log_warnx("no secret %s in the store", name);
        return EXIT_CALL_FAILED;
    }
    json_t *users = users_of(ms, name);
    char *u = join(users);
    printf("secret %s removed\n", name);
    if (u[0])
        log_warnx("these spokes use it and will not start until it is set again: %s", u);
    free(u);
    json_decref(users);
    return EXIT_OK;
}

int cmd_secrets(int argc, char **argv)
{
    static const struct option opts[] = {{"hosts", required_argument, NULL, 'H'},
                                         {"header", required_argument, NULL, 'E'},
                                         {"query", required_argument, NULL, 'Q'},
                                         {"format", required_argument, NULL, 'f'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    struct set_opts so = {0};
    bool json = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'H':
            so.hosts = optarg;
            break;
        case 'E':
            so.header = optarg;
            break;
        case 'Q':
            so.query = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                log_warnx("--format must be text or json");
                return EXIT_USAGE;
            }
            json = strcmp(optarg, "json") == 0;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *verb = optind < argc ? argv[optind] : NULL;
    const char *name = optind + 1 < argc ? argv[optind + 1] : NULL;
    int extra = argc - optind - (verb ? 1 : 0) - (name ? 1 : 0);
    bool is_set = verb && strcmp(verb, "set") == 0, is_rm = verb && strcmp(verb, "rm") == 0,
         is_list = verb && strcmp(verb, "list") == 0;
    if (!verb || extra > 0 || (!is_set && !is_rm && !is_list) || ((is_set || is_rm) && !name) ||
        (is_list && name) || (!is_set && (so.hosts || so.header || so.query))) {
        usage(stderr);
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    if (rc == EXIT_OK)
        rc = is_set  ? cmd_set(&cfg, name, &so)
             : is_rm ? cmd_rm(&cfg, &ms, name)
                     : cmd_list(&cfg, &ms, json);
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
