/* npm packages as spokes (cli_spokes_npm.c). */
#ifndef HUB_CLI_SPOKES_NPM_H
#define HUB_CLI_SPOKES_NPM_H

#include "runtime/runtime.h"

#include <jansson.h>
#include <stdbool.h>

struct npm_install {
    char *bin;       /* the server's program (its package's bin script), absolute */
    json_t *package; /* the manifest's "package": npm, spec, version, integrity, dir */
};

/* Installs PACKAGE[@VERSION] for spoke app (progress on stderr): 0, or -1 with err
 * (npm's output shown). */
int npm_install(const struct hub_config *cfg, const char *app, const char *spec, bool scripts,
                struct npm_install *out, char *err, size_t errlen);
void npm_install_free(struct npm_install *in);
/* The bin script of package name installed in pkg_dir (its package.json's "bin"),
 * absolute; NULL with err. */
char *npm_package_bin(const char *pkg_dir, const char *name, char *err, size_t errlen);

#endif
