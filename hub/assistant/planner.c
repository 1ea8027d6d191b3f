/* The planner's request and the validation of its plan (see planner.h). Everything
 * here treats the LLM's answer as hostile: bounded, checked, refused with a reason. */
#include "planner.h"
#include "runtime/runtime.h"
#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_MAX_TEXT (256 * 1024) /* a JSON plan longer than this is not a plan */

static const char planner_system[] =
    "You are the planner of a personal assistant. Apps are offered to you as tools. You do "
    "not run anything and you will not see any result: you write a plan, the hub runs each "
    "step in its app after asking the user, and another context composes the answer.\n"
    "Plan with tool calls: one call per step, in the order they must run. A later step may "
    "use an earlier step's result as a whole argument value: write {\"$ref\": \"s1\"} for "
    "the result of step 1 (s2 for step 2, ...) or {\"$ref\": \"s1.field\"} for one field of "
    "it.\n"
    "Alternatively answer with only a JSON object {\"steps\": [{\"id\": \"s1\", \"tool\": "
    "\"app.tool\", \"arguments\": {...}}, ...]}.\n"
    "Use only the tools offered, with arguments that fit their schemas, and only the steps "
    "the user's request needs. If no app is needed, answer the user in plain text.";

struct llm_request *planner_request(const struct tool_map *map, const char *const *history,
                                    size_t n_history, const char *request, const char *note,
                                    char *err, size_t errlen)
{
    struct llm_request *rq = llm_request_new("planner");
    llm_request_system(rq, planner_system);
    if (n_history > 0) {
        /* Only the user's own words: the assistant's earlier answers were composed
         * from app output, which must never reach the planner. */
        size_t len = 0;
        for (size_t i = 0; i < n_history; i++)
            len += strlen(history[i]) + 4;
        char *text = xmalloc(len + 64);
        size_t off = (size_t)sprintf(text, "The user's earlier requests, oldest first:\n");
        for (size_t i = 0; i < n_history; i++)
            off += (size_t)sprintf(text + off, "- %s\n", history[i]);
        llm_request_user(rq, text);
        llm_request_assistant_text(rq, "Noted.");
        free(text);
    }
    if (note) {
        char *text = xasprintf("%s\n\nThe user's request: %s", note, request);
        llm_request_user(rq, text);
        free(text);
    } else {
        llm_request_user(rq, request);
    }
    if (tool_map_offer(map, rq, err, errlen) < 0) {
        llm_request_free(rq);
        return NULL;
    }
    return rq;
}

/* --- plans ------------------------------------------------------------------- */

void plan_free(struct plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        json_decref(p->steps[i].args);
    free(p->steps);
    free(p->answer);
    memset(p, 0, sizeof(*p));
}

json_t *plan_json(const struct plan *p)
{
    json_t *steps = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const struct plan_step *s = &p->steps[i];
        json_array_append_new(steps, json_pack("{s:s,s:s++,s:O}", "id", s->id, "tool", s->m->name,
                                               ".", s->t->name, "arguments", s->args));
    }
    json_t *j = json_pack("{s:o}", "steps", steps);
    if (p->answer)
        json_object_set_new(j, "answer", json_string(p->answer));
    return j;
}

static bool id_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

static bool id_valid(const char *s, size_t n)
{
    if (n == 0 || n > PLAN_STEP_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char(s[i]))
            return false;
    return true;
}

bool plan_ref(const json_t *v, const char **id, size_t *id_len, const char **path)
{
    if (!json_is_object(v) || json_object_size(v) != 1)
        return false;
    const char *s = json_string_value(json_object_get(v, "$ref"));
    if (!s)
        return false;
    const char *dot = strchr(s, '.');
    *id = s;
    *id_len = dot ? (size_t)(dot - s) : strlen(s);
    *path = dot ? dot + 1 : NULL;
    return true;
}

