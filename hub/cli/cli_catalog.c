/* `hub catalog [search WORDS...]` and `hub spokes add NAME` with no command: the
 * catalog's vetted entries (hub/config/catalog.h) on the command line.
 *
 * An add from the catalog is an ordinary `hub spokes add` built from the entry: its
 * --allow, --secret, --tcp, --exec, --env and limits, the package as npm:NAME@VERSION,
 * then the options the operator gave, which replace (--allow, limits) or add to (--env,
 * --tcp, --exec) the entry's; and --catalog-entry FILE, under which add refuses a
 * package whose integrity is not the entry's and a server whose tools are not the
 * entry's. Nothing starts before every key the entry names is in the secret store. */
#include "cli_catalog.h"
#include "runtime/runtime.h"
#include "bm25.h"
#include "jsonfile.h"
#include "log.h"
#include "termtext.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_catalog(int argc, char **argv);
int cmd_spokes_pin(int argc, char **argv);

#define SEARCH_MAX 10
#define VALUE_MAX 4096

static void usage(FILE *f)
{
    fprintf(f, "usage: hub catalog [--format text|json] [OPTIONS]\n"
               "       hub catalog search WORDS... [--format text|json] [OPTIONS]\n"
               "       hub catalog show NAME [OPTIONS]\n\n"
               "The catalog: vetted MCP servers, one entry each in <hub.json's directory>/catalog\n"
               "(the shipped entries and the operator's own, in the same format). Each names its\n"
               "package pinned (version and integrity), the hosts it reaches, its keys and\n"
               "where netproxy puts them, raw TCP grants, host programs, limits and its tools.\n"
               "`hub spokes add NAME` with no command adds the entry NAME; search ranks the\n"
               "entries for the words (BM25 over names, titles, descriptions, keywords and\n"
               "tools); show prints one entry's JSON.\n\n"
               "  --format F         text (default) or json\n" CLI_COMMON_HELP);
}

/* ---- building an add from an entry ---- */

struct argv_build {
    char **v;
    size_t n, cap;
};

static void push(struct argv_build *b, char *owned)
{
    if (b->n + 2 > b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->v = xrealloc(b->v, b->cap * sizeof(char *));
    }
    b->v[b->n++] = owned;
    b->v[b->n] = NULL;
}

static void push2(struct argv_build *b, const char *opt, char *owned_value)
{
    push(b, xstrdup(opt));
    push(b, owned_value);
}

/* The value of variable name: --var, else the entry's default; NULL when neither. */
static const char *var_value(const json_t *vars, const char *name, const char *const *given,
                             size_t n_given)
{
    size_t len = strlen(name);
    for (size_t i = n_given; i-- > 0;)
        if (strncmp(given[i], name, len) == 0 && given[i][len] == '=')
            return given[i] + len + 1;
    return json_string_value(json_object_get(json_object_get(vars, name), "default"));
}

/* s with each ${NAME} replaced; NULL with err for a variable the entry does not
 * declare or that has no value. */
static char *substitute(const char *s, const json_t *vars, const char *const *given, size_t n_given,
                        char *err, size_t errlen)
{
    char out[VALUE_MAX + 1];
    size_t n = 0;
    for (const char *p = s; *p;) {
        const char *add = p;
        size_t alen = 1;
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p + 2, '}');
            char name[65];
            if (!end || (size_t)(end - p - 2) >= sizeof(name)) {
                snprintf(err, errlen, "\"%.60s\": an unterminated ${", s);
                return NULL;
            }
            memcpy(name, p + 2, (size_t)(end - p - 2));
            name[end - p - 2] = '\0';
            if (!json_object_get(vars, name)) {
                snprintf(err, errlen, "${%s} is not one of the entry's vars", name);
                return NULL;
            }
            add = var_value(vars, name, given, n_given);
            if (!add) {
                snprintf(
                    err, errlen, "the entry needs a value for %s (%s): --var %s=VALUE", name,
                    json_string_value(json_object_get(json_object_get(vars, name), "description")),
                    name);
                return NULL;
            }
            alen = strlen(add);
            p = end + 1;
        } else {
            p++;
        }
        if (n + alen > VALUE_MAX) {
            snprintf(err, errlen, "\"%.60s\" is longer than %d bytes", s, VALUE_MAX);
            return NULL;
        }
        memcpy(out + n, add, alen);
        n += alen;
    }
    out[n] = '\0';
    return xstrdup(out);
}

