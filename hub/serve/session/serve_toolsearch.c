/* Tool search: with many apps, tools/list offers three tools instead of every one
 * (hub.json serve.tools: "search", or a number of tools past which it is on):
 * find_tools ranks the session's tools for a request in plain words, call_tool calls
 * one of them, list_apps names the apps. A client's context then holds three small
 * schemas and the few a query brings back, not hundreds.
 *
 * call_tool is only a wrapper: its inner call goes through serve_tools_call as a
 * direct call would (the same name resolution and scopes, permission questions, data
 * flow questions, pin, validation and audit), and a tool find_tools names may also be
 * called directly. find_tools and list_apps read the manifests only: no spoke starts.
 *
 * The ranking is BM25 (lib/bm25.h) over each tool's fields, weighted by how much a
 * word there says about what the tool does: its name (3) and title (2), its argument
 * names (1.5), its app's name (1.5), its description and its arguments' descriptions
 * (1), and its app's description (0.5). scripts/bench/toolsearch measures it on the
 * catalog's apps. */
#include "bm25.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUERY_MAX 1024
#define LIMIT_DEFAULT 5
#define LIMIT_MAX 20
#define ARGS_TEXT_MAX 8192

static int visible_tools(struct serve_session *ss)
{
    const struct manifest_set *ms = ss->sv->ms;
    int n = 0;
    for (size_t i = 0; i < ms->n; i++)
        if ((!ss->app[0] || strcmp(ms->v[i]->name, ss->app) == 0) &&
            serve_session_app_ok(ss, ms->v[i]->name))
            n += (int)ms->v[i]->n_tools;
    return n;
}

bool serve_toolsearch_on(struct serve_session *ss)
{
    int above = ss->sv->cfg->serve_tools_search_above;
    return above == 0 || (above > 0 && visible_tools(ss) > above);
}

json_t *serve_toolsearch_list(void)
{
    json_t *find = json_pack(
        "{s:s,s:s,s:s,s:{s:s,s:{s:{s:s,s:s,s:i},s:{s:s,s:i,s:i,s:s}},s:[s]},s:{s:b,s:b}}", "name",
        "find_tools", "title", "Find tools", "description",
        "Search the tools of every app this hub serves for what you want to do, in plain "
        "words. Returns the best matches, each with its name, description and input schema; "
        "call one with call_tool.",
        "inputSchema", "type", "object", "properties", "query", "type", "string", "description",
        "what you want to do, in plain words", "maxLength", QUERY_MAX, "limit", "type", "integer",
        "minimum", 1, "maximum", LIMIT_MAX, "description", "how many tools to return (default 5)",
        "required", "query", "annotations", "readOnlyHint", 1, "openWorldHint", 0);
    json_t *call = json_pack(
        "{s:s,s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s}},s:[s]}}", "name", "call_tool", "title",
        "Call a tool", "description",
        "Call a tool that find_tools returned, by its name, with arguments as its input schema "
        "says. The hub asks the user and records the call as for any tool.",
        "inputSchema", "type", "object", "properties", "name", "type", "string", "description",
        "the tool's name, as find_tools gave it", "arguments", "type", "object", "description",
        "the tool's arguments", "required", "name");
    json_t *apps =
        json_pack("{s:s,s:s,s:s,s:{s:s,s:{}},s:{s:b,s:b}}", "name", "list_apps", "title",
                  "List apps", "description",
                  "The apps this hub serves: each one's name, description and number of tools.",
                  "inputSchema", "type", "object", "properties", "annotations", "readOnlyHint", 1,
                  "openWorldHint", 0);
    return json_pack("[o,o,o]", find, call, apps);
}

static json_t *text_result(json_t *value_stolen, bool error)
{
    char *text = json_is_string(value_stolen)
                     ? xstrdup(json_string_value(value_stolen))
                     : json_dumps(value_stolen, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(value_stolen);
    json_t *r = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text);
    if (error)
        json_object_set_new(r, "isError", json_true());
    free(text);
    return r;
}

/* The names and descriptions of a tool's arguments, as one text. */
static char *argument_text(const json_t *schema, bool names)
{
    char buf[ARGS_TEXT_MAX] = "";
    size_t used = 0;
    const char *key;
    const json_t *p;
    json_object_foreach(json_object_get(schema, "properties"), key, p)
    {
        const char *d = json_string_value(json_object_get(p, "description"));
        int n = snprintf(buf + used, sizeof(buf) - used, "%s ", names ? key : d ? d : "");
        if (n < 0 || (size_t)n >= sizeof(buf) - used)
            break;
        used += (size_t)n;
    }
    return xstrdup(buf);
}

struct ranked {
    const struct manifest *m;
    const struct manifest_tool *t;
};