/* Any object holding "$ref" other than a whole value of a top-level argument. */
static bool nested_ref(const json_t *v, int depth)
{
    if (depth > SCHEMA_MAX_DEPTH)
        return true; /* deeper than any schema may check: refuse */
    if (json_is_object(v)) {
        if (json_object_get(v, "$ref"))
            return depth != 1; /* depth 1: a whole top-level argument value */
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            if (nested_ref(x, depth + 1))
                return true;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (nested_ref(x, depth + 1))
                return true;
        }
    }
    return false;
}

/* The tool a step id names: an earlier step of this plan, or a known one. */
static const struct manifest_tool *source_tool(const struct plan *p, size_t upto,
                                               const struct plan_known *known, size_t n_known,
                                               const char *id, size_t id_len)
{
    for (size_t i = 0; i < upto; i++)
        if (strlen(p->steps[i].id) == id_len && memcmp(p->steps[i].id, id, id_len) == 0)
            return p->steps[i].t;
    for (size_t i = 0; i < n_known; i++)
        if (strlen(known[i].id) == id_len && memcmp(known[i].id, id, id_len) == 0)
            return known[i].t;
    return NULL;
}

static bool path_valid(const char *path)
{
    if (!path)
        return true;
    size_t segs = 0, len = 0;
    for (const char *p = path;; p++) {
        if (*p == '.' || *p == '\0') {
            if (len == 0)
                return false;
            segs++;
            len = 0;
            if (*p == '\0')
                break;
        } else if (id_char(*p)) {
            len++;
        } else {
            return false;
        }
    }
    return segs <= PLAN_REF_MAX_DEPTH;
}

/* The first field of a reference's path must be one the source tool declares, when
 * its outputSchema declares any. */
static bool field_declared(const struct manifest_tool *src, const char *path)
{
    if (!path || !src->output_schema_json)
        return true;
    const json_t *props = json_object_get(src->output_schema_json, "properties");
    if (!json_is_object(props) || json_object_size(props) == 0)
        return true;
    size_t n = strcspn(path, ".");
    char field[PLAN_STEP_ID_MAX * 4 + 1];
    if (n >= sizeof(field))
        return false;
    memcpy(field, path, n);
    field[n] = '\0';
    return json_object_get(props, field) != NULL;
}

/* Checks a step's arguments: references (well-formed, earlier, declared fields) and
 * the rest against the inputSchema with the referenced arguments' "required"
 * relaxed (their values are checked when known). */
static int check_args(const struct plan *p, size_t idx, const struct plan_known *known,
                      size_t n_known, char *err, size_t errlen)
{
    const struct plan_step *s = &p->steps[idx];
    if (nested_ref(s->args, 0))
        return err_fail(err, errlen,
                    "a reference ({\"$ref\": ...}) may only be a whole argument value, not "
                    "inside one");
    json_t *fixed = json_deep_copy(s->args);
    json_t *schema = json_deep_copy(s->t->input_schema_json);
    const json_t *props = json_object_get(schema, "properties");
    bool closed = json_is_false(json_object_get(schema, "additionalProperties"));
    json_t *required = json_object_get(schema, "required");
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(s->args, key, v)
    {
        const char *id, *path;
        size_t id_len;
        if (!json_is_object(v) || !json_object_get(v, "$ref"))
            continue;
        if (!plan_ref(v, &id, &id_len, &path)) {
            rc = err_fail(err, errlen, "argument %s: a reference is {\"$ref\": \"STEP[.field]\"} alone",
                      key);
            break;
        }
        if (!id_valid(id, id_len) || !path_valid(path)) {
            rc =
                err_fail(err, errlen, "argument %s: \"%.80s\" is not a step id with an optional .field",
                     key, json_string_value(json_object_get(v, "$ref")));
            break;
        }
        const struct manifest_tool *src = source_tool(p, idx, known, n_known, id, id_len);
        if (!src) {
            rc = err_fail(err, errlen, "argument %s: references %.*s, which is not an earlier step",
                      key, (int)id_len, id);
            break;
        }
        if (!field_declared(src, path)) {
            rc = err_fail(err, errlen,
                      "argument %s: %.*s's result has no field \"%.*s\" (its outputSchema)", key,
                      (int)id_len, id, (int)strcspn(path, "."), path);
            break;
        }
        if (closed && !json_object_get(props, key)) {
            rc = err_fail(err, errlen, "argument %s is not one the tool takes", key);
            break;
        }
        json_object_del(fixed, key);
        if (json_is_array(required)) {
            for (size_t i = json_array_size(required); i-- > 0;)
                if (json_is_string(json_array_get(required, i)) &&
                    strcmp(json_string_value(json_array_get(required, i)), key) == 0)
                    json_array_remove(required, i);
        }
    }
    if (rc == 0) {
        char why[400];
        struct schema *sc = schema_compile(schema, why, sizeof(why));
        if (!sc)
            rc = err_fail(err, errlen, "the tool's schema: %s", why); /* cannot happen: loaded */
        else if (!schema_validate(sc, fixed, why, sizeof(why)))
            rc = err_fail(err, errlen, "arguments: %s", why);
        schema_free(sc);
    }
    json_decref(fixed);
    json_decref(schema);
    return rc;
}

