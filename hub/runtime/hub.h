/* The hub runtime: the trusted core that starts spokes from manifests in the chosen
 * isolation mode, speaks MCP to each over its own socket, and mediates every message.
 *
 * Everything runs on one libevent loop (the caller's event_base). libevent rather than
 * a hand-written poll loop because the same loop must carry the agent's terminal
 * (issue 5), the repl-server's TCP sessions (issue 7) and a hundred spokes at once
 * (issue 8): epoll underneath, O(log n) timers for per-call deadlines, and one place
 * where a hung, slow or flooding spoke can only ever cost its own call.
 *
 * A call is asynchronous: hub_call() returns at once and done() runs exactly once
 * (possibly before hub_call() returns, e.g. for an unknown tool). hub_call_sync()
 * runs the loop until its call is done, serving every other spoke meanwhile. */
#ifndef HUB_HUB_H
#define HUB_HUB_H

#include "config/config.h"
#include "hooks.h"
#include "permission.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct hub;

/* Error codes of a failed call; also the JSON-RPC error codes a spoke receives for a
 * failed isolate/call. */
enum hub_error {
    HUB_OK = 0,
    HUB_ERR_UNKNOWN_TOOL = -32602,   /* no such app or tool in the manifests */
    HUB_ERR_INVALID_ARGS = -32602,   /* arguments break the tool's inputSchema */
    HUB_ERR_DENIED = -32001,         /* the permission layer said no */
    HUB_ERR_CYCLE = -32002,          /* target already on the call chain, or too deep */
    HUB_ERR_SPOKE = -32003,          /* the target failed: start, crash, kill, deadline */
    HUB_ERR_INVALID_RESULT = -32004, /* result breaks MCP or the outputSchema */
    HUB_ERR_BUSY = -32005,           /* limits of the hub itself (too many spokes) */
    HUB_ERR_SHUTDOWN = -32006,
    HUB_ERR_AUDIT = -32007, /* its audit record could not be written: refused, not run unlogged */
    HUB_ERR_CANCELLED = -32008,   /* the caller cancelled it (hub_call_cancel) */
    HUB_ERR_UNSUPPORTED = -32009, /* the spoke does not offer what was asked (no resources) */
};

/* What a spoke tells about a call while it runs (MCP notifications/progress and
 * notifications/message), after the hub has put it on record and neutralised its
 * text (control characters replaced, length capped): for `hub call` (stderr) and
 * `hub serve` (passed on to its client). */
enum call_event_kind { CALL_EVENT_PROGRESS, CALL_EVENT_LOG };
struct call_event {
    enum call_event_kind kind;
    const char *app, *tool, *call_id;
    double progress, total; /* progress; total < 0 when the spoke gave none */
    const char *level;      /* log: "debug" ... "emergency" */
    const char *logger;     /* log: may be NULL */
    const char *text;       /* progress message or log data (as compact JSON when not a
                               string); may be "" */
};
typedef void (*hub_event_fn)(void *ud, const struct call_event *ev);

/* Text from a spoke made safe to record or show on one line: a string as it is,
 * another value as compact JSON; C0/C1 controls and bidirectional overrides become
 * spaces; cut at len - 1 bytes on a character boundary. */
void hub_text_neutral(const json_t *v, char *out, size_t len);

struct call_result {
    json_t *result;      /* the MCP CallToolResult (borrowed) or NULL on error */
    int code;            /* enum hub_error when result is NULL */
    const char *message; /* what went wrong, for the caller and the user */
    const char *layer;   /* who stopped it: "permission", "hub-validation", "deadline",
                            "spoke", "audit", ... ; NULL on success */
    uint64_t duration_ns;
};

typedef void (*hub_call_done)(void *ud, const struct call_result *r);

