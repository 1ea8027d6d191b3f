/* hub/config/'s interface: what the operator wrote, read and checked. Besides hub.json
 * (below): the manifests (manifest.h), the catalog (catalog.h), the host ids (hostid.h)
 * and the pin (pin.h), included at the end.
 *
 * config/hub.json: the hub's settings. Relative paths in the file are resolved
 * against the file's own directory, so the same file works from any working
 * directory. Command-line options override the file. Unknown keys are errors; the
 * "llm" and "memory" objects belong to the agent (issue 5) and are kept as JSON for
 * it, except llm.api_key_env, which the runtime needs to keep that variable out of
 * every spoke. docs/hub-and-manifests.md ("hub.json") lists every key. */
#ifndef HUB_CONFIG_H
#define HUB_CONFIG_H

#include "manifest.h"
#include "netaddr.h"
#include "secrets/secrets.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum isolation { ISO_NONE, ISO_PROCESS, ISO_NAMESPACE };

const char *isolation_name(enum isolation m);
bool isolation_parse(const char *s, enum isolation *out);

/* What of the calls' arguments and results the audit keeps: nothing; their SHA-256
 * (the default); or, besides the hashes, the content itself in a separate transcript
 * log readable only by its owner. */
enum audit_content { AUDIT_CONTENT_HASHES, AUDIT_CONTENT_NONE, AUDIT_CONTENT_FULL };

const char *audit_content_name(enum audit_content v);
bool audit_content_parse(const char *s, enum audit_content *out);

#define HUB_NETPROXY_UNSET UINT64_MAX

/* hub.json's "inflight" object. */
struct inflight_settings {
    bool adaptive;          /* false: the window is max_inflight, fixed */
    unsigned initial;       /* a fresh spoke's limit (at most its max_inflight) */
    unsigned min;           /* never below (nor below 2 when max_inflight is 2 or more) */
    unsigned tolerance_pct; /* latency this many percent of the low-concurrency one holds */
    unsigned slack_ms;      /* a round trip this much above that one is taken off first */
};

#define INFLIGHT_DEFAULT_INITIAL 16
#define INFLIGHT_DEFAULT_MIN 4
#define INFLIGHT_DEFAULT_TOLERANCE_PCT 150
#define INFLIGHT_DEFAULT_SLACK_MS 10

struct hub_config {
    char *file;
    enum isolation isolation;
    char *user;
    char *spokes_dir;    /* manifests */
    char *spoke_bin_dir; /* where manifest commands without a '/' are found */
    char *profile;       /* nsjail-lite profile for spokes (process, namespace) */
    char *data_root;     /* <data_root>/<user>/<app> */
    char *run_dir;       /* spoke logs */
    char *audit_path;    /* "-" is stdout */
    enum audit_content audit_content;
    char *audit_transcript; /* for content "full"; NULL: beside audit_path */
    size_t max_frame;
    uint64_t call_timeout_ms;
    uint64_t start_timeout_ms;
    unsigned max_call_depth;
    size_t max_spokes;
    size_t spoke_log_max;
    unsigned max_inflight; /* calls in flight to one spoke at once at most (manifests may say) */
    struct inflight_settings inflight; /* how the limit below that is sized (inflight.h) */
    size_t max_tools;                  /* tools one spoke may list (hub.json max_tools) */
    enum prestart prestart;
    uint64_t idle_s; /* a spoke with no call is stopped after this long; 0: never */

    /* namespace mode */
    struct cidr veth_pool;
    char *gateway_netns; /* NULL: anonymous; else published as /run/netns/NAME */
    char veth_prefix[5]; /* host-side veth names: <prefix><hub pid>-<slot> */
    uint16_t proxy_port;
    /* Transparent egress (network.transparent_egress, default on): the gateway takes
     * every connection of a spoke and its resolver answers its DNS (net_egress.h), so
     * that a server needs no proxy variables. Off: HTTPS_PROXY only, as before. */
    bool transparent_egress;
    uint32_t host_id_base;
    uint32_t host_id_count;
    char *netproxy_bin;
    char *netproxy_audit;
    char **netproxy_resolve;    /* NULL-terminated "HOST:PORT:ADDR" */
    char **netproxy_allow_cidr; /* NULL-terminated */
    uint64_t netproxy_ping_ms;  /* health check interval */
    uint64_t netproxy_workers;  /* its event loops (--workers), 1-64 */
    char *netproxy_upstream_ca; /* CA bundle netproxy verifies upstreams with, where it
                                   opens TLS to put a secret in (NULL: the system's) */
    /* netproxy's cgroup's memory limit in MiB (0: no cgroup of its own) */
    uint64_t netproxy_memory_mb;
    /* Each spoke's budgets at netproxy (--refusal-rate, --refusal-burst, --conn-rate,
     * --conn-burst; docs/netproxy.md): HUB_NETPROXY_UNSET leaves netproxy's default. */
    uint64_t netproxy_refusal_rate, netproxy_refusal_burst;
    uint64_t netproxy_conn_rate, netproxy_conn_burst;

