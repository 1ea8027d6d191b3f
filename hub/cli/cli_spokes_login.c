/* `hub spokes login NAME [URL]`: OAuth 2.1 for a remote MCP server, with the hub as the
 * client, on the host side (the jail never sees a token).
 *
 * The server's 401 names its protected resource metadata (RFC 9728; else the well-known
 * URL of the server's path, then of its root), which names the authorisation server,
 * whose metadata (RFC 8414) gives the endpoints; the hub registers itself (RFC 7591,
 * a public client) unless --client-id is given, makes a PKCE S256 pair and a state,
 * and prints the authorisation URL (with the RFC 8707 resource). The user opens it in
 * any browser; the code comes back on a loopback callback (http://127.0.0.1:PORT/
 * callback, this command listening) or is pasted on stdin (the redirect's URL, or the
 * code alone). The code is exchanged at the token endpoint, and the tokens kept in the
 * secret store (oauth.h): `hub spokes add NAME URL` then uses NAME.oauth as its bearer,
 * and a start refreshes it when it has expired. */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"
#include "sha256.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int cmd_spokes_login(int argc, char **argv);

#define CALLBACK_REQ_MAX 8192

static void usage(FILE *f)
{
    fprintf(f, "usage: hub spokes login NAME [URL] [OPTIONS]\n\n"
               "Logs the hub in to the remote MCP server of spoke NAME (its manifest's URL, or\n"
               "URL before `hub spokes add NAME URL`) with OAuth 2.1: prints a URL to open in a\n"
               "browser and waits for the redirect on a loopback callback, or for the\n"
               "redirect's URL (or the code) pasted here. The tokens go into the secret store\n"
               "as NAME.oauth (bound to the server's host: spokes get a stand-in) and\n"
               "NAME.oauth-refresh.\n\n"
               "  --client-id ID     a client registered beforehand (default: registered now)\n"
               "  --port N           the callback's loopback port (default: any free one)\n"
               "  --timeout-s N      how long to wait for the code (default 300)\n"
               "  --refresh          only refresh the access token now\n" CLI_COMMON_HELP);
}

static void b64url(const unsigned char *in, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = a[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = a[v & 63];
    }
    out[o] = '\0';
}

static bool random_b64url(char *out, size_t bytes)
{
    unsigned char buf[64];
    if (bytes > sizeof(buf) || getrandom(buf, bytes, 0) != (ssize_t)bytes)
        return false;
    b64url(buf, bytes, out);
    return true;
}

/* GET url as JSON (an object), or NULL and err. */
static json_t *get_json(const struct hub_config *cfg, const char *url, char *err, size_t errlen)
{
    struct oauth_response r;
    if (oauth_http(cfg, "GET", url, NULL, NULL, &r, err, errlen) < 0)
        return NULL;
    json_t *v = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "%.200s: HTTP %ld%s", url, r.status,
                 r.status == 200 ? ", not a JSON object" : "");
        json_decref(v);
        v = NULL;
    }
    oauth_response_free(&r);
    return v;
}

