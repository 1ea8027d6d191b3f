/* Recording a run for replay: a struct llm that forwards to another one and writes
 * each answered request as a replay entry (format in replay.h). Run the case studies
 * once against a real model with a recorder, replay them offline ever after. */
#include "replay.h"

#include "llm_impl.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXCERPT_BYTES 60

struct recorder {
    struct llm *inner;
    char *path;
    json_t *root;
};

/* The first bytes of s, cut at a character boundary: a substring replay can match. */
static json_t *excerpt(const char *s)
{
    size_t n = strlen(s);
    if (n > EXCERPT_BYTES) {
        n = EXCERPT_BYTES;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    return n ? json_stringn(s, n) : NULL;
}

static json_t *entry_for(const struct llm_request *rq, const struct llm_response *rs)
{
    json_t *match = json_object();
    size_t n = json_array_size(rq->messages);
    json_t *last = json_array_get(rq->messages, n - 1);
    json_object_set(match, "role", json_object_get(last, "role"));
    const char *content = json_string_value(json_object_get(last, "content"));
    json_t *ex = content ? excerpt(content) : NULL;
    if (ex)
        json_object_set_new(match, "contains", ex);
    const char *tool = json_string_value(json_object_get(last, "name"));
    if (tool && strcmp(json_string_value(json_object_get(last, "role")), "tool") == 0)
        json_object_set_new(match, "tool", json_string(tool));
    json_object_set_new(match, "has_tools", json_boolean(json_array_size(rq->tools) > 0));

    json_t *resp = json_object();
    json_object_set_new(resp, "content", rs->content ? json_string(rs->content) : json_null());
    if (rs->n_tool_calls) {
        json_t *calls = json_array();
        for (size_t i = 0; i < rs->n_tool_calls; i++) {
            const struct llm_tool_call *tc = &rs->tool_calls[i];
            json_array_append_new(calls, json_pack("{s:s,s:s,s:o}", "id", tc->id, "name", tc->name,
                                                   "arguments", llm_tool_call_args(tc)));
        }
        json_object_set_new(resp, "tool_calls", calls);
    }
    if (rs->finish_reason)
        json_object_set_new(resp, "finish_reason", json_string(rs->finish_reason));
    if (rs->model)
        json_object_set_new(resp, "model", json_string(rs->model));
    if (rs->usage.present)
        json_object_set_new(resp, "usage",
                            json_pack("{s:I,s:I,s:I}", "prompt_tokens",
                                      (json_int_t)rs->usage.prompt_tokens, "completion_tokens",
                                      (json_int_t)rs->usage.completion_tokens, "total_tokens",
                                      (json_int_t)rs->usage.total_tokens));
    return json_pack("{s:s,s:o,s:o}", "context", rq->context, "match", match, "response", resp);
}

/* Writes the whole recording to a temporary file and renames it over path. */
static int save(struct recorder *r, char *err, size_t errlen)
{
    char *tmp = xasprintf("%s.tmp", r->path);
    int rc = json_dump_file(r->root, tmp, JSON_INDENT(1));
    if (rc == 0 && rename(tmp, r->path) < 0)
        rc = -1;
    if (rc < 0) {
        snprintf(err, errlen, "cannot write the recording %s: %s", r->path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

static int record_complete(struct llm *llm, const struct llm_request *rq, struct llm_response *rs,
                           struct llm_error *e)
{
    struct recorder *r = llm->impl;
    int rc = r->inner->ops->complete(r->inner, rq, rs, e);
    if (rc < 0)
        return rc;
    json_array_append_new(json_object_get(r->root, "entries"), entry_for(rq, rs));
    char err[sizeof(e->msg)];
    if (save(r, err, sizeof(err)) < 0) {
        llm_response_free(rs);
        return llm_fail(e, LLM_ERR_CONFIG, "%s", err);
    }
    return 0;
}

static void record_destroy(struct llm *llm)
{
    struct recorder *r = llm->impl;
    llm_close(r->inner);
    json_decref(r->root);
    free(r->path);
    free(r);
}

static const struct llm_ops record_ops = {
    .kind = "record",
    .complete = record_complete,
    .destroy = record_destroy,
};

struct llm *llm_record_open(struct llm *inner, const char *path, char *err, size_t errlen)
{
    struct recorder *r = xcalloc(1, sizeof(*r));
    r->inner = inner;
    r->path = xstrdup(path);
    char when[40];
    format_iso8601(now_real_ns(), when, sizeof(when));
    char *desc = xasprintf("recorded from %s at %s", llm_describe(inner), when);
    r->root = json_pack("{s:i,s:s,s:[]}", "version", 1, "description", desc, "entries");
    free(desc);
    if (save(r, err, errlen) < 0) {
        json_decref(r->root);
        free(r->path);
        free(r);
        return NULL; /* inner stays the caller's */
    }
    struct llm *llm = xcalloc(1, sizeof(*llm));
    llm->ops = &record_ops;
    llm->impl = r;
    llm->cfg = inner->cfg;
    llm->model = inner->model ? xstrdup(inner->model) : NULL;
    llm->base_url = inner->base_url ? xstrdup(inner->base_url) : NULL;
    llm->cfg.model = llm->model;
    llm->cfg.base_url = llm->base_url;
    llm->describe = xasprintf("%s, recording to %s", llm_describe(inner), path);
    log_debug("llm: recording answers to %s", path);
    return llm;
}
