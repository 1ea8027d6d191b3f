/* The declarative operations of a benchmark app's tool (docs/benchmark.md, "Apps"):
 * list, search, get, append, update, delete over one collection of the app's state.
 * Run by the generic app spoke (spokes/suiteapp); checked by the benchmark when it loads
 * a suite (hub/agentbench), so a bad tool is refused before any spoke starts. */
#ifndef ISOLATE_BENCHOPS_H
#define ISOLATE_BENCHOPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Checks a tool definition's operation keys (not its MCP keys); false and why. */
bool suiteapp_tool_valid(const json_t *tool, char *why, size_t whylen);

/* Runs tool (its definition) with args on state (changed in place by append, update
 * and delete; *changed says so). Returns the structuredContent, or NULL and the tool
 * error's message in err. date is what {"now": true} gives. */
json_t *suiteapp_run(const json_t *tool, const json_t *args, json_t *state, const char *date,
                     bool *changed, char *err, size_t errlen);

#endif
