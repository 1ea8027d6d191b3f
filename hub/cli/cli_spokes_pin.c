/* `hub spokes add|update|verify`: bring any stdio MCP server in as a spoke, unchanged.
 *
 * add starts the server in its sandbox with a manifest that has no tools yet, asks
 * for initialize and tools/list through the hub's own runtime (the same jail, the
 * same checks as any call), shows what it offers and whether each tool looks
 * irreversible, and after the user's yes writes <spokes dir>/NAME.json with every
 * tool's MCP object pinned. update lists again and shows what changed, verify checks
 * what is installed against what the servers list now. */
#include "cli_catalog.h"
#include "cli_spokes_allow.h"
#include "cli_spokes_browser.h"
#include "cli_spokes_npm.h"
#include "cli_spokes_node.h"
#include "cli_spokes_npx.h"
#include "cli_spokes_remote.h"
#include "cli_spokes_oci.h"
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "jsonfile.h"
#include "rmtree.h"
#include "log.h"
#include "termtext.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cmd_spokes_pin(int argc, char **argv);

#define MAX_BINDS 16
#define MAX_ENV 32
#define MAX_LIST_PAGES 16
#define SHOW_COLS 70

static void usage(FILE *f)
{
    fprintf(f, "usage: hub spokes add NAME [OPTIONS] -- COMMAND [ARG...]\n"
               "       hub spokes add NAME [OPTIONS] -- npm:PACKAGE[@VERSION] [ARG...]\n"
               "       hub spokes add NAME [OPTIONS] -- https://HOST/PATH   (a remote server;\n"
               "                     its bearer: --secret MCP_REMOTE_BEARER=SECRET)\n"
               "       hub spokes add NAME [OPTIONS] oci:IMAGE[:TAG|@sha256:DIGEST] [ARG...]\n"
               "       hub spokes add NAME [--var V=VALUE]... [OPTIONS]   (the catalog's entry)\n"
               "       hub spokes update NAME [OPTIONS]\n"
               "       hub spokes verify [NAME] [OPTIONS]\n\n"
               "add starts the MCP server COMMAND as spoke NAME in its sandbox, asks it for\n"
               "its tools, shows them (and whether each looks irreversible, from its\n"
               "annotations), and after confirmation writes <spokes dir>/NAME.json with the\n"
               "tools pinned: a server that later changes a tool is refused. update shows\n"
               "what changed and pins it again after confirmation; verify checks that the\n"
               "installed servers still list what is pinned (exit 3 when one does not).\n\n"
               "  --runtime R        c, python or node (the seccomp preset and profile;\n"
               "                     default: node for a node command or script, else c)\n"
               "  --allow D,...      registrable domains the server may reach (via netproxy)\n"
               "  --ports P,...      destination ports (default 443)\n"
               "  --tcp HOST:PORT    raw TCP to HOST:PORT, reached at the same address from\n"
               "                     inside (repeatable): a database, redis; HOST may be a\n"
               "                     name, or an address, loopback and private ones too\n"
               "  --exec PROGRAM     a host program the server may run (repeatable; a name\n"
               "                     is looked up in PATH): it and the libraries it loads\n"
               "                     bound read-only, and processes allowed (git, kubectl);\n"
               "                     pkg:REL: the file REL of the server's npm: package\n"
               "  --bind-ro H[:P]    a host path bound read-only (repeatable); the code of a\n"
               "                     script named on the command line is bound by itself\n"
               "  --env N=V          an environment variable for the server (repeatable)\n"
               "  --secret N=SECRET  variable N holds secret SECRET of the store (hub secrets\n"
               "                     set), or a stand-in netproxy swaps for it (repeatable);\n"
               "                     refused when the server cannot reach the secret's hosts\n"
               "                     through netproxy (--allow, namespace isolation)\n"
               "  --secret-plain N=SECRET  the value itself, even of a secret set with\n"
               "                     --hosts: on purpose, in the manifest, audited at each start\n"
               "  --description T    the spoke's description (default: the server's name)\n"
               "  --memory-mb N      memory of its cgroup (RAM, shmem and tmpfs)\n"
               "  --nofile N         open files (RLIMIT_NOFILE; the node profile's is 1024)\n"
               "  --pids N           processes and threads of its cgroup\n"
               "  --nproc N          its RLIMIT_NPROC (the profile's: node 64; a browser needs\n"
               "                     hundreds)\n"
               "  --cpu-percent N    CPU share of its cgroup (100: one core)\n"
               "  --timeout-s S      a call's deadline, and its start's when longer than\n"
               "                     hub.json's start_timeout_ms\n"
               "  --node MAJOR       run the server with Node MAJOR from npm's registry (its\n"
               "                     build installed into the hub's store, bound read-only);\n"
               "                     without it, an npm: package whose engines.node wants a\n"
               "                     newer Node than the host's gets that one\n"
               "  --browser chromium a browser in the jail (Debian's chromium: apt-get install\n"
               "                     chromium): the program, its resources and fonts bound,\n"
               "                     a launcher with the flags a jail needs at\n"
               "                     " BROWSER_LAUNCHER " (CHROME_PATH, PUPPETEER_EXECUTABLE_PATH\n"
               "                     name it), processes and memory for a browser\n"
               "  --npm-scripts      run the install scripts of an npm: package (by default\n"
               "                     npm runs with --ignore-scripts)\n"
               "  --registry-secret S  an oci: image's registry credentials: secret S of the\n"
               "                     store, USER:PASSWORD (given to skopeo in a 0600 file)\n"
               "  --installed DIR    npm:PACKAGE@VERSION as installed in the npm prefix DIR\n"
               "                     (npm ci of a lockfile), checked against its lockfile,\n"
               "                     instead of installed by npm\n"
               "  --var V=VALUE      a variable of the catalog entry (hub catalog show NAME)\n"
               "  --catalog-entry F  the catalog entry this add follows: the package's\n"
               "                     integrity and the server's tools must be the entry's\n"
               "  --no-roots         offer the server no roots (by default roots/list is\n"
               "                     answered with its /data and the paths bound for it)\n"
               "  --yes              do not ask\n" CLI_COMMON_HELP);
}

struct pin_opts {
    const char *runtime, *allow, *ports, *description;
    const char *binds[MAX_BINDS];
    size_t n_binds;
    const char *env[MAX_ENV];
    size_t n_env;
    const char *secret[MAX_ENV];
    bool secret_plain[MAX_ENV]; /* --secret-plain */
    size_t n_secret;
    const char *tcp[MANIFEST_MAX_TCP];
    size_t n_tcp;
    char *exec[MANIFEST_MAX_EXEC];
    size_t n_exec;
    bool yes, no_roots, npm_scripts;
    unsigned node;               /* --node MAJOR: npm's node build of that version */
    const char *registry_secret; /* --registry-secret: an oci: image's registry login */
    const char *installed;       /* --installed: npm: from this prefix */
    const char *catalog_entry;   /* --catalog-entry: the checks of the catalog */
    const char *browser;         /* --browser: the browser profile (cli_spokes_browser.h) */
    const char *vars[MAX_ENV];   /* --var, for an add from the catalog */
    size_t n_vars;
    /* --memory-mb, --nofile, --pids, --cpu-percent, --timeout-s: manifest limits */
    struct {
        uint64_t value;
    } limits[6];
};

/* The limit options: manifest "limits" keys and their bounds (as the manifest's). */
static const struct {
    const char *option, *key;
    uint64_t max;
} limit_opts[] = {{"memory-mb", "memory_mb", 1 << 20}, {"nofile", "nofile", 1 << 20},
                  {"pids", "pids", 1 << 16},           {"cpu-percent", "cpu_percent", 100000},
                  {"timeout-s", "call_s", 86400},      {"nproc", "nproc", 1 << 16}};

/* --exec: an absolute path as given, or a name looked up where the jails' PATH looks;
 * an executable regular file either way. */
