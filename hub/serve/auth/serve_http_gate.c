/* The checks every request to hub serve --http passes before anything else, in this
 * order: Host (a loopback listener answers only to loopback names, so that a page whose
 * name rebinds to 127.0.0.1 cannot drive it), Origin (browsers' cross-site requests:
 * loopback origins and --allow-origin ones), the bearer token. The same function gates a
 * request's header block as it arrives (serve_http_conn.c, before the body is read) and
 * the request evhttp parsed (serve_http.c, which decides).
 *
 * The tokens file is followed: read again on SIGHUP and when it changes (checked every
 * second: an editor's save, a rename over it, a symlink swapped as Kubernetes does; read
 * once the change has stayed a second), and a token that is gone, or now names another
 * user, ends its sessions. A file that does
 * not load keeps the tokens of the last good one, said once per change. */
#include "log.h"
#include "serve/transport/transport.h"
#include "tokens.h"
#include "util.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A name that means this machine's loopback: "localhost" exactly (a name under it, as
 * localhost.attacker.example, or one that merely starts like an address, as
 * 127.attacker.example, is whoever owns it), or an address literal inet_pton reads in
 * 127.0.0.0/8 or ::1 (IPv6 in brackets, as Host and Origin write it). */
static bool loopback_name(const char *host)
{
    if (strcasecmp(host, "localhost") == 0 || strcasecmp(host, "localhost.") == 0)
        return true;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    size_t len = strlen(host);
    if (len < 3 || len > INET6_ADDRSTRLEN + 1 || host[0] != '[' || host[len - 1] != ']')
        return false;
    char v6[INET6_ADDRSTRLEN + 2];
    memcpy(v6, host + 1, len - 2);
    v6[len - 2] = '\0';
    struct in6_addr a6;
    if (inet_pton(AF_INET6, v6, &a6) != 1)
        return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6))
        return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

/* "name" or "name:port" or "[v6]:port": the name, the port checked against ours. */
static bool host_header_ok(const struct http_server *srv, const char *value)
{
    if (!value || strlen(value) > 255)
        return false;
    char host[256];
    str_copy(host, value, sizeof(host));
    char *port = NULL;
    if (host[0] == '[') {
        char *end = strchr(host, ']');
        if (!end)
            return false;
        if (end[1] == ':')
            port = end + 2;
        else if (end[1] != '\0')
            return false;
        end[1] = '\0';
    } else {
        port = strchr(host, ':');
        if (port)
            *port++ = '\0';
    }
    if (port) {
        uint64_t p;
        if (!parse_u64(port, 1, 65535, &p) || p != srv->port)
            return false;
    }
    return loopback_name(host);
}

bool http_origin_ok(const struct http_server *srv, const char *origin)
{
    for (const char **o = srv->o->allow_origins; o && *o; o++)
        if (strcasecmp(*o, origin) == 0)
            return true;
    const char *rest;
    if (strncasecmp(origin, "http://", 7) == 0)
        rest = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        rest = origin + 8;
    else
        return false;
    if (strchr(rest, '/'))
        return false;
    /* Any port: the page is on this machine; the host name is what a rebinding attack
     * cannot fake in Origin. */
    char host[256];
    if (strlen(rest) >= sizeof(host))
        return false;
    str_copy(host, rest, sizeof(host));
    char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
    if (colon) {
        uint64_t p;
        if (!parse_u64(colon + (host[0] == '[' ? 2 : 1), 1, 65535, &p))
            return false;
        colon[host[0] == '[' ? 1 : 0] = '\0';
    }
    return loopback_name(host);
}

enum gate_result http_gate_origin(const struct http_server *srv, const char *host,
                                  const char *origin)
{
    if (srv->loopback && !host_header_ok(srv, host))
        return GATE_HOST;
    if (origin && !http_origin_ok(srv, origin))
        return GATE_ORIGIN;
    return GATE_OK;
}

void http_gate(const struct http_server *srv, const char *host, const char *origin,
               const char *authorization, struct gate_verdict *v)
{
    v->user = NULL;
    v->apps = NULL;
    v->why[0] = '\0';
    v->token = HTTP_TOKEN_SLOTS - 1;
    v->result = http_gate_origin(srv, host, origin);
    if (v->result != GATE_OK)
        return;
    if (!srv->tokens && !srv->oauth) {
        v->user = srv->o->user;
        return;
    }
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0) {
        v->result = GATE_NO_TOKEN;
        return;
    }
    const char *tok = authorization + 7;
    while (*tok == ' ')
        tok++;
    if (srv->oauth) {
        struct oauth_verdict ov;
        enum oauth_result r = oauth_check(srv->oauth, tok, strlen(tok), &ov);
        str_copy(v->why, ov.why, sizeof(v->why));
        if (r != OAUTH_OK) {
            v->result = r == OAUTH_SCOPE ? GATE_SCOPE : GATE_BAD_TOKEN;
            return;
        }
        str_copy(v->oauth_user, ov.user, sizeof(v->oauth_user));
        v->user = v->oauth_user;
        v->token = ov.slot;
        v->apps = ov.apps;
        return;
    }
    v->user = tokens_check(srv->tokens, tok, strlen(tok), &v->token);
    if (!v->user) {
        v->token = HTTP_TOKEN_SLOTS - 1;
        v->result = GATE_BAD_TOKEN;
    }
}

