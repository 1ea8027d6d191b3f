#include "policy.h"

#include "connect.h"
#include "util.h"

#include <libpsl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static psl_ctx_t *psl_loaded;    /* owned: from a file */
static const psl_ctx_t *psl_ctx; /* what lookups use */
static char psl_source[160];
static unsigned psl_generation; /* bumped when the list changes: ends cached answers */

bool policy_psl_init(const char *psl_file, char *err, size_t errlen)
{
    if (psl_ctx)
        return true;
    if (psl_file) {
        psl_loaded = psl_load_file(psl_file);
        if (!psl_loaded) {
            snprintf(err, errlen, "cannot load the public suffix list %s", psl_file);
            return false;
        }
        snprintf(psl_source, sizeof(psl_source), "%s", psl_file);
    } else {
        psl_loaded = psl_latest(NULL);
        if (psl_loaded) {
            snprintf(psl_source, sizeof(psl_source), "newest of %s and the built-in list",
                     psl_dist_filename() && *psl_dist_filename() ? psl_dist_filename()
                                                                 : "the system list");
        }
    }
    psl_ctx = psl_loaded;
    psl_generation++;
    if (!psl_ctx) {
        psl_ctx = psl_builtin();
        snprintf(psl_source, sizeof(psl_source), "libpsl built-in list");
    }
    if (!psl_ctx) {
        snprintf(err, errlen, "no public suffix list available (install publicsuffix)");
        return false;
    }
    return true;
}

void policy_psl_free(void)
{
    psl_free(psl_loaded);
    psl_loaded = NULL;
    psl_ctx = NULL;
    psl_generation++;
}

const char *policy_psl_source(void)
{
    return psl_source;
}

const char *policy_registrable_domain(const char *name)
{
    /* A spoke asks for the same few hosts over and over: the last answer is kept per
     * thread (the list never changes while the proxy runs). The answer is a suffix of
     * the name, so it is kept as an offset into it; -1 for a public suffix. */
    static _Thread_local char last_name[HOST_NAME_MAX_LEN + 1];
    static _Thread_local ptrdiff_t last_offset;
    static _Thread_local unsigned last_generation;
    if (!psl_ctx)
        return NULL;
    size_t len = strlen(name);
    if (len <= HOST_NAME_MAX_LEN && last_generation == psl_generation && last_name[0] &&
        strcmp(name, last_name) == 0)
        return last_offset < 0 ? NULL : name + last_offset;
    const char *reg = psl_registrable_domain(psl_ctx, name);
    if (len <= HOST_NAME_MAX_LEN) {
        memcpy(last_name, name, len + 1);
        last_offset = reg ? reg - name : -1;
        last_generation = psl_generation;
    }
    return reg;
}

struct policy {
    char **domains; /* sorted for bsearch */
    size_t ndomains;
    struct sockaddr_storage *ips;
    size_t nips;
    uint16_t ports[POLICY_MAX_PORTS];
    size_t nports;
    struct tcp_grant {
        struct host host;
        uint16_t port;
        char *spec; /* "host:port" as canonicalised, the record's rule.name */
    } tcp[POLICY_MAX_TCP];
    size_t ntcp;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct policy *policy_new(const char *const *entries, size_t n, const uint16_t *ports,
                          size_t nports, char *err, size_t errlen)
{
    if (n > POLICY_MAX_ENTRIES) {
        snprintf(err, errlen, "more than %d allowlist entries", POLICY_MAX_ENTRIES);
        return NULL;
    }
    if (nports == 0 || nports > POLICY_MAX_PORTS) {
        snprintf(err, errlen, "between 1 and %d ports must be allowed", POLICY_MAX_PORTS);
        return NULL;
    }
    struct policy *p = xcalloc(1, sizeof(*p));
    p->domains = xcalloc(n + 1, sizeof(char *));
    p->ips = xcalloc(n + 1, sizeof(*p->ips));
    for (size_t i = 0; i < nports; i++) {
        if (ports[i] == 0) {
            snprintf(err, errlen, "port 0 is not a destination port");
            policy_free(p);
            return NULL;
        }
        p->ports[p->nports++] = ports[i];
    }
    for (size_t i = 0; i < n; i++) {
        struct host h;
        const char *why = NULL;
        const char *e = entries[i];
        size_t len = strlen(e);
        bool bracketed = len >= 2 && e[0] == '[' && e[len - 1] == ']';
        /* A bare IPv6 address is fine in a config, unlike in an authority. */
        bool v6 = !bracketed && strchr(e, ':') != NULL;
        struct host tmp;
        if (v6 && host_canonicalise(e, len, true, &tmp, &why)) {
            h = tmp;
        } else if (!host_canonicalise(bracketed ? e + 1 : e, bracketed ? len - 2 : len, bracketed,
                                      &h, &why)) {
            snprintf(err, errlen, "allowlist entry \"%.64s\": %s", e, why);
            policy_free(p);
            return NULL;
        }
        if (h.kind == HOST_IP) {
            p->ips[p->nips++] = h.addr;
            continue;
        }
        const char *reg = policy_registrable_domain(h.name);
        if (!reg) {
            snprintf(err, errlen,
                     "allowlist entry \"%s\" is a public suffix: it would allow every site "
                     "registered under it",
                     h.name);
            policy_free(p);
            return NULL;
        }
        if (strcmp(reg, h.name) != 0) {
            snprintf(err, errlen,
                     "allowlist entry \"%s\" is not a registrable domain; list \"%s\" (its "
                     "registrable domain) instead",
                     h.name, reg);
            policy_free(p);
            return NULL;
        }
        bool dup = false;
        for (size_t j = 0; j < p->ndomains; j++)
            dup = dup || strcmp(p->domains[j], h.name) == 0;
        if (!dup)
            p->domains[p->ndomains++] = xstrdup(h.name);
    }
    qsort(p->domains, p->ndomains, sizeof(char *), cmp_str);
    return p;
}

void policy_free(struct policy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->ndomains; i++)
        free(p->domains[i]);
    free(p->domains);
    free(p->ips);
    for (size_t i = 0; i < p->ntcp; i++)
        free(p->tcp[i].spec);
    free(p);
}