static char *find_program(const char *name)
{
    static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
    struct stat st;
    if (name[0] == '/')
        return stat(name, &st) == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0
                   ? xstrdup(name)
                   : NULL;
    if (!*name || strchr(name, '/'))
        return NULL;
    for (size_t i = 0; i < ARRAY_LEN(dirs); i++) {
        char *path = xasprintf("%s/%s", dirs[i], name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
            return path;
        free(path);
    }
    return NULL;
}

/* ---- showing what a server offers ---- */

/* readOnlyHint true: no; otherwise destructiveHint absent or true: yes (MCP's
 * defaults: a tool is assumed destructive unless it says otherwise). */
static bool guess_irreversible(const json_t *tool, const char **why)
{
    const json_t *ann = json_object_get(tool, "annotations");
    if (json_is_true(json_object_get(ann, "readOnlyHint"))) {
        *why = "readOnlyHint";
        return false;
    }
    const json_t *d = json_object_get(ann, "destructiveHint");
    if (json_is_false(d)) {
        *why = "destructiveHint false";
        return false;
    }
    *why = d ? "destructiveHint" : "no destructiveHint";
    return true;
}

/* Each tool whole, as the model will read it: its name and title, its description
 * line by line (neutralised: what a terminal would hide or reorder is shown escaped),
 * whether it looks irreversible, and a warning for characters a reader does not see
 * anywhere in it (a manifest with tags, bidi or control characters is refused). */
static void show_tools(const json_t *tools, const json_t *keep_from)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        char name[80], title[SHOW_COLS + 8];
        hub_text_neutral(json_object_get(t, "name"), name, sizeof(name));
        const char *why;
        bool irr = guess_irreversible(t, &why);
        const json_t *old = NULL;
        size_t j;
        json_t *k;
        json_array_foreach(keep_from, j, k)
        {
            if (pin_json_equal(json_object_get(k, "name"), json_object_get(t, "name")))
                old = json_object_get(k, "irreversible");
        }
        if (old) {
            irr = json_is_true(old);
            why = "as pinned before";
        }
        printf("    %s: %s (%s)\n", name, irr ? "irreversible" : "reversible", why);
        const json_t *ti = json_object_get(t, "title");
        if (json_is_string(ti)) {
            hub_text_neutral(ti, title, sizeof(title));
            printf("      title: %s\n", title);
        }
        const char *desc = json_string_value(json_object_get(t, "description"));
        if (desc && desc[0]) {
            struct tt_stream st;
            fflush(stdout);
            tt_stream_init(&st, stdout, "      | ", 0);
            tt_stream_write(&st, desc, strlen(desc));
            tt_stream_end(&st);
        }
        struct tt_hidden h;
        char first[256];
        bool refused = manifest_hidden_chars(t, &h, first, sizeof(first));
        if (refused || h.invisible)
            printf("      ! %zu Unicode tags, %zu bidi controls, %zu control and %zu zero-width "
                   "characters a reader does not see (first in %s)%s\n",
                   h.tags, h.bidi, h.controls, h.invisible, first[0] == '.' ? first + 1 : first,
                   refused ? ": this server cannot be pinned" : "");
    }
}

static bool confirm(const char *question)
{
    printf("%s [y/N] ", question);
    fflush(stdout);
    char line[32];
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

/* ---- discovery: the server's tools through the hub ---- */

struct discovered {
    json_t *tools; /* every page */
    json_t *info;  /* initialize's answer */
};

/* Starts the server of root (a manifest without tools) through a hub of its own and
 * lists its tools. 0, or -1 with err. */
static int discover(struct hub_config *cfg, const json_t *root, const char *path, bool debug,
                    struct discovered *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    json_t *copy = json_deep_copy(root);
    json_object_del(copy, "tools");
    struct manifest *m = manifest_from_json(copy, path, true, err, errlen);
    json_decref(copy);
    if (!m)
        return -1;
    struct manifest *one[2] = {m, NULL};
    struct manifest_set set = {.v = one, .n = 1};
    struct event_base *base = event_base_new();
    struct hub *h = hub_new(cfg, &set, base, debug, err, errlen);
    int rc = -1;
    if (h) {
        struct call_opts o = {.user = cfg->user};
        json_t *all = json_array(), *params = json_object();
        for (int page = 0; page < MAX_LIST_PAGES; page++) {
            json_t *res = NULL;
            const char *layer = NULL;
            if (hub_request_sync(h, &o, m->name, "tools/list", params, &res, err, errlen, &layer) !=
                0)
                break;
            json_array_extend(all, json_object_get(res, "tools"));
            const json_t *cursor = json_object_get(res, "nextCursor");
            json_decref(params);
            params = cursor ? json_pack("{s:O}", "cursor", cursor) : NULL;
            if (!out->info) {
                const json_t *info = hub_spoke_server_info(h, NULL, m->name, NULL);
                out->info = info ? json_deep_copy(info) : json_object();
            }
            json_decref(res);
            if (!params) {
                rc = 0;
                break;
            }
        }
        json_decref(params);
        if (rc == 0 && json_array_size(all) == 0) {
            snprintf(err, errlen, "the server lists no tools");
            rc = -1;
        }
        if (rc == 0)
            out->tools = all;
        else
            json_decref(all);
        hub_free(h);
    }
    event_base_free(base);
    manifest_free(m);
    if (rc < 0) {
        json_decref(out->info);
        out->info = NULL;
    }
    return rc;
}

/* The tools to write: each as listed, with "irreversible" as pinned before (same
 * name) or guessed from its annotations. */
static json_t *tools_to_pin(const json_t *listed, const json_t *old_tools)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(listed, i, t)
    {
        json_t *o = json_deep_copy(t);
        const char *why;
        bool irr = guess_irreversible(t, &why);
        size_t j;
        json_t *k;
        json_array_foreach(old_tools, j, k)
        {
            if (pin_json_equal(json_object_get(k, "name"), json_object_get(t, "name")) &&
                json_is_boolean(json_object_get(k, "irreversible")))
                irr = json_is_true(json_object_get(k, "irreversible"));
        }
        json_object_set_new(o, "irreversible", json_boolean(irr));
        json_array_append_new(out, o);
    }
    return out;
}

/* True when a hub would load root (every schema compiles, ...). */
static bool pinnable(const json_t *root, const char *path, char *err, size_t errlen)
{
    struct manifest *m = manifest_from_json(root, path, false, err, errlen);
    manifest_free(m);
    return m != NULL;
}

