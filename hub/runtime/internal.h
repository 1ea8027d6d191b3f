/* The hub runtime's internal types, shared by its files (spoke.c, call.c, mcp.c,
 * mediate.c, proc.c, ...). Nothing outside hub/ includes this. */
#ifndef HUB_INTERNAL_H
#define HUB_INTERNAL_H

#include "audit.h"
#include "hub.h"
#include "inflight.h"
#include "jsonrpc.h"
#include "mcpver.h"
#include "tokenbucket.h"
#include "redact.h"
#include "secrets/secrets.h"
#include "net/net.h"
#include "traceparent.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <sys/queue.h>
#include <sys/types.h>

struct proxy_sup;
struct gateway;
struct slots;
struct jail;

/* ---- processes (proc.c) ---- */

/* One started spoke process (its whole jail in the jailed modes), from spawn until it
 * is reaped. It outlives its spoke's connection: a killed spoke is reaped later, and
 * its network slot and host uid are handed back only then. */
struct proc {
    struct hub *hub;
    LIST_ENTRY(proc) link;
    char spoke_id[33];
    char *app, *user;
    enum isolation mode;
    pid_t pid;
    int pidfd;
    struct event *ev_exit;
    struct jail *jail; /* process/namespace modes */
    /* The jail's setup is under way (its program not exec'd yet): the hub's loop does
     * not wait for it; proc.c learns the outcome from the jail's descriptor. */
    bool starting;
    bool start_failed; /* the setup failed: the program never ran */
    bool killed;
    const char *kill_reason;
    uint64_t t_start;
    /* stderr -> per-spoke log file, capped */
    int err_fd;
    struct event *ev_err;
    int log_fd;
    struct redact_stream log_redact;
    size_t log_bytes;
    bool log_capped;
    /* resources returned when reaped */
    int veth_slot;       /* -1: none */
    int veth_lock;       /* its host-wide lock (lib/hostlock.h), -1: none */
    int lo_sink;         /* the jail's loopback listeners arrive here (net_spoke.h), or -1 */
    struct spoke *owner; /* NULL once the spoke has moved on */
    struct spoke_secrets secrets; /* what it was given (spoke_secrets.h) */
};

/* ---- calls (call.c) ---- */

/* CALL_OFF: neither queued nor sent (a spoke dropped it; it is about to be failed). */
enum call_state { CALL_ASK_EXEC, CALL_QUEUED, CALL_SENT, CALL_OFF, CALL_DONE };

struct sreq;
struct fair_group;
TAILQ_HEAD(call_queue, call);

struct call {
    struct hub *hub;
    struct trace_ctx trace; /* its span: the client's trace continued, or a new one */
    LIST_ENTRY(call) link; /* in the hub's live calls */
    char id[33];
    /* NULL: tools/call of tool; else a read-only request (hub_request) of this MCP
     * method, args its params and tool a stand-in named for the method. */
    const char *method;
    bool cancelled; /* hub_call_cancel() while a permission question was open */
    hub_event_fn on_event;
    void *event_ud;
    struct call *parent;  /* the call during which the caller spoke asked; NULL: user */
    struct spoke *caller; /* NULL: the user or the planner */
    struct spoke *target;
    const struct manifest *m;
    const struct manifest_tool *tool;
    json_t *args;
    unsigned depth; /* 1 for a top-level call */
    enum call_state state;
    bool ask_exec, in_plan;
    void *origin;        /* call_opts.origin, inherited by nested calls */
    const void *session; /* call_opts.session, likewise: its share of a spoke's window */
    uint64_t t_start, t_sent, deadline;
    uint64_t t_asked; /* when its exec question went to the user (its span) */
    unsigned inflight_at_send; /* the spoke's calls in flight when it was sent, itself too */
    bool asked;                /* it asked the hub something: its round trip is not the spoke's */
    struct event *timer;
    int64_t rpc_id;
    size_t req_bytes;
    hub_call_done done; /* NULL once the caller has gone away */
    void *ud;
    /* Queued: in its session's waiting line; sent: in the spoke's calls in flight; while
     * a killed spoke fails them: in a list of its own. NULL: on none. */
    TAILQ_ENTRY(call) qlink;
    struct call_queue *onq;
    struct fair_group *group;   /* queued or sent: its session's place at the spoke */
    LIST_HEAD(, sreq) children; /* the target spoke's requests made during this call */
    unsigned sreqs;             /* of them, in progress */
    unsigned pauses;
    uint64_t pause_start;
    unsigned notifications; /* flood budget */
    /* The audit's budget for the call's progress and log records (mcp.c): bytes spent,
     * and the records left out past it (counted in the call's own record). */
    size_t event_audit_bytes;
    unsigned events_unaudited;
    /* MCP 2026-07-28's multi round-trip requests (mcp.c retry_with_inputs): the round's
     * answers gathered so far, its requestState, the hooks still to answer, the first
     * failure, and whether the requests are still being started (a hook may answer at
     * once: the retry waits until every one is under way). */
    unsigned input_rounds; /* times the spoke asked for input first */
    json_t *input_responses;
    json_t *input_state;
    unsigned inputs_pending;
    bool inputs_starting;
    char *input_error;
};

