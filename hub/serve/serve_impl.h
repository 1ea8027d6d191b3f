/* hub serve's internal types, shared by its files: the protocol core (serve_session.c),
 * tools (serve_tools.c), questions to the client (serve_ask.c), the transports
 * (serve_stdio.c, serve_http.c), tokens and metrics. */
#ifndef HUB_SERVE_IMPL_H
#define HUB_SERVE_IMPL_H

#include "serve.h"

#include "audit.h"
#include "jsonrpc.h"
#include "traceparent.h"

#include <jansson.h>
#include <stdint.h>
#include <sys/queue.h>

#define SERVE_NAME "isolategpt-hub"
#define SERVE_VERSION "0.1"
/* Requests to one client (questions) open at once; more are refused at once. */
#define SERVE_MAX_ASKS 16
/* Tool calls of one session in flight at once. */
#define SERVE_MAX_CALLS 64
/* The gateway shape's separator in the names it makes: APP__TOOL, APP__PROMPT. */
#define GATEWAY_SEP "__"
/* How long a question waits for `hub approvals` under serve.approvals_only when
 * serve.approval_wait_s says nothing. */
#define SERVE_APPROVAL_WAIT_S 300
/* How long a question sent as input_required (2026-07-28) waits for the retry. */
#define SERVE_MRTR_WAIT_S 300
/* Apps whose output one session has received, remembered (the rest count as one more). */
#define SERVE_MAX_SEEN 16
/* Grants remembered per session and per user ("session"/"always" answers). */
#define SERVE_MAX_GRANTS 256

struct serve_session;
struct serve_call;

/* What a transport does for the protocol core. */
struct serve_transport {
    /* Sends msg (stolen) to the client. related: the id of the client request the
     * message belongs to (its answer, or a progress notification or question asked
     * while it runs), or NULL for a message of the session as a whole. */
    void (*send)(void *t, json_t *msg, const json_t *related);
    /* The client's request related will get no answer (it cancelled it). */
    void (*forget)(void *t, const json_t *related);
};

/* A remembered answer: (category, stage, app, tool, caller) -> allow or deny. */
struct serve_grant {
    char key[200];
    bool allow;
};

struct serve_grants {
    struct serve_grant v[SERVE_MAX_GRANTS];
    size_t n;
};

struct serve_user {
    LIST_ENTRY(serve_user) link;
    char name[65];
    struct serve_grants always; /* for the life of this serve process */
};

struct serve_metrics {
    uint64_t sessions_total, sessions_open;
    uint64_t calls_ok, calls_tool_error, calls_refused, calls_failed, calls_cancelled;
    uint64_t refused_by_layer[8]; /* see serve_metrics.c's layer table */
    uint64_t latency_buckets[12]; /* cumulative ms buckets, see serve_metrics.c */
    uint64_t latency_count;
    double latency_sum_s;
    uint64_t asks_total, asks_denied;
    uint64_t http_unauthorized, http_forbidden, http_limited;
};

struct serve {
    struct hub *hub;
    struct hub_config *cfg;
    struct manifest_set *ms;
    struct event_base *base;
    char *app_name; /* --app, the shape of sessions that ask none; NULL: the gateway */
    /* the spokes directory followed (serve_watch.c) */
    int watch_fd;
    struct event *ev_watch, *ev_quiet;
    bool ask_exec;
    struct answers *answers;
    struct memory *grant_store; /* always/never answers shared by the user's hubs; or NULL */
    struct elicit_hook *fallback_elicit;   /* --answers' elicitation entries */
    struct sampling_hook *fallback_sample; /* no LLM: declined with a reason */
    long sampling_max_tokens;              /* llm.sampling_max_tokens, also for the client */
    bool data_flows_unasked;               /* --allow-data-flows */
    struct audit *audit;
    LIST_HEAD(, serve_session) sessions;
    LIST_HEAD(, serve_user) users;
    struct serve_metrics m;
    struct evhttp *metrics_http;
    /* the control socket (serve_control.c), when this hub owns it */
    int ctl_fd, ctl_lock;
    char *ctl_path;
    struct event *ev_ctl;
    LIST_HEAD(, ctl_conn) ctl_conns;
    size_t n_ctl_conns;
    bool background; /* hub serve --background (serve_background.c) */
    bool yielded;    /* ... which handed the socket to a hub starting now (op yield) */
    /* questions waiting for hub approvals (serve_queue.c) */
    TAILQ_HEAD(, approval) approvals;
    size_t n_approvals;
    /* questions sent as input_required, waiting for their retry (serve_mrtr.c) */
    LIST_HEAD(, mrtr_wait) mrtr;
};

