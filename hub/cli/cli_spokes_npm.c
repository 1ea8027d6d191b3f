/* `hub spokes add NAME -- npm:PACKAGE[@VERSION] [ARG...]`, and a pasted
 * `npx -y PACKAGE[@VERSION] [ARG...]`: the package is installed with npm into a store
 * the hub manages (<data_root>/.spoke-packages/NAME/VERSION, --ignore-scripts unless
 * the operator allows scripts), its version and integrity are pinned in the manifest
 * ("package"), and the server's command is its bin script there. `hub spokes update`
 * installs the same spec again and moves the pin when the version changed. */
#include "cli_logtail.h"
#include "cli_spokes_npm.h"
#include "cli_run.h"
#include "jsonfile.h"
#include "log.h"
#include "rmtree.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPM "npm"

/* "@scope/name@1.2" -> name "@scope/name", version "1.2" (NULL: latest). False for
 * what npm would not take as a registry name. */
static bool split_spec(const char *spec, char **name, char **version)
{
    const char *at = strchr(spec[0] == '@' ? spec + 1 : spec, '@');
    size_t n = at ? (size_t)(at - spec) : strlen(spec);
    if (n == 0 || n > 214)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = spec[i];
        if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && !strchr("-._~@/", c) &&
            !(c >= 'A' && c <= 'Z'))
            return false;
    }
    if (spec[0] == '@' && !memchr(spec, '/', n))
        return false;
    *name = xstrndup(spec, n);
    *version = at && at[1] ? xstrdup(at + 1) : NULL;
    return true;
}

/* Runs argv with stdout and stderr into log_path; its exit status, or -1. */
static int run_logged(char *const argv[], const char *log_path)
{
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int rc = cli_run(argv, fd, NULL, NULL, 0);
    close(fd);
    return rc;
}

/* Whether path, every symlink and ".." resolved, is a regular file inside pkg_dir: a
 * "bin" of "../../x" or a link out of the package would have `hub spokes add` run (and
 * bind into the jail) a file of the host's. */
static bool bin_inside(const char *pkg_dir, const char *path)
{
    char *dir = realpath(pkg_dir, NULL), *file = realpath(path, NULL);
    struct stat st;
    size_t n = dir ? strlen(dir) : 0;
    bool ok = dir && file && strncmp(file, dir, n) == 0 && file[n] == '/' && stat(file, &st) == 0 &&
              S_ISREG(st.st_mode);
    free(dir);
    free(file);
    return ok;
}

/* The bin script of an installed package: its "bin" (a string, the one entry, or the
 * entry named for the package). */
char *npm_package_bin(const char *pkg_dir, const char *name, char *err, size_t errlen)
{
    char *pj = xasprintf("%s/package.json", pkg_dir);
    struct jf_ctx c = {.file = pj, .err = err, .errlen = errlen};
    json_t *root = jf_load(&c, 4 * 1024 * 1024);
    free(pj);
    if (!root)
        return NULL;
    const json_t *bin = json_object_get(root, "bin");
    const char *rel = json_string_value(bin);
    const char *last = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (!rel && json_is_object(bin)) {
        rel = json_string_value(json_object_get(bin, last));
        if (!rel && json_object_size(bin) == 1)
            rel = json_string_value(json_object_iter_value(json_object_iter((json_t *)bin)));
        if (!rel) {
            /* Several, none named for the package: the first in name order. */
            const char *key, *best = NULL;
            json_t *v;
            json_object_foreach((json_t *)bin, key,
                                v) if (json_is_string(v) && (!best || strcmp(key, best) < 0))
            {
                best = key;
                rel = json_string_value(v);
            }
        }
    }
    char *out = rel ? xasprintf("%s/%s", pkg_dir, rel) : NULL;
    if (!out)
        snprintf(err, errlen, "package %s names no program (\"bin\" in its package.json)", name);
    else if (!bin_inside(pkg_dir, out)) {
        snprintf(err, errlen,
                 "package %s: its \"bin\" \"%.200s\" is not a file inside the package: refused "
                 "(a package may only run its own code)",
                 name, rel);
        free(out);
        out = NULL;
    }
    json_decref(root);
    return out;
}

