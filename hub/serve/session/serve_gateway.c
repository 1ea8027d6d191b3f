/* The gateway shape's resources, prompts and completion: every installed app's, under
 * names of the hub's making, since two apps' own names may be the same.
 *
 *   a prompt                 APP__NAME (as a tool: serve_impl.h's GATEWAY_SEP)
 *   a resource               isolategpt:APP:URI (the app's own URI after the second colon)
 *   a resource template      isolategpt:APP:TEMPLATE (its expansion is a resource's name)
 *
 * A list (resources, templates, prompts) asks every app through the hub's read-only
 * request path, follows each app's pages (at most GW_PAGES_MAX), and answers one page
 * with all of them; an app that offers none of it adds nothing, and an app that fails
 * is left out (the hub has audited why). A read, a prompts/get or a completion goes to
 * the one app its name says, with the app's own name, and the answer comes back in the
 * gateway's names (the URIs of what a read or a prompt returns). */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_URI_SCHEME "isolategpt:"
#define GW_PAGES_MAX 20

/* ---- names ---- */

static json_t *gw_uri(const char *app, const char *uri)
{
    return json_sprintf(GW_URI_SCHEME "%s:%s", app, uri);
}

/* "isolategpt:APP:URI" -> app (an installed app's name) and the app's own URI. */
static const struct manifest *parse_gw_uri(struct serve *sv, const char *uri, const char **own)
{
    size_t sl = strlen(GW_URI_SCHEME);
    if (!uri || strncmp(uri, GW_URI_SCHEME, sl) != 0)
        return NULL;
    const char *app = uri + sl, *colon = strchr(app, ':');
    if (!colon || colon == app || (size_t)(colon - app) > MANIFEST_NAME_MAX || !colon[1])
        return NULL;
    char name[MANIFEST_NAME_MAX + 1];
    memcpy(name, app, (size_t)(colon - app));
    name[colon - app] = '\0';
    *own = colon + 1;
    return manifest_find(sv->ms, name);
}

/* "APP__NAME" -> the app and its own prompt name (the first "__" splits: app names hold
 * none, manifest.h). */
static const struct manifest *parse_gw_name(struct serve *sv, const char *name, const char **own)
{
    const char *p = name ? strstr(name, GATEWAY_SEP) : NULL;
    size_t alen = p ? (size_t)(p - name) : 0;
    if (alen == 0 || alen > MANIFEST_NAME_MAX || !p[strlen(GATEWAY_SEP)])
        return NULL;
    char app[MANIFEST_NAME_MAX + 1];
    memcpy(app, name, alen);
    app[alen] = '\0';
    const struct manifest *m = manifest_find(sv->ms, app);
    if (m)
        *own = p + strlen(GATEWAY_SEP);
    return m;
}

static void set_prefixed_uri(json_t *obj, const char *key, const char *app)
{
    const char *uri = json_string_value(json_object_get(obj, key));
    if (uri)
        json_object_set_new(obj, key, gw_uri(app, uri));
}

/* The URIs of what the app returned (a read's contents, a prompt's embedded resources
 * and resource links), in the gateway's names. */
static void rewrite_read(json_t *result, const char *app)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(result, "contents"), i, c)
    {
        set_prefixed_uri(c, "uri", app);
    }
}

/* An embedded resource's or a resource link's URI in the gateway's names. */
static void rewrite_content(json_t *content, const char *app)
{
    const char *type = json_string_value(json_object_get(content, "type"));
    if (type && strcmp(type, "resource") == 0)
        set_prefixed_uri(json_object_get(content, "resource"), "uri", app);
    else if (type && strcmp(type, "resource_link") == 0)
        set_prefixed_uri(content, "uri", app);
}

static void rewrite_prompt(json_t *result, const char *app)
{
    size_t i;
    json_t *msg;
    json_array_foreach(json_object_get(result, "messages"), i, msg)
    {
        rewrite_content(json_object_get(msg, "content"), app);
    }
}

