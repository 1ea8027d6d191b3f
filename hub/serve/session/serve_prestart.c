/* Spokes started before they are needed (hub.json and manifest "prestart", `hub serve
 * --prestart`): the apps a session's user has, when the session opens ("session"), or
 * those of every user the service knows, when it starts ("service"). The start goes on
 * the hub's loop, one spawn per turn; a call that comes meanwhile waits for it as it
 * would have anyway, and one that comes later finds the spoke ready. A spoke stopped
 * afterwards (idle_s, a crash) pays its start at its next call, or the next session.
 * A "warm" app not started ahead is held instead when a session opens: its jail and
 * node ready, none of its code loaded (hub/runtime/held.h). */
#include "log.h"
#include "serve/serve_impl.h"
#include "tokens.h"

#include <stdio.h>
#include <string.h>

/* Starts user's apps whose prestart is at least when: at a session's start every app
 * with "session" or "service" (a "service" spoke that was stopped comes back with the
 * next session), at the service's start those with "service". */
void serve_prestart(struct serve *sv, const char *user, const char *only_app, enum prestart when)
{
    for (size_t i = 0; i < sv->ms->n; i++) {
        const struct manifest *m = sv->ms->v[i];
        if (only_app && only_app[0] && strcmp(m->name, only_app) != 0)
            continue; /* the one app of --app's shape */
        enum prestart p = hub_app_prestart(sv->hub, m);
        if (p == PRESTART_SERVICE || (p == PRESTART_SESSION && when == PRESTART_SESSION))
            hub_spoke_prestart(sv->hub, user, m->name);
        else if (m->warm && when == PRESTART_SESSION)
            hub_spoke_hold(sv->hub, user, m->name); /* booted, its code not loaded */
    }
}

void serve_prestart_service(struct serve *sv, const char *tokens_file, const char *default_user)
{
    if (!tokens_file) {
        serve_prestart(sv, default_user, sv->app_name, PRESTART_SERVICE);
        return;
    }
    char err[512];
    struct tokens *t = tokens_load(tokens_file, err, sizeof(err));
    if (!t) {
        log_warnx("prestart: %s", err); /* serve_http() says so again, and stops */
        return;
    }
    const char *user;
    for (size_t i = 0; (user = tokens_user(t, i)) != NULL; i++) {
        bool seen = false; /* a user with several tokens is started once */
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(tokens_user(t, k), user) == 0;
        if (!seen)
            serve_prestart(sv, user, sv->app_name, PRESTART_SERVICE);
    }
    tokens_free(t);
}
