/* A remote MCP server (Streamable HTTP) added as a spoke: the URL checked and turned
 * into the bridge's command line, the app's allowlist and ports, and its credential
 * checked to be a secret netproxy injects (never a value the jail holds). The rest of
 * `hub spokes add` (the jail, discovery through the hub's runtime, pinning, consent)
 * is unchanged: a remote server is a spoke like any other. */
#include "cli_spokes_remote.h"
#include "runtime/runtime.h"
#include "util.h"

#include <ctype.h>
#include <libpsl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define URL_MAX 2048

bool remote_is_url(const char *arg)
{
    return strncasecmp(arg, "https://", 8) == 0 || strncasecmp(arg, "http://", 7) == 0;
}

/* A lower-case DNS name with a dot whose last label starts with a letter, as every TLD
 * does (xn-- ones too): an IPv4 literal in any spelling inet_aton takes (10.0.0.1, 127.1,
 * 0x7f.0.0.1) ends in a number and is refused. */
static bool dns_name(const char *h, size_t len)
{
    if (len == 0 || len > 253 || h[0] == '.' || h[0] == '-' || h[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = h[i];
        if (c == '.' ? i + 1 < len && h[i + 1] == '.'
                     : !(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '-'))
            return false;
    }
    const char *dot = memrchr(h, '.', len);
    return dot && islower((unsigned char)dot[1]);
}

int remote_target_init(struct remote_target *t, const char *url, const char *user_allow,
                       const char *user_ports, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    size_t ulen = strlen(url);
    if (strncasecmp(url, "https://", 8) != 0) {
        snprintf(err, errlen,
                 "a remote server's URL must be https:// (a credential is never "
                 "sent in clear)");
        return -1;
    }
    if (ulen > URL_MAX) {
        snprintf(err, errlen, "the URL is longer than %d bytes", URL_MAX);
        return -1;
    }
    for (size_t i = 0; i < ulen; i++)
        if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f) {
            snprintf(err, errlen, "the URL has a space or a control character");
            return -1;
        }
    const char *auth = url + 8, *end = auth + strcspn(auth, "/?#");
    if (*end == '#' || strchr(end, '#')) {
        snprintf(err, errlen, "the URL has a fragment");
        return -1;
    }
    if (memchr(auth, '@', (size_t)(end - auth))) {
        snprintf(err, errlen,
                 "the URL has userinfo: keep the credential in the secret store "
                 "(hub secrets set NAME --hosts HOST) and use --secret " REMOTE_BEARER_ENV "=NAME");
        return -1;
    }
    if (*auth == '[') {
        snprintf(err, errlen, "the URL's host is an IPv6 literal, not a DNS name: name the host");
        return -1;
    }
    const char *colon = memchr(auth, ':', (size_t)(end - auth));
    size_t hlen = (size_t)((colon ? colon : end) - auth);
    unsigned long port = 443;
    if (colon) {
        char *pe;
        port = strtoul(colon + 1, &pe, 10);
        if (pe != end || pe == colon + 1 || port == 0 || port > 65535) {
            snprintf(err, errlen, "the URL's port is not a number from 1 to 65535");
            return -1;
        }
    }
    char *host = xstrndup(auth, hlen);
    for (char *p = host; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    if (!dns_name(host, hlen)) {
        snprintf(err, errlen,
                 "the URL's host \"%.80s\" is not a DNS name: an address literal is refused "
                 "(the app's allowlist names hosts; netproxy's address guard refuses private "
                 "addresses whatever the name resolves to)",
                 host);
        free(host);
        return -1;
    }
    psl_ctx_t *latest = psl_latest(NULL);
    const psl_ctx_t *psl = latest ? latest : psl_builtin();
    const char *reg = psl ? psl_registrable_domain(psl, host) : host;
    if (!reg) {
        snprintf(err, errlen, "the URL's host %s is a public suffix", host);
        free(host);
        psl_free(latest);
        return -1;
    }
    t->host = host;
    t->allow = user_allow ? xasprintf("%s,%s", user_allow, reg) : xstrdup(reg);
    psl_free(latest);
    if (user_ports)
        t->ports = xstrdup(user_ports);
    else if (port != 443)
        t->ports = xasprintf("%lu", port);
    /* The origin alone means its root; the port kept as written. */
    t->url = xasprintf("https://%s%.*s%s%s", host, colon ? (int)(end - colon) : 0,
                       colon ? colon : "", *end == '/' ? "" : "/", end);
    return 0;
}

int remote_check_bearer(const struct hub_config *cfg, const struct remote_target *t,
                        const char *const *secrets, size_t n, char *err, size_t errlen)
{
    static const char var[] = REMOTE_BEARER_ENV "=";
    struct secret_store *st = NULL;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (strncmp(secrets[i], var, sizeof(var) - 1) != 0)
            continue;
        const char *name = secrets[i] + sizeof(var) - 1;
        if (!st)
            st = secret_store_new(cfg);
        struct secret_meta meta;
        char e[512];
        int r = secret_store_get(st, name, &meta, NULL, NULL, e, sizeof(e));
        if (r <= 0) {
            if (r == 0)
                snprintf(err, errlen,
                         "secret %s is not in the store: `hub secrets set %s "
                         "--hosts %s --header Authorization` first",
                         name, name, t->host);
            else
                snprintf(err, errlen, "%s", e);
            rc = -1;
            break;
        }
        if (!meta.hosts || !meta.hosts[0] || !secret_host_matches(&meta, t->host)) {
            snprintf(err, errlen,
                     "secret %s is not bound to %s: set it with `hub secrets set %s --hosts %s` "
                     "so that netproxy puts it into the requests and the jail holds only a "
                     "stand-in",
                     name, t->host, name, t->host);
            rc = -1;
        } else if (meta.header && strcasecmp(meta.header, "Authorization") != 0) {
            snprintf(err, errlen,
                     "secret %s is injected only into the header %s; the bridge sends it as "
                     "Authorization: Bearer",
                     name, meta.header);
            rc = -1;
        }
        secret_meta_clear(&meta);
    }
    if (st)
        secret_store_free(st);
    return rc;
}

const char *remote_oauth_bearer(const struct hub_config *cfg, const char *app,
                                struct remote_target *t, const char *const *secrets, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(secrets[i], REMOTE_BEARER_ENV "=", sizeof(REMOTE_BEARER_ENV)) == 0)
            return NULL; /* the user named one */
    char name[SECRET_NAME_MAX + 1], err[256];
    snprintf(name, sizeof(name), "%s%s", app, OAUTH_ACCESS_SUFFIX);
    struct secret_store *st = secret_store_new(cfg);
    struct secret_meta meta;
    int r = secret_store_get(st, name, &meta, NULL, NULL, err, sizeof(err));
    secret_store_free(st);
    if (r != 1)
        return NULL;
    secret_meta_clear(&meta);
    free(t->oauth);
    t->oauth = xasprintf("%s=%s", REMOTE_BEARER_ENV, name);
    return t->oauth;
}

void remote_target_free(struct remote_target *t)
{
    free(t->oauth);
    free(t->url);
    free(t->host);
    free(t->allow);
    free(t->ports);
    memset(t, 0, sizeof(*t));
}
