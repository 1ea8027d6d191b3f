/* The default hooks: no LLM for sampling (until the agent installs its client), and
 * elicitations declined (no user at a terminal). Permission names for audit lines. */
#include "hooks.h"
#include "permission.h"
#include "util.h"

#include <stdlib.h>

const char *perm_category_name(enum perm_category c)
{
    switch (c) {
    case PERM_EXEC:
        return "exec";
    case PERM_DATA:
        return "data";
    case PERM_COLLAB:
        return "collab";
    case PERM_SECRET:
        return "secret";
    }
    return "?";
}

const char *perm_stage_name(enum perm_stage s)
{
    return s == PERM_STAGE_RELAY ? "relay" : "call";
}

const char *perm_answer_name(enum perm_answer a)
{
    switch (a) {
    case PERM_ANSWER_ONCE:
        return "once";
    case PERM_ANSWER_SESSION:
        return "session";
    case PERM_ANSWER_ALWAYS:
        return "always";
    case PERM_ANSWER_NO:
        return "no";
    case PERM_ANSWER_NEVER:
        return "never";
    }
    return "?";
}

static void no_llm(struct sampling_hook *h, const struct hook_request *req, hook_done_fn done,
                   void *done_ud)
{
    (void)h;
    (void)req;
    done(done_ud, NULL, HUB_ERR_NO_LLM, "no LLM configured");
}

static void free_hook(struct sampling_hook *h)
{
    free(h);
}

struct sampling_hook *sampling_hook_none(void)
{
    struct sampling_hook *h = xcalloc(1, sizeof(*h));
    h->create_message = no_llm;
    h->free = free_hook;
    return h;
}

static void decline(struct elicit_hook *h, const struct hook_request *req, hook_done_fn done,
                    void *done_ud)
{
    (void)h;
    (void)req;
    done(done_ud, json_pack("{s:s}", "action", "decline"), 0, NULL);
}

static void free_elicit(struct elicit_hook *h)
{
    free(h);
}

struct elicit_hook *elicit_hook_decline(void)
{
    struct elicit_hook *h = xcalloc(1, sizeof(*h));
    h->create = decline;
    h->free = free_elicit;
    return h;
}
