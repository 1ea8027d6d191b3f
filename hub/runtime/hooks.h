/* Hooks for the two spoke -> hub requests that reach beyond the runtime:
 *
 * sampling/createMessage: the spoke's own LLM context, served by the hub so that no
 *   credential ever enters a spoke. Until the agent (issue 5) installs its client the
 *   default answers JSON-RPC error HUB_ERR_NO_LLM "no LLM configured".
 * elicitation/create: a question to the user, shown by the hub labelled with the
 *   spoke's name (spokes never get a terminal). The default declines; --answers FILE
 *   can script answers per app (answers.c). The hub validates an accepted answer's
 *   content against the request's requestedSchema before the spoke sees it.
 *
 * Both may complete inline or later; done() is called exactly once, with either a
 * result object (ownership passes to the runtime) or an error code and message. */
#ifndef HUB_HOOKS_H
#define HUB_HOOKS_H

#include <jansson.h>

#define HUB_ERR_NO_LLM (-32010)

struct hook_request {
    const char *user;
    const char *app; /* the asking spoke's app: known by its socket */
    const char *spoke_id;
    const json_t *params; /* the request's params, borrowed for the call */
    void *origin;         /* call_opts.origin of the top-level call (hub.h) */
};

typedef void (*hook_done_fn)(void *done_ud, json_t *result, int code, const char *message);

struct sampling_hook {
    void (*create_message)(struct sampling_hook *h, const struct hook_request *req,
                           hook_done_fn done, void *done_ud);
    void (*free)(struct sampling_hook *h);
    void *ud;
};

struct elicit_hook {
    void (*create)(struct elicit_hook *h, const struct hook_request *req, hook_done_fn done,
                   void *done_ud);
    void (*free)(struct elicit_hook *h);
    void *ud;
};

/* The defaults described above. */
struct sampling_hook *sampling_hook_none(void);
struct elicit_hook *elicit_hook_decline(void);

#endif
