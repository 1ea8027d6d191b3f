/* Offered tool names <-> manifest tools (see agent_tools.h). */
#include "agent_tools.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool taken(const struct tool_map *map, const char *name)
{
    return tool_map_find(map, name) != NULL;
}

/* FNV-1a: only to make a colliding name distinct, not for security (the lookup is
 * exact either way). */
static uint32_t fnv1a(const char *a, const char *b)
{
    uint32_t h = 2166136261u;
    for (const char *p = a; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ '.') * 16777619u;
    for (const char *p = b; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

void tool_map_build(struct tool_map *map, const struct manifest_set *ms)
{
    size_t total = 0;
    for (size_t i = 0; i < ms->n; i++)
        total += ms->v[i]->n_tools;
    map->v = xcalloc(total + 1, sizeof(*map->v));
    map->n = 0;
    for (size_t i = 0; i < ms->n; i++) {
        const struct manifest *m = ms->v[i];
        for (size_t j = 0; j < m->n_tools; j++) {
            struct tool_entry *e = &map->v[map->n];
            char name[2 * MANIFEST_NAME_MAX + 3];
            snprintf(name, sizeof(name), "%s__%s", m->name, m->tools[j].name);
            if (strlen(name) > LLM_TOOL_NAME_MAX || taken(map, name)) {
                /* 55 bytes of the name, '_', 8 hex digits: 64 at most. */
                uint32_t h = fnv1a(m->name, m->tools[j].name);
                char base[56];
                str_copy(base, name, sizeof(base));
                for (unsigned salt = 0;; salt++) {
                    snprintf(name, sizeof(name), "%s_%08x", base, h + salt);
                    if (!taken(map, name))
                        break;
                }
            }
            str_copy(e->name, name, sizeof(e->name));
            e->m = m;
            e->t = &m->tools[j];
            map->n++;
        }
    }
}

void tool_map_free(struct tool_map *map)
{
    free(map->v);
    map->v = NULL;
    map->n = 0;
}

const struct tool_entry *tool_map_find(const struct tool_map *map, const char *name)
{
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->v[i].name, name) == 0)
            return &map->v[i];
    return NULL;
}

const struct tool_entry *tool_map_by_tool(const struct tool_map *map, const char *app,
                                          const char *tool)
{
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->v[i].m->name, app) == 0 && strcmp(map->v[i].t->name, tool) == 0)
            return &map->v[i];
    return NULL;
}

int tool_map_offer(const struct tool_map *map, struct llm_request *rq, char *err, size_t errlen)
{
    for (size_t i = 0; i < map->n; i++) {
        const struct tool_entry *e = &map->v[i];
        char *desc = xasprintf("[app %s] %s%s", e->m->name, e->t->description,
                               e->t->irreversible ? " (irreversible)" : "");
        int rc = llm_request_tool(rq, e->name, desc, e->t->input_schema_json, err, errlen);
        free(desc);
        if (rc < 0)
            return -1;
    }
    return 0;
}