enum serve_session_state { SS_NEW, SS_READY, SS_CLOSED };

struct serve_session {
    struct serve *sv;
    LIST_ENTRY(serve_session) link;
    const struct serve_transport *tr;
    void *t;
    char id[33];
    char user[65];
    char remote[80];
    char transport[8];
    enum serve_session_state state;
    char protocol[16];
    bool can_elicit, can_sample;
    bool can_elicit_url; /* declared elicitation's URL mode (2025-11-25) */
    int log_level;       /* serve_log_level(): spokes' log messages below it are not sent */
    char client_name[129], client_version[65];
    /* The one app this session is served (its own tool names), "" for the gateway
     * shape: --app's, or what an attached hub serve --stdio asked for. */
    char app[MANIFEST_NAME_MAX + 1];
    bool ask_exec; /* --ask-exec: the exec question before every call */
    /* 2026-07-28 requests in flight (serve_modern.c): id -> {method, level}; and whether
     * the request being handled now is one */
    json_t *modern_ids;
    bool in_modern;
    const json_t *modern_caps; /* the modern request's clientCapabilities, while handled */
    /* --oauth: the apps the token's scopes reach (an array of names), NULL: every app */
    json_t *apps;
    LIST_HEAD(, serve_call) calls;
    size_t n_calls;
    LIST_HEAD(, serve_ask) asks;
    size_t n_asks;
    LIST_HEAD(, serve_sub) subs; /* subscriptions/listen open (serve_subscribe.c) */
    int64_t next_id;
    uint64_t t_start, calls_total;
    struct serve_grants grants; /* "session" answers */
    /* The apps whose output this session received (gateway shape): calling another
     * app with what it may carry is the data question (serve_tools.c). */
    char seen[SERVE_MAX_SEEN][MANIFEST_NAME_MAX + 1];
    size_t n_seen;
};

/* The server's capabilities, identity and instructions, as initialize and
 * server/discover give them. */
json_t *serve_capabilities(const struct serve_session *ss, bool modern);
json_t *serve_server_info(const struct serve_session *ss);
const char *serve_instructions(const struct serve_session *ss, char *buf, size_t len);

/* Rewrites an app's answer in place into the names the client knows (the gateway's). */
typedef void (*serve_rewrite_fn)(json_t *result, const char *app);

/* One tools/call of a client, from its request until the hub's answer; it outlives
 * its session when the session ends first (the hub's call runs on to its end). */
struct serve_call {
    struct serve *sv;
    struct serve_session *ss; /* NULL once the session ended or the call was cancelled */
    LIST_ENTRY(serve_call) link;
    unsigned refs; /* the hub's call, and each open question that points at it */
    json_t *req_id;
    json_t *progress_token;
    json_t *empty_if_unsupported; /* a forwarded list method's answer when the app has none */
    serve_rewrite_fn rewrite;     /* a forwarded answer in the gateway's names, or NULL */
    char app[65], tool[65];
    char audit_id[33];
    char session_id[33], user[65]; /* of the session that made it */
    /* The request's own span (the client's _meta.traceparent continued, else a new
     * trace), and its traceparent handed to the call, which is its child. */
    struct trace_ctx trace;
    char traceparent[56];
    uint64_t t0;
    bool cancelled;
    bool modern;         /* a 2026-07-28 request: the hub sends its client no requests */
    bool can_elicit;     /* ... but it declared elicitation: questions go as input_required */
    bool can_sample;     /* ... and sampling: a spoke's sampling request too */
    bool can_elicit_url; /* ... and elicitation's URL mode */
    json_t *args;        /* tools/call's arguments (a retry must carry the same) */
    char denial[300];    /* why the last question was answered no */
};

typedef void (*serve_answer_fn)(void *ud, json_t *result, int code, const char *message);

