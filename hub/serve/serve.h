/* `hub serve`: the sandboxed apps for any MCP client. The hub is the MCP server the
 * client sees; every tools/call runs through the hub's mediation (schemas, deadlines,
 * audit, permissions) in the app's spoke, and the questions the hub would ask on its
 * terminal go to the client as elicitation/create.
 *
 * Two shapes: with an app name, that one app with its own tool names (a drop-in for
 * running the server directly); without, every installed app, tools named APP__TOOL.
 * Two transports share one protocol core: stdio (serve_stdio.c) and Streamable HTTP
 * (serve_http.c). This is the serve library's interface to the other folders of hub/
 * (`hub serve` in cli/); serve_impl.h is its own (the token files are the runtime's,
 * tokens.h). */
#ifndef HUB_SERVE_H
#define HUB_SERVE_H

#include "llm/llm.h"
#include "runtime/runtime.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

struct serve;
struct memory;

struct serve_opts {
    const char *app;         /* NULL: the gateway shape */
    bool ask_exec;           /* ask the user before every call (the exec question) */
    struct answers *answers; /* when the client cannot be asked; a reference is taken */
    /* Where "always" and "never" answers are kept: the Redis of hub.json's memory, which
     * every hub of the user shares (grants.h), so that an answer given through one
     * instance holds at the others, or the data root's file (memory_open "file:").
     * NULL: only in this process. Borrowed. */
    struct memory *grant_store;
    const char *metrics_addr; /* --metrics ADDR:PORT or NULL */
    /* --llm: a spoke's sampling request, when the client samples no model itself, goes
     * to this LLM under these limits; NULL: declined. serve_new() takes it over (closes
     * it, also when it fails). */
    struct llm *sampling_llm;
    struct llm_sampling_limits sampling_limits;
    /* --allow-data-flows: a gateway session that received one app's output may call
     * another app without the data question (the client is trusted to keep them apart). */
    bool data_flows_unasked;
};

/* The hub's hooks are replaced by serve's own (asking the client). NULL and err when
 * the options are unusable (an unknown app). */
struct serve *serve_new(struct hub *h, struct hub_config *cfg, struct manifest_set *ms,
                        struct event_base *base, const struct serve_opts *o, char *err,
                        size_t errlen);
/* Ends every client session (audited); their open questions are answered no. Before
 * hub_free(): the answers go to the hub. */
void serve_close_sessions(struct serve *sv, const char *reason);
/* After hub_free() (the hub's last calls report to it): frees. */
void serve_free(struct serve *sv);

/* The control socket's ownership: the flock on PATH.lock, which only one hub holds (it
 * writes its pid there). The lock's descriptor, -2 when another hub holds it, -1 with
 * err (none configured, or it cannot be opened). */
int serve_control_lock(const struct hub_config *cfg, char *err, size_t errlen);
/* The control socket: clients of this host attach to this hub there (hub serve --stdio),
 * and approvals are answered there (hub approvals). lock: serve_control_lock()'s, taken
 * over, or -1 to take it here. 1 listening, 0 when none is configured or another hub
 * owns it, -1 with err. Closed by serve_free(). */
int serve_control_listen(struct serve *sv, int lock, char *err, size_t errlen);
/* Its path for cfg (hub.json serve.control_socket, else RUN_DIR/serve.sock); "" when
 * it is switched off. */
const char *serve_control_path(const struct hub_config *cfg, char *buf, size_t len);

/* One request to the running hub's control socket (hub approvals): 0 and its answer,
 * -2 when no hub listens, -1 with err. */
int serve_control_call(const struct hub_config *cfg, json_t *req, json_t **answer, char *err,
                       size_t errlen);

struct serve_attach_opts {
    const char *user; /* NULL: the running hub's (a privileged peer may name any) */
    const char *app;  /* NULL: every app */
    bool ask_exec;
    /* The background hub's command line (argv[0] the hub binary, NULL-terminated),
     * started when no hub runs; NULL: none is started. */
    char *const *start_argv;
};

/* `hub serve --stdio` beside the hub of this host: hands this process's stdin/stdout to
 * the running hub as a session in the shape asked for, starting a background hub first
 * when none runs (and start_argv says how), then waits until that session ends. 0 when
 * the client ended it; 1 when the hub did, or died (the client was told, with a log
 * message, and so was stderr); -2 when no hub listens and none was started; -1 with
 * err when the hub refused or could not be reached or started (nothing was handed
 * over). *started says whether this process started the hub. */
int serve_attach(const struct hub_config *cfg, const struct serve_attach_opts *o, bool *started,
                 char *err, size_t errlen);
/* Starts the background hub (start_argv) unless one answers on the control socket by
 * the time this process may start one (one starter at a time: the flock on
 * PATH.start), and waits until it can be attached to: 1 when this process started it,
 * 0 when another hub answers, -1 with err (with what the hub's log says). */
int serve_start_background(const struct hub_config *cfg, char *const *start_argv, char *err,
                           size_t errlen);
/* `hub serve --background`: serves the clients that attach over the control socket
 * (serve_control_listen() done) until the hub is asked to quit or has had nothing to
 * do for hub.json serve.idle_exit_s; says "ready" on ready_fd first and closes it (-1:
 * none). 0. */
int serve_background(struct serve *sv, int ready_fd);
/* One word on the starter's descriptor: "ready", or "owned" (another hub owns the
 * control socket). fd -1: nothing. */
void serve_ready_say(int fd, const char *word);

/* prestart "service": the apps that ask for it are started for every user the service
 * knows, each user of tokens_file (NULL: default_user, the user of --stdio or of an
 * HTTP service without tokens). Before serve_stdio()/serve_http(), which run the loop
 * the starts go on. */
void serve_prestart_service(struct serve *sv, const char *tokens_file, const char *default_user);

/* One client on stdin/stdout as user; returns when the client closes its end or the
 * hub is asked to quit. 0, or -1 after saying why on stderr. */
int serve_stdio(struct serve *sv, const char *user);

struct serve_http_opts {
    const char *listen;      /* ADDR:PORT */
    const char *tokens_file; /* NULL: no authentication (loopback only) */
    const char *user;        /* the user of every session without tokens */
    const char *tls_cert, *tls_key;
    bool insecure_http;         /* allow plain HTTP beyond loopback */
    const char **allow_origins; /* extra Origin values accepted (NULL-terminated) */
    size_t max_sessions, max_sessions_per_token, max_inflight_per_token;
    uint64_t idle_timeout_s;
    /* Connections at once, in total (0: half of RLIMIT_NOFILE, at most 1024) and from
     * one source address (an IPv6 /64); each request must arrive whole within
     * request_timeout_s. */
    size_t max_connections, max_connections_per_source;
    uint64_t request_timeout_s;
    /* --oauth: access tokens are JWTs of this issuer (auth/auth.h), for this audience
     * (NULL: http(s)://LISTEN/mcp), its keys from oauth_jwks (NULL: its metadata), the
     * hub user in oauth_user_claim (NULL: sub). Instead of tokens_file. */
    const char *oauth_issuer, *oauth_audience, *oauth_jwks, *oauth_user_claim;
};

/* Serves Streamable HTTP until the hub is asked to quit. 0, or -1 after saying why. */
int serve_http(struct serve *sv, const struct serve_http_opts *o);

#endif
