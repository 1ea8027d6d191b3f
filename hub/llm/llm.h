/* The hub's LLM client: OpenAI-compatible Chat Completions with tool calling.
 *
 * One interface, two back ends: HTTP (libcurl; OpenAI, ollama, llama.cpp's server,
 * vLLM, anything that serves POST {base_url}/chat/completions) and replay (a recording
 * served offline, see replay.h). Callers build a request, call llm_complete() and get
 * a validated response or a classified error; they never learn which back end ran.
 *
 *   struct llm *llm = llm_open("http://127.0.0.1:11434/v1", &cfg, err, sizeof(err));
 *   struct llm_request *rq = llm_request_new("planner");
 *   llm_request_system(rq, "You plan ...");
 *   llm_request_user(rq, "Book a ride to the airport");
 *   llm_request_tool(rq, "metro_hail__estimate_fare", "Estimates fares", schema, err, n);
 *   struct llm_response rs; struct llm_error e;
 *   if (llm_complete(llm, rq, &rs, &e) < 0) { show e.msg; } else { use rs; }
 *   llm_response_free(&rs); llm_request_free(rq); llm_close(llm);
 *
 * Everything the server sends is untrusted: the response is parsed with bounds, tool
 * call arguments are checked to be a JSON object, and anything malformed is an error
 * (LLM_ERR_MALFORMED), never a crash. Tool names in a response are bounded and
 * printable but NOT checked against the offered tools: that is the caller's job.
 *
 * The API key is read from the environment variable the config names (or given as
 * cfg->api_key), once, at llm_open(), and kept in memory that forked children do not
 * inherit (lib/secret.h). It is sent only in the Authorization header and never appears in a log
 * line, an error message (server messages that echo it are redacted) or an audit
 * record. A missing variable means no Authorization header (local servers).
 *
 * A struct llm is not thread-safe; use one per thread. llm_complete() blocks (at most
 * max_attempts x timeout_ms plus back-off). */
#ifndef HUB_LLM_H
#define HUB_LLM_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonfile.h"

struct audit;

/* Bounds on what a response may hold. */
#define LLM_MAX_TOOL_CALLS 64
#define LLM_MAX_NAME 128     /* tool name or id in a response */
#define LLM_MAX_CONTEXT 128  /* context label: [A-Za-z0-9_.:/@*-] */
#define LLM_TOOL_NAME_MAX 64 /* offered tool names: ^[A-Za-z0-9_-]{1,64}$ (OpenAI's rule) */

enum llm_error_kind {
    LLM_OK = 0,
    LLM_ERR_CONFIG,      /* bad configuration or request; nothing was sent */
    LLM_ERR_CONNECT,     /* could not connect or the connection dropped (after retries) */
    LLM_ERR_TIMEOUT,     /* no complete answer within timeout_ms (not retried) */
    LLM_ERR_AUTH,        /* HTTP 401 or 403: the key is missing, wrong or not allowed */
    LLM_ERR_NOT_FOUND,   /* HTTP 404: wrong base URL or unknown model */
    LLM_ERR_BAD_REQUEST, /* HTTP 400, 413, 422: the server's message says why */
    LLM_ERR_RATE_LIMIT,  /* HTTP 429, still after the last attempt */
    LLM_ERR_SERVER,      /* HTTP 5xx, still after the last attempt */
    LLM_ERR_HTTP,        /* any other unexpected HTTP status */
    LLM_ERR_MALFORMED,   /* the answer is not a valid chat completion */
    LLM_ERR_TOO_LARGE,   /* the answer exceeded max_response_bytes */
    LLM_ERR_CANCELLED,   /* the delta callback or the cancel flag stopped the call */
    LLM_ERR_UNCOVERED,   /* replay: the recording has no response for this request */
    LLM_ERR_AUDIT,       /* the audit record could not be written: answer withheld */
    LLM_ERR_TRUNCATED,   /* finish_reason "length" cut a tool call's arguments: the
                            model hit its token limit (never run a cut call) */
};

struct llm_error {
    enum llm_error_kind kind;
    int http_status;   /* last HTTP status seen, 0 when none */
    unsigned attempts; /* HTTP requests made */
    char msg[768];     /* one line for the user; never contains the API key. A server's
                          own words (its error message), when it sent some, come last,
                          after LLM_SERVER_SAID */
    char detail[384];  /* those words alone (sanitised, key redacted; "" when none): text
                          from the server, to be shown as quoted data, never as the
                          hub's own line */
};
#define LLM_SERVER_SAID "; the server said: "

/* Stable lower-case names ("timeout", "rate-limit", ...) used as audit event.reason. */
const char *llm_error_kind_name(enum llm_error_kind kind);

