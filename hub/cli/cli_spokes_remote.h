/* `hub spokes add NAME https://HOST/PATH`: a remote MCP server as a spoke
 * (cli_spokes_remote.c). The spoke is the bridge spokes/mcp_remote with the URL; the
 * app's allowlist is the URL's registrable domain; its credential a secret bound to the
 * URL's host, so that the jail holds only a stand-in. */
#ifndef HUB_CLI_SPOKES_REMOTE_H
#define HUB_CLI_SPOKES_REMOTE_H

#include "runtime/runtime.h"

#include <stdbool.h>
#include <stddef.h>

#define REMOTE_BRIDGE "mcp_remote"            /* in spoke_bin_dir */
#define REMOTE_BEARER_ENV "MCP_REMOTE_BEARER" /* the bridge's Authorization: Bearer */

struct remote_target {
    char *url;   /* as given, its host lower-cased */
    char *host;  /* the URL's host name */
    char *allow; /* the --allow to use: the user's, with the host's registrable domain */
    char *ports; /* the --ports to use: the user's, or the URL's port other than 443 */
    char *oauth; /* "MCP_REMOTE_BEARER=NAME.oauth" when `hub spokes login` made one */
};

/* Whether a COMMAND is a URL (then it must be a remote server's). */
bool remote_is_url(const char *arg);

/* Parses and checks url: https only, a DNS name (no address literal, no userinfo),
 * a registrable domain under a public suffix. 0, or -1 and err. */
int remote_target_init(struct remote_target *t, const char *url, const char *user_allow,
                       const char *user_ports, char *err, size_t errlen);

/* The --secret VAR=NAME list of an add: the bridge's MCP_REMOTE_BEARER must be a secret
 * bound to the URL's host (--hosts), in the Authorization header or any: 0, or -1 and
 * err (the value would otherwise be in the jail). */
int remote_check_bearer(const struct hub_config *cfg, const struct remote_target *t,
                        const char *const *secrets, size_t n, char *err, size_t errlen);

/* With no MCP_REMOTE_BEARER among secrets: the token `hub spokes login app` kept, as a
 * --secret argument (t->oauth), or NULL when there is none. */
const char *remote_oauth_bearer(const struct hub_config *cfg, const char *app,
                                struct remote_target *t, const char *const *secrets, size_t n);

void remote_target_free(struct remote_target *t);

#endif
