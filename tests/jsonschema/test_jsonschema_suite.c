/* The official JSON-Schema-Test-Suite (Debian's json-schema-test-suite) through the
 * hub's validator: every required test of draft7, draft6 and draft4, and this tree's own
 * 2020-12 cases in the suite's layout (tests/jsonschema/suite/draft2020-12). One line
 * per file: "ok - draft7/anyOf.json: 8 groups, 24 tests", or "not ok" naming the
 * failures. The suite's remotes (http://localhost:1234/...) and the meta-schemas
 * (python3-jsonschema's copies) are handed over as extra documents, so refRemote and
 * the meta-schema references run too; nothing is fetched.
 *
 * The optional/ directories (bignum, format, ECMA-262 regex details, content) are not
 * run: the suite marks them optional, and what this validator chose there is written
 * in hub/schema.h and hub/schema_pattern.c. */
#include "jsonschema/jsonschema.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SUITE_DIR "/usr/share/json-schema-test-suite"
#define META_DIR "/usr/lib/python3/dist-packages/jsonschema/schemas"

static int failures;

struct docs {
    struct schema_document d[128];
    json_t *owned[128];
    size_t n;
};

static void add_doc(struct docs *docs, const char *uri, const char *file)
{
    json_t *j = json_load_file(file, 0, NULL);
    if (!j || docs->n == 128) {
        printf("# cannot load %s\n", file);
        json_decref(j);
        return;
    }
    docs->owned[docs->n] = j;
    docs->d[docs->n].uri = strdup(uri);
    docs->d[docs->n].schema = j;
    docs->n++;
}

/* python3-jsonschema's vocabularies.json: the 2019-09 and 2020-12 meta-schemas'
 * vocabularies ("https://json-schema.org/draft/2020-12/meta/core", ...), by URI. */
static void add_vocabularies(struct docs *docs)
{
    json_t *all = json_load_file(META_DIR "/vocabularies.json", 0, NULL);
    const char *uri;
    json_t *v;
    json_object_foreach(all, uri, v)
    {
        if (docs->n == 128)
            break;
        docs->owned[docs->n] = json_incref(v);
        docs->d[docs->n].uri = strdup(uri);
        docs->d[docs->n++].schema = v;
    }
    json_decref(all);
}

static void free_docs(struct docs *docs)
{
    for (size_t i = 0; i < docs->n; i++) {
        free((char *)docs->d[i].uri);
        json_decref(docs->owned[i]);
    }
    docs->n = 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Why each optional file is not required to pass (the suite marks them optional). */
static const char *optional_why(const char *file)
{
    static const struct {
        const char *file, *why;
    } whys[] = {
        {"bignum.json", "integers past 64 bits: jansson refuses them before any schema sees them"},
        {"ecmascript-regex.json", "PCRE2 in its JavaScript modes, with differences named in "
                                  "hub/schema_pattern.c (\\s, \\w, \\d are ASCII)"},
        {"zeroTerminatedFloats.json", "1.0 is an integer here, as draft-06 and later say"},
        {"content.json", "contentMediaType and contentEncoding are annotations"},
        {"format", "format is an annotation, never asserted"},
        {"format.json", "format is an annotation, never asserted"},
        {"float-overflow.json", "numbers are IEEE doubles"},
        {"non-bmp-regex.json", "PCRE2 in its JavaScript modes"},
    };
    for (size_t i = 0; i < sizeof(whys) / sizeof(whys[0]); i++)
        if (strcmp(file, whys[i].file) == 0)
            return whys[i].why;
    return "optional in the suite";
}

static void run_file(const char *dir, const char *draft, const char *file,
                     const struct schema_options *opts, bool optional)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    json_error_t je;
    json_t *groups = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!json_is_array(groups) && optional) {
        printf("ok - %s/%s # SKIP optional, and not readable here: %s\n", draft, file, je.text);
        json_decref(groups);
        return;
    }
    if (!json_is_array(groups)) {
        printf("not ok - %s/%s: cannot read: %s\n", draft, file, je.text);
        failures++;
        json_decref(groups);
        return;
    }
    size_t n_groups = json_array_size(groups), n_tests = 0, n_failed = 0;
    char first[3][400];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t g = 0; g < n_groups; g++) {
        const json_t *group = json_array_get(groups, g);
        const char *gdesc = json_string_value(json_object_get(group, "description"));
        char err[512] = "";
        struct schema *s =
            schema_compile_opts(json_object_get(group, "schema"), opts, err, sizeof(err));
        const json_t *tests = json_object_get(group, "tests");
        for (size_t t = 0; t < json_array_size(tests); t++) {
            const json_t *test = json_array_get(tests, t);
            const char *tdesc = json_string_value(json_object_get(test, "description"));
            bool want = json_is_true(json_object_get(test, "valid"));
            char verr[512] = "";
            bool got = s && schema_validate(s, json_object_get(test, "data"), verr, sizeof(verr));
            n_tests++;
            if (s && got == want)
                continue;
            char why[400];
            if (!s)
                snprintf(why, sizeof(why), "%.80s / %.80s: schema refused: %.200s", gdesc, tdesc,
                         err);
            else
                snprintf(why, sizeof(why), "%.80s / %.80s: expected %s, got %s %.200s", gdesc,
                         tdesc, want ? "valid" : "invalid", got ? "valid" : "invalid", verr);
            if (n_failed < 3)
                snprintf(first[n_failed], sizeof(first[0]), "%s", why);
            if (!optional)
                printf("#   %s\n", why);
            n_failed++;
        }
        schema_free(s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (optional)
        printf("ok - %s/%s # SKIP optional: %zu of %zu pass; %s\n", draft, file, n_tests - n_failed,
               n_tests, optional_why(file));
    else if (n_failed == 0)
        printf("ok - %s/%s: %zu groups, %zu tests (%.1f ms)\n", draft, file, n_groups, n_tests, ms);
    else {
        printf("not ok - %s/%s: %zu of %zu tests failed: %s%s%s%s%s\n", draft, file, n_failed,
               n_tests, first[0], n_failed > 1 ? "; " : "", n_failed > 1 ? first[1] : "",
               n_failed > 2 ? "; " : "", n_failed > 2 ? first[2] : "");
        failures++;
    }
    json_decref(groups);
}

/* The *.json files of dir in name order; the names of subdirectories as skipped. */
static void run_files(const char *dir, const char *draft, const struct schema_options *opts,
                      bool optional)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dh)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
            names[n++] = strdup(e->d_name);
        else if (optional && e->d_name[0] != '.')
            printf("ok - %s/%s # SKIP optional: %s\n", draft, e->d_name, optional_why(e->d_name));
    }
    closedir(dh);
    qsort(names, n, sizeof(names[0]), name_cmp);
    for (size_t i = 0; i < n; i++) {
        run_file(dir, draft, names[i], opts, optional);
        free(names[i]);
    }
}