/* Writes root to path atomically, after checking that a hub would load it. */
static int write_manifest(const json_t *root, const char *path, char *err, size_t errlen)
{
    if (!pinnable(root, path, err, errlen))
        return -1;
    char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    int rc = json_dump_file(root, tmp, JSON_INDENT(2) | JSON_ENSURE_ASCII);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1;
    if (rc < 0) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* The revision the server spoke, pinned with its tools: what a tool may carry and
 * what a result is checked for follow from it. */
static void pin_protocol(json_t *root, const struct discovered *d)
{
    const json_t *v = json_object_get(d->info, "protocolVersion");
    if (json_is_string(v))
        json_object_set(root, "protocol", (json_t *)v);
}

/* "protocol: pinned A, the server speaks B", or NULL when the same (a manifest
 * without one pins none). */
static char *protocol_diff(const json_t *root, const struct discovered *d)
{
    const char *pinned = json_string_value(json_object_get(root, "protocol"));
    const char *now = json_string_value(json_object_get(d->info, "protocolVersion"));
    if (!pinned || !now || strcmp(pinned, now) == 0)
        return NULL;
    return xasprintf("protocol: pinned MCP %.40s, the server speaks %.40s", pinned, now);
}

/* The last lines of the spoke's log on stderr, quoted (the server wrote them), after
 * its path: what a server says when it cannot start. */
#define LOG_TAIL_LINES 12
#define LOG_TAIL_BYTES 4096
static void show_log_tail(const struct hub_config *cfg, const char *name)
{
    char *path = hub_spoke_log_path(cfg, cfg->user, name, NULL);
    FILE *f = fopen(path, "r");
    if (!f && errno == ENOENT) {
        /* Refused before it ran (the jail's setup, above): nothing to show. */
        log_warnx("it wrote no log (%s): it never ran", path);
        free(path);
        return;
    }
    if (!f) {
        log_warnx("its log %s: %s", path, strerror(errno));
        free(path);
        return;
    }
    char buf[LOG_TAIL_BYTES + 1];
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    long from = size > LOG_TAIL_BYTES ? size - LOG_TAIL_BYTES : 0;
    size_t n = fseek(f, from, SEEK_SET) == 0 ? fread(buf, 1, LOG_TAIL_BYTES, f) : 0;
    fclose(f);
    buf[n] = '\0';
    /* From the start of the LOG_TAIL_LINES-th line before the end. */
    size_t start = n, lines = 0;
    while (start > 0 && n > 0) {
        if (buf[start - 1] == '\n' && start != n && ++lines == LOG_TAIL_LINES)
            break;
        start--;
    }
    log_warnx("the last lines of its log, %s:", path);
    fflush(stderr);
    struct tt_stream ts;
    tt_stream_init(&ts, stderr, "  | ", 0);
    tt_stream_write(&ts, buf + start, n - start);
    tt_stream_end(&ts);
    free(path);
}

/* "package: npm NAME 1.0.0 -> 1.1.0" (or its integrity changed under the same
 * version), or NULL when the same. */
static char *package_diff(const json_t *was, const json_t *now)
{
    const char *v0 = json_string_value(json_object_get(was, "version"));
    const char *v1 = json_string_value(json_object_get(now, "version"));
    const char *i0 = json_string_value(json_object_get(was, "integrity"));
    const char *i1 = json_string_value(json_object_get(now, "integrity"));
    const char *npm = json_string_value(json_object_get(now, "npm"));
    if (v0 && v1 && strcmp(v0, v1) != 0)
        return xasprintf("package: npm %s %s -> %s", npm, v0, v1);
    if (i0 && i1 && strcmp(i0, i1) != 0)
        return xasprintf("package: npm %s %s: integrity changed under the same version: pinned "
                         "%.100s, now %.100s",
                         npm, v1, i0, i1);
    return NULL;
}

/* Points the manifest's command and mounts at the new install (old_dir ->
 * package.dir) and pins package. */
static void move_package(json_t *root, const char *old_dir, json_t *package)
{
    const char *new_dir = json_string_value(json_object_get(package, "dir"));
    size_t n = strlen(old_dir);
    static const char *const lists[] = {"command", "mounts", "exec", NULL};
    for (size_t l = 0; lists[l]; l++) {
        json_t *arr = json_object_get(root, lists[l]);
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v)
        {
            const char *s = json_string_value(v);
            if (s && strncmp(s, old_dir, n) == 0 && (s[n] == '\0' || s[n] == '/' || s[n] == ':')) {
                char *moved = xasprintf("%s%s", new_dir, s + n);
                json_array_set_new(arr, i, json_string(moved));
                free(moved);
            }
        }
    }
    json_object_set(root, "package", package);
}

/* ---- add ---- */

/* The nearest enclosing "node_modules" of a script (its package and every dependency),
 * else its directory. */
static char *code_root(const char *file)
{
    char *copy = xstrdup(file);
    for (char *p = dirname(copy); strcmp(p, "/") != 0; p = dirname(p)) {
        const char *base = strrchr(p, '/');
        if (base && strcmp(base + 1, "node_modules") == 0) {
            char *r = xstrdup(p);
            free(copy);
            return r;
        }
    }
    free(copy);
    copy = xstrdup(file);
    char *r = xstrdup(dirname(copy));
    free(copy);
    return r;
}

static bool system_path(const char *p)
{
    static const char *const sys[] = {"/usr/", "/lib", "/bin/", "/sbin/", "/etc/", NULL};
    for (size_t i = 0; sys[i]; i++)
        if (strncmp(p, sys[i], strlen(sys[i])) == 0)
            return true;
    return false;
}

/* A script whose first line names node ("#!/usr/bin/env node", npm's .bin links). */
static bool node_script(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[128] = "";
    bool yes = fgets(line, sizeof(line), f) && strncmp(line, "#!", 2) == 0 && strstr(line, "node");
    fclose(f);
    return yes;
}

static int add_strings(json_t *arr, const char *csv, bool ports, char *err, size_t errlen)
{
    char *copy = xstrdup(csv), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!ports) {
            json_array_append_new(arr, json_string(tok));
            continue;
        }
        uint64_t port;
        if (!parse_u64(tok, 1, 65535, &port)) {
            snprintf(err, errlen, "--ports: \"%s\" is not a port", tok);
            free(copy);
            return -1;
        }
        json_array_append_new(arr, json_integer((json_int_t)port));
    }
    free(copy);
    return 0;
}

/* --secret VAR=NAME: "env": {"VAR": {"secret": "NAME"}}. */
static int add_secret_env(json_t *root, const struct pin_opts *po, char *err, size_t errlen)
{
    json_t *env = json_object_get(root, "env");
    if (!env) {
        env = json_object();
        json_object_set_new(root, "env", env);
    }
    for (size_t i = 0; i < po->n_secret; i++) {
        const char *eq = strchr(po->secret[i], '=');
        if (!eq || eq == po->secret[i] || !secret_name_valid(eq + 1)) {
            snprintf(err, errlen, "--secret must be VAR=SECRET (\"%.60s\")", po->secret[i]);
            return -1;
        }
        char *n = xstrndup(po->secret[i], (size_t)(eq - po->secret[i]));
        json_t *ref = json_pack("{s:s}", "secret", eq + 1);
        if (po->secret_plain[i])
            json_object_set_new(ref, "plain", json_true());
        json_object_set_new(env, n, ref);
        free(n);
    }
    return 0;
}