struct call *call_new(struct hub *h, const struct call_opts *o, const struct manifest *m,
                      const struct manifest_tool *t, const json_t *args, struct call *parent,
                      struct spoke *caller, uint64_t deadline, hub_call_done done, void *ud);
/* The caller does not want c any more: the spoke is told (notifications/cancelled)
 * when it has the call, and c fails with HUB_ERR_CANCELLED. */
void call_cancel(struct call *c, const char *reason);
/* Validates, asks (exec), and queues the call on its target spoke. */
void call_start(struct call *c);
void call_fail(struct call *c, int code, const char *layer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The target answered tools/call (result borrowed). */
void call_complete(struct call *c, json_t *result);
/* The caller went away: the call runs on but reports to nobody. */
void call_detach(struct call *c);
/* Deadlines of c and its ancestors stop while the user is asked something. */
void call_pause(struct call *c);
void call_resume(struct call *c);
/* True when app m of user is the target of c or of one of its ancestors. */
bool call_chain_has(const struct call *c, const struct manifest *m, const char *user);

/* ---- spoke -> hub requests (mcp.c, mediate.c) ---- */

enum sreq_kind { SREQ_ISOLATE_CALL, SREQ_SAMPLING, SREQ_ELICIT };
enum sreq_stage { SREQ_ASK_CALL, SREQ_CALLING, SREQ_ASK_RELAY, SREQ_HOOK, SREQ_DONE };

struct sreq {
    struct hub *hub;
    LIST_ENTRY(sreq) link; /* in the parent call's children */
    enum sreq_kind kind;
    enum sreq_stage stage;
    struct spoke *sp;
    uint64_t gen; /* the spoke instance that asked */
    struct call *parent;
    json_t *id;      /* the spoke's request id; NULL for an input request (2026-07-28) */
    char *input_key; /* an input request's key in the call's inputResponses */
    json_t *params;
    bool cancelled;
    bool hook_pending; /* a hook holds a pointer to this request */
    bool paused;       /* the parent chain's deadlines are paused for a question */
    /* isolate/call */
    const struct manifest *target_m;
    const struct manifest_tool *target_t;
    struct call *inner;
    json_t *result;
    char call_id[33];
    uint64_t t_start;
    uint64_t t_asked; /* when its question went to the user (its span) */
};

struct sreq *sreq_new(struct spoke *sp, enum sreq_kind kind, struct call *parent, json_t *id,
                      json_t *params);
/* Unlinks r from its call (cancelled, or done after its reply) and frees it once no
 * hook holds it. */
void sreq_cancel(struct sreq *r);
void mediate_isolate_call(struct hub *h, struct spoke *sp, struct call *parent, json_t *id,
                          json_t *params);

/* ---- spokes (spoke.c) ---- */

/* SP_HELD: a held node (held.h), in the start queue (no proc yet) or waiting for its go. */
enum spoke_state { SP_STOPPED, SP_HELD, SP_STARTING, SP_LISTING, SP_READY };

/* PEND_LISTEN: a 2026-07-28 spoke's subscriptions/listen, open for the spoke's life. */
enum pending_kind { PEND_NONE, PEND_INITIALIZE, PEND_TOOLS_LIST, PEND_PING, PEND_LISTEN };

/* After a call missed its deadline on a spoke that has answered nothing since the call
 * was sent: how long a ping has to be answered before the spoke counts as hung. */
#define PROBE_GRACE_MS 5000

/* Requests the hub cancelled and whose late answers it drops (MCP allows an answer
 * that crossed the notifications/cancelled): the last this many. */
#define SPOKE_CANCELLED_IDS 64

/* The hub's own requests besides calls (initialize, tools/list) outstanding at once. */
#define SPOKE_MAX_PENDING 4
/* Requests a spoke may have open with the hub during one call. */
#define CALL_MAX_SREQS 4

/* The calls of one session (call_opts.session) at one spoke: its waiting line and how
 * many of its calls the spoke holds. A spoke's window is shared between its groups
 * (spoke.c, "Fairness"). */
struct fair_group {
    const void *session;
    struct call_queue waiting;
    unsigned inflight;
    TAILQ_ENTRY(fair_group) link; /* in the spoke's groups, in round-robin order */
};

struct spoke {
    struct hub *hub;
    const struct manifest *m;
    char *user, *instance;
    char id[33]; /* this instance, for audit and logs */
    uint64_t gen;
    enum spoke_state state;
    bool warm_start;   /* this instance was a held node (held.h) */
    bool keylike_said; /* its manifest's key-like env values warned about, at its first start */
    struct proc *proc;
    int sock;
    struct event *ev_read, *ev_write, *ev_start, *ev_eof, *ev_idle, *ev_probe;
    struct evbuffer *out;
    struct line_reader lr;
    struct {
        int64_t id;
        enum pending_kind kind;
    } pending[SPOKE_MAX_PENDING]; /* calls are found among calls in flight instead */
    int64_t next_id;
    json_t *tools_seen; /* tools/list pages collected so far */
    unsigned list_pages;
    bool relisting;      /* the tools/list after a list_changed (checked against the pin) */
    bool relist_again;   /* another list_changed came while relisting */
    json_t *init_result; /* its answer to initialize */
    int64_t cancelled_ids[SPOKE_CANCELLED_IDS];
    unsigned n_cancelled;
    /* Calls: waiting in their sessions' groups, then up to window in flight at once,
     * answered in any order (manifest max_inflight, else hub.json's). */
    TAILQ_HEAD(, fair_group) groups;
    unsigned n_groups;
    struct call_queue inflight;
    unsigned n_inflight;
    unsigned window;             /* its max_inflight: the ceiling (1: one at a time, strictly) */
    struct inflight_limit limit; /* the calls it may hold now, up to window (inflight.h) */
    char proxy_trace[56];        /* what netproxy was last told of its call (haudit_trace_spoke) */
    bool dispatching, redispatch;
    uint64_t t_last_answer;       /* its last response to any request: is it still answering? */
    uint64_t t_probe;             /* the ping of spoke_probe() went out */
    char probe_for[160];          /* the call whose missed deadline asked for it */
    unsigned sreqs;               /* spoke -> hub requests in progress */
    unsigned busy_frames;         /* frames naming no call while it serves some (mcp.c) */
    struct token_bucket idle_tb;  /* frames while it serves no call (mcp.c) */
    struct token_bucket noise_tb; /* bytes on stdout that were not frames */
    bool noise_seen;              /* ... and the first of them is on record */
    enum mcp_version version;     /* what it speaks (mcp_version.c) */
    bool discovering;             /* its start asked server/discover */
    char init_error[208];         /* why it refused initialize, if it did */
    uint64_t t_spawn, t_init, t_ready;
    uint64_t last_init_ns, last_ready_ns;
    /* namespace mode */
    int veth_slot;
    int veth_lock; /* the /30's host-wide lock, held while the slot is */
    int listen_fd;
    char proxy_key[96];
    char host_ip[16];
    char veth_ifname[16]; /* host side, in the gateway namespace */
    char *data_dir;
    char *log_path;         /* its stderr's file, from its last spawn */
    uint64_t data_tmpfs_mb; /* call_opts.data_tmpfs_mb */
    /* A host /data in namespace mode: its stable host id (hostid.h) and that id's
     * host-wide lock, -1 when not held. Another hub's spoke holding it means that the
     * data is in use: the start waits for it (ev_data_wait) until data_wait_deadline. */
    uint32_t host_id;
    int host_id_lock;
    struct event *ev_data_wait;
    uint64_t data_wait_deadline;
    /* SP_STARTING, waiting in the hub's start queue for its turn to be spawned */
    bool start_queued;
    TAILQ_ENTRY(spoke) start_link;
};

struct spoke *spoke_get(struct hub *h, const char *user, const char *app, const char *instance,
                        bool create);
void spoke_submit(struct spoke *sp, struct call *c);
/* A queued or sent call is over (answered, failed, cancelled): it leaves its line or
 * the calls in flight, and the next waiting call may take its place. */
void spoke_call_off(struct spoke *sp, struct call *c);
/* c, sent to sp, was answered: its round trip sizes sp's in-flight limit. */
void spoke_call_answered(struct spoke *sp, const struct call *c);
/* The call in flight whose tools/call (or request) had this JSON-RPC id; NULL. */
struct call *spoke_inflight_by_rpc(const struct spoke *sp, int64_t rpc_id);
/* The call in flight whose progress token (its id) is token; NULL. */
struct call *spoke_inflight_by_token(const struct spoke *sp, const char *token);
/* Starts the spoke without a call (hub serve's prestart), unless it runs already. */
void spoke_prestart(struct spoke *sp);
/* Holds its next instance (held.h) if it is stopped and its manifest is warm. */
void spoke_hold_ahead(struct spoke *sp);
/* A call missed its deadline and the spoke has answered nothing since it was sent:
 * it gets a ping, and is killed as hung unless something comes back within
 * PROBE_GRACE_MS. why names the call, for the record. */
void spoke_probe(struct spoke *sp, const char *why);
/* Kills the spoke instance: audit, kill its processes, fail its current call with
 * message; queued calls start a fresh instance unless fail_queue. */
void spoke_kill(struct spoke *sp, const char *reason, bool fail_queue, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void spoke_free(struct spoke *sp);
/* Kills the spoke (its queued calls fail with why), takes it off the hub's table and
 * frees it. */
void spoke_close(struct hub *h, struct spoke *sp, const char *why);
/* Frames out: 0, or -1 when the spoke was killed for not reading. */
int spoke_send(struct spoke *sp, json_t *msg);

/* ---- the revision a spoke speaks (mcp_version.c) ---- */

json_t *mcp_initialize_params(const struct manifest *m);
json_t *mcp_discover_params(void);
/* Checks the initialize result and takes the spoke's revision from it; false and a
 * reason when the spoke is unusable. */
bool mcp_check_initialize(struct spoke *sp, const json_t *result, char *err, size_t errlen);
/* The same for server/discover's result: what an initialize answer would have held
 * (protocolVersion, capabilities, serverInfo, instructions), or NULL with err. */
json_t *mcp_check_discover(struct spoke *sp, const json_t *result, char *err, size_t errlen);
/* For a spoke of the stateless revision: the _meta every request carries, added to
 * params (an object). Nothing for the others. */
void mcp_decorate(const struct spoke *sp, json_t *params);
/* The answer to roots/list: the spoke's /data and its manifest's binds. */
json_t *mcp_roots(const struct spoke *sp);
/* The answers to an InputRequiredResult's inputRequests (roots/list only), or false
 * with err. */
/* Checks a 2026-07-28 InputRequiredResult's inputRequests before the hub answers any:
 * an object of at most 16 requests, each for what the hub declared (roots/list when the
 * manifest allows roots, sampling/createMessage, elicitation/create with params). */
bool mcp_check_inputs(const struct spoke *sp, const json_t *requests, char *err, size_t errlen);
/* Takes out of a tools/call result what the spoke's revision does not have. */
void mcp_adapt_result(const struct spoke *sp, json_t *result);

/* ---- MCP (mcp.c) ---- */

/* Compares the spoke's tools (all pages) with the manifest. */
bool mcp_check_tools(const struct manifest *m, const json_t *tools, char *err, size_t errlen);
/* Checks a CallToolResult's shape (every content item by its type) and, unless
 * isError, its structuredContent against the tool's outputSchema. */
bool mcp_check_result(const struct spoke *sp, const struct manifest_tool *t, json_t *result,
                      char *err, size_t errlen);
/* The stand-in tool of a hub_request() method, NULL for a method it does not take. */
const struct manifest_tool *mcp_method_tool(const char *method);
/* Checks the result of a hub_request() method (for tools/list: also the pin). */
bool mcp_check_method_result(const struct spoke *sp, const char *method, const json_t *result,
                             char *err, size_t errlen);
/* Tells the spoke that the hub gave up on request id (notifications/cancelled). */
void mcp_send_cancelled(struct spoke *sp, int64_t id, const char *reason);
/* A ping to the spoke (spoke_probe); its answer counts as an answer like any other. */
void mcp_send_ping(struct spoke *sp);
/* One frame from the spoke. */
void mcp_on_frame(struct spoke *sp, const char *line, size_t len);
void mcp_send_call(struct spoke *sp, struct call *c);
void mcp_reply(struct spoke *sp, json_t *id, json_t *result);
void mcp_reply_error(struct spoke *sp, json_t *id, int code, const char *msg);
void mcp_begin(struct spoke *sp);

/* ---- the hub (hub.c) ---- */

struct hub {
    struct hub_config *cfg;
    struct manifest_set *ms;
    struct event_base *base;
    bool debug;
    struct audit *audit;
    struct audit *transcript; /* audit.content "full": arguments and results, 0600 */
    struct perm_hook *perm;
    hub_first_seen_fn first_seen; /* NULL: no isolate.first_seen */
    void *first_seen_ud;
    struct sampling_hook *sampling;
    struct elicit_hook *elicit;
    struct spoke **spokes;
    size_t n_spokes;
    /* Manifests a reload replaced or removed (reload.c): kept until the hub ends, as
     * what referred to them (a mediated request, an audit of its end) may outlive the
     * spokes closed with them. */
    struct manifest_set retired;
    LIST_HEAD(, proc) procs;
    size_t n_procs;
    struct slots *veth_slots;
    int lock_dir; /* HOSTLOCK_DIR, opened with the network; -1 */
    struct gateway *gw;
    struct proxy_sup *proxy;
    struct secret_store *secrets;
    struct spoke_secrets known_secrets; /* the manifests' secrets, for redaction */
    /* Injection at the egress (hubca.h, secrets_watch.h): made when a spoke first needs
     * them. */
    struct hub_ca ca;
    bool ca_ready;
    struct secrets_watch *secrets_watch;
    struct event *ev_sigint, *ev_sigterm, *ev_sigchld, *ev_sighup;
    struct event *ev_audit_tick; /* a checkpoint in the audit when one is due by time */
    struct otlp *otlp;           /* the calls as OpenTelemetry spans (otlp.h), or NULL */
    /* spokes to spawn, one per turn of the loop (spoke.c) */
    TAILQ_HEAD(, spoke) start_queue;
    struct event *ev_start_queue;
    bool quit;
    char *spoke_log_dir;
    char *held_loader; /* the held node's loader on the host, once written (held.c) */
    uint64_t calls_live;
    LIST_HEAD(, call) calls; /* every live call, for hub_call_cancel() */
};

uint64_t hub_call_timeout_ns(const struct hub *h, const struct manifest *m,
                             const struct call_opts *o);
/* Namespace mode's shared pieces, created on first need. 0 or -1 with err. */
int hub_network_up(struct hub *h, char *err, size_t errlen);
/* ... and, for a spoke whose secrets netproxy injects, the hub's CA (made or loaded and
 * sent to netproxy) and the store's watch for rotations. */
int hub_ca_up(struct hub *h, char *err, size_t errlen);

/* ---- audit records (hubaudit.c) ---- */

/* haudit_new() and haudit_note() are in hub.h: the repl-server writes records too. */
void haudit_spoke(json_t *rec, const struct spoke *sp);
/* A call's arguments (result false) or result through the secret scan (callscan.c):
 * 0 to go on (v maybe redacted in place), -1 when the call was failed (blocked), 1 when
 * the user is asked (secret_scan "ask"; the call goes on from call_scan_resume). */
int call_scan_traffic(struct call *c, json_t *v, bool result);
/* After the user let a secret through (secret_scan "ask"): the call goes on with its
 * arguments (result NULL) or ends with result. */
void call_scan_resume(struct call *c, json_t *result);
/* Tells netproxy which call the spoke runs, when it runs one alone (else none), so
 * that its tunnels' records carry that call's trace.id. */
void haudit_trace_spoke(struct spoke *sp);
/* The call, ended, as a span for the OTLP exporter (when there is one). */
void haudit_span(const struct call *c, bool ok, const char *message);
/* A span of its own under c's, from t0 (monotonic) to now: a spoke's start for c, a
 * question c waited on. Its ids go into rec too (when given), the record it covers. */
void haudit_child_span(const struct call *c, const char *name, uint64_t t0, bool ok,
                       const char *message, json_t *rec);
/* The hub's own audit chained and signed; then a timer for checkpoints due by time. */
int haudit_chain_start(struct hub *h, char *err, size_t errlen);
void haudit_tick_start(struct hub *h);
void haudit_call(json_t *rec, const struct call *c);
/* What audit.content keeps of a call's arguments (an object: one SHA-256 per
 * argument, "isolate.arguments_sha256") or result ("isolate.result_sha256") in rec.
 * With "full" the value itself also goes to the transcript, under the record's
 * identifying fields: before the call for arguments (-1 and errno when it cannot be
 * written: the call is refused), best-effort for results. */
int haudit_arguments(struct hub *h, json_t *rec, const json_t *args)
    __attribute__((warn_unused_result));
void haudit_result(struct hub *h, json_t *rec, const json_t *result);
/* Writes the record of a decision before it takes effect: 0, or -1 and errno when it
 * could not be written - the caller then refuses the action (haudit_refusal). */
int haudit_write(struct hub *h, json_t *rec) __attribute__((warn_unused_result));
/* "the audit log PATH cannot be written (strerror(err)); refusing to ACTION unlogged",
 * ACTION from fmt. */
void haudit_refusal(const struct hub *h, int err, char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