static int add_step(struct plan *p, const struct tool_map *map, const char *id, const char *tool,
                    json_t *args, char *err, size_t errlen)
{
    struct plan_step *s = &p->steps[p->n];
    const struct tool_entry *e = tool_map_find(map, tool);
    if (!e) {
        char app[MANIFEST_NAME_MAX + 1], name[MANIFEST_NAME_MAX + 1], why[200];
        if (manifest_split_name(tool, app, sizeof(app), name, sizeof(name), why, sizeof(why)))
            e = tool_map_by_tool(map, app, name);
    }
    if (!e) {
        json_decref(args);
        return err_fail(err, errlen, "\"%.80s\" is not an installed tool", tool);
    }
    if (!json_is_object(args)) {
        json_decref(args);
        return err_fail(err, errlen, "arguments must be an object");
    }
    str_copy(s->id, id, sizeof(s->id));
    s->m = e->m;
    s->t = e->t;
    s->args = args;
    p->n++;
    return 0;
}

/* Strips a Markdown code fence that models like to put around JSON. */
static char *unfence(const char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    if (strncmp(text, "```", 3) != 0)
        return xstrdup(text);
    const char *body = strchr(text, '\n');
    if (!body)
        return xstrdup(text);
    body++;
    const char *end = strstr(body, "```");
    return end ? xstrndup(body, (size_t)(end - body)) : xstrdup(body);
}

