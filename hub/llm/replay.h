/* Replay: `--llm replay:FILE` serves recorded answers offline, through the same
 * struct llm as the HTTP client (llm.h), so callers cannot tell the two apart.
 *
 * A recording is one JSON file:
 *
 *   {
 *     "version": 1,
 *     "description": "case study 1: ride sharing (optional, free text)",
 *     "entries": [
 *       {"context": "planner",
 *        "match": {"role": "user", "contains": "airport"},
 *        "response": {"content": null,
 *                     "tool_calls": [{"id": "call_1", "name": "metro_hail__estimate_fare",
 *                                     "arguments": {"to": "airport"}}]}},
 *       {"context": "spoke:*", "repeat": true,
 *        "response": {"content": "42 EUR"}},
 *       {"context": "merge", "match": {"has_tools": false},
 *        "response": {"content": "The ride costs 42 EUR.",
 *                     "usage": {"prompt_tokens": 120, "completion_tokens": 9}}},
 *       {"context": "none", "match": {"role": "tool", "tool": "mail__send"},
 *        "error": {"kind": "rate-limit", "message": "recorded 429"}}
 *     ]
 *   }
 *
 * Matching. A request carries a context label (llm_request_new()): the planner's
 * context, each spoke's own sampling context ("spoke:NAME"), the merge context, the
 * `none` baseline's single loop, ... Each context is an independent conversation.
 * For a request, the entries are scanned in file order and the first one served is
 * the first that
 *   - is not used up (an entry is served once unless "repeat": true),
 *   - has a "context" equal to the request's, or ending in '*' and a prefix of it,
 *   - satisfies every condition in its optional "match" object, all about the
 *     request's last message: "role" (system|user|assistant|tool) equals its role,
 *     "contains" is a substring of its content, "tool" is the name of the tool whose
 *     result it is; and "has_tools" (bool) whether the request offers any tools.
 * So a context's entries without "match" are simply its answers in order, and
 * "match" pins an answer to a request when order alone is not enough.
 *
 * Each entry has either "response" (keys: "content" string or null, "tool_calls"
 * [{"id", "name", "arguments": object or JSON text}], "finish_reason" (default
 * "tool_calls" when there are tool calls, else "stop"), "model", "usage"
 * {prompt_tokens, completion_tokens, total_tokens}) or "error" (keys: "kind", one of
 * connect timeout auth not-found bad-request rate-limit server-error malformed
 * too-large; "message"), which the call then fails with. "comment" is allowed on
 * entries and ignored.
 *
 * A request no entry covers fails with LLM_ERR_UNCOVERED and a message naming the
 * file, the context, the request's number within that context and an excerpt of
 * its last message. Streaming requests get the recorded content through their delta
 * callback in small pieces, as from a server.
 *
 * The loader treats the file as hostile: at most 16 MiB, 10000 entries, 1 MiB of
 * content and 64 tool calls per entry; unknown keys, wrong types and invalid tool
 * call arguments are errors of the form "FILE: entries[3].response.tool_calls: ...". */
#ifndef HUB_REPLAY_H
#define HUB_REPLAY_H

#include "llm.h"

#define REPLAY_MAX_BYTES (16u << 20)
#define REPLAY_MAX_ENTRIES 10000
#define REPLAY_MAX_CONTENT (1u << 20)

/* Loads FILE; NULL and a "FILE: field: why" message when it is not a valid recording.
 * cfg supplies the audit log (and the model name recorded in audit records). */
struct llm *llm_replay_open(const char *path, const struct llm_config *cfg, char *err,
                            size_t errlen);

/* How many entries (not "repeat") were never served; the first one's context and
 * index are described in first. 0 for a back end that is not replay. Lets a case
 * study check that its recording was played to the end. */
size_t llm_replay_unused(const struct llm *llm, char *first, size_t firstlen);

/* Recording: wraps inner (which it then owns) so that every answered request is
 * appended to a recording at path, in the format above, that replays the same run:
 * each entry has the request's context, "match" {role, contains: the first 60 bytes
 * of the last message, tool, has_tools} and the response. The file is rewritten
 * (atomically) after each answer, so it is valid JSON at any moment. Failed calls are
 * not recorded. NULL and a message when path cannot be written. */
struct llm *llm_record_open(struct llm *inner, const char *path, char *err, size_t errlen);

#endif