struct llm_config {
    const char *base_url;       /* e.g. "https://api.openai.com/v1" (no credentials in it) */
    const char *model;          /* required for HTTP */
    const char *api_key_env;    /* name of the environment variable; NULL: no key */
    const char *api_key;        /* the key itself, when the caller already took it out of
                                   the environment (the hub does, at start); it is copied
                                   into secret memory. NULL: read $api_key_env */
    long connect_timeout_ms;    /* default 10000 */
    long timeout_ms;            /* whole attempt, default 120000 */
    unsigned max_attempts;      /* default 4 (1 = no retries), at most 10 */
    long backoff_ms;            /* first back-off, doubled each retry; default 500 */
    long backoff_max_ms;        /* default 8000 */
    long retry_after_max_ms;    /* a longer Retry-After ends the call; default 60000 */
    size_t max_response_bytes;  /* default 8 MiB */
    bool stream_usage;          /* send stream_options.include_usage; default true */
    bool max_completion_tokens; /* send max_tokens as "max_completion_tokens" (o-series) */
    bool has_temperature;       /* default temperature for requests that set none */
    double temperature;
    long max_tokens;     /* default for requests; 0: not sent */
    struct audit *audit; /* borrowed; NULL: no audit records */
    bool audit_content;  /* --debug: audit records carry excerpts of content */
};

/* Fills the defaults above (everything else zero/NULL). */
void llm_config_defaults(struct llm_config *cfg);
/* Reads the "llm" object of hub.json into cfg (start from llm_config_defaults).
 * Keys: base_url, model, api_key_env, connect_timeout_ms, timeout_ms, max_attempts,
 * backoff_ms, backoff_max_ms, retry_after_max_ms, max_response_bytes, stream_usage,
 * max_completion_tokens, temperature, max_tokens. Strings are borrowed from obj.
 * Unknown keys and bad values are errors naming file and field. */
bool llm_config_parse(struct jf_ctx *c, const json_t *obj, const char *where,
                      struct llm_config *cfg);

/* --- requests ------------------------------------------------------------------ */

/* Streaming: called with each piece of content as it arrives (not NUL-terminated).
 * Return 0 to go on, anything else to cancel the call (LLM_ERR_CANCELLED). */
typedef int (*llm_delta_fn)(void *arg, const char *text, size_t len);

struct llm_request;
struct llm_response;

/* context labels the LLM context this request belongs to ("planner", "merge",
 * "spoke:mail", "none"): replay matches on it and audit records carry it. */
struct llm_request *llm_request_new(const char *context);
void llm_request_free(struct llm_request *rq);

/* Messages, in order. Text may be any bytes: invalid UTF-8 becomes U+FFFD. */
void llm_request_system(struct llm_request *rq, const char *text);
void llm_request_user(struct llm_request *rq, const char *text);
/* An earlier answer (content and tool calls), to continue a tool-calling loop. */
void llm_request_assistant(struct llm_request *rq, const struct llm_response *rs);
void llm_request_assistant_text(struct llm_request *rq, const char *text);
/* The result of tool call call_id (name is the tool's; kept for replay matching). */
void llm_request_tool_result(struct llm_request *rq, const char *call_id, const char *name,
                             const char *text);
/* Offers a function tool. name must match ^[A-Za-z0-9_-]{1,64}$; parameters is a JSON
 * Schema object (copied) or NULL for "no parameters". -1 and a message when invalid. */
int llm_request_tool(struct llm_request *rq, const char *name, const char *description,
                     const json_t *parameters, char *err, size_t errlen);

/* Options; each overrides the config default for this request. */
void llm_request_set_model(struct llm_request *rq, const char *model);
void llm_request_set_temperature(struct llm_request *rq, double t);
void llm_request_set_max_tokens(struct llm_request *rq, long n);
void llm_request_set_json_object(struct llm_request *rq, bool on); /* response_format */
/* Streams the answer (server-sent events) and calls fn for each content delta. */
void llm_request_set_stream(struct llm_request *rq, llm_delta_fn fn, void *arg);
/* The call stops (LLM_ERR_CANCELLED) soon after *flag becomes non-zero (e.g. SIGINT). */
void llm_request_set_cancel(struct llm_request *rq, const volatile sig_atomic_t *flag);
/* Told while the call waits before a retry (back-off, or the server's Retry-After):
 * left_ms until the next attempt (about once a second, and 0 when the wait is over),
 * attempt the number of the one that failed, why its error kind ("rate-limit", ...).
 * So that a user interface can show a wait that Ctrl-C (the cancel flag) ends. */
typedef void (*llm_wait_fn)(void *arg, long left_ms, unsigned attempt, const char *why);
void llm_request_set_wait_notice(struct llm_request *rq, llm_wait_fn fn, void *arg);
/* The user the call is made for; only written to the audit record. */
void llm_request_set_user(struct llm_request *rq, const char *user);