/* Each of the entry's secrets that the store lacks, said with the command that sets it;
 * the number missing, or -1 when the store cannot be read. */
static int missing_secrets(const struct hub_config *cfg, const json_t *entry, const char *name)
{
    struct secret_store *st = secret_store_new(cfg);
    int missing = 0;
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(entry, "secrets"), i, s)
    {
        const char *sname = json_string_value(json_object_get(s, "secret"));
        struct secret_meta meta;
        char err[512];
        int r = secret_store_get(st, sname, &meta, NULL, NULL, err, sizeof(err));
        if (r < 0) {
            log_warnx("%s", err);
            missing = -1;
            break;
        }
        if (r == 1) {
            secret_meta_clear(&meta);
            continue;
        }
        if (missing == 0)
            log_warnx("catalog entry %s needs keys that are not in the secret store %s; set "
                      "them first (the value on stdin), then add it again:",
                      name, secret_store_dir(st));
        missing++;
        char hosts[600] = "";
        size_t k;
        const json_t *h;
        json_array_foreach(json_object_get(s, "hosts"), k, h)
        {
            size_t used = strlen(hosts);
            snprintf(hosts + used, sizeof(hosts) - used, "%s%s", k ? "," : " --hosts ",
                     json_string_value(h));
        }
        const char *header = json_string_value(json_object_get(s, "header"));
        const char *query = json_string_value(json_object_get(s, "query"));
        fprintf(stderr, "  hub secrets set %s%s%s%s%s%s < FILE    # %s\n", sname, hosts,
                header ? " --header " : "", header ? header : "", query ? " --query " : "",
                query ? query : "", json_string_value(json_object_get(s, "env")));
    }
    secret_store_free(st);
    return missing;
}

/* Is option o (argv[i]) one that takes a value in the next argument? */
static bool takes_value(const char *o)
{
    static const char *const flags[] = {"--yes",   "-y",     "--no-roots", "--npm-scripts",
                                        "--debug", "--help", "-h",         NULL};
    if (strchr(o, '='))
        return false;
    for (size_t i = 0; flags[i]; i++)
        if (strcmp(o, flags[i]) == 0)
            return false;
    return strncmp(o, "--", 2) == 0;
}

