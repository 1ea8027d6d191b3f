/* `hub schema SCHEMA.json`: the hub's JSON Schema validator on its own, for manifest
 * authors and tests. JSON values on stdin, one per line; one line out for each:
 * "valid" or "invalid: PATH: REASON". Blank lines are skipped. Exit 0 when every value
 * was valid, 1 when one was not, 2 when the schema itself is refused (the reason on
 * stderr). */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "jsonfile.h"
#include "log.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_schema(int argc, char **argv);

#define SCHEMA_FILE_MAX (4 * 1024 * 1024)
#define LINE_MAX_BYTES (16 * 1024 * 1024)

static void usage(FILE *f)
{
    fprintf(f, "usage: hub schema [--draft D] SCHEMA.json < VALUES\n"
               "Validates JSON values, one per line on stdin, against the schema and prints\n"
               "one line for each: \"valid\" or \"invalid: PATH: REASON\". Exit 0 when all\n"
               "were valid, 1 when one was not, 2 when the schema is refused.\n\n"
               "  --draft D          the dialect of a schema without \"$schema\": 4, 6, 7,\n"
               "                     2019-09 or 2020-12 (default 2020-12)\n"
               "  -h, --help         this help\n");
}

/* One line of stdin into *buf; false at the end. A line longer than the bound is
 * consumed and reported as too long (*len set past the bound). */
static bool read_line(char **buf, size_t *cap, size_t *len)
{
    *len = 0;
    int c;
    bool any = false;
    while ((c = getchar()) != EOF) {
        any = true;
        if (c == '\n')
            break;
        if (*len >= LINE_MAX_BYTES) {
            (*len)++;
            continue;
        }
        if (*len + 1 >= *cap) {
            *cap = *cap ? *cap * 2 : 4096;
            *buf = xrealloc(*buf, *cap);
        }
        (*buf)[(*len)++] = (char)c;
    }
    if (*buf)
        (*buf)[*len < *cap ? *len : *cap - 1] = '\0';
    return any;
}

static bool blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static bool parse_draft(const char *s, enum schema_dialect *d)
{
    static const struct {
        const char *name;
        enum schema_dialect d;
    } names[] = {{"4", SCHEMA_DRAFT_04},
                 {"6", SCHEMA_DRAFT_06},
                 {"7", SCHEMA_DRAFT_07},
                 {"2019-09", SCHEMA_DRAFT_2019_09},
                 {"2020-12", SCHEMA_DRAFT_2020_12}};
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        if (strcmp(s, names[i].name) == 0) {
            *d = names[i].d;
            return true;
        }
    return false;
}

int cmd_schema(int argc, char **argv)
{
    static const struct option opts[] = {
        {"draft", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    struct schema_options so = {0};
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'd':
            if (!parse_draft(optarg, &so.default_dialect)) {
                log_warnx("--draft: unknown draft \"%s\" (4, 6, 7, 2019-09, 2020-12)", optarg);
                return EXIT_USAGE;
            }
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    if (optind != argc - 1) {
        usage(stderr);
        return EXIT_USAGE;
    }
    char err[512];
    /* A schema file's root may be true or false (the drafts allow boolean schemas). */
    struct jf_ctx jc = {.file = argv[optind], .err = err, .errlen = sizeof(err), .any_value = true};
    json_t *js = jf_load(&jc, SCHEMA_FILE_MAX);
    if (!js) {
        fprintf(stderr, "hub schema: %s\n", err);
        return EXIT_USAGE;
    }
    struct schema *s = schema_compile_opts(js, &so, err, sizeof(err));
    json_decref(js);
    if (!s) {
        fprintf(stderr, "hub schema: %s: %s\n", argv[optind], err);
        return EXIT_USAGE;
    }
    char *line = NULL;
    size_t cap = 0, len;
    bool all_valid = true;
    while (read_line(&line, &cap, &len)) {
        if (len == 0 || blank(line, len))
            continue;
        if (len > LINE_MAX_BYTES) {
            printf("invalid: $: a line longer than %d bytes\n", LINE_MAX_BYTES);
            all_valid = false;
            continue;
        }
        json_error_t je;
        json_t *inst = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!inst) {
            printf("invalid: $: not a JSON value (column %d: %s)\n", je.column, je.text);
            all_valid = false;
        } else if (schema_validate(s, inst, err, sizeof(err)))
            printf("valid\n");
        else {
            printf("invalid: %s\n", err);
            all_valid = false;
        }
        json_decref(inst);
        fflush(stdout);
    }
    free(line);
    schema_free(s);
    return all_valid ? EXIT_OK : 1;
}