/* "a,b,c" as a NULL-terminated vector (jf_strv_free). */
static char **split_commas(const char *list)
{
    char *copy = xstrdup(list), *save = NULL;
    char **v = xcalloc(1, sizeof(char *));
    size_t n = 0;
    for (char *d = strtok_r(copy, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
        v = xrealloc(v, (n + 2) * sizeof(char *));
        v[n++] = xstrdup(d);
        v[n] = NULL;
    }
    free(copy);
    return v;
}

/* Says what --env and --secret mean for the server's keys before anything starts: a
 * literal value that looks like a key is warned about (it would sit in the manifest
 * and the jail); a secret must be in the store, and its hosts within --allow. */
static int check_keys(const struct hub_config *cfg, const struct pin_opts *po)
{
    for (size_t i = 0; i < po->n_env; i++) {
        const char *eq = strchr(po->env[i], '='), *why;
        if (eq && keylike(eq + 1, &why))
            log_warnx("--env %.*s=...: the value looks like %s; it would be written into the "
                      "manifest and given to the server as it is: keep it in the secret store "
                      "(hub secrets set NAME) and use --secret %.*s=NAME",
                      (int)(eq - po->env[i]), po->env[i], why, (int)(eq - po->env[i]), po->env[i]);
    }
    struct secret_store *st = secret_store_new(cfg);
    int rc = 0;
    for (size_t i = 0; i < po->n_secret && rc == 0; i++) {
        const char *eq = strchr(po->secret[i], '=');
        if (!eq || !secret_name_valid(eq + 1))
            continue; /* said by new_manifest */
        struct secret_meta meta;
        char err[512];
        int r = secret_store_get(st, eq + 1, &meta, NULL, NULL, err, sizeof(err));
        if (r <= 0) {
            if (r == 0)
                log_warnx("secret %s is not in the store %s: add it first with `hub secrets set "
                          "%s`",
                          eq + 1, secret_store_dir(st), eq + 1);
            else
                log_warnx("%s", err);
            rc = -1;
            break;
        }
        /* Fail closed (spoke_secrets.h): said here, before anything is installed. */
        char **allow = po->allow ? split_commas(po->allow) : NULL;
        char why[300];
        if (meta.hosts[0] && po->secret_plain[i])
            log_warnx("secret %s is given to the server as it is (--secret-plain), although it "
                      "is set for %s: the manifest says so and each start is audited",
                      meta.name, meta.hosts[0]);
        else if (meta.hosts[0] &&
                 !secret_hosts_reachable(&meta, allow, cfg->isolation == ISO_NAMESPACE, why,
                                         sizeof(why))) {
            log_warnx("--secret %s: the secret is put into requests to %s by netproxy, but %s "
                      "(%s isolation): refused rather than handing the server the value. Add "
                      "their domains to --allow (in namespace isolation), or hand it the value "
                      "on purpose with --secret-plain %s",
                      po->secret[i], meta.hosts[0], why, isolation_name(cfg->isolation),
                      po->secret[i]);
            rc = -1;
        }
        jf_strv_free(allow);
        secret_meta_clear(&meta);
    }
    secret_store_free(st);
    return rc;
}

/* Code under a path the jail makes its own (/tmp, /data, ...: a clone under /tmp, a
 * server unpacked there) cannot be bound where it is: it is bound at
 * /opt/spoke-code/N/BASENAME instead, and each argument under it rewritten to match (the hub
 * maps them back in the modes without a mount namespace). */
#define RELOCATED_CODE "/opt/spoke-code"
static void relocate_code(json_t *mounts, json_t *argv)
{
    size_t i;
    json_t *v;
    json_array_foreach(mounts, i, v)
    {
        const char *src = json_string_value(v);
        if (strchr(src, ':') || !manifest_mount_dst_reserved(src))
            continue;
        /* The last name stays: node finds packages in a directory named node_modules. */
        char *dst = xasprintf(RELOCATED_CODE "/%zu/%s", i, strrchr(src, '/') + 1);
        size_t n = strlen(src), k;
        json_t *a;
        json_array_foreach(argv, k, a)
        {
            const char *arg = json_string_value(a);
            if (strncmp(arg, src, n) == 0 && (arg[n] == '\0' || arg[n] == '/')) {
                char *moved = xasprintf("%s%s", dst, arg + n);
                json_array_set_new(argv, k, json_string(moved));
                free(moved);
            }
        }
        char *item = xasprintf("%s:%s", src, dst);
        json_array_set_new(mounts, i, json_string(item));
        free(item);
        free(dst);
    }
}

/* The manifest of NAME for COMMAND, tools not yet known. */
static json_t *new_manifest(const char *name, const struct pin_opts *po, char **cmd, int ncmd,
                            char *err, size_t errlen)
{
    json_t *argv = json_array(), *mounts = json_array();
    const char *runtime = po->runtime;
    char *first = NULL;
    /* A script run by node (an npm .bin link): node and the script itself, so that the
     * jail needs no /usr/bin/env and no shell. */
    if (cmd[0][0] == '/' || strchr(cmd[0], '/')) {
        first = realpath(cmd[0], NULL);
        if (first && node_script(first) && (!runtime || strcmp(runtime, "node") == 0)) {
            json_array_append_new(argv, json_string("node"));
            runtime = "node";
        } else if (!first) {
            first = xstrdup(cmd[0]);
        }
    }
    if (!runtime) {
        const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
        runtime = strcmp(base, "node") == 0 || strcmp(base, "nodejs") == 0 ? "node" : "c";
    }
    for (int i = 0; i < ncmd; i++) {
        const char *arg = i == 0 && first ? first : cmd[i];
        json_array_append_new(argv, json_string(arg));
        /* The code a command line names (a script, not the program): bound for it. */
        struct stat st;
        if (arg[0] == '/' && !system_path(arg) && stat(arg, &st) == 0 && S_ISREG(st.st_mode) &&
            (i > 0 || json_array_size(argv) > 1)) {
            char *root = code_root(arg);
            bool have = false;
            size_t k;
            json_t *v;
            json_array_foreach(mounts, k, v) have |= strcmp(json_string_value(v), root) == 0;
            if (!have)
                json_array_append_new(mounts, json_string(root));
            free(root);
        }
    }
    free(first);
    for (size_t i = 0; i < po->n_binds; i++)
        json_array_append_new(mounts, json_string(po->binds[i]));
    relocate_code(mounts, argv);
    json_t *root =
        json_pack("{s:s,s:s,s:o,s:s}", "name", name, "description",
                  po->description ? po->description : name, "command", argv, "runtime", runtime);
    if (json_array_size(mounts))
        json_object_set(root, "mounts", mounts);
    if (po->no_roots)
        json_object_set_new(root, "roots", json_false());
    json_t *limits = json_object();
    for (size_t i = 0; i < ARRAY_LEN(limit_opts); i++)
        if (po->limits[i].value)
            json_object_set_new(limits, limit_opts[i].key,
                                json_integer((json_int_t)po->limits[i].value));
    /* --timeout-s also gives a slow server that long to start. */
    json_t *call_s = json_object_get(limits, "call_s");
    if (call_s)
        json_object_set(limits, "start_s", call_s);
    if (json_object_size(limits))
        json_object_set(root, "limits", limits);
    json_decref(limits);
    json_decref(mounts);
    if (po->allow || po->n_tcp) {
        json_t *net = json_object(), *allow = json_array();
        json_object_set_new(net, "allow", allow);
        if (po->allow && add_strings(allow, po->allow, false, err, errlen) < 0) {
            json_decref(net);
            goto fail;
        }
        if (po->n_tcp) {
            json_t *tcp = json_array();
            json_object_set_new(net, "tcp", tcp);
            for (size_t i = 0; i < po->n_tcp; i++)
                json_array_append_new(tcp, json_string(po->tcp[i]));
        }
        if (po->ports) {
            json_t *ports = json_array();
            json_object_set_new(net, "ports", ports);
            if (add_strings(ports, po->ports, true, err, errlen) < 0)
                goto fail;
        }
        json_object_set_new(root, "network", net);
    }
    if (po->n_exec) {
        json_t *exec = json_array();
        for (size_t i = 0; i < po->n_exec; i++)
            json_array_append_new(exec, json_string(po->exec[i]));
        json_object_set_new(root, "exec", exec);
    }
    if (po->n_env) {
        json_t *env = json_object();
        for (size_t i = 0; i < po->n_env; i++) {
            const char *eq = strchr(po->env[i], '=');
            if (!eq || eq == po->env[i]) {
                snprintf(err, errlen, "--env must be NAME=VALUE (\"%.60s\")", po->env[i]);
                json_decref(env);
                goto fail;
            }
            char *n = xstrndup(po->env[i], (size_t)(eq - po->env[i]));
            json_object_set_new(env, n, json_string(eq + 1));
            free(n);
        }
        json_object_set_new(root, "env", env);
    }
    if (po->n_secret && add_secret_env(root, po, err, errlen) < 0)
        goto fail;
    return root;
fail:
    json_decref(root);
    return NULL;
}

static void print_summary(const char *name, const json_t *root, const struct discovered *d,
                          const struct hub_config *cfg)
{
    const json_t *si = json_object_get(d->info, "serverInfo");
    char sname[80], sver[40];
    hub_text_neutral(json_object_get(si, "name"), sname, sizeof(sname));
    hub_text_neutral(json_object_get(si, "version"), sver, sizeof(sver));
    char proto[40];
    hub_text_neutral(json_object_get(d->info, "protocolVersion"), proto, sizeof(proto));
    printf("spoke %s: server \"%s\" %s (MCP %s), runtime %s, started in %s mode\n", name, sname,
           sver, proto, json_string_value(json_object_get(root, "runtime")),
           isolation_name(cfg->isolation));
    char *cmd = json_dumps(json_object_get(root, "command"), JSON_COMPACT);
    printf("  command:  %s\n", cmd);
    free(cmd);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(root, "mounts"), i, v)
    {
        const char *m = json_string_value(v), *colon = strchr(m, ':');
        printf("  binds read-only: %.*s%s%s (the server's code)\n",
               colon ? (int)(colon - m) : (int)strlen(m), m, colon ? " at " : "",
               colon ? colon + 1 : "");
    }
    const json_t *allow = json_object_get(json_object_get(root, "network"), "allow");
    json_array_foreach(json_object_get(root, "exec"), i, v)
        printf("  may run:  %s (bound read-only with its libraries; processes allowed)\n",
               json_string_value(v));
    const json_t *tcp = json_object_get(json_object_get(root, "network"), "tcp");
    if (allow) {
        char *a = json_dumps(allow, JSON_COMPACT);
        printf("  network:  %s through netproxy\n", a);
        free(a);
        if (tcp) {
            char *t = json_dumps(tcp, JSON_COMPACT);
            printf("  raw TCP:  %s through netproxy\n", t);
            free(t);
        }
    } else {
        printf("  network:  none\n");
    }
    const json_t *caps = json_object_get(d->info, "capabilities");
    printf("  offers:   tools");
    static const char *const more[] = {"resources", "prompts", "completions", "logging", NULL};
    for (size_t k = 0; more[k]; k++)
        if (json_object_get(caps, more[k]))
            printf(", %s", more[k]);
    printf("\n  %zu tools:\n", json_array_size(d->tools));
}