int catalog_spokes_add(struct hub_config *cfg, int argc, char **argv, int optind_name,
                       const char *const *vars, size_t n_vars)
{
    const char *name = argv[optind_name];
    char *dir = catalog_dir(cfg);
    char *path = xasprintf("%s/%s.json", dir, name);
    char err[1024];
    struct argv_build b = {0};
    int rc = EXIT_USAGE;
    json_t *e = NULL;
    if (!manifest_valid_app_name(name) || access(path, F_OK) != 0) {
        log_warnx("no COMMAND given, and no catalog entry %s in %s (`hub catalog` lists them; "
                  "or: hub spokes add %s [OPTIONS] -- COMMAND [ARG...])",
                  name, dir, name);
        goto out;
    }
    e = catalog_entry_load(path, err, sizeof(err));
    if (!e) {
        log_warnx("%s", err);
        goto out;
    }
    const json_t *evars = json_object_get(e, "vars");
    for (size_t i = 0; i < n_vars; i++) {
        const char *eq = strchr(vars[i], '=');
        char vname[65];
        if (!eq || eq == vars[i] || (size_t)(eq - vars[i]) >= sizeof(vname)) {
            log_warnx("--var must be NAME=VALUE (\"%.60s\")", vars[i]);
            goto out;
        }
        memcpy(vname, vars[i], (size_t)(eq - vars[i]));
        vname[eq - vars[i]] = '\0';
        if (!json_object_get(evars, vname)) {
            log_warnx("--var %s: catalog entry %s has no such variable", vname, name);
            goto out;
        }
    }
    int missing = missing_secrets(cfg, e, name);
    if (missing != 0)
        goto out;
    const json_t *src = json_object_get(e, "source");
    printf("spoke %s: from the catalog, %s: npm %s %s (%s)\n", name, path,
           json_string_value(json_object_get(src, "npm")),
           json_string_value(json_object_get(src, "version")),
           json_string_value(json_object_get(src, "integrity")));
    fflush(stdout);
    push(&b, xstrdup("add"));
    push(&b, xstrdup(name));
    push2(&b, "--catalog-entry", xstrdup(path));
    char *desc = xasprintf("%s: %s", json_string_value(json_object_get(e, "title")),
                           json_string_value(json_object_get(e, "description")));
    push2(&b, "--description", desc);
    const char *runtime = json_string_value(json_object_get(e, "runtime"));
    if (runtime)
        push2(&b, "--runtime", xstrdup(runtime));
    /* allow and ports as one list each. */
    static const char *const lists[][2] = {{"allow", "--allow"}, {"ports", "--ports"}};
    for (size_t l = 0; l < ARRAY_LEN(lists); l++) {
        const json_t *a = json_object_get(e, lists[l][0]);
        if (!json_array_size(a))
            continue;
        char csv[2048] = "";
        size_t i;
        const json_t *v;
        json_array_foreach(a, i, v)
        {
            size_t used = strlen(csv);
            if (json_is_string(v)) {
                char *item =
                    substitute(json_string_value(v), evars, vars, n_vars, err, sizeof(err));
                if (!item)
                    goto bad_value;
                snprintf(csv + used, sizeof(csv) - used, "%s%s", i ? "," : "", item);
                free(item);
            } else {
                snprintf(csv + used, sizeof(csv) - used, "%s%lld", i ? "," : "",
                         (long long)json_integer_value(v));
            }
        }
        push2(&b, lists[l][1], xstrdup(csv));
    }
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(e, "tcp"), i, v)
    {
        char *t = substitute(json_string_value(v), evars, vars, n_vars, err, sizeof(err));
        if (!t)
            goto bad_value;
        push2(&b, "--tcp", t);
    }
    json_array_foreach(json_object_get(e, "exec"), i, v)
        push2(&b, "--exec", xstrdup(json_string_value(v)));
    const char *key;
    json_object_foreach(json_object_get(e, "env"), key, v)
    {
        char *val = substitute(json_string_value(v), evars, vars, n_vars, err, sizeof(err));
        if (!val)
            goto bad_value;
        push2(&b, "--env", xasprintf("%s=%s", key, val));
        free(val);
    }
    json_array_foreach(json_object_get(e, "secrets"), i, v)
        push2(&b, "--secret",
              xasprintf("%s=%s", json_string_value(json_object_get(v, "env")),
                        json_string_value(json_object_get(v, "secret"))));
    static const char *const limits[][2] = {{"memory_mb", "--memory-mb"},
                                            {"nofile", "--nofile"},
                                            {"pids", "--pids"},
                                            {"cpu_percent", "--cpu-percent"},
                                            {"call_s", "--timeout-s"}};
    for (size_t l = 0; l < ARRAY_LEN(limits); l++) {
        const json_t *n = json_object_get(json_object_get(e, "limits"), limits[l][0]);
        if (n)
            push2(&b, limits[l][1], xasprintf("%lld", (long long)json_integer_value(n)));
    }
    /* The operator's options (but NAME, --var, a "--"), after the entry's: a later
     * --allow or limit replaces the entry's, --env and the lists add to them. */
    for (int k = 1; k < optind_name; k++) {
        if (strcmp(argv[k], "--") == 0)
            continue;
        if (strcmp(argv[k], "--var") == 0) {
            k++;
            continue;
        }
        if (strncmp(argv[k], "--var=", 6) == 0)
            continue;
        push(&b, xstrdup(argv[k]));
        if (takes_value(argv[k]) && k + 1 < optind_name)
            push(&b, xstrdup(argv[++k]));
    }
    for (int k = optind_name + 1; k < argc; k++)
        push(&b, xstrdup(argv[k]));
    push(&b, xstrdup("--"));
    push(&b, xasprintf("npm:%s@%s", json_string_value(json_object_get(src, "npm")),
                       json_string_value(json_object_get(src, "version"))));
    json_array_foreach(json_object_get(e, "args"), i, v)
    {
        char *a = substitute(json_string_value(v), evars, vars, n_vars, err, sizeof(err));
        if (!a)
            goto bad_value;
        push(&b, a);
    }
    rc = cmd_spokes_pin((int)b.n, b.v);
    goto out;