/* resource_metadata="URL" of a WWW-Authenticate Bearer challenge (a new string). */
static char *challenge_param(const char *h, const char *param)
{
    size_t pl = strlen(param);
    for (const char *p = h; p && *p; p++) {
        if (strncasecmp(p, param, pl) != 0 || p[pl] != '=' ||
            (p > h && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            continue;
        const char *v = p + pl + 1;
        if (*v == '"') {
            const char *end = strchr(v + 1, '"');
            return end ? xstrndup(v + 1, (size_t)(end - v - 1)) : NULL;
        }
        return xstrndup(v, strcspn(v, ", "));
    }
    return NULL;
}

/* "https://host/.well-known/NAME" + the URL's path (RFC 9728 3.1, RFC 8414 3.1). */
static char *well_known(const char *url, const char *name, bool with_path)
{
    const char *auth = url + 8, *path = auth + strcspn(auth, "/?#");
    size_t plen = strcspn(path, "?#");
    if (plen == 1 && *path == '/')
        plen = 0;
    return xasprintf("https://%.*s/.well-known/%s%.*s", (int)(path - auth), auth, name,
                     with_path ? (int)plen : 0, path);
}

static bool has_string(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_string(v) &&
                                      strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

/* The value of query parameter name in q ("a=1&b=2"), decoded; a new string or NULL. */
static char *query_param(const char *q, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = q; p && *p;) {
        size_t len = strcspn(p, "& \r\n");
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            int out = 0;
            char *raw = curl_easy_unescape(NULL, p + nl + 1, (int)(len - nl - 1), &out);
            char *v = raw && (size_t)out == strlen(raw) ? xstrdup(raw) : NULL;
            curl_free(raw);
            return v;
        }
        p += len;
        if (*p != '&')
            break;
        p++;
    }
    return NULL;
}

struct wait_code {
    const char *state;
    char *code;
    char why[200];
};

/* A callback request "GET /callback?..." : 1 with the code, 0 not (answered 400). */
static int callback(int fd, struct wait_code *w)
{
    char req[CALLBACK_REQ_MAX + 1];
    size_t n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (n < CALLBACK_REQ_MAX && !memmem(req, n, "\r\n\r\n", 4) && poll(&p, 1, 5000) == 1) {
        ssize_t r = read(fd, req + n, CALLBACK_REQ_MAX - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    req[n] = '\0';
    int got = 0;
    const char *answer = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: "
                         "close\r\n\r\nNot a login callback of this hub.\n";
    if (strncmp(req, "GET /callback?", 14) == 0) {
        const char *q = req + 14;
        char *state = query_param(q, "state"), *code = query_param(q, "code");
        char *error = query_param(q, "error");
        if (error) {
            snprintf(w->why, sizeof(w->why), "the authorisation server said: %.80s", error);
            got = -1;
        } else if (!state || strcmp(state, w->state) != 0) {
            log_warnx("a callback with a wrong state was refused (not this login's)");
        } else if (code && *code) {
            w->code = code;
            code = NULL;
            got = 1;
            answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                     "The hub is logged in. You may close this window.\n";
        }
        free(state);
        free(code);
        free(error);
    }
    ssize_t wr = write(fd, answer, strlen(answer));
    (void)wr;
    return got;
}

/* A pasted line: the redirect's URL (its state checked) or the code alone. */
static int pasted(char *line, struct wait_code *w)
{
    line[strcspn(line, "\r\n")] = '\0';
    const char *q = strchr(line, '?');
    if (!q) {
        if (!*line)
            return 0;
        w->code = xstrdup(line);
        return 1;
    }
    char *state = query_param(q + 1, "state"), *code = query_param(q + 1, "code");
    int got = 0;
    if (!state || strcmp(state, w->state) != 0 || !code)
        log_warnx("that URL is not this login's redirect (its state differs, or no code)");
    else
        w->code = code, code = NULL, got = 1;
    free(state);
    free(code);
    return got;
}

static int wait_for_code(int lfd, struct wait_code *w, int timeout_s)
{
    time_t deadline = time(NULL) + timeout_s;
    bool stdin_open = true;
    char line[4096];
    size_t llen = 0;
    while (time(NULL) < deadline) {
        struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
        int r = poll(p, stdin_open ? 2 : 1, 1000);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r > 0 && (p[0].revents & POLLIN)) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0) {
                int got = callback(fd, w);
                close(fd);
                if (got != 0)
                    return got > 0 ? 0 : -1;
            }
        }
        if (stdin_open && r > 0 && (p[1].revents & (POLLIN | POLLHUP))) {
            ssize_t n = read(0, line + llen, sizeof(line) - 1 - llen);
            if (n <= 0) {
                stdin_open = false;
                continue;
            }
            llen += (size_t)n;
            line[llen] = '\0';
            char *nl = strchr(line, '\n');
            if (nl || llen == sizeof(line) - 1) {
                if (pasted(line, w) > 0)
                    return 0;
                llen = 0;
            }
        }
    }
    snprintf(w->why, sizeof(w->why), "no code came within %d s", timeout_s);
    return -1;
}

