/* A small C library for writing a spoke: an MCP server on stdin/stdout (newline-
 * delimited JSON-RPC 2.0, the MCP stdio transport).
 *
 *   struct mcp_server *s = mcp_server_new("notes", "1.0");
 *   mcp_server_add_tool(s, "add", "Saves a note.", INPUT_SCHEMA, OUTPUT_SCHEMA, add, NULL);
 *   return mcp_server_run(s);
 *
 * The SDK answers initialize, tools/list and tools/call, and lets a tool handler call
 * back to the hub while it runs: mcp_isolate_call() (another app, through the hub's
 * mediation), mcp_sample() (an LLM completion served by the hub) and mcp_elicit() (a
 * question to the user). These block until the hub answers.
 *
 * The schemas given here must equal the spoke's manifest: the hub compares them.
 * Anything a handler prints on stdout goes to stderr (the spoke's log): the real
 * stdout is kept for protocol frames only. */
#ifndef SPOKES_SDK_MCP_SERVER_H
#define SPOKES_SDK_MCP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_SDK_PROTOCOL_VERSION "2025-11-25"

struct mcp_server;

/* A handler sets *result (a CallToolResult, see the helpers) and returns 0; returning
 * -1 without a result answers a generic tool error. args is borrowed. */
typedef int (*mcp_tool_fn)(struct mcp_server *s, const json_t *args, json_t **result, void *ud);

struct mcp_server *mcp_server_new(const char *name, const char *version);
/* Schemas are JSON text; output_schema may be NULL. Aborts on invalid JSON: a spoke
 * with a broken schema is a programming error. */
void mcp_server_add_tool(struct mcp_server *s, const char *name, const char *description,
                         const char *input_schema, const char *output_schema, mcp_tool_fn fn,
                         void *ud);
/* Another MCP method (resources/list, resources/read, prompts/list, prompts/get,
 * completion/complete, ...): fn sets *result (the MCP result) and returns 0, or returns
 * a JSON-RPC error code (its message in *result as a JSON string, or none). capability
 * ("resources", "prompts", "completions") is declared in initialize; NULL for none. */
typedef int (*mcp_method_fn)(struct mcp_server *s, const json_t *params, json_t **result, void *ud);
void mcp_server_add_method(struct mcp_server *s, const char *method, const char *capability,
                           mcp_method_fn fn, void *ud);
/* Serves until the hub closes stdin: 0, or 1 after a protocol error. */
int mcp_server_run(struct mcp_server *s);
void mcp_server_free(struct mcp_server *s);

/* The spoke's private data directory (SPOKE_DATA; "." when unset). */
const char *mcp_data_dir(const struct mcp_server *s);
/* The app name the hub started this spoke as (SPOKE_NAME). */
const char *mcp_spoke_name(const struct mcp_server *s);

/* The descriptor protocol frames are written to. Only for tests that must send what
 * the SDK never would (hostile spokes). */
int mcp_server_raw_out_fd(const struct mcp_server *s);

/* Inside a tool handler: the call's params._meta (the progressToken the hub passes
 * on), or NULL. */
const json_t *mcp_call_meta(const struct mcp_server *s);
/* A notification to the hub (notifications/progress, notifications/message): 0 or -1. */
int mcp_notify(struct mcp_server *s, const char *method, json_t *params_stolen);

/* Results. */
json_t *mcp_text_result(const char *text);
/* structured (stolen) becomes structuredContent, and its JSON text the text content. */
json_t *mcp_structured_result(json_t *structured);
json_t *mcp_error_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Calls back to the hub from inside a tool handler. Each returns 0 and *result (owned
 * by the caller), or the JSON-RPC error code with its message in err. */
int mcp_request(struct mcp_server *s, const char *method, json_t *params_stolen, json_t **result,
                char *err, size_t errlen);
/* tool is "APP.TOOL"; args is borrowed. The result is B's CallToolResult. */
int mcp_isolate_call(struct mcp_server *s, const char *tool, const json_t *args, json_t **result,
                     char *err, size_t errlen);
int mcp_sample(struct mcp_server *s, const char *prompt, int max_tokens, json_t **result, char *err,
               size_t errlen);
/* requested_schema (borrowed) describes the answer; the result has "action" and, when
 * accepted, "content". */
int mcp_elicit(struct mcp_server *s, const char *message, const json_t *requested_schema,
               json_t **result, char *err, size_t errlen);

#endif
