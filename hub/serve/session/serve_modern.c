/* MCP 2026-07-28 ("modern", stateless) towards clients, beside the initialize-based
 * revisions: a request whose _meta names its protocol version is served on its own,
 * without initialize, on any session (stdio, an attached stream, or the HTTP request's
 * own, serve_http.c):
 *
 *   - its _meta must carry io.modelcontextprotocol/protocolVersion (a modern revision
 *     this hub speaks, else UnsupportedProtocolVersionError -32022 listing them) and
 *     io.modelcontextprotocol/clientCapabilities (else -32602);
 *   - server/discover answers the versions, capabilities, identity and instructions;
 *     initialize, ping and logging/setLevel are not methods of the revision (-32601);
 *   - every result carries resultType "complete" and _meta's serverInfo; the lists and
 *     reads carry the caching hints (ttlMs 0: the apps change when the spokes directory
 *     does; cacheScope private: what a user sees is theirs);
 *   - notifications/message only for a request that asked for a log level
 *     (io.modelcontextprotocol/logLevel), progress as before;
 *   - the hub sends such a client no requests of its own (a question is the answer
 *     input_required, serve_mrtr.c), and no notification it did not ask for: the lists'
 *     changes go to its subscriptions/listen requests (serve_subscribe.c).
 * The session keeps the ids of its modern requests in flight, so that their answers,
 * whoever sends them, are completed here on the way out (serve_session_send). */
#include "mcpver.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No log level given: no notifications/message at all. */
#define LEVEL_NONE 8

static char *id_key(const json_t *id)
{
    return json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
}

bool serve_modern_meta(const json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    return json_is_object(meta) && json_object_get(meta, MCP_META_PROTOCOL_VERSION) != NULL;
}

static json_t *supported_versions(bool modern_only)
{
    json_t *a = json_array();
    for (int v = MCP_V_LATEST; v >= MCP_V_2025_03_26; v--)
        if (!modern_only || mcpver_modern((enum mcp_version)v))
            json_array_append_new(a, json_string(mcpver_name((enum mcp_version)v)));
    return a;
}

static void on_discover(struct serve_session *ss, const json_t *id)
{
    char instructions[400];
    /* Legacy revisions are reached through initialize: the versions a client may name
     * in _meta are the modern ones. */
    json_t *r = json_pack("{s:o,s:o,s:s}", "supportedVersions", supported_versions(true),
                          "capabilities", serve_capabilities(ss, true), "instructions",
                          serve_instructions(ss, instructions, sizeof(instructions)));
    serve_session_send(ss, jrpc_result((json_t *)id, r), id);
}

void serve_modern_request(struct serve_session *ss, struct jrpc_msg *msg)
{
    json_t *meta = json_object_get(msg->params, "_meta");
    const char *pv = json_string_value(json_object_get(meta, MCP_META_PROTOCOL_VERSION));
    if (!mcpver_modern(mcpver_parse(pv))) {
        json_t *data =
            json_pack("{s:o,s:s?}", "supported", supported_versions(false), "requested", pv);
        serve_session_send(ss,
                           jrpc_error(msg->id, MCP_ERR_UNSUPPORTED_PROTOCOL_VERSION,
                                      "Unsupported protocol version", data),
                           msg->id);
        return;
    }
    if (!json_is_object(json_object_get(meta, MCP_META_CLIENT_CAPABILITIES))) {
        serve_session_error(ss, msg->id, JRPC_INVALID_PARAMS,
                            "the request's _meta lacks " MCP_META_CLIENT_CAPABILITIES);
        return;
    }
    const char *m = msg->method;
    if (strcmp(m, "initialize") == 0 || strcmp(m, "ping") == 0 ||
        strcmp(m, "logging/setLevel") == 0) {
        serve_session_error(ss, msg->id, JRPC_METHOD_NOT_FOUND, "%s is not a method of protocol %s",
                            m, pv);
        return;
    }
    const char *level = json_string_value(json_object_get(meta, MCP_META_LOG_LEVEL));
    int l = level ? serve_log_level(level) : -1;
    if (!ss->modern_ids)
        ss->modern_ids = json_object();
    char *key = id_key(msg->id);
    if (key)
        json_object_set_new(ss->modern_ids, key,
                            json_pack("{s:s,s:i}", "method", m, "level", l < 0 ? LEVEL_NONE : l));
    free(key);
    if (strcmp(m, "server/discover") == 0) {
        on_discover(ss, msg->id);
        return;
    }
    if (strcmp(m, "subscriptions/listen") == 0) {
        serve_subscribe_listen(ss, msg->id, msg->params);
        return;
    }
    ss->in_modern = true;
    ss->modern_caps = json_object_get(meta, MCP_META_CLIENT_CAPABILITIES);
    serve_session_dispatch(ss, msg);
    ss->in_modern = false;
    ss->modern_caps = NULL;
}

static const json_t *entry_of(const struct serve_session *ss, const json_t *id, char **key)
{
    *key = NULL;
    if (!ss->modern_ids || !id || json_object_size(ss->modern_ids) == 0)
        return NULL;
    *key = id_key(id);
    return *key ? json_object_get(ss->modern_ids, *key) : NULL;
}

int serve_session_level_for(const struct serve_session *ss, const json_t *related)
{
    char *key;
    const json_t *e = entry_of(ss, related, &key);
    free(key);
    return e ? (int)json_integer_value(json_object_get(e, "level")) : ss->log_level;
}

bool serve_session_modern(const struct serve_session *ss, const json_t *related)
{
    char *key;
    const json_t *e = entry_of(ss, related, &key);
    free(key);
    return e != NULL;
}

static bool cacheable(const char *method)
{
    static const char *const methods[] = {
        "server/discover",          "tools/list",    "prompts/list", "resources/list",
        "resources/templates/list", "resources/read"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(method, methods[i]) == 0)
            return true;
    return false;
}

void serve_modern_outgoing(struct serve_session *ss, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    if (json_object_get(msg, "method") || !id)
        return;
    char *key;
    const json_t *e = entry_of(ss, id, &key);
    json_t *result = json_object_get(msg, "result");
    if (e && json_is_object(result)) {
        if (!json_object_get(result, "resultType"))
            json_object_set_new(result, "resultType", json_string("complete"));
        json_t *meta = json_object_get(result, "_meta");
        if (!json_is_object(meta))
            json_object_set_new(result, "_meta", meta = json_object());
        json_object_set_new(meta, MCP_META_SERVER_INFO, serve_server_info(ss));
        if (cacheable(json_string_value(json_object_get(e, "method")))) {
            json_object_set_new(result, "ttlMs", json_integer(0));
            json_object_set_new(result, "cacheScope", json_string("private"));
        }
    }
    if (e)
        json_object_del(ss->modern_ids, key);
    free(key);
}

void serve_modern_forget(struct serve_session *ss, const json_t *id)
{
    char *key;
    if (entry_of(ss, id, &key))
        json_object_del(ss->modern_ids, key);
    free(key);
}
