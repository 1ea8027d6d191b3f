/* MCP protocol revisions, and what each carries: one table for the hub's client side
 * (hub/runtime, towards spokes) and its server side (hub/serve, towards clients).
 *
 *   2024-11-05  initialize; tools with name, description, inputSchema; text, image and
 *               embedded resource content
 *   2025-03-26  + tool annotations, audio content, JSON-RPC batches, completions
 *   2025-06-18  + outputSchema and structuredContent, title, resource_link content,
 *               elicitation; batches removed
 *   2025-11-25  + icons, execution (tasks), URL elicitation
 *   2026-07-28  stateless ("modern"): no initialize; server/discover, per-request
 *               _meta with the protocol version and client capabilities, resultType
 *               on every result, server requests through InputRequiredResult (MRTR)
 * The revisions up to 2025-11-25 are "legacy" (initialize-based). */
#ifndef ISOLATE_MCPVER_H
#define ISOLATE_MCPVER_H

#include <stdbool.h>

enum mcp_version {
    MCP_V_UNKNOWN = 0,
    MCP_V_2024_11_05,
    MCP_V_2025_03_26,
    MCP_V_2025_06_18,
    MCP_V_2025_11_25,
    MCP_V_2026_07_28,
};

#define MCP_V_LATEST_LEGACY MCP_V_2025_11_25
#define MCP_V_LATEST MCP_V_2026_07_28

/* The reserved _meta keys of the modern revision. */
#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define MCP_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define MCP_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"

/* Modern error codes (-32020 to -32099 are the specification's). */
#define MCP_ERR_HEADER_MISMATCH -32020
#define MCP_ERR_MISSING_CLIENT_CAPABILITY -32021
#define MCP_ERR_UNSUPPORTED_PROTOCOL_VERSION -32022

/* "2025-06-18" -> MCP_V_2025_06_18; MCP_V_UNKNOWN for anything else (NULL too). */
enum mcp_version mcpver_parse(const char *s);
/* The revision's date, "" for MCP_V_UNKNOWN. */
const char *mcpver_name(enum mcp_version v);

/* Stateless: server/discover instead of initialize, _meta on every request. */
bool mcpver_modern(enum mcp_version v);
/* Tool outputSchema, structuredContent, title, resource_link (2025-06-18 on). */
bool mcpver_structured(enum mcp_version v);
/* Tool annotations and audio content (2025-03-26 on). */
bool mcpver_annotations(enum mcp_version v);
/* JSON-RPC batches (2025-03-26 only). */
bool mcpver_batches(enum mcp_version v);
/* A content block of this type ("text", "image", "audio", "resource",
 * "resource_link") is defined in revision v. */
bool mcpver_content_type(enum mcp_version v, const char *type);

#endif
