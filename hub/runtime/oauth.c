/* OAuth 2.1 as a client for remote MCP servers: the guarded HTTPS client, the tokens in
 * the secret store, their refresh before a start, the audit of both (oauth.h). */
#include "oauth.h"
#include "audit.h"
#include "config/config.h"
#include "log.h"
#include "netaddr.h"
#include "redact.h"
#include "secret.h"
#include "secrets/secrets.h"
#include "util.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define REFRESH_MARGIN_S 60

struct fetch {
    const struct hub_config *cfg;
    struct oauth_response *r;
    bool too_big;
    char refused[160]; /* why the guard refused an address */
};

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct fetch *f = ud;
    size_t len = size * n;
    if (f->r->len + len > OAUTH_BODY_MAX) {
        f->too_big = true;
        return 0;
    }
    f->r->body = xrealloc(f->r->body, f->r->len + len + 1);
    memcpy(f->r->body + f->r->len, data, len);
    f->r->len += len;
    f->r->body[f->r->len] = '\0';
    return len;
}

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    struct fetch *f = ud;
    size_t len = size * n;
    static const char name[] = "WWW-Authenticate:";
    if (len > sizeof(name) - 1 && len < 4096 && strncasecmp(line, name, sizeof(name) - 1) == 0) {
        const char *v = line + sizeof(name) - 1;
        size_t vlen = len - (sizeof(name) - 1);
        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
            vlen--;
        free(f->r->www_authenticate);
        f->r->www_authenticate = xstrndup(v, vlen);
    }
    return len;
}

/* netproxy's address guard, for the hub's own connections: a public address, or one
 * the operator listed (netproxy.upstream_allow_cidr, for stand-ins). */
