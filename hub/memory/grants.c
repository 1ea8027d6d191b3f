/* Grant names, validation and the stored form (see grants.h for the semantics). */
#include "grants.h"

#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *const categories[] = {"exec", "data", "collab"};
static const char *const scopes[] = {"once", "session", "always", "deny"};

const char *grant_category_name(enum grant_category c)
{
    return (size_t)c < ARRAY_LEN(categories) ? categories[c] : "?";
}

bool grant_category_parse(const char *s, enum grant_category *out)
{
    for (size_t i = 0; s && i < ARRAY_LEN(categories); i++)
        if (strcmp(s, categories[i]) == 0) {
            *out = (enum grant_category)i;
            return true;
        }
    return false;
}

const char *grant_scope_name(enum grant_scope s)
{
    return (size_t)s < ARRAY_LEN(scopes) ? scopes[s] : "?";
}

bool grant_scope_parse(const char *s, enum grant_scope *out)
{
    for (size_t i = 0; s && i < ARRAY_LEN(scopes); i++)
        if (strcmp(s, scopes[i]) == 0) {
            *out = (enum grant_scope)i;
            return true;
        }
    return false;
}

bool grant_scope_persistent(enum grant_scope s)
{
    return s == GRANT_ALWAYS || s == GRANT_DENY;
}

static bool name_valid(const char *s, bool wildcard, bool dots)
{
    if (!s)
        return false;
    if (wildcard && strcmp(s, "*") == 0)
        return true;
    size_t n = strlen(s);
    if (n == 0 || n > GRANT_NAME_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || (dots && c == '.')))
            return false;
    }
    return true;
}

bool grant_app_valid(const char *s, bool wildcard)
{
    return name_valid(s, wildcard, false);
}

bool grant_tool_valid(const char *s, bool wildcard)
{
    return name_valid(s, wildcard, true);
}

bool grant_init(struct grant *g, enum grant_category category, const char *app, const char *tool,
                const char *peer, enum grant_scope scope, char *err, size_t errlen)
{
    memset(g, 0, sizeof(*g));
    if ((size_t)category >= ARRAY_LEN(categories) || (size_t)scope >= ARRAY_LEN(scopes)) {
        snprintf(err, errlen, "unknown grant category or scope");
        return false;
    }
    if (!tool)
        tool = "*";
    if (!peer || category == GRANT_EXEC)
        peer = "*";
    if (!grant_app_valid(app, false)) {
        snprintf(err, errlen, "app name \"%.64s\" is not valid (1 to %d of A-Z a-z 0-9 _ -)",
                 app ? app : "", GRANT_NAME_MAX);
        return false;
    }
    if (!grant_tool_valid(tool, true)) {
        snprintf(err, errlen,
                 "tool name \"%.64s\" is not valid (1 to %d of A-Z a-z 0-9 _ - ., or *)", tool,
                 GRANT_NAME_MAX);
        return false;
    }
    if (!grant_app_valid(peer, true)) {
        snprintf(err, errlen, "peer app name \"%.64s\" is not valid", peer);
        return false;
    }
    g->category = category;
    g->scope = scope;
    str_copy(g->app, app, sizeof(g->app));
    str_copy(g->tool, tool, sizeof(g->tool));
    str_copy(g->peer, peer, sizeof(g->peer));
    g->created_ms = (int64_t)(now_real_ns() / 1000000u);
    return true;
}

void grant_key(const struct grant *g, char *buf, size_t size)
{
    snprintf(buf, size, "%s|%s|%s|%s", grant_category_name(g->category), g->app, g->tool, g->peer);
}

char *grant_value(const struct grant *g)
{
    json_t *v = json_pack("{s:s,s:I}", "scope", grant_scope_name(g->scope), "created",
                          (json_int_t)g->created_ms);
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    return s ? s : xstrdup("{}");
}

bool grant_parse(const char *key, const char *value, struct grant *out)
{
    char buf[4 * (GRANT_NAME_MAX + 1) + 8];
    if (!key || !str_copy(buf, key, sizeof(buf)))
        return false;
    char *parts[4];
    char *p = buf;
    for (int i = 0; i < 4; i++) {
        parts[i] = p;
        char *bar = strchr(p, '|');
        if ((i < 3) != (bar != NULL))
            return false;
        if (bar) {
            *bar = '\0';
            p = bar + 1;
        }
    }
    enum grant_category c;
    enum grant_scope s;
    json_t *v = value ? json_loads(value, JSON_REJECT_DUPLICATES, NULL) : NULL;
    json_t *created = json_object_get(v, "created");
    char why[160];
    bool ok = grant_category_parse(parts[0], &c) &&
              grant_scope_parse(json_string_value(json_object_get(v, "scope")), &s) &&
              grant_init(out, c, parts[1], parts[2], parts[3], s, why, sizeof(why)) &&
              strcmp(out->peer, parts[3]) == 0; /* an exec key with a peer is not ours */
    if (ok && json_is_integer(created))
        out->created_ms = json_integer_value(created);
    json_decref(v);
    return ok;
}