static void strip_meta(json_t *obj)
{
    json_t *meta = json_object_get(obj, "_meta");
    const char *key;
    void *tmp;
    json_t *v;
    json_object_foreach_safe(meta, tmp, key, v)
    {
        if (strncmp(key, "isolategpt/", 11) == 0)
            json_object_del(meta, key);
    }
}

void serve_strip_hub_meta(json_t *result)
{
    strip_meta(result);
    static const char *const lists[] = {"content", "contents", "messages"};
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(result, lists[l]), i, c)
        {
            strip_meta(c);
            strip_meta(json_object_get(c, "content"));
            strip_meta(json_object_get(c, "resource"));
        }
    }
}

json_t *serve_result_for_client(const struct serve_session *ss, const char *app,
                                const json_t *result)
{
    json_t *r = json_deep_copy(result);
    serve_strip_hub_meta(r);
    if (!ss->app[0]) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(r, "content"), i, c)
        {
            rewrite_content(c, app);
        }
    }
    return r;
}

/* ---- lists: every app's, in one answer ---- */

struct gw_list {
    struct serve_call *root;  /* the client's request: its id, its session (NULL once gone) */
    const char *method, *key; /* "resources/list", "resources" */
    json_t *items;
    unsigned pending;
};

struct gw_page {
    struct gw_list *g;
    char app[MANIFEST_NAME_MAX + 1];
    unsigned page;
};

static void rewrite_item(json_t *item, const struct gw_list *g, const char *app)
{
    if (strcmp(g->key, "prompts") == 0) {
        const char *name = json_string_value(json_object_get(item, "name"));
        if (name)
            json_object_set_new(item, "name", json_sprintf("%s" GATEWAY_SEP "%s", app, name));
    } else {
        set_prefixed_uri(item, strcmp(g->key, "resourceTemplates") == 0 ? "uriTemplate" : "uri",
                         app);
    }
    json_t *meta = json_object_get(item, "_meta");
    if (!json_is_object(meta))
        json_object_set_new(item, "_meta", meta = json_object());
    json_object_set_new(meta, "isolategpt/app", json_string(app));
}

static void ask_page(struct gw_list *g, const char *app, unsigned page, const char *cursor);

static void list_finish(struct gw_list *g)
{
    struct serve_call *root = g->root;
    if (root->ss) {
        struct serve_session *ss = root->ss;
        serve_call_detach(root);
        serve_session_send(ss, jrpc_result(root->req_id, json_pack("{s:O}", g->key, g->items)),
                           root->req_id);
    }
    json_decref(g->items);
    serve_call_unref(root);
    free(g);
}

static void on_page(void *ud, const struct call_result *r)
{
    struct gw_page *p = ud;
    struct gw_list *g = p->g;
    if (r->result) {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(r->result, g->key), i, item)
        {
            json_t *copy = json_deep_copy(item);
            rewrite_item(copy, g, p->app);
            json_array_append_new(g->items, copy);
        }
        const char *next = json_string_value(json_object_get(r->result, "nextCursor"));
        if (next && p->page + 1 < GW_PAGES_MAX && g->root->ss)
            ask_page(g, p->app, p->page + 1, next);
        else if (next)
            log_warnx("gateway %s: %s has more than %d pages; the rest is left out", g->method,
                      p->app, GW_PAGES_MAX);
    } else if (r->code != HUB_ERR_UNSUPPORTED) {
        log_debug("gateway %s: %s left out: %s", g->method, p->app,
                  r->message ? r->message : "failed");
    }
    free(p);
    if (--g->pending == 0)
        list_finish(g);
}

static void ask_page(struct gw_list *g, const char *app, unsigned page, const char *cursor)
{
    struct gw_page *p = xcalloc(1, sizeof(*p));
    p->g = g;
    p->page = page;
    str_copy(p->app, app, sizeof(p->app));
    g->pending++;
    struct call_opts o = {.user = g->root->user, .origin = g->root, .session = g->root->ss};
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
    hub_request(g->root->sv->hub, &o, app, g->method, params, on_page, p);
    json_decref(params);
}

