/* hub serve --http --oauth ISSUER: an OAuth 2.1 resource server. The hub issues no
 * tokens; it takes the access tokens an authorization server (ISSUER) signed:
 *
 *   - RFC 9728 protected-resource metadata at /.well-known/oauth-protected-resource
 *     (and .../mcp): this resource (the audience), its authorization server, the scopes;
 *     a 401 names it (WWW-Authenticate: Bearer resource_metadata="...", scope="...");
 *   - a token is a JWT signed RS256 or ES256 by a key of the issuer's JWKS (lib/jwt.c;
 *     the JWKS URI from --oauth-jwks, else the issuer's RFC 8414 or OpenID metadata),
 *     fetched at start and again, at most every refresh_s (hub.json
 *     serve.oauth_jwks_refresh_s, 10 s), for a kid it lacks;
 *   - its claims: iss the issuer exactly, aud this resource (RFC 8707: a token meant
 *     for another resource is refused, whatever else it says), exp in the future and
 *     nbf not (60 s leeway), a lifetime (exp - iat, and exp - now) of at most
 *     max_lifetime_s (hub.json serve.oauth_max_token_lifetime_s, 24 h: a token minted
 *     for 100 years, stolen once, would be a key for good), the user claim
 *     (--oauth-user-claim, default sub) a hub user id;
 *   - its scopes (scope, a space-separated string, or scp, an array) name the apps it
 *     reaches: app:NAME, or app:* for every app; none of them: 403 insufficient_scope;
 *   - the token goes no further than this check: no spoke ever sees it.
 * Each user gets one slot of the HTTP server's per-token counters, so that a user's
 * sessions are theirs whichever of their tokens comes (a refreshed one). */
#include "jwt.h"
#include "log.h"
#include "auth.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FETCH_MAX (256 * 1024)
#define FETCH_TIMEOUT_MS 5000
#define LEEWAY_S 60

struct oauth {
    char *issuer, *audience, *jwks_uri, *user_claim, *metadata_url;
    struct jwks *keys;
    time_t fetched;
    unsigned refresh_s;
    unsigned max_lifetime_s;
    char (*users)[65]; /* slot -> user */
    size_t n_users, max_users;
};

/* ---- fetching ---- */

struct buf {
    char *data;
    size_t len;
    bool over;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    struct buf *b = ud;
    size_t add = size * n;
    if (b->len + add > FETCH_MAX) {
        b->over = true;
        return 0;
    }
    b->data = xrealloc(b->data, b->len + add + 1);
    memcpy(b->data + b->len, p, add);
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

/* https, or http to this machine (a test's stand-in issuer). */
static bool url_ok(const char *url)
{
    if (strncmp(url, "https://", 8) == 0)
        return true;
    static const char *const local[] = {"http://127.0.0.1:", "http://127.0.0.1/",
                                        "http://localhost:", "http://localhost/", "http://[::1]:"};
    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
        if (strncmp(url, local[i], strlen(local[i])) == 0)
            return true;
    return false;
}

static json_t *fetch_json(const char *url, char **raw, char *err, size_t errlen)
{
    if (!url_ok(url)) {
        snprintf(err, errlen, "%s: must be https (or http on this machine)", url);
        return NULL;
    }
    CURL *c = curl_easy_init();
    struct buf b = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)FETCH_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    json_t *v = NULL;
    if (rc != CURLE_OK)
        snprintf(err, errlen, "%s: %s", url,
                 b.over ? "larger than 256 KiB" : curl_easy_strerror(rc));
    else if (status != 200)
        snprintf(err, errlen, "%s: HTTP %ld", url, status);
    else if (!(v = json_loadb(b.data ? b.data : "", b.len, 0, NULL)) || !json_is_object(v)) {
        snprintf(err, errlen, "%s: not a JSON object", url);
        json_decref(v);
        v = NULL;
    }
    if (v && raw) {
        *raw = b.data;
        b.data = NULL;
    }
    free(b.data);
    return v;
}

static int load_keys(struct oauth *a, char *err, size_t errlen)
{
    char *raw = NULL;
    json_t *doc = fetch_json(a->jwks_uri, &raw, err, errlen);
    a->fetched = time(NULL);
    if (!doc)
        return -1;
    json_decref(doc);
    char why[300];
    struct jwks *ks = jwks_parse(raw, strlen(raw), why, sizeof(why));
    free(raw);
    if (!ks) {
        snprintf(err, errlen, "%s: %s", a->jwks_uri, why);
        return -1;
    }
    jwks_free(a->keys);
    a->keys = ks;
    return 0;
}

