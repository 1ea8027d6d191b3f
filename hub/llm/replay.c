/* Replay back end: a recording of answers, matched to requests by context label and
 * the request's last message (the format is documented in replay.h). */
#include "replay.h"

#include "llm_impl.h"

#include "audit.h"
#include "jsonfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MATCH_TEXT_MAX 4096
#define EXCERPT_CAP 80
#define STREAM_PIECE 24

struct entry {
    char *context;
    bool prefix;      /* context ended in '*' */
    const char *role; /* match conditions; NULL: any */
    const char *contains;
    const char *tool;
    int has_tools; /* -1: any */
    bool repeat;
    bool used;
    json_t *response; /* validated at load */
    enum llm_error_kind error_kind;
    const char *error_message;
};

struct counter {
    char *context;
    unsigned n;
    struct counter *next;
};

struct replay {
    char *path;
    json_t *root; /* owns every string the entries point at */
    struct entry *entries;
    size_t n;
    struct counter *counters;
};

static const struct {
    const char *name;
    enum llm_error_kind kind;
} error_kinds[] = {
    {"connect", LLM_ERR_CONNECT},
    {"timeout", LLM_ERR_TIMEOUT},
    {"auth", LLM_ERR_AUTH},
    {"not-found", LLM_ERR_NOT_FOUND},
    {"bad-request", LLM_ERR_BAD_REQUEST},
    {"rate-limit", LLM_ERR_RATE_LIMIT},
    {"server-error", LLM_ERR_SERVER},
    {"malformed", LLM_ERR_MALFORMED},
    {"too-large", LLM_ERR_TOO_LARGE},
};

static bool load_match(struct jf_ctx *c, const json_t *m, const char *where, struct entry *en)
{
    static const char *const keys[] = {"role", "contains", "tool", "has_tools", NULL};
    if (!jf_object(c, m, where, keys))
        return false;
    if (!jf_string(c, m, where, "role", false, 16, &en->role) ||
        !jf_string(c, m, where, "contains", false, MATCH_TEXT_MAX, &en->contains) ||
        !jf_string(c, m, where, "tool", false, LLM_MAX_NAME, &en->tool))
        return false;
    if (en->role && strcmp(en->role, "system") != 0 && strcmp(en->role, "user") != 0 &&
        strcmp(en->role, "assistant") != 0 && strcmp(en->role, "tool") != 0)
        return jf_fail(c, where, "role", "must be system, user, assistant or tool");
    json_t *ht = json_object_get(m, "has_tools");
    if (ht) {
        if (!json_is_boolean(ht))
            return jf_fail(c, where, "has_tools", "must be true or false");
        en->has_tools = json_is_true(ht);
    }
    return true;
}

static bool load_response(struct jf_ctx *c, json_t *r, const char *where)
{
    static const char *const keys[] = {"content", "tool_calls", "finish_reason",
                                       "model",   "usage",      NULL};
    if (!jf_object(c, r, where, keys))
        return false;
    json_t *content = json_object_get(r, "content");
    if (content && !json_is_null(content) && !json_is_string(content))
        return jf_fail(c, where, "content", "must be a string or null");
    if (json_is_string(content) && json_string_length(content) > REPLAY_MAX_CONTENT)
        return jf_fail(c, where, "content", "is longer than %u bytes", REPLAY_MAX_CONTENT);
    json_t *calls = json_object_get(r, "tool_calls");
    if (calls && !json_is_array(calls))
        return jf_fail(c, where, "tool_calls", "must be an array");
    if (!content && json_array_size(calls) == 0)
        return jf_fail(c, where, NULL, "needs \"content\" or \"tool_calls\"");
    const char *s;
    if (!jf_string(c, r, where, "finish_reason", false, 64, &s) ||
        !jf_string(c, r, where, "model", false, 256, &s))
        return false;
    json_t *usage = json_object_get(r, "usage");
    if (usage) {
        static const char *const ukeys[] = {"prompt_tokens", "completion_tokens", "total_tokens",
                                            NULL};
        char uwhere[128];
        snprintf(uwhere, sizeof(uwhere), "%s.usage", where);
        int64_t v;
        if (!jf_object(c, usage, uwhere, ukeys) ||
            !jf_int(c, usage, uwhere, "prompt_tokens", false, 0, INT32_MAX, &v) ||
            !jf_int(c, usage, uwhere, "completion_tokens", false, 0, INT32_MAX, &v) ||
            !jf_int(c, usage, uwhere, "total_tokens", false, 0, INT32_MAX, &v))
            return false;
    }
    /* The same validation a server's answer gets, so replay serves nothing a real
     * client would have refused. */
    struct llm_response tmp = {0};
    struct llm_error e = {0};
    int rc = llm_wire_message(r, &tmp, "response", &e);
    llm_response_free(&tmp);
    if (rc < 0)
        return jf_fail(c, where, NULL, "%s", e.msg + strlen("response: "));
    return true;
}

