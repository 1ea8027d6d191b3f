/* The spokes directory read again while the hub runs (hub_manifests_reload, hub.h):
 * what `hub serve` does when an operator adds, updates or removes an app. The hub's
 * manifest set (owned by its caller) keeps the manifests that did not change; a
 * changed or removed one moves to the hub's retired set, never freed before the hub
 * (a mediated request or an audit record may still name it), and the spokes started
 * from it are closed, so that no call runs under a contract that is no longer the
 * operator's. */
#include "internal.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_manifest(const struct manifest *a, const struct manifest *b)
{
    return a->canonical && b->canonical && strcmp(a->canonical, b->canonical) == 0;
}

static void set_append(struct manifest_set *set, struct manifest *m)
{
    set->v = xrealloc(set->v, (set->n + 2) * sizeof(*set->v));
    set->v[set->n++] = m;
    set->v[set->n] = NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(struct manifest *const *)a)->name, (*(struct manifest *const *)b)->name);
}

/* Closes every spoke started from m (all users and instances). */
static void close_spokes_of(struct hub *h, const struct manifest *m, const char *why)
{
    for (size_t i = 0; i < h->n_spokes;) {
        if (h->spokes[i]->m == m)
            spoke_close(h, h->spokes[i], why); /* moves the last one into slot i */
        else
            i++;
    }
}

static void reload_audit(struct hub *h, const char *outcome, const char *reason, json_t *added,
                         json_t *changed, json_t *removed)
{
    json_t *rec = haudit_new("manifests-reload", outcome);
    audit_set_str(rec, "event.reason", reason);
    audit_set_str(rec, "file.directory", h->cfg->spokes_dir);
    if (added) {
        audit_set(rec, "isolate.apps.added", json_incref(added));
        audit_set(rec, "isolate.apps.changed", json_incref(changed));
        audit_set(rec, "isolate.apps.removed", json_incref(removed));
    }
    haudit_note(h, rec);
}

static void join(char *out, size_t len, const char *what, const json_t *names)
{
    if (!json_array_size(names))
        return;
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s%s", used ? "; " : "", what);
    size_t i;
    const json_t *v;
    json_array_foreach(names, i, v)
    {
        used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? ", " : " ", json_string_value(v));
    }
}

int hub_manifests_reload(struct hub *h, char *summary, size_t len, char *err, size_t errlen)
{
    summary[0] = '\0';
    struct manifest_set fresh;
    if (manifest_set_load(h->cfg->spokes_dir, &fresh, err, errlen) < 0) {
        reload_audit(h, "failure", err, NULL, NULL, NULL);
        return -1;
    }
    for (size_t i = 0; i < fresh.n; i++)
        if (manifest_env_names(fresh.v[i], h->cfg->llm_key_env)) {
            snprintf(err, errlen, "%s: env: %s is the LLM key variable (llm.api_key_env)",
                     fresh.v[i]->file, h->cfg->llm_key_env);
            manifest_set_free(&fresh);
            reload_audit(h, "failure", err, NULL, NULL, NULL);
            return -1;
        }
    /* First the sets, with no call made (closing a spoke runs its calls' callbacks,
     * which may start calls: they must find the new set whole), then the spokes. */
    json_t *added = json_array(), *changed = json_array(), *removed = json_array();
    struct manifest_set *ms = h->ms;
    size_t keep = 0, first_retired = h->retired.n;
    for (size_t i = 0; i < ms->n; i++) {
        struct manifest *old = ms->v[i];
        const struct manifest *now = manifest_find(&fresh, old->name);
        if (now && same_manifest(old, now)) {
            ms->v[keep++] = old;
            continue;
        }
        json_array_append_new(now ? changed : removed, json_string(old->name));
        set_append(&h->retired, old);
    }
    ms->n = keep;
    if (ms->v)
        ms->v[keep] = NULL;
    for (size_t i = 0; i < fresh.n; i++) {
        struct manifest *m = fresh.v[i];
        if (manifest_find(ms, m->name)) { /* unchanged: the running copy stays */
            manifest_free(m);
            continue;
        }
        bool was_changed = false;
        size_t j;
        const json_t *v;
        json_array_foreach(changed, j, v)
        {
            was_changed |= strcmp(json_string_value(v), m->name) == 0;
        }
        if (!was_changed)
            json_array_append_new(added, json_string(m->name));
        set_append(ms, m);
    }
    free(fresh.v);
    if (ms->n)
        qsort(ms->v, ms->n, sizeof(*ms->v), by_name);
    for (size_t i = first_retired; i < h->retired.n; i++)
        close_spokes_of(h, h->retired.v[i],
                        manifest_find(ms, h->retired.v[i]->name) ? "closed: its manifest changed"
                                                                 : "closed: its app was removed");
    int rc = json_array_size(added) + json_array_size(changed) + json_array_size(removed) ? 1 : 0;
    if (rc) {
        join(summary, len, "added", added);
        join(summary, len, "changed", changed);
        join(summary, len, "removed", removed);
        reload_audit(h, "success", summary, added, changed, removed);
        log_info("%s: %s", h->cfg->spokes_dir, summary);
    }
    json_decref(added);
    json_decref(changed);
    json_decref(removed);
    return rc;
}
