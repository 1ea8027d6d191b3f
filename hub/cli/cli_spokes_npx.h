/* The npx (and `npm exec`) commands of MCP clients' configurations, taken as npm:
 * packages installed into the hub's store (cli_spokes_npx.c). */
#ifndef HUB_CLI_SPOKES_NPX_H
#define HUB_CLI_SPOKES_NPX_H

#include <jansson.h>
#include <stddef.h>

enum npx_form {
    NPX_NONE,    /* not npx, npm or node running either */
    NPX_PACKAGE, /* a form taken as npm:SPEC (bin: one of its programs by name) */
    NPX_REFUSED, /* npx, npm or a form of theirs not taken: it would run in the jail */
};

struct npx_cmd {
    const char *spec; /* PACKAGE[@VERSION] */
    const char *bin;  /* the program named after --package, else NULL (the package's) */
    int rest;         /* cmd[rest] is the server's first argument */
    char why[256];    /* NPX_REFUSED: what is not taken */
};

/* `npx [-y] PACKAGE ARGS`, `npx -y --package PKG -- BIN ARGS` (-p, --package=),
 * `npm exec`/`npm x` alike; NPX_REFUSED for any other npm or npx command. */
enum npx_form npx_parse(char **cmd, int ncmd, struct npx_cmd *out);
/* The program BIN of an installed package (the manifest's "package"): its link in the
 * install's node_modules/.bin, as npx runs it; NULL with err when there is none. */
char *npx_bin_path(const json_t *package, const char *bin, char *err, size_t errlen);

/* --exec pkg:REL: the file REL of an installed package (the manifest's "package"), an
 * executable regular file inside the package's own directory (no "..", no link out of
 * it), or with REL node_modules/DEP/... a file of a dependency in the install's tree,
 * as a real path; NULL with err. */
char *package_file_path(const json_t *package, const char *rel, char *err, size_t errlen);

#endif