static void list_all(struct serve_session *ss, const json_t *id, const char *method,
                     const char *key)
{
    struct serve_call *root = serve_call_start(ss, id, "*", method);
    if (!root)
        return;
    struct gw_list *g = xcalloc(1, sizeof(*g));
    g->root = root;
    g->method = method;
    g->key = key;
    g->items = json_array();
    /* Held while the requests go out: an answer that comes at once must not finish the
     * list before the last app was asked. */
    g->pending = 1;
    struct manifest_set *ms = ss->sv->ms;
    for (size_t i = 0; i < ms->n; i++)
        if (serve_session_app_ok(ss, ms->v[i]->name))
            ask_page(g, ms->v[i]->name, 0, NULL);
    if (--g->pending == 0)
        list_finish(g);
}

/* ---- one app's: by the name the client has ---- */

/* The request to the one app that params[holder][key] names (holder NULL: params
 * itself), with the app's own name there. */
static void to_app(struct serve_session *ss, const json_t *id, const char *method,
                   const json_t *params, const char *holder, const char *key, bool by_uri,
                   serve_rewrite_fn rewrite)
{
    const json_t *where = holder ? json_object_get(params, holder) : params;
    const char *given = json_string_value(json_object_get(where, key)), *own = NULL;
    const struct manifest *m =
        by_uri ? parse_gw_uri(ss->sv, given, &own) : parse_gw_name(ss->sv, given, &own);
    if (!m) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS,
                            "%s: %s%s%s \"%.200s\" names no installed app (the gateway's names "
                            "are %s)",
                            method, holder ? holder : "", holder ? "." : "", key,
                            given ? given : "",
                            by_uri ? GW_URI_SCHEME "APP:URI" : "APP" GATEWAY_SEP "NAME");
        return;
    }
    json_t *p = json_deep_copy(params);
    json_object_set_new(holder ? json_object_get(p, holder) : p, key, json_string(own));
    serve_forward_app(ss, id, m->name, method, p, rewrite);
    json_decref(p);
}

static void complete(struct serve_session *ss, const json_t *id, const json_t *params)
{
    const char *type = json_string_value(json_object_get(json_object_get(params, "ref"), "type"));
    bool by_uri = type && strcmp(type, "ref/resource") == 0;
    if (!type || (!by_uri && strcmp(type, "ref/prompt") != 0)) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS,
                            "completion/complete: ref.type must be ref/prompt or ref/resource");
        return;
    }
    to_app(ss, id, "completion/complete", params, "ref", by_uri ? "uri" : "name", by_uri, NULL);
}

void serve_gateway_forward(struct serve_session *ss, const json_t *id, const char *method,
                           const json_t *params)
{
    if (!json_is_object(params) && strstr(method, "/list") == NULL) {
        serve_session_error(ss, id, JRPC_INVALID_PARAMS, "%s: params must be an object", method);
        return;
    }
    if (strcmp(method, "resources/list") == 0)
        list_all(ss, id, method, "resources");
    else if (strcmp(method, "resources/templates/list") == 0)
        list_all(ss, id, method, "resourceTemplates");
    else if (strcmp(method, "prompts/list") == 0)
        list_all(ss, id, method, "prompts");
    else if (strcmp(method, "resources/read") == 0)
        to_app(ss, id, method, params, NULL, "uri", true, rewrite_read);
    else if (strcmp(method, "prompts/get") == 0)
        to_app(ss, id, method, params, NULL, "name", false, rewrite_prompt);
    else if (strcmp(method, "completion/complete") == 0)
        complete(ss, id, params);
    else
        serve_session_error(ss, id, JRPC_METHOD_NOT_FOUND, "method \"%.100s\" is not offered",
                            method);
}