static int listen_loopback(unsigned port, unsigned *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

/* The remote's URL: the manifest's bridge command, or the one given. */
static char *remote_url(const struct manifest_set *ms, const char *name, const char *given)
{
    if (given)
        return xstrdup(given);
    const struct manifest *m = manifest_find(ms, name);
    if (!m || !m->command || !m->command[0] || strcmp(m->command[0], "mcp_remote") != 0 ||
        !m->command[1])
        return NULL;
    return xstrdup(m->command[1]);
}

static int login(struct hub_config *cfg, const char *app, const char *url, const char *client_id,
                 unsigned port, int timeout_s, char *err, size_t errlen)
{
    int rc = -1, lfd = -1;
    json_t *prm = NULL, *asm_ = NULL, *reg = NULL, *tok = NULL;
    char *prm_url = NULL, *scope = NULL, *as_url = NULL, *redirect = NULL, *auth_url = NULL;
    char *registered = NULL, *body = NULL, *host = oauth_url_host(url);
    struct wait_code w = {0};
    struct oauth_response r = {0};
    struct secret_store *st = secret_store_new(cfg);
    if (!host) {
        snprintf(err, errlen, "%.200s is not an https URL", url);
        goto out;
    }
    /* 1. The server's challenge names its metadata (or the well-known URLs do). */
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                       "\"name\":\"isolategpt-hub\",\"version\":\"1.0\"}}}";
    if (oauth_http(cfg, "POST", url, "application/json", init, &r, err, errlen) < 0)
        goto out;
    if (r.status != 401) {
        snprintf(err, errlen,
                 "the server answered HTTP %ld without a credential, not 401: it "
                 "asks for no OAuth login",
                 r.status);
        goto out;
    }
    if (r.www_authenticate) {
        prm_url = challenge_param(r.www_authenticate, "resource_metadata");
        scope = challenge_param(r.www_authenticate, "scope");
    }
    oauth_response_free(&r);
    for (int i = 0; i < 3 && !prm; i++) {
        char *u = i == 0 ? (prm_url ? xstrdup(prm_url) : NULL)
                         : well_known(url, "oauth-protected-resource", i == 1);
        if (u)
            prm = get_json(cfg, u, err, errlen);
        free(u);
    }
    if (!prm)
        goto out;
    const char *resource = json_string_value(json_object_get(prm, "resource"));
    /* RFC 9728 3.3: the metadata is for this server, or it is someone else's. */
    size_t rlen = resource ? strlen(resource) : 0;
    if (!resource || rlen < 9 || strncmp(url, resource, rlen) != 0 ||
        !(resource[rlen - 1] == '/' || strchr("/?", url[rlen]))) {
        snprintf(err, errlen, "the protected resource metadata is for %.200s, not %.200s",
                 resource ? resource : "(none)", url);
        goto out;
    }
    const char *as =
        json_string_value(json_array_get(json_object_get(prm, "authorization_servers"), 0));
    if (!as || strncmp(as, "https://", 8) != 0) {
        snprintf(err, errlen,
                 "the protected resource metadata names no https authorisation server");
        goto out;
    }
    if (!scope && json_array_size(json_object_get(prm, "scopes_supported"))) {
        scope = xstrdup("");
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(prm, "scopes_supported"), i, v)
        {
            char *next = xasprintf("%s%s%s", scope, *scope ? " " : "", json_string_value(v));
            free(scope);
            scope = next;
        }
    }
    /* 2. The authorisation server's metadata (RFC 8414, then OpenID Connect's). */
    for (int i = 0; i < 2 && !asm_; i++) {
        as_url =
            well_known(as, i == 0 ? "oauth-authorization-server" : "openid-configuration", true);
        asm_ = get_json(cfg, as_url, err, errlen);
        free(as_url);
        as_url = NULL;
    }
    if (!asm_)
        goto out;
    const char *issuer = json_string_value(json_object_get(asm_, "issuer"));
    const char *authz = json_string_value(json_object_get(asm_, "authorization_endpoint"));
    const char *token = json_string_value(json_object_get(asm_, "token_endpoint"));
    const char *regep = json_string_value(json_object_get(asm_, "registration_endpoint"));
    if (!issuer || strcmp(issuer, as) != 0) {
        snprintf(err, errlen, "the authorisation server's metadata names issuer %.200s, not %.200s",
                 issuer ? issuer : "(none)", as);
        goto out;
    }
    if (!authz || !token || strncmp(authz, "https://", 8) != 0 ||
        strncmp(token, "https://", 8) != 0) {
        snprintf(err, errlen,
                 "the authorisation server has no https authorization and token "
                 "endpoints");
        goto out;
    }
    if (!has_string(json_object_get(asm_, "code_challenge_methods_supported"), "S256")) {
        snprintf(err, errlen, "the authorisation server does not offer PKCE S256: refused");
        goto out;
    }
    /* 3. The callback, then the client (registered now unless given). */
    lfd = listen_loopback(port, &port);
    if (lfd < 0) {
        snprintf(err, errlen, "cannot listen on 127.0.0.1 for the callback: %s", strerror(errno));
        goto out;
    }
    redirect = xasprintf("http://127.0.0.1:%u/callback", port);
    if (!client_id) {
        if (!regep || strncmp(regep, "https://", 8) != 0) {
            snprintf(err, errlen,
                     "the authorisation server offers no client registration: give "
                     "--client-id");
            goto out;
        }
        json_t *req = json_pack("{s:s,s:[s],s:[s,s],s:[s],s:s}", "client_name", "IsolateGPT hub",
                                "redirect_uris", redirect, "grant_types", "authorization_code",
                                "refresh_token", "response_types", "code",
                                "token_endpoint_auth_method", "none");
        body = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        if (oauth_http(cfg, "POST", regep, "application/json", body, &r, err, errlen) < 0)
            goto out;
        reg = r.status / 100 == 2 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        long status = r.status;
        oauth_response_free(&r);
        const char *id = json_string_value(json_object_get(reg, "client_id"));
        if (!id || !*id) {
            snprintf(err, errlen, "the client registration failed (HTTP %ld)", status);
            goto out;
        }
        client_id = registered = xstrdup(id);
    }
    /* 4. PKCE and the state; the URL for the user's browser. */
    char verifier[96], challenge[64], state[48];
    unsigned char digest[SHA256_LEN];
    if (!random_b64url(verifier, 48) || !random_b64url(state, 24) ||
        !sha256(verifier, strlen(verifier), digest)) {
        snprintf(err, errlen, "no randomness");
        goto out;
    }
    b64url(digest, sizeof(digest), challenge);
    const char *kv[] = {"response_type",
                        "code",
                        "client_id",
                        client_id,
                        "redirect_uri",
                        redirect,
                        "code_challenge",
                        challenge,
                        "code_challenge_method",
                        "S256",
                        "state",
                        state,
                        "resource",
                        resource,
                        "scope",
                        scope};
    auth_url = xstrdup(authz);
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i += 2) {
        if (!kv[i + 1] || !*kv[i + 1])
            continue;
        char *v = curl_easy_escape(NULL, kv[i + 1], 0);
        char *next = xasprintf("%s%c%s=%s", auth_url, strchr(auth_url, '?') ? '&' : '?', kv[i], v);
        curl_free(v);
        free(auth_url);
        auth_url = next;
    }
    printf("Open this URL in a browser to log the hub in to %s:\n\n  %s\n\n"
           "Waiting for the redirect to %s (or paste the redirect's URL, or the code, here)\n",
           host, auth_url, redirect);
    fflush(stdout);
    w.state = state;
    if (wait_for_code(lfd, &w, timeout_s) < 0) {
        snprintf(err, errlen, "%s", w.why[0] ? w.why : "no code");
        goto out;
    }
    /* 5. The code for the tokens, kept in the store. */
    char *code = curl_easy_escape(NULL, w.code, 0), *ru = curl_easy_escape(NULL, redirect, 0);
    char *ci = curl_easy_escape(NULL, client_id, 0), *res = curl_easy_escape(NULL, resource, 0);
    free(body);
    body = xasprintf("grant_type=authorization_code&code=%s&redirect_uri=%s&client_id=%s&"
                     "code_verifier=%s&resource=%s",
                     code, ru, ci, verifier, res);
    curl_free(code);
    curl_free(ru);
    curl_free(ci);
    curl_free(res);
    if (oauth_http(cfg, "POST", token, "application/x-www-form-urlencoded", body, &r, err, errlen) <
        0)
        goto out;
    tok = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    if (!tok) {
        snprintf(err, errlen, "the token endpoint answered HTTP %ld", r.status);
        goto out;
    }
    if (oauth_store_tokens(st, app, host, token, client_id, resource, tok, err, errlen) < 0)
        goto out;
    printf("logged in: the tokens are in the secret store as %s%s (bound to %s) and %s%s\n", app,
           OAUTH_ACCESS_SUFFIX, host, app, OAUTH_REFRESH_SUFFIX);
    rc = 0;
