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

/* ---- serve_metrics.c ---- */
void serve_metrics_call(struct serve *sv, const char *outcome, const char *layer,
                        uint64_t duration_ns);
int serve_metrics_listen(struct serve *sv, const char *addr, char *err, size_t errlen);
char *serve_metrics_text(const struct serve *sv);

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

/* Each folder's interface, after the types above that they use. */
#include "transport/transport.h"
#include "session/session.h"
#include "background/background.h"
#include "auth/auth.h"

#endif
