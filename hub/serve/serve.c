/* hub serve's top: the serve object over a hub, its hooks, and the end of it. */
#include "log.h"
#include "serve_impl.h"
#include "util.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct serve *serve_new(struct hub *h, struct hub_config *cfg, struct manifest_set *ms,
                        struct event_base *base, const struct serve_opts *o, char *err,
                        size_t errlen)
{
    if (o->app) {
        if (!manifest_find(ms, o->app)) {
            snprintf(err, errlen, "--app %s: no such app is installed (in %s)", o->app,
                     cfg->spokes_dir);
            llm_close(o->sampling_llm);
            return NULL;
        }
    }
    struct serve *sv = xcalloc(1, sizeof(*sv));
    sv->hub = h;
    sv->cfg = cfg;
    sv->ms = ms;
    sv->base = base;
    sv->app_name = o->app ? xstrdup(o->app) : NULL;
    sv->watch_fd = -1;
    sv->ctl_fd = sv->ctl_lock = -1;
    LIST_INIT(&sv->ctl_conns);
    TAILQ_INIT(&sv->approvals);
    LIST_INIT(&sv->mrtr);
    sv->ask_exec = o->ask_exec;
    sv->answers = answers_ref(o->answers);
    sv->grant_store = o->grant_store;
    sv->fallback_elicit = answers_elicit_hook(sv->answers);
    struct llm_sampling_limits lim = o->sampling_limits;
    if (lim.max_tokens <= 0)
        llm_sampling_limits_defaults(&lim);
    sv->sampling_max_tokens = lim.max_tokens;
    sv->data_flows_unasked = o->data_flows_unasked;
    sv->fallback_sample =
        o->sampling_llm
            ? serve_llm_sampling_hook(base, o->sampling_llm, &o->sampling_limits, err, errlen)
            : sampling_hook_none();
    if (!sv->fallback_sample) {
        llm_close(o->sampling_llm);
        sv->fallback_sample = sampling_hook_none();
        serve_free(sv);
        return NULL;
    }
    LIST_INIT(&sv->sessions);
    LIST_INIT(&sv->users);
    serve_install_hooks(sv);
    if (serve_watch_start(sv, err, errlen) < 0) {
        serve_free(sv);
        return NULL;
    }
    if (o->metrics_addr && serve_metrics_listen(sv, o->metrics_addr, err, errlen) < 0) {
        serve_free(sv);
        return NULL;
    }
    return sv;
}

void serve_close_sessions(struct serve *sv, const char *reason)
{
    serve_control_stop(sv); /* attached sessions end with their connections */
    serve_queue_free(sv);   /* questions nobody will answer now */
    serve_mrtr_withdraw(sv, NULL, "the hub is shutting down");
    while (!LIST_EMPTY(&sv->sessions))
        serve_session_close(LIST_FIRST(&sv->sessions), reason);
}

void serve_free(struct serve *sv)
{
    if (!sv)
        return;
    serve_close_sessions(sv, "the hub is shutting down");
    serve_watch_stop(sv);
    free(sv->app_name);
    if (sv->metrics_http)
        evhttp_free(sv->metrics_http);
    while (!LIST_EMPTY(&sv->users)) {
        struct serve_user *u = LIST_FIRST(&sv->users);
        LIST_REMOVE(u, link);
        free(u);
    }
    sv->fallback_elicit->free(sv->fallback_elicit);
    sv->fallback_sample->free(sv->fallback_sample);
    answers_free(sv->answers);
    free(sv);
}