/* Every file under the suite's remotes/, as http://localhost:1234/PATH. */
static void add_remotes(struct docs *docs, const char *top, const char *sub)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", top, sub);
    DIR *dh = opendir(path);
    struct dirent *e;
    while (dh && (e = readdir(dh))) {
        if (e->d_name[0] == '.')
            continue;
        char rel[512], file[1536], uri[600];
        snprintf(rel, sizeof(rel), "%s%s%s", sub, *sub ? "/" : "", e->d_name);
        snprintf(file, sizeof(file), "%s/%s", top, rel);
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
            snprintf(uri, sizeof(uri), "http://localhost:1234/%s", rel);
            add_doc(docs, uri, file);
        } else
            add_remotes(docs, top, rel);
    }
    if (dh)
        closedir(dh);
}

static void run_dir(const char *dir, const char *remotes, const char *draft, enum schema_dialect d,
                    const char *meta_uri, const char *meta_file, const char *missing)
{
    DIR *dh = opendir(dir);
    if (!dh) {
        printf("ok - %s # SKIP %s: %s\n", draft, dir, missing);
        return;
    }
    closedir(dh);
    struct docs docs = {0};
    if (meta_uri)
        add_doc(&docs, meta_uri, meta_file);
    if (d >= SCHEMA_DRAFT_2019_09)
        add_vocabularies(&docs);
    add_remotes(&docs, remotes, "");
    struct schema_options opts = {.default_dialect = d, .documents = docs.d, .n_documents = docs.n};
    run_files(dir, draft, &opts, false);
    char odir[1024], odraft[256];
    snprintf(odir, sizeof(odir), "%s/optional", dir);
    snprintf(odraft, sizeof(odraft), "%s/optional", draft);
    run_files(odir, odraft, &opts, true);
    free_docs(&docs);
}

int main(void)
{
    const char *suite = getenv("JSON_SCHEMA_SUITE");
    const char *root = getenv("ROOT");
    char dir[1024], own[1024], remotes[1024];
    snprintf(remotes, sizeof(remotes), "%s/remotes", suite ? suite : SUITE_DIR);
    static const struct {
        const char *name;
        enum schema_dialect d;
        const char *meta_uri, *meta_file, *missing;
    } drafts[] = {
        {"draft7", SCHEMA_DRAFT_07, "http://json-schema.org/draft-07/schema",
         META_DIR "/draft7.json", "json-schema-test-suite is not installed (scripts/deps)"},
        {"draft6", SCHEMA_DRAFT_06, "http://json-schema.org/draft-06/schema",
         META_DIR "/draft6.json", "json-schema-test-suite is not installed (scripts/deps)"},
        {"draft4", SCHEMA_DRAFT_04, "http://json-schema.org/draft-04/schema",
         META_DIR "/draft4.json", "json-schema-test-suite is not installed (scripts/deps)"},
        {"draft2019-09", SCHEMA_DRAFT_2019_09, "https://json-schema.org/draft/2019-09/schema",
         META_DIR "/draft2019-09.json", "not in this suite (Debian's 2.0.0 has draft3 to draft7)"},
        {"draft2020-12", SCHEMA_DRAFT_2020_12, "https://json-schema.org/draft/2020-12/schema",
         META_DIR "/draft2020-12.json",
         "not in this suite (Debian's 2.0.0 has draft3 to draft7): the own cases below cover "
         "2020-12"},
    };
    for (size_t i = 0; i < sizeof(drafts) / sizeof(drafts[0]); i++) {
        snprintf(dir, sizeof(dir), "%s/tests/%s", suite ? suite : SUITE_DIR, drafts[i].name);
        run_dir(dir, remotes, drafts[i].name, drafts[i].d, drafts[i].meta_uri, drafts[i].meta_file,
                drafts[i].missing);
    }
    snprintf(own, sizeof(own), "%s/tests/jsonschema/suite/draft2020-12", root ? root : ".");
    run_dir(own, remotes, "draft2020-12 (own)", SCHEMA_DRAFT_2020_12,
            "https://json-schema.org/draft/2020-12/schema", META_DIR "/draft2020-12.json",
            "this tree's own cases are missing");
    return failures ? 1 : 0;
}
