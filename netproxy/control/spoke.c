/* Spokes: their lifetime and their listeners. */
#include "netproxy/core/core.h"
#include "netproxy/intercept/intercept.h"
#include "netproxy/egress/egress.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "util.h"


#include <stdlib.h>
#include <string.h>

bool spoke_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > SPOKE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

struct spoke *spoke_new(struct proxy *px, const char *name, const char *user, struct policy *policy)
{
    struct spoke *s = xcalloc(1, sizeof(*s));
    str_copy(s->name, name, sizeof(s->name));
    s->user = user ? xstrdup(user) : NULL;
    s->policy = policy;
    s->max_tunnels = px->cfg->max_tunnels_per_spoke;
    s->max_pending = px->cfg->max_pending_per_spoke;
    s->report_only = px->cfg->report_only;
    s->px = px;
    refusal_budget_init(&s->budget, px->cfg->refusal_rate, px->cfg->refusal_burst,
                        px->cfg->conn_rate, px->cfg->conn_burst);
    s->refs = 1; /* the proxy's list */
    s->next = px->spokes;
    px->spokes = s;
    return s;
}

struct spoke *spoke_find(struct proxy *px, const char *name)
{
    for (struct spoke *s = px->spokes; s; s = s->next)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

void spoke_close_endpoints(struct spoke *s)
{
    while (s->listeners) {
        struct listener *l = s->listeners;
        s->listeners = l->next;
        listener_free(l);
    }
    dns_udp_free(s->dns);
    s->dns = NULL;
}

void spoke_remove(struct proxy *px, struct spoke *s)
{
    spoke_close_endpoints(s);
    refusal_budget_flush(px, s, true);
    for (struct spoke **pp = &px->spokes; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    spoke_unref(s);
}

/* Tunnels on every worker hold references: counted atomically. */
void spoke_ref(struct spoke *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void spoke_unref(struct spoke *s)
{
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    refusal_budget_flush(s->px, s, true); /* what its last tunnels' refusals left */
    policy_free(s->policy);
    synth_free(s->synth);
    cred_set_unref(s->creds);
    free(s->user);
    free(s);
}