bad_value:
    log_warnx("catalog entry %s: %s", name, err);
out:
    for (size_t k = 0; k < b.n; k++)
        free(b.v[k]);
    free(b.v);
    json_decref(e);
    free(path);
    free(dir);
    return rc;
}

/* ---- the checks of --catalog-entry ---- */

int catalog_check_package(const char *entry_path, const json_t *package, char *err, size_t errlen)
{
    json_t *e = catalog_entry_load(entry_path, err, errlen);
    if (!e)
        return -1;
    const json_t *src = json_object_get(e, "source");
    const char *want = json_string_value(json_object_get(src, "integrity"));
    const char *got = json_string_value(json_object_get(package, "integrity"));
    const char *wv = json_string_value(json_object_get(src, "version"));
    const char *gv = json_string_value(json_object_get(package, "version"));
    int rc = 0;
    if (!got || strcmp(want, got) != 0 || !gv || strcmp(wv, gv) != 0) {
        snprintf(err, errlen,
                 "the package installed is not the one the catalog vetted (%s): version %s, "
                 "integrity %.100s; the entry's: %s, %.100s",
                 entry_path, gv ? gv : "(none)", got ? got : "(none)", wv, want);
        rc = -1;
    }
    json_decref(e);
    return rc;
}

int catalog_check_tools(const char *entry_path, const json_t *listed, char *err, size_t errlen)
{
    json_t *e = catalog_entry_load(entry_path, err, errlen);
    if (!e)
        return -1;
    char why[900];
    int rc = 0;
    if (!pin_check_tools(json_object_get(e, "tools"), listed, why, sizeof(why))) {
        snprintf(err, errlen, "the server lists other tools than its catalog entry %s vetted: %s",
                 entry_path, why);
        rc = -1;
    }
    json_decref(e);
    return rc;
}

/* ---- npm: from an installed tree ---- */

