/* Registering a spoke's tools from its own manifest (config/spokes/NAME.json), which
 * the build embeds in the spoke as a string: the names, descriptions and schemas the
 * spoke announces are then exactly the manifest's, which the hub checks anyway.
 *
 *   static const struct mcp_handler handlers[] = {{"estimate_fare", tool_estimate, NULL}};
 *   mcp_server_add_manifest_tools(s, metro_hail_manifest, handlers, ARRAY_LEN(handlers));
 */
#ifndef SPOKES_SDK_MANIFEST_TOOLS_H
#define SPOKES_SDK_MANIFEST_TOOLS_H

#include "mcp_server.h"

struct mcp_handler {
    const char *tool;
    mcp_tool_fn fn;
    void *ud;
};

/* Aborts when the manifest is not valid JSON, or a tool has no handler or a handler
 * no tool: a spoke that disagrees with its manifest is a programming error. */
void mcp_server_add_manifest_tools(struct mcp_server *s, const char *manifest_json,
                                   const struct mcp_handler *handlers, size_t n);

#endif