static bool load_error(struct jf_ctx *c, const json_t *er, const char *where, struct entry *en)
{
    static const char *const keys[] = {"kind", "message", NULL};
    const char *kind = NULL;
    if (!jf_object(c, er, where, keys) || !jf_string(c, er, where, "kind", true, 32, &kind) ||
        !jf_string(c, er, where, "message", false, 512, &en->error_message))
        return false;
    for (size_t i = 0; i < ARRAY_LEN(error_kinds); i++)
        if (strcmp(kind, error_kinds[i].name) == 0)
            en->error_kind = error_kinds[i].kind;
    if (en->error_kind == LLM_OK)
        return jf_fail(c, where, "kind",
                       "must be one of connect, timeout, auth, not-found, bad-request, "
                       "rate-limit, server-error, malformed, too-large");
    return true;
}

static bool load_entry(struct jf_ctx *c, json_t *item, size_t i, struct entry *en)
{
    static const char *const keys[] = {"context", "match",   "repeat", "response",
                                       "error",   "comment", NULL};
    char where[64];
    snprintf(where, sizeof(where), "entries[%zu]", i);
    en->has_tools = -1;
    const char *ctx = NULL;
    if (!jf_object(c, item, where, keys) ||
        !jf_string(c, item, where, "context", true, LLM_MAX_CONTEXT, &ctx) ||
        !jf_bool(c, item, where, "repeat", false, &en->repeat))
        return false;
    size_t n = strlen(ctx);
    bool wildcard = ctx[n - 1] == '*';
    if (!llm_context_valid(ctx, wildcard) || (wildcard && memchr(ctx, '*', n - 1)))
        return jf_fail(c, where, "context",
                       "must be a label of A-Z a-z 0-9 _ . : / @ -, optionally ending in *");
    en->context = xstrndup(ctx, wildcard ? n - 1 : n);
    en->prefix = wildcard;
    json_t *m = json_object_get(item, "match");
    if (m) {
        char mwhere[80];
        snprintf(mwhere, sizeof(mwhere), "%s.match", where);
        if (!load_match(c, m, mwhere, en))
            return false;
    }
    json_t *r = json_object_get(item, "response");
    json_t *er = json_object_get(item, "error");
    if (!!r == !!er)
        return jf_fail(c, where, NULL, "needs exactly one of \"response\" and \"error\"");
    char rwhere[80];
    if (r) {
        snprintf(rwhere, sizeof(rwhere), "%s.response", where);
        if (!load_response(c, r, rwhere))
            return false;
        en->response = r;
    } else {
        snprintf(rwhere, sizeof(rwhere), "%s.error", where);
        if (!load_error(c, er, rwhere, en))
            return false;
    }
    return true;
}

static void replay_free(struct replay *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->entries[i].context);
    free(r->entries);
    for (struct counter *k = r->counters, *next; k; k = next) {
        next = k->next;
        free(k->context);
        free(k);
    }
    json_decref(r->root);
    free(r->path);
    free(r);
}