int npm_installed(const char *prefix, const char *spec, struct npm_install *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *at = strchr(spec[0] == '@' ? spec + 1 : spec, '@');
    if (!at || !at[1]) {
        snprintf(err, errlen, "--installed needs an exact version (npm:%.100s@VERSION)", spec);
        return -1;
    }
    char *name = xstrndup(spec, (size_t)(at - spec));
    const char *version = at + 1;
    int rc = -1;
    char *lock_path = xasprintf("%s/package-lock.json", prefix);
    char *pkg_dir = xasprintf("%s/node_modules/%s", prefix, name);
    char *pj_path = xasprintf("%s/package.json", pkg_dir);
    struct jf_ctx c = {.file = lock_path, .err = err, .errlen = errlen};
    json_t *lock = jf_load(&c, 64 * 1024 * 1024), *pj = NULL;
    if (!lock)
        goto out;
    char *key = xasprintf("node_modules/%s", name);
    const json_t *entry = json_object_get(json_object_get(lock, "packages"), key);
    free(key);
    const char *lv = json_string_value(json_object_get(entry, "version"));
    const char *integrity = json_string_value(json_object_get(entry, "integrity"));
    if (!lv || strcmp(lv, version) != 0 || !integrity) {
        snprintf(err, errlen, "%s: %s is %s%s, not %s", lock_path, name, lv ? "at " : "not there",
                 lv ? lv : "", version);
        goto out;
    }
    struct jf_ctx pc = {.file = pj_path, .err = err, .errlen = errlen};
    pj = jf_load(&pc, 4 * 1024 * 1024);
    if (!pj)
        goto out;
    const char *iv = json_string_value(json_object_get(pj, "version"));
    if (!iv || strcmp(iv, version) != 0) {
        snprintf(err, errlen, "%s: version %s, not %s as its lockfile says", pj_path,
                 iv ? iv : "(none)", version);
        goto out;
    }
    out->bin = npm_package_bin(pkg_dir, name, err, errlen);
    if (!out->bin)
        goto out;
    out->package = json_pack("{s:s,s:s,s:s,s:s,s:s}", "npm", name, "spec", version, "version",
                             version, "integrity", integrity, "dir", prefix);
    fprintf(stderr, "hub: %s@%s as installed in %s (%s)\n", name, version, prefix, integrity);
    rc = 0;
out:
    json_decref(lock);
    json_decref(pj);
    free(pj_path);
    free(pkg_dir);
    free(lock_path);
    free(name);
    return rc;
}

/* ---- hub catalog ---- */

static json_t *summary_json(const struct catalog_entry *ce, double score)
{
    const json_t *src = json_object_get(ce->root, "source");
    json_t *tools = json_array();
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(ce->root, "tools"), i, t)
        json_array_append(tools, json_object_get(t, "name"));
    json_t *secrets = json_array();
    json_array_foreach(json_object_get(ce->root, "secrets"), i, t)
        json_array_append(secrets, json_object_get(t, "secret"));
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "name", ce->name, "title", ce->title, "description",
        ce->description, "npm", json_string_value(json_object_get(src, "npm")), "version",
        json_string_value(json_object_get(src, "version")), "secrets", secrets, "tools", tools);
    const json_t *allow = json_object_get(ce->root, "allow");
    json_object_set_new(o, "allow", allow ? json_deep_copy(allow) : json_array());
    if (score > 0)
        json_object_set_new(o, "score", json_real(score));
    return o;
}

static void print_entry(const struct catalog_entry *ce)
{
    char title[120], desc[400];
    hub_text_neutral(json_object_get(ce->root, "title"), title, sizeof(title));
    hub_text_neutral(json_object_get(ce->root, "description"), desc, sizeof(desc));
    const json_t *src = json_object_get(ce->root, "source");
    size_t nt = json_array_size(json_object_get(ce->root, "tools"));
    printf("%-12s %s: %s\n", ce->name, title, desc);
    printf("%-12s npm %s@%s, %zu tools", "", json_string_value(json_object_get(src, "npm")),
           json_string_value(json_object_get(src, "version")), nt);
    const json_t *allow = json_object_get(ce->root, "allow");
    if (json_array_size(allow)) {
        char *a = json_dumps(allow, JSON_COMPACT);
        printf(", network %s", a);
        free(a);
    }
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(ce->root, "secrets"), i, s)
        printf("%s%s", i ? "," : ", keys: ", json_string_value(json_object_get(s, "secret")));
    printf("\n");
}

/* The entries ranked for words: BM25 with the name and title weighted over the
 * description, keywords and tools' names. */
