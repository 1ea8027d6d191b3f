/* Spoke manifests (config/spokes/NAME.json): the contract the hub plans from without
 * starting a spoke, checks the spoke's tools/list against, and validates every
 * argument and result with. Loaded strictly: unknown keys and bad values are errors
 * that name the file and the field. See docs/hub-and-manifests.md ("Spokes and their
 * manifests"). */
#ifndef HUB_MANIFEST_H
#define HUB_MANIFEST_H

#include "jsonschema/jsonschema.h"
#include "mcpver.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MANIFEST_NAME_MAX 64
/* The most tools a manifest may pin: a structural bound only. What a spoke may list
 * is hub.json's max_tools (MAX_TOOLS_DEFAULT), and its bytes are bounded by
 * max_frame_bytes per tools/list page and 16 pages. Real servers list more than 64:
 * @zereight/mcp-gitlab 118, a gateway of servers several hundred. */
#define MANIFEST_MAX_TOOLS 16384
#define MAX_TOOLS_DEFAULT 1024
#define MANIFEST_MAX_PORTS 16
#define MANIFEST_MAX_MOUNTS 16
#define MANIFEST_MAX_TCP 64
#define MANIFEST_MAX_EXEC 16

/* When `hub serve` starts a user's spokes before their first call: never (the first
 * call pays the start), when a session of the user opens, or when the service starts.
 * UNSET: a manifest that leaves it to hub.json. */
enum prestart { PRESTART_UNSET, PRESTART_NONE, PRESTART_SESSION, PRESTART_SERVICE };

const char *prestart_name(enum prestart p);
bool prestart_parse(const char *s, enum prestart *out);

/* The most calls hub.json or a manifest may let one spoke hold at once. */
#define MAX_INFLIGHT_LIMIT 256

/* A tool is the MCP Tool object as the server listed it (name, title, description,
 * inputSchema, outputSchema, annotations, icons, execution, _meta), plus this
 * project's own key "irreversible". */
struct manifest_tool {
    char *name;
    char *description;          /* "" when the server gives none */
    json_t *object;             /* the MCP object as pinned, manifest-only keys removed */
    json_t *input_schema_json;  /* in object */
    json_t *output_schema_json; /* in object; NULL when the tool has none */
    struct schema *input;
    struct schema *output; /* NULL: results are checked for MCP shape only */
    bool irreversible;
    /* "policy": where each argument may come from ({ARG: {"from", "else"}}, checked by
     * hub/assistant/policy.h); NULL when the tool has none. Not part of the pin. */
    json_t *policy;
};

/* Each limit is 0 when the manifest leaves it to the profile / hub defaults; without
 * memory_mb, an as_mb below the profile's memory limit lowers it (the jail's cgroup,
 * namespace mode). */
struct manifest_limits {
    uint64_t cpu_s, as_mb, fsize_mb, nofile, nproc, wall_s;
    uint64_t memory_mb, pids, cpu_percent;
    uint64_t call_s;  /* deadline of one tools/call; 0: hub.json call_timeout_ms */
    uint64_t start_s; /* start to ready, when longer than hub.json's start_timeout_ms */
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
    /* Raw TCP grants (network.tcp): "HOST:PORT", HOST a lower-case name, an IPv4
     * address or [IPv6]; reached at the same HOST:PORT from inside the jail. */
    char **tcp; /* NULL-terminated */
    size_t n_tcp;
    /* Host programs the server may run (exec): absolute paths, NULL-terminated. In the
     * process and namespace modes each is bound read-only with what it loads and the
     * runtime's seccomp preset allows processes (nsjail-lite's jail_config.programs). */
    char **exec;
    size_t n_exec;
    struct manifest_limits limits;
    /* How the hub serves it; each left to hub.json when unset (0, UNSET, -1):
     * calls in flight at once (1: one after another, in order), when `hub serve`
     * starts it, and how long it may sit without a call before it is stopped. */
    unsigned max_inflight;
    enum prestart prestart;
    int64_t idle_s;
    /* A node spoke restarted from a jail made ahead ("warm": true): after it stopped
     * (idle, or exited), the next instance is set up and node booted, waiting before
     * any of the server's code loads (hub/runtime/held.c). */
    bool warm;
    char **env; /* NULL-terminated "NAME=VALUE" given to the spoke */
    /* Variables whose value comes from the secret store ("env": {"VAR": {"secret":
     * "NAME"}}): the value itself, or a stand-in that netproxy swaps for it (secrets.h);
     * plain ("plain": true): the value itself even for a secret set with hosts. */
    struct manifest_secret_env {
        char *var, *secret;
        bool plain;
    } *secret_env;
    size_t n_secret_env;
    /* Host paths bound read-only into the jail (a server's code), as SRC and DST
     * (DST = SRC when the manifest gives one path). */
    struct manifest_mount {
        char *src, *dst;
    } mounts[MANIFEST_MAX_MOUNTS];
    size_t n_mounts;
    /* The MCP revision its server spoke when pinned ("protocol"); MCP_V_UNKNOWN when
     * the manifest does not say (a legacy start, any legacy revision taken). */
    enum mcp_version protocol;
    /* The hub answers roots/list with the spoke's /data and binds ("roots", default
     * true); false: it does not offer roots, and the server keeps its own idea. */
    bool roots;
    /* A container image (manifest "image", hub spokes add oci:): its command is a path
     * in the image's root, so it runs only in namespace isolation. */
    bool image;
    /* "secret_scan": what the hub does with a secret found in the tool's arguments or
     * results (secretscan.h: block, redact, ask, log); 0: each kind's default. */
    int secret_scan;
    struct manifest_tool *tools;
    size_t n_tools;
    json_t *pinned; /* the tools' MCP objects (an array): what tools/list must equal */
    /* Being made by `hub spokes add`: no tools pinned yet, whatever the server lists
     * is taken (never true for a manifest a hub loads from its spokes dir). */
    bool unpinned;
    /* The file's JSON, compact with sorted keys: equal text, the same manifest (a
     * spokes directory read again, hub_manifests_reload). NULL when made in memory. */
    char *canonical;
};

