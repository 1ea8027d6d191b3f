/* The hub's audit records: ECS field names (lib/audit.h) plus isolate.* for the
 * spoke, user, app, tool and isolation mode.
 *
 * Two kinds of record, two writers. A record of a decision that lets something happen
 * (a tool call reaching its spoke, a permission granted, a result relayed to another
 * app, an answer handed to a spoke) is written before it happens with haudit_write(),
 * whose caller refuses the action when the record cannot be written (error layer
 * "audit", HUB_ERR_AUDIT): a decision that cannot be logged is not taken. A record of
 * something that already happened (a call's end, a spoke's exit) cannot undo it:
 * haudit_note() writes it best-effort. Either way the loss is counted and the outage is
 * said once on stderr (audit_say_outages, hub.c), and nothing is sticky: the first
 * record that fits again ends the outage. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    return audit_write(h->audit, rec);
}

void haudit_note(struct hub *h, json_t *rec)
{
    (void)audit_write(h->audit, rec);
}

void haudit_refusal(const struct hub *h, int err, char *msg, size_t len, const char *fmt, ...)
{
    char action[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(action, sizeof(action), fmt, ap);
    va_end(ap);
    snprintf(msg, len, "the audit log %s cannot be written (%s); refusing to %s unlogged",
             audit_path(h->audit), strerror(err), action);
}