struct call_opts {
    const char *user;     /* NULL: the configured user */
    const char *instance; /* NULL: the user's one instance of the app; else a separate
                             spoke with its own data directory (sessions, issue 7) */
    /* With instance, in namespace mode: the spoke's /data is a tmpfs of this many MiB,
     * private to its jail and gone with it, counted by the jail's memory cgroup, instead
     * of a host directory (repl sessions: nothing a session writes outlives it). */
    uint64_t data_tmpfs_mb;
    bool ask_exec; /* ask PERM_EXEC first (planner steps); false for `hub call` */
    bool in_plan;
    uint64_t timeout_ms; /* 0: manifest limits.call_s, else hub.json call_timeout_ms */
    /* Opaque tag of whoever made the call (a `hub serve` client's request), carried down
     * the call's whole chain and handed to the hooks with every question asked for it,
     * so that a question reaches the client whose call caused it. */
    void *origin;
    /* Opaque tag of the client session the call is for, likewise inherited: a spoke
     * with several calls in flight shares its window fairly between sessions (NULL:
     * one group for every call without a session). */
    const void *session;
    hub_event_fn on_event; /* NULL: progress and log messages are only audited */
    void *event_ud;
    /* A W3C traceparent the call continues (a client's _meta.traceparent), NULL or not
     * one: a new trace. Its records carry trace.id and span.id (lib/traceparent.h). */
    const char *traceparent;
};

/* cfg and ms are borrowed and must outlive the hub. The hub starts nothing until the
 * first call (namespace mode then creates the gateway namespace and netproxy). */
struct hub *hub_new(struct hub_config *cfg, struct manifest_set *ms, struct event_base *base,
                    bool debug, char *err, size_t errlen);
/* Ends every spoke and netproxy and removes the gateway namespace. */
void hub_free(struct hub *h);

/* Hooks are owned by the hub afterwards; the defaults deny, decline and have no LLM. */
void hub_set_permission_hook(struct hub *h, struct perm_hook *hook);
void hub_set_sampling_hook(struct hub *h, struct sampling_hook *hook);
void hub_set_elicit_hook(struct hub *h, struct elicit_hook *hook);

/* What marks isolate.first_seen in the audit: fn(ud, user, app, what) is 1 the first
 * time that app of that user does what ("tool:APP.TOOL" it calls, "refused:..." it met),
 * 0 after, -1 when it cannot tell (the field is then left out). The assistant backs it
 * with the memory (Redis, so it holds across hubs and restarts); without one, records
 * carry no isolate.first_seen. ud is borrowed. */
typedef int (*hub_first_seen_fn)(void *ud, const char *user, const char *app, const char *what);
void hub_set_first_seen(struct hub *h, hub_first_seen_fn fn, void *ud);

void hub_call(struct hub *h, const struct call_opts *o, const char *app, const char *tool,
              const json_t *args, hub_call_done done, void *ud);

/* Runs the loop until the call is done. 0 and *result (owned by the caller), or the
 * hub_error code with the message (and *layer) filled. */
int hub_call_sync(struct hub *h, const struct call_opts *o, const char *app, const char *tool,
                  const json_t *args, json_t **result, char *err, size_t errlen,
                  const char **layer);

/* A read-only MCP request other than tools/call to an app's spoke, with the same path
 * as a call (started on demand, audited, a deadline, no exec permission asked): method
 * is one of "tools/list" (checked against the pin again), "resources/list",
 * "resources/templates/list", "resources/read", "prompts/list", "prompts/get",
 * "completion/complete"; params its MCP params (an object). The result is the MCP
 * result, its shape checked. A spoke that did not declare the capability (resources,
 * prompts, completions) gets no request: HUB_ERR_UNSUPPORTED. */
void hub_request(struct hub *h, const struct call_opts *o, const char *app, const char *method,
                 const json_t *params, hub_call_done done, void *ud);
int hub_request_sync(struct hub *h, const struct call_opts *o, const char *app, const char *method,
                     const json_t *params, json_t **result, char *err, size_t errlen,
                     const char **layer);
/* True for the methods hub_request() takes. */
bool hub_request_method_known(const char *method);

/* Cancels the calls and requests started with this ud that have not ended: the spoke
 * gets notifications/cancelled (a late answer is dropped), done() reports
 * HUB_ERR_CANCELLED. The spoke keeps running. */
void hub_call_cancel(struct hub *h, void *ud);

/* Where a spoke's stderr goes (<run_dir>/spokes/USER/APP[.INSTANCE].log), malloc'd. */
char *hub_spoke_log_path(const struct hub_config *cfg, const char *user, const char *app,
                         const char *instance);

/* The spoke's answer to initialize (serverInfo, capabilities, instructions) from its
 * last start, borrowed until it is stopped; NULL when it is not running. */
const json_t *hub_spoke_server_info(struct hub *h, const char *user, const char *app,
                                    const char *instance);