static size_t search(const struct catalog *cat, const char *words, size_t *out, double *scores)
{
    struct bm25 *ix = bm25_new();
    for (size_t i = 0; i < cat->n; i++) {
        const json_t *root = cat->v[i].root;
        char *kw = json_dumps(json_object_get(root, "keywords"), JSON_COMPACT);
        char *tools = xstrdup("");
        size_t k;
        const json_t *t;
        json_array_foreach(json_object_get(root, "tools"), k, t)
        {
            char *more = xasprintf("%s %s", tools, json_string_value(json_object_get(t, "name")));
            free(tools);
            tools = more;
        }
        struct bm25_field f[] = {{cat->v[i].name, 3},
                                 {cat->v[i].title, 3},
                                 {cat->v[i].description, 1},
                                 {kw, 2},
                                 {tools, 0.5}};
        bm25_add(ix, f, ARRAY_LEN(f));
        free(kw);
        free(tools);
    }
    size_t n = bm25_search(ix, words, out, scores, SEARCH_MAX);
    bm25_free(ix);
    return n;
}

int cmd_catalog(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'}, CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    const char *format = "text";
    int opt;
    while ((opt = cli_next_option(&a)) >= 0)
        if (opt == 'f')
            format = optarg;
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *verb = optind < argc ? argv[optind] : NULL;
    bool json = strcmp(format, "json") == 0;
    if ((!json && strcmp(format, "text") != 0) ||
        (verb && strcmp(verb, "search") != 0 && strcmp(verb, "show") != 0) ||
        (verb && optind + 1 >= argc) || (verb && strcmp(verb, "show") == 0 && optind + 2 != argc)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    manifest_set_free(&ms);
    if (rc != EXIT_OK)
        return rc;
    char *dir = catalog_dir(&cfg);
    struct catalog cat;
    char err[512];
    if (catalog_load(dir, &cat, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        free(dir);
        config_free(&cfg);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < cat.n_bad; i++)
        log_warnx("left out: %s", cat.bad[i]);
    if (verb && strcmp(verb, "show") == 0) {
        const struct catalog_entry *ce = catalog_find(&cat, argv[optind + 1]);
        if (ce) {
            char *s = json_dumps(ce->root, JSON_INDENT(1));
            printf("%s\n", s);
            free(s);
        } else {
            log_warnx("no catalog entry %s in %s", argv[optind + 1], dir);
            rc = EXIT_CALL_FAILED;
        }
    } else {
        size_t idx[SEARCH_MAX], n;
        double scores[SEARCH_MAX];
        size_t *all = NULL;
        const size_t *order;
        if (verb) {
            char words[1024] = "";
            for (int k = optind + 1; k < argc; k++) {
                size_t used = strlen(words);
                snprintf(words + used, sizeof(words) - used, "%s%s", used ? " " : "", argv[k]);
            }
            n = search(&cat, words, idx, scores);
            order = idx;
        } else {
            all = xcalloc(cat.n ? cat.n : 1, sizeof(size_t));
            for (size_t i = 0; i < cat.n; i++)
                all[i] = i;
            n = cat.n;
            order = all;
        }
        json_t *arr = json ? json_array() : NULL;
        for (size_t i = 0; i < n; i++) {
            if (json)
                json_array_append_new(arr, summary_json(&cat.v[order[i]], verb ? scores[i] : 0));
            else
                print_entry(&cat.v[order[i]]);
        }
        if (json) {
            char *s = json_dumps(arr, JSON_INDENT(1));
            printf("%s\n", s);
            free(s);
            json_decref(arr);
        } else if (n == 0) {
            printf(verb ? "no entry matches\n" : "no entries in %s\n", dir);
        } else if (!verb) {
            printf("%zu entries in %s; `hub spokes add NAME` adds one\n", n, dir);
        }
        if (verb && n == 0)
            rc = EXIT_CALL_FAILED;
        free(all);
    }
    catalog_free(&cat);
    free(dir);
    config_free(&cfg);
    return rc;
}
