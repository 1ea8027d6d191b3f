/* hub/serve/auth/'s interface: who may do what: the tokens' gate on HTTP (serve_http_gate.c), OAuth
 * (serve_oauth.c), the questions to the user and the remembered answers (serve_ask.c) and
 * the approvals queue (serve_queue.c).
 * Below, first what was serve_oauth.h. */
/* hub serve --oauth: the OAuth 2.1 resource server (serve_oauth.c). */
#ifndef HUB_SERVE_OAUTH_H
#define HUB_SERVE_OAUTH_H

#include "runtime/runtime.h"
#include "serve/serve_impl.h"

#include <jansson.h>
#include <stddef.h>

struct oauth_opts {
    const char *issuer;     /* the authorization server's issuer identifier */
    const char *audience;   /* this resource's URI (RFC 8707), the tokens' aud */
    const char *jwks_uri;   /* NULL: from the issuer's metadata */
    const char *user_claim; /* NULL: "sub" */
    size_t max_users;       /* distinct users counted at once (the HTTP server's slots) */
    unsigned refresh_s;     /* the keys fetched anew for an unknown kid at most this often */
    unsigned max_lifetime_s; /* a token valid longer than this is refused (0: 24 h) */
};

struct oauth;

/* Fetches the issuer's keys now: NULL with err when they cannot be had. */
struct oauth *oauth_new(const struct oauth_opts *o, char *err, size_t errlen);
void oauth_free(struct oauth *a);

enum oauth_result { OAUTH_OK, OAUTH_INVALID, OAUTH_SCOPE };

struct oauth_verdict {
    char user[65];
    size_t slot;   /* the user's counters */
    json_t *apps;  /* the apps its scopes reach (a new reference), NULL: every app */
    char why[300]; /* why not */
};

enum oauth_result oauth_check(struct oauth *a, const char *token, size_t len,
                              struct oauth_verdict *v);
/* RFC 9728's document, and where it is served. */
json_t *oauth_metadata(const struct oauth *a, const struct manifest_set *ms);
const char *oauth_metadata_url(const struct oauth *a);


/* ---- serve_queue.c ---- */
/* A queued question's end: answered (with ans) by hub approvals, or not (withdrawn,
 * expired, the hub ending), reason saying which. Runs exactly once. */
typedef void (*serve_approval_fn)(void *ud, bool answered, enum perm_answer ans,
                                  const char *reason);
/* Queues question q of user for call sc (its text for the person who answers) and tells
 * the client: 0 and its id, or -1 when the queue is full (done not called). */
int serve_queue_add(struct serve *sv, struct serve_call *sc, const char *user,
                    const struct perm_request *q, const char *question, serve_approval_fn done,
                    void *ud, char *id, size_t idlen);
/* Withdraws the questions of call sc (cancelled, its session gone): not answered. */
void serve_queue_withdraw(struct serve *sv, const struct serve_call *sc, const char *why);
void serve_queue_withdraw_session(struct serve *sv, const struct serve_session *ss,
                                  const char *why);
void serve_queue_free(struct serve *sv);
/* The control socket's approvals requests; false for an op that is not one. */
bool serve_queue_control(struct ctl_conn *c, const char *op, const json_t *req);

/* ---- serve_ask.c ---- */
void serve_install_hooks(struct serve *sv);
/* The data question: a gateway session that received the output of sources (app names,
 * ", "-joined) calls app.tool with args. Asked, remembered and answered as the hub's own
 * questions are; done runs once. */
void serve_ask_data_flow(struct serve_call *sc, const char *app, const char *tool,
                         bool irreversible, const char *sources, const json_t *args,
                         perm_done_fn done, void *ud);
/* Follows the spokes directory: apps added, changed or removed are offered at once and
 * the clients told (notifications/tools/list_changed). */
int serve_watch_start(struct serve *sv, char *err, size_t errlen);
/* The fallback for a spoke's sampling request when the client has none: the hub's own
 * LLM, on a thread of its own (serve_sampling.c). Takes llm over. */
struct sampling_hook *serve_llm_sampling_hook(struct event_base *base, struct llm *llm,
                                              const struct llm_sampling_limits *limits, char *err,
                                              size_t errlen);
void serve_watch_stop(struct serve *sv);
struct serve_user *serve_user_get(struct serve *sv, const char *name);

#endif
