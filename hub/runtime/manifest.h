/* Spoke manifests (config/spokes/NAME.json): the contract the hub plans from without
 * starting a spoke, checks the spoke's tools/list against, and validates every
 * argument and result with. Loaded strictly: unknown keys and bad values are errors
 * that name the file and the field. See docs/hub-and-manifests.md ("Spokes and their
 * manifests"). */
#ifndef HUB_MANIFEST_H
#define HUB_MANIFEST_H

#include "schema.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MANIFEST_NAME_MAX 64
#define MANIFEST_MAX_TOOLS 64
#define MANIFEST_MAX_PORTS 16

struct manifest_tool {
    char *name;
    char *description;
    json_t *input_schema_json;  /* as written, for tools/list comparison */
    json_t *output_schema_json; /* NULL when the manifest gives none */
    struct schema *input;
    struct schema *output; /* NULL: results are checked for MCP shape only */
    bool irreversible;
};

/* Each limit is 0 when the manifest leaves it to the profile / hub defaults; memory_mb
 * defaults to the manifest's as_mb when it gives one (the jail's cgroup, namespace
 * mode). */
struct manifest_limits {
    uint64_t cpu_s, as_mb, fsize_mb, nofile, nproc, wall_s;
    uint64_t memory_mb, pids, cpu_percent;
    uint64_t call_s; /* deadline of one tools/call; 0: hub.json call_timeout_ms */
};

struct manifest {
    char *file;
    char *name;
    char *description;
    char **command; /* NULL-terminated argv; command[0] is resolved at spawn */
    char *runtime;  /* seccomp preset: "c", "python", "node" */
    char *profile;  /* optional nsjail-lite profile path (resolved against the file) */
    char **allow;   /* NULL-terminated registrable domains; empty: no network */
    size_t n_allow;
    uint16_t ports[MANIFEST_MAX_PORTS];
    size_t n_ports;
    struct manifest_limits limits;
    char **env; /* NULL-terminated "NAME=VALUE" given to the spoke */
    struct manifest_tool *tools;
    size_t n_tools;
};

struct manifest_set {
    struct manifest **v;
    size_t n;
};

/* Parses one manifest file; the file's base name must equal its "name". */
struct manifest *manifest_load(const char *path, char *err, size_t errlen);
void manifest_free(struct manifest *m);

/* Loads every *.json in dir (sorted by name). One bad file fails the whole set: a hub
 * must not run with half its contract. */
int manifest_set_load(const char *dir, struct manifest_set *set, char *err, size_t errlen);
void manifest_set_free(struct manifest_set *set);

const struct manifest *manifest_find(const struct manifest_set *set, const char *name);
const struct manifest_tool *manifest_tool(const struct manifest *m, const char *name);

/* Splits "APP.TOOL" at the first dot into app and tool names that pass the naming
 * rules; false (with a reason in err) otherwise. */
bool manifest_split_name(const char *full, char *app, size_t app_size, char *tool, size_t tool_size,
                         char *err, size_t errlen);

/* App names: [a-z][a-z0-9_]{0,63}. Tool names: [A-Za-z0-9_-]{1,64}. */
bool manifest_valid_app_name(const char *s);
bool manifest_valid_tool_name(const char *s);

#endif