/* The issuer's jwks_uri from its RFC 8414 metadata, else OpenID discovery's. */
static char *discover_jwks(const char *issuer, char *err, size_t errlen)
{
    static const char *const wk[] = {"/.well-known/oauth-authorization-server",
                                     "/.well-known/openid-configuration"};
    size_t n = strlen(issuer);
    bool slash = n && issuer[n - 1] == '/';
    for (size_t i = 0; i < 2; i++) {
        char *url = xasprintf("%.*s%s", (int)(slash ? n - 1 : n), issuer, wk[i]);
        json_t *m = fetch_json(url, NULL, err, errlen);
        free(url);
        const char *iss = json_string_value(json_object_get(m, "issuer"));
        const char *jwks = json_string_value(json_object_get(m, "jwks_uri"));
        /* RFC 8414 section 3.3: the metadata must name the issuer it was fetched for. */
        char *found = iss && jwks && strcmp(iss, issuer) == 0 ? xstrdup(jwks) : NULL;
        if (m && !found)
            snprintf(err, errlen, "%s's metadata names another issuer or no jwks_uri", issuer);
        json_decref(m);
        if (found)
            return found;
    }
    return NULL;
}

struct oauth *oauth_new(const struct oauth_opts *o, char *err, size_t errlen)
{
    if (!url_ok(o->issuer) || !o->audience) {
        snprintf(err, errlen,
                 "--oauth %s: the issuer must be an https URL (http only on this "
                 "machine), and the resource's URL known",
                 o->issuer);
        return NULL;
    }
    struct oauth *a = xcalloc(1, sizeof(*a));
    a->issuer = xstrdup(o->issuer);
    a->audience = xstrdup(o->audience);
    a->user_claim = xstrdup(o->user_claim ? o->user_claim : "sub");
    a->max_users = o->max_users;
    a->refresh_s = o->refresh_s ? o->refresh_s : 10;
    a->max_lifetime_s = o->max_lifetime_s ? o->max_lifetime_s : 86400;
    a->users = xcalloc(a->max_users ? a->max_users : 1, sizeof(*a->users));
    /* The metadata's address: the resource's origin, then the well-known path and the
     * resource's own path (RFC 9728 section 3.1). */
    const char *path =
        strchr(strstr(a->audience, "://") ? strstr(a->audience, "://") + 3 : a->audience, '/');
    a->metadata_url = xasprintf("%.*s/.well-known/oauth-protected-resource%s",
                                (int)(path ? (size_t)(path - a->audience) : strlen(a->audience)),
                                a->audience, path && strcmp(path, "/") != 0 ? path : "");
    a->jwks_uri = o->jwks_uri ? xstrdup(o->jwks_uri) : discover_jwks(a->issuer, err, errlen);
    if (!a->jwks_uri || load_keys(a, err, errlen) < 0) {
        oauth_free(a);
        return NULL;
    }
    log_info("OAuth: tokens of %s for %s, %zu key(s) from %s", a->issuer, a->audience,
             jwks_count(a->keys), a->jwks_uri);
    return a;
}

void oauth_free(struct oauth *a)
{
    if (!a)
        return;
    jwks_free(a->keys);
    free(a->issuer);
    free(a->audience);
    free(a->jwks_uri);
    free(a->user_claim);
    free(a->metadata_url);
    free(a->users);
    free(a);
}

const char *oauth_metadata_url(const struct oauth *a)
{
    return a->metadata_url;
}

json_t *oauth_metadata(const struct oauth *a, const struct manifest_set *ms)
{
    json_t *scopes = json_pack("[s]", "app:*");
    for (size_t i = 0; ms && i < ms->n; i++)
        json_array_append_new(scopes, json_sprintf("app:%s", ms->v[i]->name));
    return json_pack("{s:s,s:[s],s:o,s:[s],s:s}", "resource", a->audience, "authorization_servers",
                     a->issuer, "scopes_supported", scopes, "bearer_methods_supported", "header",
                     "resource_name", "IsolateGPT hub");
}

/* ---- a token ---- */

static bool aud_ok(const json_t *aud, const char *want)
{
    if (json_is_string(aud))
        return strcmp(json_string_value(aud), want) == 0;
    size_t i;
    json_t *v;
    json_array_foreach(aud, i, v) if (json_is_string(v) &&
                                      strcmp(json_string_value(v), want) == 0) return true;
    return false;
}

/* The apps the token's scopes reach: NULL for every app (app:*), an array of names, or
 * an empty array for none. */
