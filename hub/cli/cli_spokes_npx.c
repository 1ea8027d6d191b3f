/* An MCP client's configuration starts an npm server with npx, in several forms
 * (`npx -y PKG`, LaunchDarkly's `npx -y --package PKG -- BIN ARGS`, `npm exec`). Run
 * inside a jail, npx would fetch from a registry netproxy does not allow (a 403 on
 * registry.npmjs.org): the hub installs the package itself instead (npm:), and any
 * npx or npm command it cannot take that way is refused, saying to use npm:. */
#include "cli_spokes_npx.h"
#include "util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Options of npx and npm exec that change nothing for the hub's install. */
static bool harmless(const char *a)
{
    static const char *const flags[] = {"-y",        "--yes",          "-q",
                                        "--quiet",   "--silent",       "--prefer-offline",
                                        "--no-fund", "--no-audit",     "--no-update-notifier",
                                        "-s",        "--prefer-online"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (strcmp(a, flags[i]) == 0)
            return true;
    return strncmp(a, "--loglevel=", 11) == 0;
}

__attribute__((format(printf, 2, 3))) static enum npx_form refuse(struct npx_cmd *out,
                                                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof(out->why), fmt, ap);
    va_end(ap);
    return NPX_REFUSED;
}

enum npx_form npx_parse(char **cmd, int ncmd, struct npx_cmd *out)
{
    memset(out, 0, sizeof(*out));
    int i = 1;
    const char *prog = base_name(cmd[0]);
    /* npm's links run by node (`node /usr/share/nodejs/npm/bin/npx-cli.js`). */
    if (strcmp(prog, "node") == 0 || strcmp(prog, "nodejs") == 0) {
        if (ncmd < 2)
            return NPX_NONE;
        prog = base_name(cmd[1]);
        if (strcmp(prog, "npx-cli.js") == 0)
            prog = "npx";
        else if (strcmp(prog, "npm-cli.js") == 0)
            prog = "npm";
        else
            return NPX_NONE;
        i = 2;
    }
    bool npm = strcmp(prog, "npm") == 0;
    if (!npm && strcmp(prog, "npx") != 0)
        return NPX_NONE;
    if (npm) {
        if (i >= ncmd || (strcmp(cmd[i], "exec") != 0 && strcmp(cmd[i], "x") != 0))
            return refuse(out, "npm %s", i < ncmd ? cmd[i] : "(no command)");
        i++;
    }
    for (; i < ncmd; i++) {
        const char *a = cmd[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (harmless(a))
            continue;
        const char *pkg = NULL;
        if (strncmp(a, "--package=", 10) == 0)
            pkg = a + 10;
        else if ((strcmp(a, "-p") == 0 || strcmp(a, "--package") == 0) && i + 1 < ncmd)
            pkg = cmd[++i];
        if (!pkg)
            return refuse(out, "the option %s", a);
        if (out->spec)
            return refuse(out, "a second --package (%s)", pkg);
        out->spec = pkg;
    }
    if (i >= ncmd)
        return refuse(out, "%s with no program to run", out->spec ? "--package" : "npx");
    if (out->spec) {
        /* The program is a name npx finds in node_modules/.bin. */
        if (strchr(cmd[i], '/') || strcmp(cmd[i], ".") == 0 || strcmp(cmd[i], "..") == 0)
            return refuse(out, "the program \"%s\" (a name of the package's bin expected)", cmd[i]);
        out->bin = cmd[i];
    } else {
        out->spec = cmd[i];
    }
    out->rest = i + 1;
    return NPX_PACKAGE;
}

char *npx_bin_path(const json_t *package, const char *bin, char *err, size_t errlen)
{
    const char *dir = json_string_value(json_object_get(package, "dir"));
    const char *name = json_string_value(json_object_get(package, "npm"));
    char *path = xasprintf("%s/node_modules/.bin/%s", dir ? dir : "", bin);
    if (dir && access(path, X_OK) == 0)
        return path;
    snprintf(err, errlen, "package %s installs no program \"%s\" (none in %s/node_modules/.bin)",
             name ? name : "?", bin, dir ? dir : "?");
    free(path);
    return NULL;
}

char *package_file_path(const json_t *package, const char *rel, char *err, size_t errlen)
{
    const char *dir = json_string_value(json_object_get(package, "dir"));
    const char *name = json_string_value(json_object_get(package, "npm"));
    bool dotdot = strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0 || strstr(rel, "/../") ||
                  (strlen(rel) >= 3 && strcmp(rel + strlen(rel) - 3, "/..") == 0);
    if (!rel[0] || rel[0] == '/' || dotdot) {
        snprintf(err, errlen, "--exec pkg:%s: a path inside the package, relative, without \"..\"",
                 rel);
        return NULL;
    }
    if (!dir || !name) {
        snprintf(err, errlen, "--exec pkg:%s: no installed package", rel);
        return NULL;
    }
    /* node_modules/DEP/...: a dependency's file (npm hoists them beside the package:
     * a wrapper that runs its platform package's binary), inside the install's tree. */
    bool dep = strncmp(rel, "node_modules/", 13) == 0;
    char *pkg =
        dep ? xasprintf("%s/node_modules", dir) : xasprintf("%s/node_modules/%s", dir, name);
    if (dep)
        rel += 13;
    char *path = xasprintf("%s/%s", pkg, rel);
    char *real_pkg = realpath(pkg, NULL), *real = realpath(path, NULL);
    size_t n = real_pkg ? strlen(real_pkg) : 0;
    struct stat st;
    char *out = NULL;
    if (!real_pkg || !real)
        snprintf(err, errlen, "--exec pkg:%s: package %s has no such file (%s)", rel, name, path);
    else if (strncmp(real, real_pkg, n) != 0 || real[n] != '/')
        snprintf(err, errlen, "--exec pkg:%s: leads out of package %s (%s)", rel, name, real);
    else if (stat(real, &st) < 0 || !S_ISREG(st.st_mode) || access(real, X_OK) < 0)
        snprintf(err, errlen, "--exec pkg:%s: not an executable file of package %s (%s)", rel, name,
                 real);
    else
        out = xstrdup(real);
    free(real);
    free(real_pkg);
    free(path);
    free(pkg);
    return out;
}