static struct replay *replay_load(const char *path, char *err, size_t errlen)
{
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    json_t *root = jf_load(&c, REPLAY_MAX_BYTES);
    if (!root)
        return NULL;
    struct replay *r = xcalloc(1, sizeof(*r));
    r->path = xstrdup(path);
    r->root = root;
    static const char *const keys[] = {"version", "description", "entries", NULL};
    int64_t version = 1;
    const char *desc;
    if (!jf_object(&c, root, "", keys) || !jf_int(&c, root, "", "version", false, 1, 1, &version) ||
        !jf_string(&c, root, "", "description", false, 4096, &desc))
        goto fail;
    json_t *entries = json_object_get(root, "entries");
    if (!json_is_array(entries)) {
        jf_fail(&c, "", "entries", "must be an array of recorded answers");
        goto fail;
    }
    if (json_array_size(entries) > REPLAY_MAX_ENTRIES) {
        jf_fail(&c, "", "entries", "has %zu entries, more than the %d allowed",
                json_array_size(entries), REPLAY_MAX_ENTRIES);
        goto fail;
    }
    r->entries = xcalloc(json_array_size(entries) + 1, sizeof(*r->entries));
    size_t i;
    json_t *item;
    json_array_foreach(entries, i, item)
    {
        r->n = i + 1; /* so that replay_free() frees this entry's context too */
        if (!load_entry(&c, item, i, &r->entries[i]))
            goto fail;
    }
    return r;
fail:
    replay_free(r);
    return NULL;
}

/* The request's number within its context (1 for its first request). */
static unsigned count_request(struct replay *r, const char *context)
{
    struct counter *k;
    for (k = r->counters; k; k = k->next)
        if (strcmp(k->context, context) == 0)
            return ++k->n;
    k = xcalloc(1, sizeof(*k));
    k->context = xstrdup(context);
    k->n = 1;
    k->next = r->counters;
    r->counters = k;
    return 1;
}

static bool entry_matches(const struct entry *en, const struct llm_request *rq)
{
    if (en->prefix ? strncmp(rq->context, en->context, strlen(en->context)) != 0
                   : strcmp(rq->context, en->context) != 0)
        return false;
    if (en->has_tools >= 0 && (json_array_size(rq->tools) > 0) != (en->has_tools == 1))
        return false;
    size_t n = json_array_size(rq->messages);
    json_t *last = n ? json_array_get(rq->messages, n - 1) : NULL;
    const char *role = json_string_value(json_object_get(last, "role"));
    const char *content = json_string_value(json_object_get(last, "content"));
    const char *tool = json_string_value(json_object_get(last, "name"));
    if (en->role && (!role || strcmp(role, en->role) != 0))
        return false;
    if (en->contains && (!content || !strstr(content, en->contains)))
        return false;
    if (en->tool && (!role || strcmp(role, "tool") != 0 || !tool || strcmp(tool, en->tool) != 0))
        return false;
    return true;
}

static int uncovered(struct replay *r, const struct llm_request *rq, unsigned nth,
                     struct llm_error *e)
{
    size_t n = json_array_size(rq->messages);
    json_t *last = n ? json_array_get(rq->messages, n - 1) : NULL;
    const char *role = json_string_value(json_object_get(last, "role"));
    const char *content = json_string_value(json_object_get(last, "content"));
    json_t *ex = audit_string(content ? content : "", content ? strlen(content) : 0, EXCERPT_CAP);
    char *excerpt = xstrdup(json_string_value(ex));
    json_decref(ex);
    for (char *p = excerpt; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '"')
            *p = (*p == '"') ? '\'' : ' ';
    size_t for_ctx = 0, used = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct entry *en = &r->entries[i];
        bool ctx = en->prefix ? strncmp(rq->context, en->context, strlen(en->context)) == 0
                              : strcmp(rq->context, en->context) == 0;
        if (ctx) {
            for_ctx++;
            used += en->used;
        }
    }
    llm_fail(e, LLM_ERR_UNCOVERED,
             "replay %s: no recorded answer for request %u of context \"%s\" (last message, "
             "%s: \"%s\"); the recording has %zu entries for this context, %zu used up",
             r->path, nth, rq->context, role ? role : "none", excerpt, for_ctx, used);
    free(excerpt);
    return -1;
}