static json_t *find_tools(struct serve_session *ss, const json_t *args)
{
    const char *query = json_string_value(json_object_get(args, "query"));
    const json_t *lim = json_object_get(args, "limit");
    if (!query || !query[0] || strlen(query) > QUERY_MAX)
        return text_result(json_sprintf("find_tools needs a query of 1 to %d bytes", QUERY_MAX),
                           true);
    if (lim && (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
                json_integer_value(lim) > LIMIT_MAX))
        return text_result(json_sprintf("limit must be 1 to %d", LIMIT_MAX), true);
    size_t limit = lim ? (size_t)json_integer_value(lim) : LIMIT_DEFAULT;
    const struct manifest_set *ms = ss->sv->ms;
    struct bm25 *ix = bm25_new();
    size_t n = 0, cap = 0;
    struct ranked *docs = NULL;
    for (size_t i = 0; i < ms->n; i++) {
        const struct manifest *m = ms->v[i];
        if ((ss->app[0] && strcmp(m->name, ss->app) != 0) || !serve_session_app_ok(ss, m->name))
            continue;
        for (size_t j = 0; j < m->n_tools; j++) {
            const struct manifest_tool *t = &m->tools[j];
            char *arg_names = argument_text(t->input_schema_json, true);
            char *arg_descs = argument_text(t->input_schema_json, false);
            struct bm25_field f[] = {
                {t->name, 3},          {json_string_value(json_object_get(t->object, "title")), 2},
                {arg_names, 1.5},      {m->name, 1.5},
                {t->description, 1},   {arg_descs, 1},
                {m->description, 0.5},
            };
            bm25_add(ix, f, ARRAY_LEN(f));
            free(arg_names);
            free(arg_descs);
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                docs = xrealloc(docs, cap * sizeof(*docs));
            }
            docs[n++] = (struct ranked){m, t};
        }
    }
    size_t best[LIMIT_MAX];
    double score[LIMIT_MAX];
    size_t k = bm25_search(ix, query, best, score, limit);
    bm25_free(ix);
    json_t *out = json_array();
    for (size_t i = 0; i < k; i++) {
        json_t *o = serve_tool_object(docs[best[i]].m, docs[best[i]].t, !ss->app[0]);
        json_t *hit =
            json_pack("{s:O,s:O,s:O}", "name", json_object_get(o, "name"), "title",
                      json_object_get(o, "title") ? json_object_get(o, "title") : json_string(""),
                      "inputSchema", json_object_get(o, "inputSchema"));
        const json_t *desc = json_object_get(o, "description");
        if (desc)
            json_object_set(hit, "description", (json_t *)desc);
        const json_t *ann = json_object_get(o, "annotations");
        if (ann)
            json_object_set(hit, "annotations", (json_t *)ann);
        json_array_append_new(out, hit);
        json_decref(o);
    }
    free(docs);
    json_t *r = json_pack("{s:s,s:o}", "query", query, "tools", out);
    if (k == 0)
        json_object_set_new(r, "hint",
                            json_string("no tool matches these words: try others, or list_apps"));
    return text_result(r, false);
}

static json_t *list_apps(struct serve_session *ss)
{
    json_t *apps = json_array();
    const struct manifest_set *ms = ss->sv->ms;
    for (size_t i = 0; i < ms->n; i++) {
        const struct manifest *m = ms->v[i];
        if ((ss->app[0] && strcmp(m->name, ss->app) != 0) || !serve_session_app_ok(ss, m->name))
            continue;
        json_array_append_new(apps, json_pack("{s:s,s:s,s:i}", "name", m->name, "description",
                                              m->description ? m->description : "", "tools",
                                              (int)m->n_tools));
    }
    return text_result(json_pack("{s:o}", "apps", apps), false);
}

bool serve_toolsearch_call(struct serve_session *ss, const json_t *id, const json_t *params,
                           json_t **inner)
{
    *inner = NULL;
    const char *name = json_string_value(json_object_get(params, "name"));
    const json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "arguments must be an object");
        return true;
    }
    if (strcmp(name, "find_tools") == 0) {
        serve_session_send(ss, jrpc_result((json_t *)id, find_tools(ss, args)), id);
        return true;
    }
    if (strcmp(name, "list_apps") == 0) {
        serve_session_send(ss, jrpc_result((json_t *)id, list_apps(ss)), id);
        return true;
    }
    if (strcmp(name, "call_tool") != 0)
        return false; /* a tool named directly: the ordinary path */
    const json_t *tool = json_object_get(args, "name");
    const json_t *targs = json_object_get(args, "arguments");
    if (!json_is_string(tool) || (targs && !json_is_object(targs)) ||
        strcmp(json_string_value(tool), "call_tool") == 0) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS,
                            "call_tool needs {\"name\": a tool find_tools gave, \"arguments\": "
                            "an object}");
        return true;
    }
    /* The call as if made directly: its name and arguments, the rest of params (its
     * _meta, a retry's requestState) kept. */
    json_t *p = json_deep_copy(params);
    json_object_set(p, "name", (json_t *)tool);
    if (targs)
        json_object_set(p, "arguments", (json_t *)targs);
    else
        json_object_del(p, "arguments");
    *inner = p;
    return false;
}