bool policy_add_tcp(struct policy *p, const char *spec, char *err, size_t errlen)
{
    if (p->ntcp == POLICY_MAX_TCP) {
        snprintf(err, errlen, "more than %d tcp grants", POLICY_MAX_TCP);
        return false;
    }
    struct authority a;
    const char *why = NULL;
    struct tcp_grant *g = &p->tcp[p->ntcp];
    if (!authority_parse(spec, strlen(spec), &a, &why) ||
        !host_canonicalise(a.host, a.host_len, a.bracketed, &g->host, &why)) {
        snprintf(err, errlen, "tcp grant \"%.64s\": %s (expected HOST:PORT)", spec, why);
        return false;
    }
    g->port = a.port;
    g->spec = xasprintf(g->host.kind == HOST_IP && g->host.addr.ss_family == AF_INET6 ? "[%s]:%u"
                                                                                      : "%s:%u",
                        g->host.name, a.port);
    p->ntcp++;
    return true;
}

const char *policy_tcp_grant(const struct policy *p, const struct host *h, uint16_t port)
{
    for (size_t i = 0; i < p->ntcp; i++) {
        const struct tcp_grant *g = &p->tcp[i];
        if (g->port != port || g->host.kind != h->kind)
            continue;
        if (h->kind == HOST_NAME ? strcmp(g->host.name, h->name) == 0
                                 : host_addr_equal((const struct sockaddr *)&g->host.addr,
                                                   (const struct sockaddr *)&h->addr))
            return g->spec;
    }
    return NULL;
}

bool policy_tcp_names(const struct policy *p, const char *name, const char **rule)
{
    for (size_t i = 0; i < p->ntcp; i++)
        if (p->tcp[i].host.kind == HOST_NAME && strcmp(p->tcp[i].host.name, name) == 0) {
            *rule = p->tcp[i].spec;
            return true;
        }
    return false;
}

size_t policy_tcp_count(const struct policy *p)
{
    return p->ntcp;
}

enum reason policy_check_host(const struct policy *p, const struct host *h, const char **rule,
                              const char **registered)
{
    *rule = NULL;
    *registered = NULL;
    if (h->kind == HOST_IP) {
        for (size_t i = 0; i < p->nips; i++)
            if (host_addr_equal((const struct sockaddr *)&p->ips[i],
                                (const struct sockaddr *)&h->addr)) {
                *rule = h->name;
                return R_ALLOWED;
            }
        return R_IP_LITERAL;
    }
    const char *reg = policy_registrable_domain(h->name);
    if (!reg)
        return R_PUBLIC_SUFFIX;
    *registered = reg;
    char *const *hit = bsearch(&reg, p->domains, p->ndomains, sizeof(char *), cmp_str);
    if (!hit)
        return R_NOT_ALLOWED;
    *rule = *hit;
    return R_ALLOWED;
}

bool policy_port_allowed(const struct policy *p, uint16_t port)
{
    for (size_t i = 0; i < p->nports; i++)
        if (p->ports[i] == port)
            return true;
    return false;
}

size_t policy_entry_count(const struct policy *p)
{
    return p->ndomains + p->nips;
}