/* --node MAJOR, or the npm: package's engines.node when the host's node is older: that
 * node from npm's registry in the store, the command's "node" replaced by it and its
 * install bound (relocated like code when the store is under /tmp). 0 (nothing to do,
 * or done), -1 after saying why; *installed 1 once installed, -1 for a usage error. */
static int use_node(const struct hub_config *cfg, const char *name, const struct pin_opts *po,
                    const json_t *package, json_t *root, int *installed)
{
    unsigned major = po->node;
    if (!major && package) {
        unsigned want = node_engines_major(package), host = node_host_major();
        if (want && host && want > host) {
            printf("spoke %s: %s wants Node %u or later (its engines.node), this host's is %u: "
                   "Node %u from npm's registry for it (--node %u)\n",
                   name, json_string_value(json_object_get(package, "npm")), want, host, want,
                   want);
            fflush(stdout);
            major = want;
        }
    }
    if (!major)
        return 0;
    json_t *argv = json_object_get(root, "command");
    if (strcmp(json_string_value(json_object_get(root, "runtime")), "node") != 0 ||
        strcmp(json_string_value(json_array_get(argv, 0)), "node") != 0) {
        log_warnx("--node is for a server node runs (a script, an npm: package)");
        *installed = -1;
        return -1;
    }
    char err[1024], *bin = NULL, *code = NULL;
    *installed = 1; /* its store is removed if anything fails from here */
    if (node_install(cfg, name, major, &bin, &code, err, sizeof(err)) < 0) {
        if (!strstr(err, "its output"))
            log_warnx("%s", err);
        log_warnx("nothing written");
        return -1;
    }
    json_array_set_new(argv, 0, json_string(bin));
    json_t *mounts = json_object_get(root, "mounts");
    if (!mounts)
        json_object_set_new(root, "mounts", mounts = json_array());
    json_array_append_new(mounts, json_string(code));
    relocate_code(mounts, argv);
    free(bin);
    free(code);
    return 0;
}

