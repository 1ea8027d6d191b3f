/* hub serve --oauth: the OAuth 2.1 resource server (serve_oauth.c). */
#ifndef HUB_SERVE_OAUTH_H
#define HUB_SERVE_OAUTH_H

#include "runtime/runtime.h"

#include <jansson.h>
#include <stddef.h>

struct oauth_opts {
    const char *issuer;     /* the authorization server's issuer identifier */
    const char *audience;   /* this resource's URI (RFC 8707), the tokens' aud */
    const char *jwks_uri;   /* NULL: from the issuer's metadata */
    const char *user_claim; /* NULL: "sub" */
    size_t max_users;       /* distinct users counted at once (the HTTP server's slots) */
    unsigned refresh_s;     /* the keys fetched anew for an unknown kid at most this often */
    unsigned max_lifetime_s; /* a token valid longer than this is refused (0: 24 h) */
};

struct oauth;

/* Fetches the issuer's keys now: NULL with err when they cannot be had. */
struct oauth *oauth_new(const struct oauth_opts *o, char *err, size_t errlen);
void oauth_free(struct oauth *a);

enum oauth_result { OAUTH_OK, OAUTH_INVALID, OAUTH_SCOPE };

struct oauth_verdict {
    char user[65];
    size_t slot;   /* the user's counters */
    json_t *apps;  /* the apps its scopes reach (a new reference), NULL: every app */
    char why[300]; /* why not */
};

enum oauth_result oauth_check(struct oauth *a, const char *token, size_t len,
                              struct oauth_verdict *v);
/* RFC 9728's document, and where it is served. */
json_t *oauth_metadata(const struct oauth *a, const struct manifest_set *ms);
const char *oauth_metadata_url(const struct oauth *a);

#endif
