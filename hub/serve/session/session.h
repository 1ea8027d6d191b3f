/* hub/serve/session/'s interface: a client's session and what it reaches: the session and its protocol revisions
 * (serve_session.c, serve_modern.c, serve_mrtr.c, serve_subscribe.c), the tools and the
 * gateway's shape (serve_tools.c, serve_toolsearch.c, serve_gateway.c), sampling
 * (serve_sampling.c) and the apps' spokes (serve_spawn.c, serve_prestart.c, serve_watch.c). */
#ifndef HUB_SERVE_SESSION_H
#define HUB_SERVE_SESSION_H

#include "serve/serve_impl.h"

/* ---- serve_session.c ---- */
struct serve_session *serve_session_new(struct serve *sv, const struct serve_transport *tr, void *t,
                                        const char *user, const char *remote,
                                        const char *transport);
/* One message from the client (a parsed frame, root owned by the caller). */
void serve_session_on_message(struct serve_session *ss, struct jrpc_msg *msg);
/* A frame that did not parse: answered with the JSON-RPC error code. */
void serve_session_on_bad_frame(struct serve_session *ss, int code, const char *why);
/* Ends the session: audited, its calls detached, its questions answered no. */
void serve_session_close(struct serve_session *ss, const char *reason);
void serve_session_send(struct serve_session *ss, json_t *msg, const json_t *related);
void serve_session_error(struct serve_session *ss, const json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sends a request to the client; done runs exactly once (answer, error, or the session
 * ending). 0, or -1 when the client has too many open already (done not called). */
int serve_session_request(struct serve_session *ss, const json_t *related, const char *method,
                          json_t *params, serve_answer_fn done, void *ud);
struct serve_session *serve_session_find(struct serve *sv, const char *id);
/* The client's request related was cancelled: the questions asked for it are taken
 * back (notifications/cancelled to the client) and settled as not answered. */
void serve_session_withdraw(struct serve_session *ss, const json_t *related, const char *why);
/* 0 (debug) .. 7 (emergency), or -1 for a name that is not a level. */
int serve_log_level(const char *name);

/* ---- serve_modern.c ---- */
/* Whether a request's params name a protocol version in _meta (2026-07-28 and on). */
bool serve_modern_meta(const json_t *params);
/* Serves it statelessly: checks its _meta, answers server/discover, else dispatches. */
void serve_modern_request(struct serve_session *ss, struct jrpc_msg *msg);
/* Completes an answer to a modern request on its way out (resultType, serverInfo,
 * caching hints). */
void serve_modern_outgoing(struct serve_session *ss, json_t *msg);
/* The log level for messages about request related (a modern one's own, else the
 * session's); 8: none at all. */
int serve_session_level_for(const struct serve_session *ss, const json_t *related);
bool serve_session_modern(const struct serve_session *ss, const json_t *related);

/* The request id will get no answer: forgotten (a cancelled subscription). */
void serve_modern_forget(struct serve_session *ss, const json_t *id);

/* ---- serve_subscribe.c ---- */
enum { SERVE_LIST_TOOLS = 1, SERVE_LIST_PROMPTS = 2, SERVE_LIST_RESOURCES = 4 };
struct serve_sub;
/* A modern subscriptions/listen request: acknowledged, and held open. */
void serve_subscribe_listen(struct serve_session *ss, const json_t *id, const json_t *params);
/* The client cancelled request id: true when it was a subscription (now ended). */
bool serve_subscribe_cancel(struct serve_session *ss, const json_t *id);
/* The lists in which (SERVE_LIST_*) changed: every subscription that asked hears it. */
void serve_subscribe_changed(struct serve *sv, unsigned which);
/* The session ends: each subscription is answered (ended by the hub) and freed. */
void serve_subscribe_end(struct serve_session *ss);

/* ---- serve_tools.c ---- */
json_t *serve_tools_list(struct serve_session *ss);
/* A tool as the client sees it (APP__TOOL in the gateway shape). */
json_t *serve_tool_object(const struct manifest *m, const struct manifest_tool *t, bool gateway);

/* ---- serve_toolsearch.c ---- */
/* Whether the session is offered find_tools, call_tool and list_apps (hub.json
 * serve.tools) instead of every tool. */
bool serve_toolsearch_on(struct serve_session *ss);
json_t *serve_toolsearch_list(void);
/* True when the call was answered (find_tools, list_apps, a bad call_tool); false
 * with *inner the direct call that a call_tool wraps, or NULL for any other tool. */
bool serve_toolsearch_call(struct serve_session *ss, const json_t *id, const json_t *params,
                           json_t **inner);
void serve_tools_call(struct serve_session *ss, const json_t *id, const json_t *params);
void serve_tools_cancel(struct serve_session *ss, const json_t *request_id);
/* Resources, prompts and completion/complete to the app's spoke (--app), or every
 * app's (the gateway shape, serve_gateway.c), through the hub's read-only request
 * path. */
void serve_forward(struct serve_session *ss, const json_t *id, const char *method,
                   const json_t *params);
/* One request to app's spoke, its answer rewritten by rewrite (NULL: as it is). */
void serve_forward_app(struct serve_session *ss, const json_t *id, const char *app,
                       const char *method, const json_t *params, serve_rewrite_fn rewrite);
/* A client's request in flight, counted against the session's limit (NULL after
 * answering the client that it is over); detached when it is answered or the session
 * ends. */
struct serve_call *serve_call_start(struct serve_session *ss, const json_t *id, const char *app,
                                    const char *tool);
void serve_call_detach(struct serve_call *sc);
/* The call's request is ss's again (a 2026-07-28 retry). */
void serve_call_attach(struct serve_call *sc, struct serve_session *ss);

/* ---- serve_mrtr.c ---- */
/* Sends a request of method (elicitation/create or sampling/createMessage; params
 * stolen) as the answer input_required to the modern request of sc, when its client
 * declared that capability in it: true (done runs once, with the
 * answer of the retry or an error), else false (params freed). */
bool serve_mrtr_ask(struct serve_call *sc, const char *method, json_t *params, serve_answer_fn done,
                    void *ud);
/* A tools/call that carries requestState/inputResponses: resumes the call waiting under
 * it (true; an unknown or foreign state answered with an error), false for a request
 * that carries neither. */
bool serve_mrtr_retry(struct serve_session *ss, const json_t *id, const json_t *params);
/* Ends the waits of sc (NULL: all) unanswered. */
void serve_mrtr_withdraw(struct serve *sv, const struct serve_call *sc, const char *why);
void serve_call_unref(struct serve_call *sc);

/* ---- serve_gateway.c ---- */
/* A spoke's answer (a tool result, a read, a prompt) as the client gets it: keys of the
 * hub's own _meta namespace ("isolategpt/...") taken out, and in the gateway shape the
 * URIs of its resources and resource links under the app's name (isolategpt:APP:URI),
 * so that an app cannot point the client at another app's resource. A new value. */
json_t *serve_result_for_client(const struct serve_session *ss, const char *app,
                                const json_t *result);
/* Takes the hub's _meta keys out of result and its content items. */
void serve_strip_hub_meta(json_t *result);
void serve_gateway_forward(struct serve_session *ss, const json_t *id, const char *method,
                           const json_t *params);

/* ---- serve_prestart.c ---- */
/* Starts the user's apps whose prestart asks for it at when (a session's start: every
 * app with "session" or "service"; the service's: "service"); only only_app when it
 * names one (a session or service of --app's shape). */
void serve_prestart(struct serve *sv, const char *user, const char *only_app, enum prestart when);

#endif
