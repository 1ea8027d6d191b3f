#include "manifest_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *name)
{
    fprintf(stderr, "mcp sdk: %s%s%s\n", what, name ? ": " : "", name ? name : "");
    abort();
}

void mcp_server_add_manifest_tools(struct mcp_server *s, const char *manifest_json,
                                   const struct mcp_handler *handlers, size_t n)
{
    json_error_t e;
    json_t *m = json_loads(manifest_json, 0, &e);
    json_t *tools = json_object_get(m, "tools");
    if (!json_is_array(tools))
        die("the embedded manifest has no tools array", NULL);
    size_t used = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *desc = json_string_value(json_object_get(t, "description"));
        const struct mcp_handler *h = NULL;
        for (size_t k = 0; name && k < n; k++)
            if (strcmp(handlers[k].tool, name) == 0)
                h = &handlers[k];
        if (!h || !desc)
            die("a manifest tool without a handler or description", name);
        char *in = json_dumps(json_object_get(t, "inputSchema"), JSON_COMPACT);
        json_t *out_j = json_object_get(t, "outputSchema");
        char *out = out_j ? json_dumps(out_j, JSON_COMPACT) : NULL;
        if (!in)
            die("a manifest tool without inputSchema", name);
        mcp_server_add_tool(s, name, desc, in, out, h->fn, h->ud);
        free(in);
        free(out);
        used++;
    }
    if (used != n)
        die("a handler for a tool the manifest does not have", NULL);
    json_decref(m);
}