const char *http_gate_reason(enum gate_result r)
{
    switch (r) {
    case GATE_HOST:
        return "Host is not a loopback name";
    case GATE_ORIGIN:
        return "foreign Origin";
    case GATE_NO_TOKEN:
        return "no bearer token";
    case GATE_BAD_TOKEN:
        return "the bearer token is not valid";
    case GATE_SCOPE:
        return "the token's scopes reach no app";
    default:
        return "allowed";
    }
}

int http_gate_status(enum gate_result r)
{
    return r == GATE_OK ? 200 : r == GATE_HOST || r == GATE_ORIGIN || r == GATE_SCOPE ? 403 : 401;
}

void gate_verdict_done(struct gate_verdict *v)
{
    json_decref(v->apps);
    v->apps = NULL;
}

/* ---- the tokens file ---- */

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int http_tokens_load(struct http_server *srv, char *err, size_t errlen)
{
    struct stat st;
    if (stat(srv->o->tokens_file, &st) < 0)
        memset(&st, 0, sizeof(st));
    struct tokens *t = tokens_load(srv->o->tokens_file, err, errlen);
    srv->tokens_st = st; /* a bad file is said once, not at every check */
    if (!t)
        return -1;
    struct tokens *old = srv->tokens;
    srv->tokens = t;
    if (old) {
        size_t n_old = tokens_count(old);
        size_t *map = xcalloc(n_old ? n_old : 1, sizeof(*map));
        size_t kept = 0;
        for (size_t i = 0; i < n_old; i++)
            if ((map[i] = tokens_find_line(t, old, i)) != SIZE_MAX)
                kept++;
        http_sessions_remap(srv, map, n_old);
        http_conns_revoke(srv, map, n_old);
        free(map);
        tokens_free(old);
        log_info("--tokens %s reloaded: %zu tokens (%zu kept, %zu removed, %zu new)",
                 srv->o->tokens_file, tokens_count(t), kept, n_old - kept, tokens_count(t) - kept);
        json_t *rec = json_object();
        audit_set_str(rec, "event.kind", "event");
        audit_set_str(rec, "event.category", "configuration");
        audit_set_str(rec, "event.action", "serve-tokens-reloaded");
        audit_set_str(rec, "event.outcome", "success");
        audit_set_int(rec, "isolate.serve.tokens", (int64_t)tokens_count(t));
        audit_set_int(rec, "isolate.serve.tokens_removed", (int64_t)(n_old - kept));
        struct audit *a = hub_audit(srv->sv->hub);
        if (a)
            audit_write(a, rec);
        else
            json_decref(rec);
    }
    return 0;
}

static void reload(struct http_server *srv, const char *why)
{
    char err[512];
    if (http_tokens_load(srv, err, sizeof(err)) < 0)
        log_warnx("--tokens (%s): %s; the tokens loaded before stay", why, err);
}

static void on_sighup(evutil_socket_t sig, short what, void *ud)
{
    (void)sig;
    (void)what;
    reload(ud, "SIGHUP");
}

static void on_check(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct http_server *srv = ud;
    struct stat st;
    if (stat(srv->o->tokens_file, &st) < 0)
        memset(&st, 0, sizeof(st));
    if (same_file(&st, &srv->tokens_st))
        return;
    /* Changed: read once it stays so for a second (an editor may be half-way). */
    if (same_file(&st, &srv->tokens_pending))
        reload(srv, "the file changed");
    else
        srv->tokens_pending = st;
}

void http_tokens_follow(struct http_server *srv)
{
    if (!srv->o->tokens_file)
        return;
    srv->ev_sighup = evsignal_new(srv->sv->base, SIGHUP, on_sighup, srv);
    event_add(srv->ev_sighup, NULL);
    srv->ev_tokens = event_new(srv->sv->base, -1, EV_PERSIST, on_check, srv);
    struct timeval tv = {.tv_sec = 1};
    event_add(srv->ev_tokens, &tv);
}

void http_tokens_unfollow(struct http_server *srv)
{
    if (srv->ev_sighup)
        event_free(srv->ev_sighup);
    if (srv->ev_tokens)
        event_free(srv->ev_tokens);
    srv->ev_sighup = srv->ev_tokens = NULL;
}