out:
    oauth_audit(cfg, "oauth-login", app, rc == 0 ? "success" : "failure", rc == 0 ? NULL : err,
                url);
    if (r.body)
        explicit_bzero(r.body, r.len);
    oauth_response_free(&r);
    if (lfd >= 0)
        close(lfd);
    if (w.code) {
        explicit_bzero(w.code, strlen(w.code));
        free(w.code);
    }
    if (body) {
        explicit_bzero(body, strlen(body));
        free(body);
    }
    json_decref(prm);
    json_decref(asm_);
    json_decref(reg);
    json_decref(tok);
    free(prm_url);
    free(scope);
    free(as_url);
    free(redirect);
    free(auth_url);
    free(registered);
    free(host);
    secret_store_free(st);
    return rc;
}

int cmd_spokes_login(int argc, char **argv)
{
    static const struct option opts[] = {{"client-id", required_argument, NULL, 'c'},
                                         {"port", required_argument, NULL, 'p'},
                                         {"timeout-s", required_argument, NULL, 't'},
                                         {"refresh", no_argument, NULL, 'r'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    const char *client_id = NULL;
    uint64_t port = 0, timeout_s = 300;
    bool refresh = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'c':
            client_id = optarg;
            break;
        case 'p':
            if (!parse_u64(optarg, 1, 65535, &port)) {
                log_warnx("--port must be a number from 1 to 65535");
                return EXIT_USAGE;
            }
            break;
        case 't':
            if (!parse_u64(optarg, 1, 3600, &timeout_s)) {
                log_warnx("--timeout-s must be a number from 1 to 3600");
                return EXIT_USAGE;
            }
            break;
        case 'r':
            refresh = true;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    if (optind >= argc || argc - optind > 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[optind], *given = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (!manifest_valid_app_name(name)) {
        log_warnx("NAME must match [a-z][a-z0-9_]{0,63}");
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    if (rc != EXIT_OK)
        return rc;
    char err[1024] = "";
    if (refresh) {
        struct secret_store *st = secret_store_new(&cfg);
        int r = oauth_refresh_if_due(&cfg, st, name, true, err, sizeof(err));
        secret_store_free(st);
        if (r < 0)
            log_warnx("%s", err);
        else
            printf("%s\n", r > 0 ? "refreshed" : "nothing to refresh (not logged in with OAuth)");
        rc = r < 0 ? EXIT_CALL_FAILED : EXIT_OK;
        goto out;
    }
    char *url = remote_url(&ms, name, given);
    if (!url) {
        log_warnx("spoke %s is not a remote server: give its URL (hub spokes login %s "
                  "https://HOST/PATH) before `hub spokes add`",
                  name, name);
        rc = EXIT_USAGE;
        goto out;
    }
    if (login(&cfg, name, url, client_id, (unsigned)port, (int)timeout_s, err, sizeof(err)) < 0) {
        log_warnx("login to %s failed: %s", url, err);
        rc = EXIT_CALL_FAILED;
    }
    free(url);
out:
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