/* Hands content to a streaming caller in pieces that never split a UTF-8 character. */
static int stream_out(const struct llm_request *rq, const char *s, struct llm_error *e)
{
    size_t n = strlen(s), i = 0;
    while (i < n) {
        size_t k = n - i < STREAM_PIECE ? n - i : STREAM_PIECE;
        while (i + k < n && ((unsigned char)s[i + k] & 0xc0) == 0x80)
            k++;
        if (rq->on_delta(rq->delta_arg, s + i, k) != 0)
            return llm_fail(e, LLM_ERR_CANCELLED, "cancelled while streaming");
        i += k;
    }
    return 0;
}

static int replay_complete(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                           struct llm_error *e)
{
    struct replay *r = llm->impl;
    unsigned nth = count_request(r, rq->context);
    struct entry *en = NULL;
    for (size_t i = 0; i < r->n && !en; i++)
        if (!r->entries[i].used && entry_matches(&r->entries[i], rq))
            en = &r->entries[i];
    if (!en)
        return uncovered(r, rq, nth, e);
    if (!en->repeat)
        en->used = true;
    if (rq->cancel && *rq->cancel)
        return llm_fail(e, LLM_ERR_CANCELLED, "the LLM call was cancelled");
    if (!en->response)
        return llm_fail(e, en->error_kind, "replay %s: recorded error for context \"%s\": %s",
                        r->path, rq->context,
                        en->error_message ? en->error_message
                                          : llm_error_kind_name(en->error_kind));
    if (llm_wire_message(en->response, rs, "replay", e) < 0)
        return -1;
    const char *fr = json_string_value(json_object_get(en->response, "finish_reason"));
    rs->finish_reason = xstrdup(fr ? fr : rs->n_tool_calls ? "tool_calls" : "stop");
    const char *model = json_string_value(json_object_get(en->response, "model"));
    if (model || llm->cfg.model)
        rs->model = xstrdup(model ? model : llm->cfg.model);
    llm_wire_usage(json_object_get(en->response, "usage"), rs);
    if (rq->on_delta && rs->content && stream_out(rq, rs->content, e) < 0)
        return -1;
    return 0;
}

static void replay_destroy(struct llm *llm)
{
    replay_free(llm->impl);
}

static const struct llm_ops replay_ops = {
    .kind = "replay",
    .complete = replay_complete,
    .destroy = replay_destroy,
};

struct llm *llm_replay_open(const char *path, const struct llm_config *cfg, char *err,
                            size_t errlen)
{
    struct replay *r = replay_load(path, err, errlen);
    if (!r)
        return NULL;
    struct llm *llm = xcalloc(1, sizeof(*llm));
    llm->ops = &replay_ops;
    llm->impl = r;
    llm->cfg = *cfg;
    llm->model = cfg->model ? xstrdup(cfg->model) : NULL;
    llm->cfg.model = llm->model;
    llm->cfg.base_url = NULL;
    llm->cfg.api_key_env = NULL;
    llm->cfg.api_key = NULL;
    llm->describe = xasprintf("replay:%s", path);
    return llm;
}

size_t llm_replay_unused(const struct llm *llm, char *first, size_t firstlen)
{
    if (firstlen)
        first[0] = '\0';
    if (llm->ops != &replay_ops)
        return 0;
    const struct replay *r = llm->impl;
    size_t unused = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct entry *en = &r->entries[i];
        if (en->used || en->repeat)
            continue;
        if (unused++ == 0 && firstlen)
            snprintf(first, firstlen, "entries[%zu] (context \"%s%s\")", i, en->context,
                     en->prefix ? "*" : "");
    }
    return unused;
}