static int steps_from_json(const json_t *root, const struct tool_map *map, size_t id_offset,
                           size_t max_steps, struct plan *p, char *err, size_t errlen)
{
    const json_t *steps = json_object_get(root, "steps");
    if (!json_is_array(steps))
        return err_fail(err, errlen, "the plan is JSON but not {\"steps\": [...]}");
    size_t n = json_array_size(steps);
    if (n > max_steps)
        return err_fail(err, errlen, "the plan has %zu steps; at most %zu are allowed", n, max_steps);
    const json_t *answer = json_object_get(root, "answer");
    if (answer && !json_is_string(answer))
        return err_fail(err, errlen, "\"answer\" must be a string");
    if (answer && n == 0)
        p->answer = xstrdup(json_string_value(answer));
    p->steps = xcalloc(n + 1, sizeof(*p->steps));
    for (size_t i = 0; i < n; i++) {
        const json_t *st = json_array_get(steps, i);
        if (!json_is_object(st))
            return err_fail(err, errlen, "step %zu is not an object", i + 1);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)st, k, v)
        {
            static const char *const ok[] = {
                "id", "tool", "app", "arguments", "description", "reason", "why", "comment", NULL};
            bool known = false;
            for (size_t j = 0; ok[j]; j++)
                known = known || strcmp(k, ok[j]) == 0;
            if (!known)
                return err_fail(err, errlen,
                            "step %zu: unknown key \"%.40s\" (a step has id, tool and arguments)",
                            i + 1, k);
        }
        char id[PLAN_STEP_ID_MAX + 1];
        const json_t *jid = json_object_get(st, "id");
        if (jid) {
            if (!json_is_string(jid) || !id_valid(json_string_value(jid), json_string_length(jid)))
                return err_fail(err, errlen, "step %zu: id must be 1 to %d of A-Z a-z 0-9 _ -", i + 1,
                            PLAN_STEP_ID_MAX);
            str_copy(id, json_string_value(jid), sizeof(id));
        } else {
            snprintf(id, sizeof(id), "s%zu", id_offset + i + 1);
        }
        const char *tool = json_string_value(json_object_get(st, "tool"));
        const char *app = json_string_value(json_object_get(st, "app"));
        if (!tool || json_string_length(json_object_get(st, "tool")) > 2 * MANIFEST_NAME_MAX + 2)
            return err_fail(err, errlen, "step %zu: \"tool\" must name an installed tool", i + 1);
        char full[2 * MANIFEST_NAME_MAX + 3];
        if (app && !strchr(tool, '.') && strlen(app) <= MANIFEST_NAME_MAX)
            snprintf(full, sizeof(full), "%s.%s", app, tool);
        else
            str_copy(full, tool, sizeof(full));
        json_t *args = json_object_get(st, "arguments");
        args = args ? json_deep_copy(args) : json_object();
        char why[400];
        if (add_step(p, map, id, full, args, why, sizeof(why)) < 0)
            return err_fail(err, errlen, "step %zu: %s", i + 1, why);
    }
    return 0;
}

static int steps_from_calls(const struct llm_response *rs, const struct tool_map *map,
                            size_t id_offset, size_t max_steps, struct plan *p, char *err,
                            size_t errlen)
{
    if (rs->n_tool_calls > max_steps)
        return err_fail(err, errlen, "the plan has %zu steps; at most %zu are allowed",
                    rs->n_tool_calls, max_steps);
    p->steps = xcalloc(rs->n_tool_calls + 1, sizeof(*p->steps));
    for (size_t i = 0; i < rs->n_tool_calls; i++) {
        char id[PLAN_STEP_ID_MAX + 1], why[400];
        snprintf(id, sizeof(id), "s%zu", id_offset + i + 1);
        if (add_step(p, map, id, rs->tool_calls[i].name, llm_tool_call_args(&rs->tool_calls[i]),
                     why, sizeof(why)) < 0)
            return err_fail(err, errlen, "step %zu: %s", i + 1, why);
    }
    /* A model may reference the call's own id ("call_abc") instead of s1: rewrite. */
    for (size_t i = 0; i < p->n; i++) {
        const char *key;
        json_t *v;
        json_object_foreach(p->steps[i].args, key, v)
        {
            const char *rid, *path;
            size_t rlen;
            if (!plan_ref(v, &rid, &rlen, &path))
                continue;
            for (size_t j = 0; j < rs->n_tool_calls; j++) {
                const char *cid = rs->tool_calls[j].id;
                if (strlen(cid) == rlen && memcmp(cid, rid, rlen) == 0) {
                    char *ref =
                        xasprintf("s%zu%s%s", id_offset + j + 1, path ? "." : "", path ? path : "");
                    json_object_set_new(v, "$ref", json_string(ref));
                    free(ref);
                    break;
                }
            }
        }
    }
    return 0;
}

