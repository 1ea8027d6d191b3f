/* The hub's audit records: ECS field names (lib/audit.h) plus isolate.* for the
 * spoke, user, app, tool and isolation mode. Records that stand for a decision are
 * checked by their writers: a decision that cannot be logged is not taken silently. */
#include "internal.h"
#include "log.h"

json_t *haudit_new(const char *action, const char *outcome)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.kind", "event");
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    return rec;
}

void haudit_spoke(json_t *rec, const struct spoke *sp)
{
    audit_set_str(rec, "isolate.spoke.id", sp->id);
    audit_set_str(rec, "isolate.user", sp->user);
    audit_set_str(rec, "isolate.app", sp->m->name);
    if (sp->instance)
        audit_set_str(rec, "isolate.instance", sp->instance);
    audit_set_str(rec, "isolate.mode", isolation_name(sp->hub->cfg->isolation));
}

void haudit_call(json_t *rec, const struct call *c)
{
    haudit_spoke(rec, c->target);
    audit_set_str(rec, "isolate.tool", c->tool->name);
    audit_set_str(rec, "isolate.call.id", c->id);
    audit_set_int(rec, "isolate.call.depth", c->depth);
    if (c->parent)
        audit_set_str(rec, "isolate.call.parent", c->parent->id);
    audit_set_str(rec, "isolate.caller.app", c->caller ? c->caller->m->name : "user");
}

int haudit_write(struct hub *h, json_t *rec)
{
    if (audit_write(h->audit, rec) == 0)
        return 0;
    log_warn("audit log %s", audit_path(h->audit));
    return -1;
}