static int cmd_add(struct hub_config *cfg, const struct cli_common *common, const char *name,
                   const struct pin_opts *po, char **cmd, int ncmd)
{
    char err[1024];
    if (!manifest_valid_app_name(name)) {
        log_warnx("NAME must match [a-z][a-z0-9_]{0,63}, with no \"__\" and no \"_\" at the end");
        return EXIT_USAGE;
    }
    char *path = xasprintf("%s/%s.json", cfg->spokes_dir, name);
    int rc = EXIT_USAGE;
    json_t *root = NULL;
    struct discovered d = {0};
    struct npm_install pkg = {0};
    struct oci_image img = {0};
    const char *spec = NULL; /* npm:SPEC or npx's */
    int rest = 0;
    struct npx_cmd npx = {0};
    int node_installed = 0;
    struct remote_target remote = {0};
    if (access(path, F_OK) == 0) {
        log_warnx("%s exists: `hub spokes update %s` pins a changed server again", path, name);
        goto out;
    }
    /* https://HOST/PATH: a remote server, run as the bridge spoke with that URL. */
    struct pin_opts remote_po;
    char *remote_cmd[2] = {REMOTE_BRIDGE, NULL};
    if (remote_is_url(cmd[0])) {
        remote_po = *po;
        const char *oauth = NULL;
        if (ncmd == 1 &&
            remote_target_init(&remote, cmd[0], po->allow, po->ports, err, sizeof(err)) == 0 &&
            (oauth = remote_oauth_bearer(cfg, name, &remote, po->secret, po->n_secret)) &&
            remote_po.n_secret < MAX_ENV) {
            remote_po.secret[remote_po.n_secret++] = oauth;
            printf("spoke %s: its bearer is the token of `hub spokes login %s`\n", name, name);
        }
        if (ncmd != 1 || !remote.url ||
            remote_check_bearer(cfg, &remote, remote_po.secret, remote_po.n_secret, err,
                                sizeof(err)) < 0) {
            log_warnx("%s", ncmd != 1 ? "a remote server's URL takes no arguments" : err);
            remote_target_free(&remote);
            goto out;
        }
        remote_po.allow = remote.allow;
        remote_po.ports = remote.ports;
        remote_po.runtime = "c";
        remote_cmd[1] = remote.url;
        po = &remote_po;
        cmd = remote_cmd;
        ncmd = 2;
    }
    if (check_keys(cfg, po) < 0)
        goto out;
    if (po->allow && allow_check(cfg, name, po->allow) < 0)
        goto out; /* exit 2: a refused --allow */
    /* npm:PACKAGE[@VERSION], or the `npx -y PACKAGE ...` of a client's configuration:
     * installed into the hub's store, the command its bin script there. */
    if (strncmp(cmd[0], "npm:", 4) == 0) {
        spec = cmd[0] + 4;
        rest = 1;
    } else {
        enum npx_form form = npx_parse(cmd, ncmd, &npx);
        if (form == NPX_REFUSED) {
            log_warnx("spoke %s: %s is not taken as a package, and npm or npx would run inside "
                      "the jail, which reaches no registry: give the package as "
                      "npm:PACKAGE[@VERSION], which the hub installs (`hub spokes add %s -- "
                      "npm:PACKAGE ARGS...`; a program of the package other than its own: "
                      "`npx -y --package PACKAGE -- PROGRAM ARGS...`)",
                      name, npx.why, name);
            goto out;
        }
        if (form == NPX_PACKAGE) {
            spec = npx.spec;
            rest = npx.rest;
            printf("spoke %s: \"%s\" is an npx command: taken as npm:%s%s%s\n", name, cmd[0], spec,
                   npx.bin ? ", its program " : "", npx.bin ? npx.bin : "");
            fflush(stdout); /* before npm's progress on stderr */
        }
    }
    for (size_t i = 0; i < po->n_exec && !spec; i++)
        if (strncmp(po->exec[i], "pkg:", 4) == 0) {
            log_warnx("--exec %s names a file of the server's npm package: give the server as "
                      "npm:PACKAGE (or its npx command)",
                      po->exec[i]);
            goto out;
        }
    if (oci_is_ref(cmd[0])) {
        /* A container image: pulled, unpacked and pinned by digest; its Entrypoint and
         * Cmd are the command, run in its own root (cli_spokes_oci.c). */
        json_t *args = json_array(); /* ARG... replace the image's Cmd */
        for (int i = 1; i < ncmd; i++)
            json_array_append_new(args, json_string(cmd[i]));
        int pulled = oci_pull(cfg, name, cmd[0] + 4, args, po->registry_secret, po->runtime, &img,
                              err, sizeof(err));
        json_decref(args);
        if (pulled < 0) {
            if (!strstr(err, "its output"))
                log_warnx("%s", err);
            log_warnx("nothing written");
            rc = EXIT_CALL_FAILED;
            goto out;
        }
        char *placeholder[] = {"oci", NULL};
        root = new_manifest(name, po, placeholder, 1, err, sizeof(err));
        if (root)
            oci_apply(root, &img);
    } else if (spec) {
        int r = po->installed
                    ? npm_installed(po->installed, spec, &pkg, err, sizeof(err))
                    : npm_install(cfg, name, spec, po->npm_scripts, &pkg, err, sizeof(err));
        if (r == 0 && po->catalog_entry)
            r = catalog_check_package(po->catalog_entry, pkg.package, err, sizeof(err));
        if (r < 0) {
            if (!strstr(err, "its output"))
                log_warnx("%s", err);
            log_warnx("nothing written");
            rc = EXIT_CALL_FAILED;
            goto out;
        }
        if (npx.bin) {
            char *bin = npx_bin_path(pkg.package, npx.bin, err, sizeof(err));
            if (!bin) {
                log_warnx("%s; nothing written", err);
                rc = EXIT_CALL_FAILED;
                goto out;
            }
            free(pkg.bin);
            pkg.bin = bin;
        }
        /* --exec pkg:REL: the package's own program, now that it is installed. */
        struct pin_opts with = *po;
        bool resolved = true;
        for (size_t i = 0; i < with.n_exec; i++) {
            if (strncmp(po->exec[i], "pkg:", 4) != 0) {
                with.exec[i] = NULL;
                continue;
            }
            if (!(with.exec[i] =
                      package_file_path(pkg.package, po->exec[i] + 4, err, sizeof(err)))) {
                log_warnx("%s; nothing written", err);
                resolved = false;
            }
        }
        char **with_bin = xcalloc((size_t)(ncmd - rest) + 2, sizeof(char *));
        with_bin[0] = pkg.bin;
        for (int i = rest; i < ncmd; i++)
            with_bin[i - rest + 1] = cmd[i];
        for (size_t i = 0; i < with.n_exec; i++)
            if (!with.exec[i])
                with.exec[i] = po->exec[i];
        if (resolved)
            root = new_manifest(name, &with, with_bin, ncmd - rest + 1, err, sizeof(err));
        for (size_t i = 0; i < with.n_exec; i++)
            if (with.exec[i] != po->exec[i])
                free(with.exec[i]);
        free(with_bin);
        if (!resolved) {
            rc = EXIT_CALL_FAILED;
            goto out;
        }
        if (root)
            json_object_set(root, "package", pkg.package);
    } else {
        root = new_manifest(name, po, cmd, ncmd, err, sizeof(err));
    }
    if (!root) {
        log_warnx("%s", err);
        goto out;
    }
    if (use_node(cfg, name, po, spec ? pkg.package : NULL, root, &node_installed) < 0) {
        rc = node_installed < 0 ? EXIT_USAGE : EXIT_CALL_FAILED;
        goto out;
    }
    if (discover(cfg, root, path, common->debug, &d, err, sizeof(err)) < 0) {
        log_warnx("spoke %s: %s", name, err);
        show_log_tail(cfg, name);
        log_warnx("nothing written");
        rc = EXIT_CALL_FAILED;
        goto out;
    }
    if (!po->description) {
        const json_t *si = json_object_get(d.info, "serverInfo");
        const json_t *t = json_object_get(si, "title");
        char text[200];
        hub_text_neutral(t ? t : json_object_get(si, "name"), text, sizeof(text));
        char *desc = xasprintf("%s (MCP server)", text[0] ? text : name);
        json_object_set_new(root, "description", json_string(desc));
        free(desc);
    }
    print_summary(name, root, &d, cfg);
    show_tools(d.tools, NULL);
    if (po->catalog_entry &&
        catalog_check_tools(po->catalog_entry, d.tools, err, sizeof(err)) < 0) {
        log_warnx("spoke %s: %s; nothing written", name, err);
        rc = EXIT_CALL_FAILED;
        goto out;
    }
    pin_protocol(root, &d);
    json_object_set_new(root, "tools", tools_to_pin(d.tools, NULL));
    if (!pinnable(root, path, err, sizeof(err))) {
        log_warnx("spoke %s cannot be pinned: %s", name, err);
        goto out;
    }
    char q[600];
    snprintf(q, sizeof(q), "Pin these %zu tools in %s?", json_array_size(d.tools), path);
    if (!po->yes && !confirm(q)) {
        printf("nothing written\n");
        rc = EXIT_CALL_FAILED;
        goto out;
    }
    if (mkdir_p(cfg->spokes_dir, 0755) < 0 || write_manifest(root, path, err, sizeof(err)) < 0) {
        log_warnx("%s", err[0] ? err : strerror(errno));
        goto out;
    }
    printf("wrote %s (%zu tools pinned)\n", path, json_array_size(d.tools));
    rc = EXIT_OK;
out:
    /* A failed add leaves nothing behind: not the package it installed either. */
    if (rc != EXIT_OK && spec) {
        char *store = xasprintf("%s/.spoke-packages/%s", cfg->data_root, name);
        rmtree(store);
        free(store);
    }
    if (rc != EXIT_OK && node_installed > 0) {
        char *store = xasprintf("%s/.spoke-packages/%s.node", cfg->data_root, name);
        rmtree(store);
        free(store);
    }
    if (rc != EXIT_OK && oci_is_ref(cmd[0])) {
        char *store = xasprintf("%s/.spoke-images/%s", cfg->data_root, name);
        rmtree(store);
        free(store);
    }
    oci_image_free(&img);
    npm_install_free(&pkg);
    remote_target_free(&remote);
    json_decref(root);
    json_decref(d.tools);
    json_decref(d.info);
    free(path);
    return rc;
}

/* update of an npm: spoke: when the new version's engines.node wants a newer Node than
 * the one it runs under (the store's, NAME.node/VERSION, or the host's), that Node from
 * npm's registry, installed beside the old one; the command and its bind moved to it.
 * 0 (nothing to move, or moved: *new_dir the new install, *old_dir the one it
 * replaces, NULL for the host's), -1 after saying why. */
static int move_node(const struct hub_config *cfg, const char *name, json_t *root,
                     const json_t *package, char **new_dir, char **old_dir)
{
    json_t *argv = json_object_get(root, "command"), *mounts = json_object_get(root, "mounts");
    char *prefix = xasprintf("%s/.spoke-packages/%s.node/", cfg->data_root, name);
    size_t plen = strlen(prefix), at = (size_t)-1, i;
    unsigned current = 0;
    json_t *v;
    json_array_foreach(mounts, i, v)
    {
        const char *m = json_string_value(v);
        if (m && strncmp(m, prefix, plen) == 0) {
            at = i;
            current = (unsigned)strtoul(m + plen, NULL, 10);
        }
    }
    bool host_node = at == (size_t)-1;
    if (host_node) {
        const char *prog = json_string_value(json_array_get(argv, 0));
        if (!prog || strcmp(prog, "node") != 0) {
            free(prefix);
            return 0; /* not a server node runs */
        }
        current = node_host_major();
    }
    unsigned want = node_engines_major(package);
    if (!want || !current || want <= current) {
        free(prefix);
        return 0;
    }
    printf("spoke %s: %s wants Node %u or later (its engines.node), it ran under %u: Node %u "
           "from npm's registry for it\n",
           name, json_string_value(json_object_get(package, "npm")), want, current, want);
    fflush(stdout);
    char err[1024], *bin = NULL, *code = NULL;
    if (node_install(cfg, name, want, &bin, &code, err, sizeof(err)) < 0) {
        if (!strstr(err, "its output"))
            log_warnx("%s", err);
        free(prefix);
        return -1;
    }
    if (!host_node) {
        const char *m = json_string_value(json_array_get(mounts, at));
        const char *slash = strchr(m + plen, '/');
        *old_dir = xstrndup(m, slash ? (size_t)(slash - m) : strlen(m));
        json_array_set_new(mounts, at, json_string(code));
    } else {
        json_array_append_new(mounts, json_string(code));
    }
    *new_dir = xstrndup(code, strlen(code) - strlen("/node_modules"));
    json_array_set_new(argv, 0, json_string(bin));
    relocate_code(mounts, argv);
    free(bin);
    free(code);
    free(prefix);
    return 0;
}

/* ---- update and verify ---- */