int npm_install(const struct hub_config *cfg, const char *app, const char *spec, bool scripts,
                struct npm_install *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char *name = NULL, *version = NULL;
    if (!split_spec(spec, &name, &version)) {
        snprintf(err, errlen, "\"%.100s\" is not an npm package name", spec);
        return -1;
    }
    int rc = -1;
    char *store = xasprintf("%s/.spoke-packages/%s", cfg->data_root, app);
    char *tmp = xasprintf("%s/.installing.%d", store, (int)getpid());
    char *log_path = xasprintf("%s/install.log", store);
    char *target = NULL;
    json_t *lock = NULL;
    if (mkdir_p(tmp, 0755) < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    fprintf(stderr, "hub: installing %s%s%s with npm into %s (%s)...\n", name, version ? "@" : "",
            version ? version : "", store,
            scripts ? "install scripts allowed" : "--ignore-scripts");
    char *pkg_arg = xasprintf("%s@%s", name, version ? version : "latest");
    char *argv[] = {(char *)NPM,
                    "install",
                    "--prefix",
                    tmp,
                    "--no-audit",
                    "--no-fund",
                    "--omit=dev",
                    "--no-save-dev",
                    scripts ? "--foreground-scripts" : "--ignore-scripts",
                    pkg_arg,
                    NULL};
    int st = run_logged(argv, log_path);
    free(pkg_arg);
    if (st != 0) {
        snprintf(err, errlen, "npm install %s failed (%s %d); its output, %s:", spec,
                 st < 0 ? "could not run npm:" : "exit", st < 0 ? errno : st, log_path);
        log_warnx("%s", err);
        cli_show_log_tail(log_path);
        goto out;
    }
    char *lock_path = xasprintf("%s/package-lock.json", tmp);
    struct jf_ctx c = {.file = lock_path, .err = err, .errlen = errlen};
    lock = jf_load(&c, 64 * 1024 * 1024);
    free(lock_path);
    char *key = xasprintf("node_modules/%s", name);
    const json_t *entry = json_object_get(json_object_get(lock, "packages"), key);
    free(key);
    const char *got = json_string_value(json_object_get(entry, "version"));
    const char *integrity = json_string_value(json_object_get(entry, "integrity"));
    if (!got) {
        snprintf(err, errlen, "npm installed no %s (package-lock.json has no version for it)",
                 name);
        goto out;
    }
    target = xasprintf("%s/%s", store, got);
    if (access(target, F_OK) == 0) {
        char *old = xasprintf("%s.old.%d", target, (int)getpid());
        if (rename(target, old) < 0 || rmtree(old) < 0) {
            snprintf(err, errlen, "replacing %s: %s", target, strerror(errno));
            free(old);
            goto out;
        }
        free(old);
    }
    if (rename(tmp, target) < 0) {
        snprintf(err, errlen, "moving the install to %s: %s", target, strerror(errno));
        goto out;
    }
    char *pkg_dir = xasprintf("%s/node_modules/%s", target, name);
    out->bin = npm_package_bin(pkg_dir, name, err, errlen);
    free(pkg_dir);
    if (!out->bin)
        goto out;
    out->package = json_pack("{s:s,s:s,s:s,s:s}", "npm", name, "spec", version ? version : "latest",
                             "version", got, "dir", target);
    if (integrity)
        json_object_set_new(out->package, "integrity", json_string(integrity));
    if (scripts)
        json_object_set_new(out->package, "scripts", json_true());
    fprintf(stderr, "hub: installed %s@%s%s%s\n", name, got, integrity ? " " : "",
            integrity ? integrity : "");
    rc = 0;
out:
    if (rc < 0 && access(tmp, F_OK) == 0)
        rmtree(tmp);
    json_decref(lock);
    free(target);
    free(log_path);
    free(tmp);
    free(store);
    free(name);
    free(version);
    return rc;
}

void npm_install_free(struct npm_install *in)
{
    free(in->bin);
    json_decref(in->package);
    memset(in, 0, sizeof(*in));
}