    /* The secret store (secrets.h) */
    char *secrets_dir;
    char *secrets_key_file;

    /* hub serve's control socket (serve.control_socket; NULL: run_dir/serve.sock, "":
     * none), where clients of this host attach and approvals are answered, and who may
     * use it (serve.control_users): root only, or every local user as the hub user of
     * their account's name. */
    char *control_socket;
    enum { CONTROL_USERS_ROOT, CONTROL_USERS_UNIX } control_users;
    /* Questions no client can be asked wait this long for `hub approvals` (0: --answers
     * decides at once); approvals_only: every question waits there (the operator's
     * policy), none goes to a client. */
    unsigned approval_wait_s;
    bool approvals_only;
    /* hub serve offers find_tools, call_tool and list_apps instead of every tool once a
     * session would list more than this many (serve.tools: "all" -1, "search" 0, N). */
    int serve_tools_search_above;
    /* The background hub that hub serve --stdio starts when none runs ends after this
     * long without a client session or a question waiting (0: never). */
    unsigned idle_exit_s;
    /* --oauth: the issuer's key set is fetched again for a key id it lacks at most this
     * often (the tests shorten it). */
    unsigned oauth_jwks_refresh_s;
    /* --oauth: the longest validity of a token accepted (exp - iat, exp - now). */
    unsigned oauth_max_token_lifetime_s;

    char *llm_key_env; /* the variable holding the LLM key; never given to a spoke */
    char *llm_api_key; /* its value, taken out of the environment at start (or NULL),
                          in secret memory (lib/secret.h) */
    json_t *llm;       /* raw "llm" object or NULL */
    json_t *memory;    /* raw "memory" object or NULL */
    json_t *policies;  /* raw "policies" array (hub/assistant/policy.h) or NULL */
};

/* Defaults, with paths relative to exe_dir (the directory of the hub binary) for the
 * binaries. */
void config_defaults(struct hub_config *c, const char *exe_dir);
/* Loads path over the defaults; 0, or -1 and "FILE: key: why" in err. */
int config_load(struct hub_config *c, const char *path, char *err, size_t errlen);
void config_free(struct hub_config *c);

/* Replaces a string setting (frees the old value). */
void config_set(char **field, const char *value);

/* The secret store and the hub's CA the configuration names (secrets.dir and
 * secrets.key_file): hub/secrets/ knows directories, not the configuration. */
struct secret_store *secret_store_new(const struct hub_config *cfg);
int hubca_ensure(const struct hub_config *cfg, struct hub_ca *ca, char *err, size_t errlen);
/* Sets the veth pool from "A.B.C.D/N": IPv4, a prefix of 8..30, not holding
 * 169.254.169.254 in a way that would leave no usable /30. */
bool config_set_veth_pool(struct hub_config *c, const char *cidr, char *err, size_t errlen);

/* The key that signs the hub's audit checkpoints (lib/auditchain.h): audit.key in the
 * hub's state directory, the folder of data_root (/var/lib/isolategpt; to free). */
char *config_audit_key_path(const struct hub_config *cfg);
/* netproxy's own key, beside it (netproxy-audit.key): netproxy signs its log with it. */
char *config_netproxy_key_path(const struct hub_config *cfg);
/* netproxy's first-seen store (netproxy/audit/firstseen.h), beside them. */
char *config_netproxy_first_seen_path(const struct hub_config *cfg);

#include "catalog.h"
#include "hostid.h"
#include "pin.h"

#endif