/* Lists NAME's tools again and compares them with its pin: 0 same, 1 changed (diff
 * printed), -1 failed. With pin: re-pins after confirmation. */
static int check_one(struct hub_config *cfg, const struct cli_common *common, const char *name,
                     bool pin, bool yes)
{
    char err[1024];
    char *path = xasprintf("%s/%s.json", cfg->spokes_dir, name);
    struct jf_ctx c = {.file = path, .err = err, .errlen = sizeof(err)};
    json_t *root = jf_load(&c, 1024 * 1024);
    struct manifest *m = root ? manifest_from_json(root, path, false, err, sizeof(err)) : NULL;
    struct discovered d = {0};
    struct npm_install pkg = {0};
    struct oci_image img = {0};
    char *old_dir = NULL, *vdiff = NULL, *node_new = NULL, *node_old = NULL;
    bool written = false;
    int rc = -1;
    if (!m) {
        log_warnx("%s", err);
        goto out;
    }
    /* update of an npm: spoke: its spec installed again, the pin moved with it. */
    const json_t *package = json_object_get(root, "package");
    if (pin && package) {
        char *spec = xasprintf("%s@%s", json_string_value(json_object_get(package, "npm")),
                               json_string_value(json_object_get(package, "spec"))
                                   ? json_string_value(json_object_get(package, "spec"))
                                   : "latest");
        int r = npm_install(cfg, name, spec, json_is_true(json_object_get(package, "scripts")),
                            &pkg, err, sizeof(err));
        free(spec);
        if (r < 0) {
            if (!strstr(err, "its output"))
                log_warnx("%s", err);
            goto out;
        }
        old_dir = xstrdup(json_string_value(json_object_get(package, "dir")));
        vdiff = package_diff(package, pkg.package);
        move_package(root, old_dir, pkg.package);
        if (move_node(cfg, name, root, pkg.package, &node_new, &node_old) < 0)
            goto out;
    }
    /* update of an oci: spoke: its tag resolved again, the digest moved with it. */
    const json_t *image = json_object_get(root, "image");
    if (pin && image) {
        const json_t *secret = json_object_get(image, "secret");
        if (oci_pull(cfg, name, json_string_value(json_object_get(image, "ref")),
                     json_object_get(image, "args"), json_string_value(secret), m->runtime, &img,
                     err, sizeof(err)) < 0) {
            if (!strstr(err, "its output"))
                log_warnx("%s", err);
            goto out;
        }
        old_dir = xstrdup(json_string_value(json_object_get(image, "dir")));
        vdiff = oci_digest_diff(image, img.image);
        oci_apply(root, &img);
    } else if (image) {
        /* verify: the pinned digest runs whatever the tag says; a moved tag is reported. */
        vdiff = oci_tag_moved(cfg, name, image, err, sizeof(err));
        if (!vdiff) {
            log_warnx("%s", err);
            goto out;
        }
        if (!vdiff[0]) {
            free(vdiff);
            vdiff = NULL;
        }
    }
    if (discover(cfg, root, path, common->debug, &d, err, sizeof(err)) < 0) {
        log_warnx("spoke %s: %s", name, err);
        goto out;
    }
    char *diff = pin_diff_text(m->pinned, d.tools);
    if (vdiff) {
        char *both = xasprintf("%s%s%s", vdiff, diff ? "\n" : "", diff ? diff : "");
        free(diff);
        diff = both;
    }
    char *pdiff = protocol_diff(root, &d);
    if (pdiff) {
        char *both = xasprintf("%s%s%s", pdiff, diff ? "\n" : "", diff ? diff : "");
        free(diff);
        free(pdiff);
        diff = both;
    }
    if (!diff) {
        printf("%s: ok, the server lists the %zu pinned tools\n", name, m->n_tools);
        rc = 0;
        goto out;
    }
    printf("%s: the server's tools differ from the pin in %s:\n", name, path);
    for (char *line = strtok(diff, "\n"); line; line = strtok(NULL, "\n"))
        printf("  %s\n", line);
    free(diff);
    rc = 1;
    if (!pin)
        goto out;
    printf("  now:\n");
    show_tools(d.tools, json_object_get(root, "tools"));
    json_t *tools = tools_to_pin(d.tools, json_object_get(root, "tools"));
    json_object_set_new(root, "tools", tools);
    pin_protocol(root, &d);
    if (!pinnable(root, path, err, sizeof(err))) {
        log_warnx("spoke %s cannot be pinned: %s", name, err);
        rc = -1;
        goto out;
    }
    char q[600];
    snprintf(q, sizeof(q), "Pin these %zu tools in %s?", json_array_size(d.tools), path);
    if (!yes && !confirm(q)) {
        printf("nothing written\n");
        goto out;
    }
    if (write_manifest(root, path, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        rc = -1;
        goto out;
    }
    printf("wrote %s (%zu tools pinned)\n", path, json_array_size(d.tools));
    written = true;
    rc = 0;
out:
    if (pkg.package) {
        /* The version not pinned goes: the new one when nothing was written, else the
         * old one. */
        const char *new_dir = json_string_value(json_object_get(pkg.package, "dir"));
        if (old_dir && strcmp(old_dir, new_dir) != 0)
            rmtree(rc == 0 && written ? old_dir : new_dir);
    }
    if (img.image) {
        const char *new_dir = json_string_value(json_object_get(img.image, "dir"));
        if (old_dir && strcmp(old_dir, new_dir) != 0)
            oci_drop(rc == 0 && written ? old_dir : new_dir);
    }
    /* Likewise the Node not pinned: the new one when nothing was written, else the old. */
    if (node_new) {
        const char *drop = rc == 0 && written ? node_old : node_new;
        if (drop) /* none: it ran under the host's node before */
            rmtree(drop);
    }
    free(node_new);
    free(node_old);
    oci_image_free(&img);
    npm_install_free(&pkg);
    free(old_dir);
    free(vdiff);
    manifest_free(m);
    json_decref(root);
    json_decref(d.tools);
    json_decref(d.info);
    free(path);
    return rc;
}

/* --browser: the profile's programs, binds and variables added to the command line's,
 * its limits where the command line set none (bp keeps the strings po points to). */
static int apply_browser(const struct hub_config *cfg, struct pin_opts *po,
                         struct browser_profile *bp)
{
    char err[512];
    if (browser_profile(po->browser, cfg, bp, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        return -1;
    }
    for (size_t i = 0; bp->exec[i]; i++) {
        if (po->n_exec == MANIFEST_MAX_EXEC) {
            log_warnx("--browser: at most %d --exec with the browser's", MANIFEST_MAX_EXEC);
            return -1;
        }
        po->exec[po->n_exec++] = xstrdup(bp->exec[i]);
    }
    for (size_t i = 0; bp->binds[i]; i++) {
        if (po->n_binds == MAX_BINDS) {
            log_warnx("--browser: at most %d --bind-ro with the browser's", MAX_BINDS);
            return -1;
        }
        po->binds[po->n_binds++] = bp->binds[i];
    }
    for (size_t i = 0; bp->env[i]; i++) {
        if (po->n_env == MAX_ENV) {
            log_warnx("--browser: at most %d --env with the browser's", MAX_ENV);
            return -1;
        }
        po->env[po->n_env++] = bp->env[i];
    }
    const struct {
        size_t index; /* into limit_opts */
        uint64_t value;
    } limits[] = {{0, bp->memory_mb}, {2, bp->pids}, {5, bp->nproc}};
    for (size_t i = 0; i < ARRAY_LEN(limits); i++)
        if (!po->limits[limits[i].index].value)
            po->limits[limits[i].index].value = limits[i].value;
    return 0;
}

int cmd_spokes_pin(int argc, char **argv)
{
    static const struct option opts[] = {{"runtime", required_argument, NULL, 'r'},
                                         {"allow", required_argument, NULL, 'a'},
                                         {"ports", required_argument, NULL, 'p'},
                                         {"bind-ro", required_argument, NULL, 'b'},
                                         {"env", required_argument, NULL, 'e'},
                                         {"secret", required_argument, NULL, 's'},
                                         {"secret-plain", required_argument, NULL, 'P'},
                                         {"tcp", required_argument, NULL, 'T'},
                                         {"exec", required_argument, NULL, 'X'},
                                         {"description", required_argument, NULL, 'd'},
                                         {"yes", no_argument, NULL, 'y'},
                                         {"no-roots", no_argument, NULL, 'R'},
                                         {"npm-scripts", no_argument, NULL, 'S'},
                                         {"node", required_argument, NULL, 'N'},
                                         {"registry-secret", required_argument, NULL, 2100},
                                         {"memory-mb", required_argument, NULL, 2000},
                                         {"nofile", required_argument, NULL, 2001},
                                         {"pids", required_argument, NULL, 2002},
                                         {"cpu-percent", required_argument, NULL, 2003},
                                         {"timeout-s", required_argument, NULL, 2004},
                                         {"nproc", required_argument, NULL, 2005},
                                         {"installed", required_argument, NULL, 2101},
                                         {"catalog-entry", required_argument, NULL, 2102},
                                         {"var", required_argument, NULL, 2103},
                                         {"browser", required_argument, NULL, 2104},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    const char *verb = argv[0];
    struct cli_args a = {
        .argc = argc, .argv = argv, .opts = opts, .shortopts = "hy", .usage = usage};
    struct pin_opts po = {0};
    int opt;
    /* Options may come before or after NAME; "--" ends them, and what follows is the
     * server's command line (getopt puts NAME first among what is left). */
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'r':
            if (strcmp(optarg, "c") != 0 && strcmp(optarg, "python") != 0 &&
                strcmp(optarg, "node") != 0) {
                log_warnx("--runtime must be c, python or node");
                return EXIT_USAGE;
            }
            po.runtime = optarg;
            break;
        case 'a':
            po.allow = optarg;
            break;
        case 'p':
            po.ports = optarg;
            break;
        case 'b':
            if (po.n_binds == MAX_BINDS) {
                log_warnx("at most %d --bind-ro", MAX_BINDS);
                return EXIT_USAGE;
            }
            po.binds[po.n_binds++] = optarg;
            break;
        case 'e':
            if (po.n_env == MAX_ENV) {
                log_warnx("at most %d --env", MAX_ENV);
                return EXIT_USAGE;
            }
            po.env[po.n_env++] = optarg;
            break;
        case 's':
        case 'P':
            if (po.n_secret == MAX_ENV) {
                log_warnx("at most %d --secret", MAX_ENV);
                return EXIT_USAGE;
            }
            po.secret_plain[po.n_secret] = opt == 'P';
            po.secret[po.n_secret++] = optarg;
            break;
        case 'T':
            if (po.n_tcp == MANIFEST_MAX_TCP) {
                log_warnx("at most %d --tcp", MANIFEST_MAX_TCP);
                return EXIT_USAGE;
            }
            if (!manifest_tcp_valid(optarg)) {
                log_warnx("--tcp %s: expected HOST:PORT (a lower-case name, an IPv4 address or "
                          "[IPv6], and a port)",
                          optarg);
                return EXIT_USAGE;
            }
            po.tcp[po.n_tcp++] = optarg;
            break;
        case 'X': {
            if (po.n_exec == MANIFEST_MAX_EXEC) {
                log_warnx("at most %d --exec", MANIFEST_MAX_EXEC);
                return EXIT_USAGE;
            }
            /* A file of the npm package the server is (resolved once it is installed). */
            if (strncmp(optarg, "pkg:", 4) == 0) {
                if (!optarg[4]) {
                    log_warnx("--exec pkg:REL names a file of the server's npm package");
                    return EXIT_USAGE;
                }
                po.exec[po.n_exec++] = xstrdup(optarg);
                break;
            }
            char *found = find_program(optarg);
            if (!found) {
                log_warnx("--exec %s: no such executable program%s", optarg,
                          strchr(optarg, '/') ? "" : " in /usr/local/bin, /usr/bin or /bin");
                return EXIT_USAGE;
            }
            po.exec[po.n_exec++] = found;
            break;
        }
        case 'd':
            po.description = optarg;
            break;
        case 'y':
            po.yes = true;
            break;
        case 'R':
            po.no_roots = true;
            break;
        case 'S':
            po.npm_scripts = true;
            break;
        case 'N': {
            uint64_t major;
            if (!parse_u64(optarg, 16, 999, &major)) {
                log_warnx("--node takes a major version of Node (22)");
                return EXIT_USAGE;
            }
            po.node = (unsigned)major;
            break;
        }
        case 2100: /* past the limits' codes (2000 + limit_opts' index) */
            po.registry_secret = optarg;
            break;
        case 2101:
            po.installed = optarg;
            break;
        case 2102:
            po.catalog_entry = optarg;
            break;
        case 2104:
            po.browser = optarg;
            break;
        case 2103:
            if (po.n_vars == MAX_ENV) {
                log_warnx("at most %d --var", MAX_ENV);
                return EXIT_USAGE;
            }
            po.vars[po.n_vars++] = optarg;
            break;
        case 2000: /* after CLI_COMMON_OPTIONS' codes */
        case 2001:
        case 2002:
        case 2003:
        case 2004:
        case 2005: {
            size_t k = (size_t)(opt - 2000);
            if (!parse_u64(optarg, 1, limit_opts[k].max, &po.limits[k].value)) {
                log_warnx("--%s must be a number from 1 to %llu", limit_opts[k].option,
                          (unsigned long long)limit_opts[k].max);
                return EXIT_USAGE;
            }
            break;
        }
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *name = optind < argc ? argv[optind] : NULL;
    int rest = optind + (name != NULL);
    bool is_add = strcmp(verb, "add") == 0;
    /* add NAME with no command: the catalog's entry NAME. */
    bool from_catalog = is_add && name && rest >= argc;
    if ((is_add && !name) || (!is_add && rest < argc) || (strcmp(verb, "update") == 0 && !name)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    if (rc != EXIT_OK)
        return rc;
    struct browser_profile bp = {0};
    if (po.browser && (!is_add || from_catalog)) {
        log_warnx("--browser is for an add with the server's command");
        rc = EXIT_USAGE;
    } else if (po.browser && apply_browser(&cfg, &po, &bp) < 0) {
        rc = EXIT_USAGE;
    } else if (po.n_vars && !from_catalog) {
        log_warnx("--var is for an add from the catalog (hub spokes add NAME with no command)");
        rc = EXIT_USAGE;
    } else if (from_catalog) {
        manifest_set_free(&ms);
        int r = catalog_spokes_add(&cfg, argc, argv, optind, po.vars, po.n_vars);
        config_free(&cfg);
        for (size_t i = 0; i < po.n_exec; i++)
            free(po.exec[i]);
        return r;
    } else if (is_add) {
        rc = cmd_add(&cfg, &a.common, name, &po, argv + rest, argc - rest);
    } else if (strcmp(verb, "update") == 0) {
        int r = manifest_find(&ms, name) ? check_one(&cfg, &a.common, name, true, po.yes) : -1;
        if (!manifest_find(&ms, name))
            log_warnx("no spoke %s in %s", name, cfg.spokes_dir);
        rc = r == 0 ? EXIT_OK : EXIT_CALL_FAILED;
    } else {
        size_t bad = 0, n = 0;
        for (size_t i = 0; i < ms.n; i++) {
            if (name && strcmp(ms.v[i]->name, name) != 0)
                continue;
            n++;
            if (check_one(&cfg, &a.common, ms.v[i]->name, false, false) != 0)
                bad++;
        }
        if (name && n == 0)
            log_warnx("no spoke %s in %s", name, cfg.spokes_dir);
        rc = bad || (name && n == 0) ? EXIT_CALL_FAILED : EXIT_OK;
    }
    manifest_set_free(&ms);
    config_free(&cfg);
    for (size_t i = 0; i < po.n_exec; i++)
        free(po.exec[i]);
    browser_profile_free(&bp);
    return rc;
}
