/* The MCP revision each spoke speaks (lib/mcpver.h), and what follows from it: how
 * the hub opens the conversation, what every request carries, what a result may hold,
 * and the client features the hub answers whatever the revision (roots).
 *
 * Opening. A manifest pins the revision its server spoke when it was added
 * ("protocol"). A legacy one (or none) opens with initialize, asking for 2025-11-25;
 * the server answers with the revision it speaks, any of 2024-11-05 to 2025-11-25. A
 * server that refuses initialize is asked server/discover before it is given up: a
 * server that speaks only the stateless revision (2026-07-28) answers that, and from
 * then on every request carries the version and the hub's capabilities in _meta. A
 * manifest that pins 2026-07-28 opens with server/discover directly.
 *
 * Why initialize first, when the 2026-07-28 transport page says a dual-era client
 * SHOULD probe with server/discover: every server on npm today is legacy, some legacy
 * SDKs end the session on any request before initialize (the Python SDK raises on
 * one), and a probe would cost every start a round trip. The fallback reaches
 * modern-only servers all the same, since the revision says they answer initialize
 * with an error. */
#include "internal.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define HUB_CLIENT_NAME "isolategpt-hub"
#define HUB_CLIENT_VERSION "0.1"

json_t *mcp_initialize_params(const struct manifest *m)
{
    /* roots: the hub answers roots/list (mcp_roots) unless the manifest says not to;
     * sampling and elicitation reach its hooks. */
    json_t *p =
        json_pack("{s:s,s:{s:{},s:{}},s:{s:s,s:s}}", "protocolVersion",
                  mcpver_name(MCP_V_LATEST_LEGACY), "capabilities", "sampling", "elicitation",
                  "clientInfo", "name", HUB_CLIENT_NAME, "version", HUB_CLIENT_VERSION);
    if (m->roots)
        json_object_set_new(json_object_get(p, "capabilities"), "roots", json_object());
    return p;
}

void mcp_decorate(const struct spoke *sp, json_t *params)
{
    if (!mcpver_modern(sp->version) || !json_is_object(params))
        return;
    json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    /* What the hub answers as input requests (mcp.c retry_with_inputs): sampling and
     * elicitation through its hooks, as for an earlier revision's requests; roots from
     * the manifest unless it says not to. */
    json_object_set_new(meta, MCP_META_PROTOCOL_VERSION, json_string(mcpver_name(sp->version)));
    json_t *caps = json_pack("{s:{},s:{}}", "sampling", "elicitation");
    if (sp->m->roots)
        json_object_set_new(caps, "roots", json_object());
    json_object_set_new(meta, MCP_META_CLIENT_CAPABILITIES, caps);
    json_object_set_new(
        meta, MCP_META_CLIENT_INFO,
        json_pack("{s:s,s:s}", "name", HUB_CLIENT_NAME, "version", HUB_CLIENT_VERSION));
}

static bool check_capabilities(const json_t *result, char *err, size_t errlen)
{
    json_t *caps = json_object_get(result, "capabilities");
    if (!json_is_object(caps) || !json_is_object(json_object_get(caps, "tools"))) {
        snprintf(err, errlen, "%s lacks capabilities.tools",
                 json_object_get(result, "supportedVersions") ? "server/discover's result"
                                                              : "initialize result");
        return false;
    }
    return true;
}

bool mcp_check_initialize(struct spoke *sp, const json_t *result, char *err, size_t errlen)
{
    if (!json_is_object(result)) {
        snprintf(err, errlen, "initialize result is not an object");
        return false;
    }
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    enum mcp_version ver = mcpver_parse(v);
    if (ver == MCP_V_UNKNOWN || mcpver_modern(ver)) {
        snprintf(err, errlen, "unsupported MCP protocol version \"%.40s\"", v ? v : "(none)");
        return false;
    }
    if (!check_capabilities(result, err, errlen))
        return false;
    sp->version = ver;
    return true;
}