struct manifest_set {
    struct manifest **v;
    size_t n;
};

/* Whether a tcp grant's HOST:PORT is well-formed (see struct manifest). */
bool manifest_tcp_valid(const char *grant);
/* Whether it names a loopback address (127.0.0.0/8, [::1]): reached inside the jail
 * through a listener on the jail's own loopback. */
bool manifest_tcp_loopback(const char *grant);

/* Parses one manifest file; the file's base name must equal its "name". */
struct manifest *manifest_load(const char *path, char *err, size_t errlen);
/* The same from a JSON object (path names it in messages and resolves "profile").
 * allow_no_tools: a manifest being made (`hub spokes add`) before its tools are
 * pinned; a hub never loads one. */
struct manifest *manifest_from_json(const json_t *root, const char *path, bool allow_no_tools,
                                    char *err, size_t errlen);
/* Keys of a tool object that are this project's, not MCP's: left out of the pin. */
bool manifest_tool_key_is_local(const char *key);
void manifest_free(struct manifest *m);

/* True for the name of a manifest file in a spokes directory: NAME.json, not hidden
 * (an installer's or an editor's temporary files are). */
bool manifest_is_file_name(const char *name);

/* Loads every *.json in dir (sorted by name). One bad file fails the whole set: a hub
 * must not run with half its contract. */
int manifest_set_load(const char *dir, struct manifest_set *set, char *err, size_t errlen);
void manifest_set_free(struct manifest_set *set);

const struct manifest *manifest_find(const struct manifest_set *set, const char *name);
const struct manifest_tool *manifest_tool(const struct manifest *m, const char *name);

/* Literal env values that look like a key ("env.GITHUB_TOKEN looks like a GitHub
 * token (ghp_)"), one message per line in a malloc'd string, or NULL for none. The
 * value itself is never in the message. */
char *manifest_keylike_env(const struct manifest *m);
/* Where the jail has its own and nothing may be bound: /, /data, /proc, /dev, /sys,
 * /tmp and below. */
bool manifest_mount_dst_reserved(const char *path);
/* arg as the host has it: a path under a mount bound elsewhere in the jail
 * ("HOSTPATH:PATH") goes back to HOSTPATH, for the modes without a mount namespace.
 * malloc'd. */
char *manifest_host_path(const struct manifest *m, const char *arg);

/* True when the manifest's env sets var (the LLM key's variable: a config error, the
 * key must never reach a spoke). */
bool manifest_env_names(const struct manifest *m, const char *var);

/* Splits "APP.TOOL" at the first dot into app and tool names that pass the naming
 * rules; false (with a reason in err) otherwise. */
bool manifest_split_name(const char *full, char *app, size_t app_size, char *tool, size_t tool_size,
                         char *err, size_t errlen);

/* App names: [a-z][a-z0-9_]{0,63} with no "__" and no "_" at the end, so that the
 * gateway's APP__TOOL splits at its first "__" into one app and tool only. Tool names:
 * [A-Za-z0-9_-]{1,64}. */
bool manifest_valid_app_name(const char *s);
bool manifest_valid_tool_name(const char *s);

struct tt_hidden;
/* The characters a reader does not see (termtext.h) in every string of v, a tool's MCP
 * object: counted into h, the path of the first string holding any into first. True
 * when a manifest must refuse them (tags, bidi controls, control characters; zero-width
 * ones are only counted). */
bool manifest_hidden_chars(const json_t *v, struct tt_hidden *h, char *first, size_t firstlen);

#endif