static json_t *apps_of(const json_t *claims)
{
    json_t *names = json_array();
    json_t *scp = json_object_get(claims, "scp");
    const char *scope = json_string_value(json_object_get(claims, "scope"));
    char *copy = scope ? strndup(scope, 4096) : NULL;
    json_t *list = json_is_array(scp) ? json_incref(scp) : json_array();
    for (char *save = NULL, *t = copy ? strtok_r(copy, " ", &save) : NULL; t;
         t = strtok_r(NULL, " ", &save))
        json_array_append_new(list, json_string(t));
    free(copy);
    size_t i;
    json_t *v;
    bool all = false;
    json_array_foreach(list, i, v)
    {
        const char *s = json_string_value(v);
        if (!s || strncmp(s, "app:", 4) != 0)
            continue;
        if (strcmp(s + 4, "*") == 0)
            all = true;
        else if (s[4] && strlen(s + 4) <= 64)
            json_array_append_new(names, json_string(s + 4));
    }
    json_decref(list);
    if (all) {
        json_decref(names);
        return NULL;
    }
    return names;
}

static size_t slot_of(struct oauth *a, const char *user)
{
    for (size_t i = 0; i < a->n_users; i++)
        if (strcmp(a->users[i], user) == 0)
            return i;
    if (a->n_users >= a->max_users)
        return SIZE_MAX;
    str_copy(a->users[a->n_users], user, sizeof(a->users[0]));
    return a->n_users++;
}

enum oauth_result oauth_check(struct oauth *a, const char *token, size_t len,
                              struct oauth_verdict *v)
{
    v->apps = NULL;
    v->slot = SIZE_MAX;
    char *kid = NULL;
    json_t *claims = jwt_verify(a->keys, token, len, &kid, v->why, sizeof(v->why));
    /* A kid the set lacks: the issuer may have rotated its keys. */
    if (!claims && kid && !jwks_has_kid(a->keys, kid) &&
        time(NULL) - a->fetched >= (time_t)a->refresh_s) {
        char err[300];
        if (load_keys(a, err, sizeof(err)) < 0)
            log_warnx("OAuth: %s", err);
        else
            claims = jwt_verify(a->keys, token, len, &kid, v->why, sizeof(v->why));
    }
    free(kid);
    if (!claims)
        return OAUTH_INVALID;
    enum oauth_result r = OAUTH_INVALID;
    time_t now = time(NULL);
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
    json_t *iat = json_object_get(claims, "iat");
    double max_life = (double)a->max_lifetime_s + LEEWAY_S;
    const char *user = json_string_value(json_object_get(claims, a->user_claim));
    if (!iss || strcmp(iss, a->issuer) != 0)
        snprintf(v->why, sizeof(v->why), "the token was issued by %.100s, not %.100s",
                 iss ? iss : "nobody", a->issuer);
    else if (!aud_ok(json_object_get(claims, "aud"), a->audience))
        snprintf(v->why, sizeof(v->why), "the token is not meant for this resource (%.120s)",
                 a->audience);
    else if (!json_is_number(exp) || json_number_value(exp) + LEEWAY_S < (double)now)
        snprintf(v->why, sizeof(v->why), "the token has expired (or names no exp)");
    else if (nbf && (!json_is_number(nbf) || json_number_value(nbf) - LEEWAY_S > (double)now))
        snprintf(v->why, sizeof(v->why), "the token is not valid yet (nbf)");
    /* Both: exp - iat is what the issuer meant, exp - now what a thief gets (a token
     * without iat, or one whose iat is a lie). */
    else if (json_number_value(exp) - (double)now > max_life ||
             (iat &&
              (!json_is_number(iat) || json_number_value(exp) - json_number_value(iat) > max_life)))
        snprintf(v->why, sizeof(v->why),
                 "the token is valid for longer than this hub accepts (%u s, hub.json "
                 "serve.oauth_max_token_lifetime_s)",
                 a->max_lifetime_s);
    else if (!user || !user_id_valid(user))
        snprintf(v->why, sizeof(v->why), "the token's %.40s claim is not a hub user id",
                 a->user_claim);
    else if ((v->slot = slot_of(a, user)) == SIZE_MAX)
        snprintf(v->why, sizeof(v->why), "too many users for this hub's counters");
    else {
        str_copy(v->user, user, sizeof(v->user));
        v->apps = apps_of(claims);
        if (v->apps && json_array_size(v->apps) == 0) {
            json_decref(v->apps);
            v->apps = NULL;
            snprintf(v->why, sizeof(v->why),
                     "the token's scopes name no app (app:NAME, or app:* for every app)");
            r = OAUTH_SCOPE;
        } else
            r = OAUTH_OK;
    }
    json_decref(claims);
    return r;
}