json_t *mcp_check_discover(struct spoke *sp, const json_t *result, char *err, size_t errlen)
{
    const json_t *versions = json_object_get(result, "supportedVersions");
    if (!json_is_object(result) || !json_is_array(versions)) {
        snprintf(err, errlen, "server/discover's result has no supportedVersions");
        return NULL;
    }
    /* The newest revision both speak: today there is one modern revision. */
    enum mcp_version best = MCP_V_UNKNOWN;
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v)
    {
        enum mcp_version one = mcpver_parse(json_string_value(v));
        if (mcpver_modern(one) && one > best)
            best = one;
    }
    if (best == MCP_V_UNKNOWN) {
        char *list = json_dumps(versions, JSON_COMPACT);
        snprintf(err, errlen, "server/discover offers no MCP revision the hub speaks (%.120s)",
                 list ? list : "?");
        free(list);
        return NULL;
    }
    if (!check_capabilities(result, err, errlen))
        return NULL;
    sp->version = best;
    /* What the rest of the hub reads from an initialize answer (hub_spoke_server_info,
     * capabilities): the same keys, from where this revision puts them. */
    json_t *info = json_pack("{s:s,s:O}", "protocolVersion", mcpver_name(best), "capabilities",
                             json_object_get(result, "capabilities"));
    const json_t *si = json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO);
    if (!si)
        si = json_object_get(result, "serverInfo");
    if (json_is_object(si))
        json_object_set(info, "serverInfo", (json_t *)si);
    const json_t *instr = json_object_get(result, "instructions");
    if (json_is_string(instr))
        json_object_set(info, "instructions", (json_t *)instr);
    return info;
}

json_t *mcp_discover_params(void)
{
    return json_object(); /* _meta comes from mcp_decorate() */
}

/* ---- roots ---- */

static json_t *root_entry(const char *path, const char *name)
{
    char *uri = xasprintf("file://%s", path);
    json_t *r = json_pack("{s:s,s:s}", "uri", uri, "name", name);
    free(uri);
    return r;
}

json_t *mcp_roots(const struct spoke *sp)
{
    /* Where the spoke finds them: in namespace mode its /data and each bind at its
     * place in the jail; otherwise the host paths themselves. */
    bool ns = sp->hub->cfg->isolation == ISO_NAMESPACE;
    json_t *roots = json_array();
    if (ns || sp->data_dir)
        json_array_append_new(roots, root_entry(ns ? "/data" : sp->data_dir, "data"));
    for (size_t i = 0; i < sp->m->n_mounts; i++) {
        const struct manifest_mount *mt = &sp->m->mounts[i];
        json_array_append_new(roots, root_entry(ns ? mt->dst : mt->src, "read-only"));
    }
    return json_pack("{s:o}", "roots", roots);
}

/* ---- results ---- */

bool mcp_check_inputs(const struct spoke *sp, const json_t *requests, char *err, size_t errlen)
{
    if (!json_is_object(requests) || json_object_size(requests) == 0) {
        snprintf(err, errlen, "input_required without inputRequests (an object of requests)");
        return false;
    }
    if (json_object_size(requests) > 16) {
        snprintf(err, errlen, "more than 16 inputRequests");
        return false;
    }
    const char *key;
    json_t *req;
    json_object_foreach((json_t *)requests, key, req)
    {
        const char *method = json_string_value(json_object_get(req, "method"));
        bool roots = method && strcmp(method, "roots/list") == 0;
        bool hook = method && (strcmp(method, "sampling/createMessage") == 0 ||
                               strcmp(method, "elicitation/create") == 0);
        /* A server asks only for what the client declared (mcp_decorate). */
        if (!(roots && sp->m->roots) && !hook) {
            snprintf(err, errlen,
                     "input request \"%.40s\" asks for %.60s, which the hub did not declare "
                     "(%s)",
                     key, method ? method : "(no method)",
                     sp->m->roots ? "roots/list, sampling/createMessage, elicitation/create"
                                  : "sampling/createMessage, elicitation/create; the manifest "
                                    "says \"roots\": false");
            return false;
        }
        if (hook && !json_is_object(json_object_get(req, "params"))) {
            snprintf(err, errlen, "input request \"%.40s\" (%s) has no params object", key, method);
            return false;
        }
    }
    return true;
}

void mcp_adapt_result(const struct spoke *sp, json_t *result)
{
    /* structuredContent is no part of a revision before 2025-06-18: unvalidated data
     * a caller might trust is not passed on. */
    if (!mcpver_structured(sp->version) && sp->version != MCP_V_UNKNOWN)
        json_object_del(result, "structuredContent");
}