/* An outstanding request to the client. */
struct serve_ask {
    LIST_ENTRY(serve_ask) link;
    struct serve_session *ss;
    json_int_t id;
    json_t *related; /* the client's request it is asked for */
    serve_answer_fn done;
    void *ud;
};

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

/* ---- serve_control.c ---- */
struct ctl_conn;
/* For the control socket's other requests: the user the peer acts as (want, or the
 * hub's, for a privileged peer; its account for control_users "unix"), NULL after
 * refusing it. */
const char *serve_control_user(struct ctl_conn *c, const char *want, char *buf, size_t len);
void serve_control_reply(struct ctl_conn *c, json_t *msg);
/* Root, or the account this hub runs as: it may act as any user (and see every user's
 * questions), since it could run a hub of its own as any of them. */
bool serve_control_peer_privileged(const struct ctl_conn *c);
unsigned serve_control_peer_uid(const struct ctl_conn *c);
struct serve *serve_control_serve(const struct ctl_conn *c);
/* Closes the socket and every connection (attached sessions end). */
void serve_control_stop(struct serve *sv);
void serve_control_refuse(struct ctl_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- serve_attach.c ---- */
/* A connection to the control socket: its descriptor, -2 when no hub listens there
 * (or none is configured), -1 with err. */
int serve_control_connect(const struct hub_config *cfg, char *err, size_t errlen);

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

/* ---- serve_stdio.c ---- */
struct serve_stream;
/* The stream pair is over (why; by_client: the client's doing, as closing it or a frame
 * too long, not the hub's): called once, possibly from inside the session's own handling, so the
 * owner closes the stream later (serve_stream_close) rather than from here. */
typedef void (*serve_stream_end_fn)(void *ud, struct serve_stream *st, const char *why,
                                    bool by_client);
/* A session on in_fd/out_fd (made non-blocking; the caller keeps them and closes them
 * after serve_stream_close). NULL with err when they cannot be polled. */
struct serve_stream *serve_stream_open(struct serve *sv, int in_fd, int out_fd, const char *user,
                                       const char *remote, const char *transport,
                                       serve_stream_end_fn end, void *ud, char *err, size_t errlen);
struct serve_session *serve_stream_session(struct serve_stream *st);
/* Ends the session and frees the stream; drain: wait until the last answers are
 * written (the hub's own stdout), else write what goes at once. */
void serve_stream_close(struct serve_stream *st, const char *why, bool drain);

/* The methods after initialize (or of a modern request), for either. */
void serve_session_dispatch(struct serve_session *ss, struct jrpc_msg *msg);

/* Whether the session may reach app (its token's scopes, --oauth). */
bool serve_session_app_ok(const struct serve_session *ss, const char *app);

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

/* ---- serve_prestart.c ---- */
/* Starts the user's apps whose prestart asks for it at when (a session's start: every
 * app with "session" or "service"; the service's: "service"); only only_app when it
 * names one (a session or service of --app's shape). */
void serve_prestart(struct serve *sv, const char *user, const char *only_app, enum prestart when);

/* ---- serve_metrics.c ---- */
void serve_metrics_call(struct serve *sv, const char *outcome, const char *layer,
                        uint64_t duration_ns);
int serve_metrics_listen(struct serve *sv, const char *addr, char *err, size_t errlen);
char *serve_metrics_text(const struct serve *sv);

/* ---- serve_listen.c ---- */
/* A listening TCP socket (non-blocking, close-on-exec) on "ADDR:PORT" or "[V6]:PORT";
 * *loopback says whether ADDR is a loopback address. Beyond loopback only when
 * beyond_loopback_ok, checked before anything is bound. -1 and err on failure. */
int serve_listen_socket(const char *hostport, bool beyond_loopback_ok, bool *loopback, char *err,
                        size_t errlen);

/* ---- serve_audit.c ---- */
void serve_audit_session(struct serve_session *ss, const char *action, const char *reason);
void serve_audit_call(struct serve_call *sc, struct serve_session *ss, const char *outcome,
                      const char *layer, const char *message);
void serve_audit_http(struct serve *sv, const char *remote, const char *outcome, const char *reason,
                      int status);
/* A connection refused or ended before a request (caps, deadlines, descriptors);
 * suppressed: how many such records were left out since the last one. */
void serve_audit_conn(struct serve *sv, const char *remote, const char *reason, int status,
                      uint64_t suppressed);

#endif