/* Starts user's spoke of app ahead of its first call (hub serve's prestart), unless it
 * runs or is starting already; the start is audited like any, and a failed one leaves
 * the next call to try again. Returns at once: the spoke starts on the loop. */
void hub_spoke_prestart(struct hub *h, const char *user, const char *app);
/* Holds user's next spoke of app ahead (a manifest's "warm": held.h) when it is stopped:
 * hub serve does it when a session of the user opens. Nothing for another app. */
void hub_spoke_hold(struct hub *h, const char *user, const char *app);
/* When app's spokes are started ahead of calls: its manifest's prestart, else hub.json's. */
enum prestart hub_app_prestart(const struct hub *h, const struct manifest *m);

/* Stops the spoke (if running) and runs the loop until its processes are reaped and
 * its network is handed back; the next call starts it afresh. */
void hub_spoke_stop(struct hub *h, const char *user, const char *app, const char *instance);

/* Stops the spoke and forgets it (a session that ended, issue 7): its queued calls
 * fail, and a later call to the same app and instance starts a new one. */
void hub_spoke_close(struct hub *h, const char *user, const char *app, const char *instance);

/* True while the instance's spoke is started (starting or ready); false when it never
 * started or has ended. A session (issue 7) whose spoke ended has lost its state: it
 * ends too, rather than letting its next call start a fresh spoke. */
bool hub_spoke_running(struct hub *h, const char *user, const char *app, const char *instance);

/* Timing of the last start of a spoke: spawn to the answered initialize, and to ready
 * (tools/list checked). 0 when it never started. */
void hub_spoke_timing(struct hub *h, const char *user, const char *app, const char *instance,
                      uint64_t *init_ns, uint64_t *ready_ns);

/* Reads the spokes directory again (hub serve, while it runs). Apps added are offered
 * from now on; an app whose manifest changed or went away has its spokes closed (their
 * queued calls fail), and the new manifest, if any, takes its place for the next call.
 * One bad manifest refuses the whole directory, as at start, and then nothing changes.
 * Audited as "manifests-reload". 1 when something changed (summary says what), 0 when
 * nothing did, -1 on error (err says why). */
int hub_manifests_reload(struct hub *h, char *summary, size_t len, char *err, size_t errlen);

/* True once SIGINT/SIGTERM arrived; hub_call_sync() then fails its call. */
bool hub_quit_requested(const struct hub *h);

/* logrotate's postrotate: reopens the hub's audit log at its path and has the hub's
 * netproxy reopen its own. 0, or -1 when the hub's log could not be reopened (it then
 * goes on writing to the old file, and says so). */
int hub_reopen_logs(struct hub *h);
/* The daemons (repl-server, serve) reopen their logs on SIGHUP. The assistant does not
 * ask for it: on a terminal SIGHUP keeps meaning that the terminal went away. */
void hub_reopen_on_sighup(struct hub *h);

/* The hub's audit log, for the agent's own records (requests, plans, questions) so
 * that one file tells the whole story. */
struct audit *hub_audit(struct hub *h);

/* Counts for leak checks: live spoke processes (not yet reaped) and veth slots held. */
void hub_resource_counts(const struct hub *h, size_t *procs, size_t *slots);

/* An audit record for ACTION with OUTCOME (hubaudit.c), and its best-effort write: for
 * what already happened (counted, and the outage said once on stderr). The repl-server
 * writes its sessions' records with them. */
json_t *haudit_new(const char *action, const char *outcome);
void haudit_note(struct hub *h, json_t *rec);

/* A span of work outside a call (a serve client's request), its ids in t (a struct
 * trace_ctx, lib/traceparent.h), from t0 (monotonic) to now, exported over OTLP when
 * the hub exports (lib/otlp.h); nothing otherwise. */
struct trace_ctx;
void haudit_export_span(struct hub *h, const struct trace_ctx *t, const char *name, uint64_t t0,
                        bool ok, const char *message, const char *user, const char *app,
                        const char *tool);

/* Chains a writer of the hub's audit file and signs its checkpoints with that key,
 * made (0600) on first use (a key that cannot be had is said on stderr; the records
 * are chained, unsigned). 0, or -1 with err filled. */
struct audit;
int haudit_chain(const struct hub_config *cfg, struct audit *a, char *err, size_t errlen);

#endif
