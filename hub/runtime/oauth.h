/* OAuth 2.1 as a client, for remote MCP servers (oauth.c): the hub's own HTTPS client
 * for discovery, registration and tokens, and the tokens kept in the secret store.
 *
 * The client runs in the hub, on the host: https only, no redirects followed, no proxy,
 * names resolved as netproxy resolves them (hub.json netproxy.resolve), upstreams
 * verified with netproxy.upstream_ca when set (else the system's trust), and the same
 * address guard as netproxy's (lib/netaddr.h: public addresses only, or those in
 * netproxy.upstream_allow_cidr): the metadata a remote serves names the URLs this
 * client fetches next, so a hostile one must not be able to point the hub inside.
 *
 * Tokens: for spoke NAME, the access token is the secret NAME.oauth, bound (--hosts) to
 * the remote's host and its Authorization header, so that the jail only ever holds a
 * stand-in; what refreshes it (the refresh token, the client id, the token endpoint,
 * the resource, when it expires) is the secret NAME.oauth-refresh, bound to the token
 * endpoint's host, a value no spoke gets. */
#ifndef HUB_OAUTH_H
#define HUB_OAUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct hub_config;
struct secret_store;

#define OAUTH_BODY_MAX (256 * 1024)
#define OAUTH_ACCESS_SUFFIX ".oauth"
#define OAUTH_REFRESH_SUFFIX ".oauth-refresh"

struct oauth_response {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char *www_authenticate; /* the response's WWW-Authenticate, or NULL */
};

/* One request: method GET or POST (body with content type ctype). 0 with r filled
 * (any HTTP status), or -1 and err (refused by the guard, TLS, network, too big). */
int oauth_http(const struct hub_config *cfg, const char *method, const char *url, const char *ctype,
               const char *body, struct oauth_response *r, char *err, size_t errlen);
void oauth_response_free(struct oauth_response *r);

/* A URL's host (lower-cased, a new string) for an https URL; NULL otherwise. */
char *oauth_url_host(const char *url);

/* Keeps a token endpoint's answer (JSON: access_token, token_type Bearer, expires_in,
 * refresh_token) for spoke app: NAME.oauth for resource_host and NAME.oauth-refresh.
 * A refresh answer without a refresh_token keeps the old one. 0, or -1 and err. */
int oauth_store_tokens(struct secret_store *st, const char *app, const char *resource_host,
                       const char *token_endpoint, const char *client_id, const char *resource,
                       const json_t *answer, char *err, size_t errlen);

/* Before app starts: when NAME.oauth-refresh says the access token expires within a
 * minute and holds a refresh token, asks the token endpoint for a new one and keeps it.
 * 1 refreshed, 0 nothing to do (not due, or not an OAuth app), -1 and err (the access
 * token is left as it was). */
int oauth_refresh_if_due(const struct hub_config *cfg, struct secret_store *st, const char *app,
                         bool force, char *err, size_t errlen);

/* oauth_refresh_if_due for a spoke whose manifest gives it NAME.oauth, before its start;
 * a failure is logged (the start goes on: the server will say 401, and the call's error
 * says to log in again). */
struct manifest;
void oauth_before_start(const struct hub_config *cfg, struct secret_store *st,
                        const struct manifest *m);

/* An audit record of the login (action oauth-login / oauth-refresh) in the hub's audit
 * log: app, outcome, reason, the URL's domain; never a token. Best effort. */
void oauth_audit(const struct hub_config *cfg, const char *action, const char *app,
                 const char *outcome, const char *reason, const char *url);

#endif
