/* The names under which the manifests' tools are offered to an LLM.
 *
 * OpenAI-compatible servers want function names matching ^[A-Za-z0-9_-]{1,64}$, so
 * "metro_hail.estimate_fare" is offered as "metro_hail__estimate_fare". App names may
 * themselves hold "__" and app plus tool may be longer than 64, so the way back is a
 * table lookup of exactly the names offered, never a split: a name the LLM invents,
 * or one that only looks like a real tool, is refused. Names that would collide or
 * not fit get a short hash suffix instead. */
#ifndef HUB_AGENT_TOOLS_H
#define HUB_AGENT_TOOLS_H

#include "llm/llm.h"
#include "runtime/runtime.h"

#include <stddef.h>

struct tool_entry {
    char name[LLM_TOOL_NAME_MAX + 1];
    const struct manifest *m;
    const struct manifest_tool *t;
};

struct tool_map {
    struct tool_entry *v;
    size_t n;
};

void tool_map_build(struct tool_map *map, const struct manifest_set *ms);
void tool_map_free(struct tool_map *map);
/* The entry offered under name, or NULL. */
const struct tool_entry *tool_map_find(const struct tool_map *map, const char *name);
/* The entry for app and tool, or NULL. */
const struct tool_entry *tool_map_by_tool(const struct tool_map *map, const char *app,
                                          const char *tool);
/* Offers every tool to rq (name, "app: tool description", inputSchema); 0 or -1. */
int tool_map_offer(const struct tool_map *map, struct llm_request *rq, char *err, size_t errlen);

#endif