static curl_socket_t open_guarded(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct fetch *f = ud;
    (void)purpose;
    const struct sockaddr *sa = &a->addr;
    enum addr_class c = addr_classify(sa);
    bool listed = false;
    for (char **p = f->cfg->netproxy_allow_cidr; p && *p && !listed; p++) {
        struct cidr cidr;
        listed = cidr_parse(*p, &cidr) && cidr_contains(&cidr, sa);
    }
    if (c != ADDR_PUBLIC && !listed) {
        char ip[64];
        sockaddr_format_ip(sa, ip, sizeof(ip));
        snprintf(f->refused, sizeof(f->refused), "%s is a %s address, which is refused", ip,
                 addr_class_name(c));
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

char *oauth_url_host(const char *url)
{
    if (!url || strncasecmp(url, "https://", 8) != 0)
        return NULL;
    const char *h = url + 8;
    size_t len = strcspn(h, ":/?#");
    if (len == 0 || len > 253 || memchr(h, '@', strcspn(h, "/?#")))
        return NULL;
    char *host = xstrndup(h, len);
    for (char *p = host; *p; p++) {
        *p = (char)tolower((unsigned char)*p);
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-') {
            free(host);
            return NULL;
        }
    }
    return host;
}

int oauth_http(const struct hub_config *cfg, const char *method, const char *url, const char *ctype,
               const char *body, struct oauth_response *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    char *host = oauth_url_host(url);
    if (!host) {
        snprintf(err, errlen, "not an https URL: %.200s", url ? url : "(none)");
        return -1;
    }
    free(host);
    struct fetch f = {.cfg = cfg, .r = r};
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "no HTTP client");
        return -1;
    }
    struct curl_slist *resolve = NULL, *headers = NULL;
    for (char **p = cfg->netproxy_resolve; p && *p; p++)
        resolve = curl_slist_append(resolve, *p);
    headers = curl_slist_append(headers, "Accept: application/json");
    char *ct = NULL;
    if (ctype) {
        ct = xasprintf("Content-Type: %s", ctype);
        headers = curl_slist_append(headers, ct);
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_PROXY, ""); /* the hub's own connection: never a proxy */
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_guarded);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &f);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "isolategpt-hub/1.0");
    if (cfg->netproxy_upstream_ca)
        curl_easy_setopt(c, CURLOPT_CAINFO, cfg->netproxy_upstream_ca);
    if (strcmp(method, "POST") == 0)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    int ret = 0;
    if (rc != CURLE_OK) {
        if (f.refused[0])
            snprintf(err, errlen, "%.200s: %s", url, f.refused);
        else if (f.too_big)
            snprintf(err, errlen, "%.200s: an answer over %d bytes", url, OAUTH_BODY_MAX);
        else
            snprintf(err, errlen, "%.200s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        oauth_response_free(r);
        ret = -1;
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(resolve);
    curl_slist_free_all(headers);
    free(ct);
    return ret;
}

void oauth_response_free(struct oauth_response *r)
{
    free(r->body);
    free(r->www_authenticate);
    memset(r, 0, sizeof(*r));
}

static int store_one(struct secret_store *st, const char *name, const char *host,
                     const char *header, const char *value, char *err, size_t errlen)
{
    const char *why = secret_injectable(value, strlen(value));
    if (why) {
        snprintf(err, errlen, "the token for %s cannot be kept: %s", name, why);
        return -1;
    }
    struct secret_meta meta = {0};
    snprintf(meta.name, sizeof(meta.name), "%s", name);
    char *hosts[2] = {(char *)host, NULL};
    meta.hosts = hosts;
    meta.header = (char *)header;
    bool created = false;
    return secret_store_set(st, &meta, value, strlen(value), &created, err, errlen);
}

int oauth_store_tokens(struct secret_store *st, const char *app, const char *resource_host,
                       const char *token_endpoint, const char *client_id, const char *resource,
                       const json_t *answer, char *err, size_t errlen)
{
    const char *access = json_string_value(json_object_get(answer, "access_token"));
    const char *type = json_string_value(json_object_get(answer, "token_type"));
    const char *refresh = json_string_value(json_object_get(answer, "refresh_token"));
    json_t *expires = json_object_get(answer, "expires_in");
    if (!access || !*access || !type || strcasecmp(type, "Bearer") != 0) {
        snprintf(err, errlen, "the token endpoint's answer has no Bearer access_token");
        return -1;
    }
    redact_add(access, strlen(access), "oauth access token");
    char name[SECRET_NAME_MAX + 1], rname[SECRET_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%s%s", app, OAUTH_ACCESS_SUFFIX);
    snprintf(rname, sizeof(rname), "%s%s", app, OAUTH_REFRESH_SUFFIX);
    char *old_refresh = NULL;
    if (!refresh) { /* a refresh that gave no new refresh token keeps the old one */
        struct secret_meta m;
        char *v = NULL;
        size_t vlen = 0;
        char e[256];
        if (secret_store_get(st, rname, &m, &v, &vlen, e, sizeof(e)) == 1) {
            json_t *old = json_loadb(v, vlen, 0, NULL);
            const char *o = json_string_value(json_object_get(old, "refresh_token"));
            old_refresh = o ? xstrdup(o) : NULL;
            json_decref(old);
            secret_meta_clear(&m);
            secret_free(v);
        }
        refresh = old_refresh;
    }
    char *token_host = oauth_url_host(token_endpoint);
    json_int_t expires_at = json_is_integer(expires) && json_integer_value(expires) > 0
                                ? (json_int_t)time(NULL) + json_integer_value(expires)
                                : 0;
    json_t *state = json_pack("{s:s,s:s,s:s,s:I}", "client_id", client_id, "token_endpoint",
                              token_endpoint, "resource", resource, "expires_at", expires_at);
    if (refresh)
        json_object_set_new(state, "refresh_token", json_string(refresh));
    char *state_text = json_dumps(state, JSON_COMPACT);
    json_decref(state);
    int rc = -1;
    if (!token_host)
        snprintf(err, errlen, "the token endpoint is not an https URL");
    else if (store_one(st, name, resource_host, "Authorization", access, err, errlen) == 0 &&
             store_one(st, rname, token_host, NULL, state_text, err, errlen) == 0)
        rc = 0;
    if (state_text) {
        explicit_bzero(state_text, strlen(state_text));
        free(state_text);
    }
    if (old_refresh) {
        explicit_bzero(old_refresh, strlen(old_refresh));
        free(old_refresh);
    }
    free(token_host);
    return rc;
}

/* application/x-www-form-urlencoded: "k=v&..." from pairs (NULL values skipped). */
static char *form(const char *const *kv)
{
    char *out = xstrdup("");
    for (size_t i = 0; kv[i]; i += 2) {
        if (!kv[i + 1])
            continue;
        char *v = curl_easy_escape(NULL, kv[i + 1], 0);
        char *next = xasprintf("%s%s%s=%s", out, *out ? "&" : "", kv[i], v ? v : "");
        curl_free(v);
        explicit_bzero(out, strlen(out));
        free(out);
        out = next;
    }
    return out;
}

int oauth_refresh_if_due(const struct hub_config *cfg, struct secret_store *st, const char *app,
                         bool force, char *err, size_t errlen)
{
    char rname[SECRET_NAME_MAX + 1], name[SECRET_NAME_MAX + 1];
    snprintf(rname, sizeof(rname), "%s%s", app, OAUTH_REFRESH_SUFFIX);
    snprintf(name, sizeof(name), "%s%s", app, OAUTH_ACCESS_SUFFIX);
    struct secret_meta m, am;
    char *v = NULL;
    size_t vlen = 0;
    int got = secret_store_get(st, rname, &m, &v, &vlen, err, errlen);
    if (got <= 0)
        return got; /* 0: not an OAuth app */
    secret_meta_clear(&m);
    json_t *s = json_loadb(v, vlen, 0, NULL);
    secret_free(v);
    const char *refresh = json_string_value(json_object_get(s, "refresh_token"));
    const char *endpoint = json_string_value(json_object_get(s, "token_endpoint"));
    const char *client_id = json_string_value(json_object_get(s, "client_id"));
    const char *resource = json_string_value(json_object_get(s, "resource"));
    json_int_t expires_at = json_integer_value(json_object_get(s, "expires_at"));
    int rc = 0;
    if (!force && (expires_at == 0 || expires_at > (json_int_t)time(NULL) + REFRESH_MARGIN_S))
        goto out; /* not due (or no expiry given) */
    if (!refresh || !endpoint || !client_id || !resource) {
        snprintf(err, errlen,
                 "the token of %s has expired and there is no refresh token: run "
                 "`hub spokes login %s`",
                 app, app);
        rc = -1;
        goto out;
    }
    if (secret_store_get(st, name, &am, NULL, NULL, err, errlen) != 1) {
        rc = -1;
        goto out;
    }
    char *resource_host = am.hosts && am.hosts[0] ? xstrdup(am.hosts[0]) : NULL;
    secret_meta_clear(&am);
    const char *kv[] = {"grant_type", "refresh_token", "refresh_token", refresh, "client_id",
                        client_id,    "resource",      resource,        NULL};
    char *body = form(kv);
    struct oauth_response r;
    rc = oauth_http(cfg, "POST", endpoint, "application/x-www-form-urlencoded", body, &r, err,
                    errlen);
    explicit_bzero(body, strlen(body));
    free(body);
    if (rc == 0) {
        json_t *answer = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        if (!answer) {
            snprintf(err, errlen,
                     "the token endpoint answered the refresh with HTTP %ld: run "
                     "`hub spokes login %s`",
                     r.status, app);
            rc = -1;
        } else {
            rc = oauth_store_tokens(st, app, resource_host, endpoint, client_id, resource, answer,
                                    err, errlen);
            json_t *tok = json_object_get(answer, "access_token");
            if (json_is_string(tok)) /* wiped in the answer before it is freed */
                explicit_bzero((char *)json_string_value(tok), json_string_length(tok));
        }
        json_decref(answer);
        if (r.body)
            explicit_bzero(r.body, r.len);
        oauth_response_free(&r);
    }
    free(resource_host);
    if (rc == 0)
        rc = 1;
    oauth_audit(cfg, "oauth-refresh", app, rc > 0 ? "success" : "failure", rc > 0 ? NULL : err,
                endpoint);
out:
    json_decref(s);
    return rc;
}

void oauth_before_start(const struct hub_config *cfg, struct secret_store *st,
                        const struct manifest *m)
{
    char name[SECRET_NAME_MAX + 1], err[512];
    snprintf(name, sizeof(name), "%s%s", m->name, OAUTH_ACCESS_SUFFIX);
    bool uses = false;
    for (size_t i = 0; i < m->n_secret_env && !uses; i++)
        uses = strcmp(m->secret_env[i].secret, name) == 0;
    if (uses && st && oauth_refresh_if_due(cfg, st, m->name, false, err, sizeof(err)) < 0)
        log_warnx("spoke %s: %s", m->name, err);
}

void oauth_audit(const struct hub_config *cfg, const char *action, const char *app,
                 const char *outcome, const char *reason, const char *url)
{
    char err[256];
    if (!cfg->audit_path)
        return;
    struct audit *a = audit_open(cfg->audit_path, "hub", err, sizeof(err));
    if (!a) {
        log_warnx("audit %s: %s", cfg->audit_path, err);
        return;
    }
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    audit_set_str(rec, "isolate.spoke", app);
    if (reason)
        audit_set_str(rec, "event.reason", reason);
    char *host = oauth_url_host(url);
    if (host)
        audit_set_str(rec, "url.domain", host);
    free(host);
    if (audit_write(a, rec) < 0)
        log_warnx("audit %s: a record was not written", cfg->audit_path);
    audit_close(a);
}