int plan_from_response(const struct llm_response *rs, const struct tool_map *map,
                       const struct plan_known *known, size_t n_known, size_t id_offset,
                       size_t max_steps, struct plan *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (max_steps > PLAN_MAX_STEPS)
        max_steps = PLAN_MAX_STEPS;
    int rc;
    if (rs->n_tool_calls > 0) {
        rc = steps_from_calls(rs, map, id_offset, max_steps, out, err, errlen);
    } else {
        const char *content = rs->content ? rs->content : "";
        if (strlen(content) > PLAN_MAX_TEXT) {
            rc = err_fail(err, errlen, "the planner's answer is longer than %d bytes", PLAN_MAX_TEXT);
            goto out;
        }
        char *text = unfence(content);
        json_t *root = text[0] == '{' ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
        if (root && json_is_object(root)) {
            rc = steps_from_json(root, map, id_offset, max_steps, out, err, errlen);
        } else if (text[0] == '{') {
            rc = err_fail(err, errlen, "the plan is not valid JSON");
        } else if (text[0] == '\0') {
            rc = err_fail(err, errlen, "the planner answered nothing");
        } else {
            out->answer = xstrdup(content); /* no app needed: a direct answer */
            rc = 0;
        }
        json_decref(root);
        free(text);
    }
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        struct plan_step *s = &out->steps[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->steps[j].id, s->id) == 0)
                rc = err_fail(err, errlen, "step %zu: id %s is used twice", i + 1, s->id);
        for (size_t j = 0; rc == 0 && j < n_known; j++)
            if (strcmp(known[j].id, s->id) == 0)
                rc = err_fail(err, errlen, "step %zu: id %s is taken by a step that already ran", i + 1,
                          s->id);
        char why[600];
        if (rc == 0 && check_args(out, i, known, n_known, why, sizeof(why)) < 0)
            rc = err_fail(err, errlen, "step %zu (%s.%s): %s", i + 1, s->m->name, s->t->name, why);
    }
out:
    if (rc < 0)
        plan_free(out);
    return rc;
}

/* --- references at run time ---------------------------------------------------- */

json_t *plan_result_value(const json_t *call_result)
{
    json_t *sc = json_object_get(call_result, "structuredContent");
    if (sc)
        return json_incref(sc);
    const json_t *content = json_object_get(call_result, "content");
    size_t len = 0, i;
    json_t *item;
    json_array_foreach(content, i, item)
    {
        const char *t = json_string_value(json_object_get(item, "text"));
        len += t ? strlen(t) + 1 : 0;
    }
    char *text = xcalloc(len + 1, 1);
    json_array_foreach(content, i, item)
    {
        const char *t = json_string_value(json_object_get(item, "text"));
        if (t) {
            if (text[0])
                strcat(text, "\n");
            strcat(text, t);
        }
    }
    json_t *v = json_string(text);
    free(text);
    return v ? v : json_string("");
}

static const json_t *walk(const json_t *v, const char *path)
{
    char seg[PLAN_STEP_ID_MAX * 4 + 1];
    while (v && path && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof(seg))
            return NULL;
        memcpy(seg, path, n);
        seg[n] = '\0';
        path += n + (path[n] == '.');
        if (json_is_array(v)) {
            uint64_t idx;
            v = parse_u64(seg, 0, SIZE_MAX, &idx) ? json_array_get(v, (size_t)idx) : NULL;
        } else {
            v = json_object_get(v, seg);
        }
    }
    return v;
}

json_t *plan_resolve(const struct plan_step *s, plan_lookup_fn lookup, void *ud, char *err,
                     size_t errlen)
{
    json_t *args = json_deep_copy(s->args);
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(args, tmp, key, v)
    {
        const char *id, *path;
        size_t id_len;
        if (!plan_ref(v, &id, &id_len, &path))
            continue;
        char idbuf[PLAN_STEP_ID_MAX + 1];
        snprintf(idbuf, sizeof(idbuf), "%.*s", (int)id_len, id);
        const json_t *res = lookup(ud, idbuf);
        if (!res) {
            err_fail(err, errlen, "argument %s: step %s has no result", key, idbuf);
            json_decref(args);
            return NULL;
        }
        json_t *whole = plan_result_value(res);
        const json_t *val = walk(whole, path);
        if (!val) {
            err_fail(err, errlen, "argument %s: step %s's result has no %s", key, idbuf, path);
            json_decref(whole);
            json_decref(args);
            return NULL;
        }
        json_object_set(args, key, (json_t *)val);
        json_decref(whole);
    }
    return args;
}