const char *llm_request_context(const struct llm_request *rq);
size_t llm_request_message_count(const struct llm_request *rq);

/* --- responses ----------------------------------------------------------------- */

struct llm_tool_call {
    char *id;        /* as sent by the server, or "call_N" when it sent none */
    char *name;      /* 1..LLM_MAX_NAME printable bytes */
    char *arguments; /* compact JSON text of an object ("{}" when there were none) */
};

struct llm_usage {
    bool present; /* some servers send no usage */
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t total_tokens;
};

struct llm_response {
    char *content; /* NULL when the answer has no text (e.g. only tool calls) */
    struct llm_tool_call *tool_calls;
    size_t n_tool_calls;
    char *finish_reason; /* "stop", "tool_calls", "length", ... or NULL */
    bool truncated;      /* finish_reason "length": the model hit its token limit, so
                            the text (or a call) may be cut off */
    char *model;         /* the model the server says answered, or NULL */
    struct llm_usage usage;
    unsigned attempts;    /* HTTP requests made (0 for replay) */
    uint64_t duration_ns; /* wall time of the whole call, retries included */
};

void llm_response_free(struct llm_response *rs);
/* The arguments of a tool call as a new JSON object (never NULL for a response that
 * llm_complete() returned). */
json_t *llm_tool_call_args(const struct llm_tool_call *tc);

/* --- the client ---------------------------------------------------------------- */

struct llm;

/* spec: "replay:FILE", an http(s) base URL (overrides cfg->base_url), or NULL to use
 * cfg->base_url. NULL and a message on failure (including "no LLM configured"). */
struct llm *llm_open(const char *spec, const struct llm_config *cfg, char *err, size_t errlen);
void llm_close(struct llm *llm);
/* 0 and *rs filled, or -1 and *e filled (*rs then holds nothing to free). Writes one
 * audit record per call when the config has an audit log. */
int llm_complete(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                 struct llm_error *e);
/* Safe to print: "http://127.0.0.1:8080/v1 (model llama3)" or "replay:FILE". */
const char *llm_describe(const struct llm *llm);
/* Two lines telling the user how to point the hub at an LLM (for "none configured"). */
const char *llm_setup_hint(void);

/* --- the hub's LLM, from hub.json's "llm" (llm_hub.c) --------------------------- */

struct hub_config;
struct audit;

/* hub.json "llm" keys that are the assistant's (its limits), not the client's. */
extern const char *const llm_hub_agent_keys[];

/* The client for spec (as llm_open) with hub.json's "llm" settings, the key from the
 * hub's environment (llm.api_key_env), and its calls audited to audit (with their
 * content when debug). NULL and why on failure. */
struct llm *llm_open_hub(const struct hub_config *cfg, const char *spec, struct audit *audit,
                         bool debug, char *err, size_t errlen);

/* --- a spoke's sampling/createMessage served by the hub's LLM (llm_sampling.c) ---- */

/* Each app's own context ("spoke:APP": its conversation is whatever it sends), no tools
 * offered, maxTokens capped, and a token bucket per app (per_minute, burst), so that a
 * spoke in a loop cannot spend the user's budget. hub.json: llm.sampling_per_minute,
 * sampling_burst, sampling_max_tokens. */
struct llm_sampling_limits {
    unsigned per_minute; /* default 20 */
    unsigned burst;      /* default 5 */
    long max_tokens;     /* default 1024 */
};
void llm_sampling_limits_defaults(struct llm_sampling_limits *l);
/* The defaults, then hub.json's llm.sampling_*; -1 and why for a value out of bounds. */
int llm_sampling_limits_parse(const struct hub_config *cfg, struct llm_sampling_limits *l,
                              char *err, size_t errlen);

struct llm_sampling_buckets;
struct llm_sampling_buckets *llm_sampling_buckets_new(void);
void llm_sampling_buckets_free(struct llm_sampling_buckets *b);
/* Takes one request from app's bucket; false when it is empty (the rate limit). */
bool llm_sampling_take(struct llm_sampling_buckets *b, const char *app,
                       const struct llm_sampling_limits *l);
/* The request for a spoke's params (untrusted: checked with bounds); NULL and why
 * when they break the rules. */
struct llm_request *llm_sampling_request(const char *app, const json_t *params,
                                         const struct llm_sampling_limits *l, char *why,
                                         size_t whylen);
/* The CreateMessageResult for a completion. */
json_t *llm_sampling_result(const struct llm_response *rs);

/* Recording and replay (replay.h) are part of this folder's interface: the assistant's
 * --llm replay:FILE and --record FILE. */
#include "replay.h"
/* The scripted back end (a function answers): the agent benchmark's models. */
#include "scripted.h"

#endif
