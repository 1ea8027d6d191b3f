#include "mcpver.h"

#include <stddef.h>
#include <string.h>

static const char *const names[] = {
    [MCP_V_UNKNOWN] = "",
    [MCP_V_2024_11_05] = "2024-11-05",
    [MCP_V_2025_03_26] = "2025-03-26",
    [MCP_V_2025_06_18] = "2025-06-18",
    [MCP_V_2025_11_25] = "2025-11-25",
    [MCP_V_2026_07_28] = "2026-07-28",
};

enum mcp_version mcpver_parse(const char *s)
{
    for (size_t v = MCP_V_2024_11_05; s && v <= MCP_V_LATEST; v++)
        if (strcmp(s, names[v]) == 0)
            return (enum mcp_version)v;
    return MCP_V_UNKNOWN;
}

const char *mcpver_name(enum mcp_version v)
{
    return v <= MCP_V_LATEST ? names[v] : "";
}

bool mcpver_modern(enum mcp_version v)
{
    return v >= MCP_V_2026_07_28;
}

bool mcpver_structured(enum mcp_version v)
{
    return v >= MCP_V_2025_06_18;
}

bool mcpver_annotations(enum mcp_version v)
{
    return v >= MCP_V_2025_03_26;
}

bool mcpver_batches(enum mcp_version v)
{
    return v == MCP_V_2025_03_26;
}

bool mcpver_content_type(enum mcp_version v, const char *type)
{
    if (strcmp(type, "text") == 0 || strcmp(type, "image") == 0 || strcmp(type, "resource") == 0)
        return v != MCP_V_UNKNOWN;
    if (strcmp(type, "audio") == 0)
        return mcpver_annotations(v);
    if (strcmp(type, "resource_link") == 0)
        return mcpver_structured(v);
    return false;
}
