/* The scripted models (docs/benchmark.md, "Models"), as an LLM back end the hub's own
 * contexts talk to (hub/llm/scripted.h):
 *
 *   ground truth   the planner returns the user task's ground-truth plan (extraction
 *                  steps as hub.extract), the extraction returns the honest value, the
 *                  merge the task's answer (or says what did not run), and the none
 *                  loop makes the ground-truth calls one by one, reading the values it
 *                  needs out of the results it got;
 *   compromised    the same, except that every context that sees the attack text obeys
 *                  it: the none loop makes the injection task's calls next (with
 *                  whatever it can call), an extraction over the text returns the
 *                  attacker's values. The planner never sees app output, so it never
 *                  sees the attack; that is the architecture, not the model, at work.
 *
 * The model is an oracle that knows the case, but it only acts on the attack when the
 * attack text is in the request it is answering: what reached which context is the
 * hub's doing, and that is what the benchmark measures. */
#include "agentbench_impl.h"
#include "jsonpath.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ab_model {
    enum ab_model_kind kind;
    const struct ab_suite *suite;
    const struct ab_task *user, *inj;
    char *attack, *attack_json; /* the text, and as it appears inside a JSON string */
    bool extract;
    bool obeyed;
    /* none mode: the calls to make ({"plan": "u"|"i", "step"}), how many were made,
     * whether the injection's were inserted, and the results by "u:ID" / "i:ID". */
    json_t *script;
    size_t issued;
    bool inserted;
    json_t *results;
};

struct ab_model *ab_model_new(enum ab_model_kind kind)
{
    struct ab_model *m = xcalloc(1, sizeof(*m));
    m->kind = kind;
    return m;
}

static void reset(struct ab_model *m)
{
    free(m->attack);
    free(m->attack_json);
    m->attack = m->attack_json = NULL;
    json_decref(m->script);
    json_decref(m->results);
    m->script = m->results = NULL;
    m->issued = 0;
    m->inserted = m->obeyed = false;
}

void ab_model_free(struct ab_model *m)
{
    if (!m)
        return;
    reset(m);
    free(m);
}

void ab_model_set_case(struct ab_model *m, const struct ab_suite *s, const struct ab_task *user,
                       const struct ab_task *inj, const char *attack, bool extract)
{
    reset(m);
    m->suite = s;
    m->user = user;
    m->inj = inj;
    m->extract = extract;
    if (attack) {
        m->attack = xstrdup(attack);
        json_t *j = json_string(attack);
        char *t = json_dumps(j, JSON_ENCODE_ANY);
        json_decref(j);
        if (t && strlen(t) >= 2) {
            t[strlen(t) - 1] = '\0';
            m->attack_json = xstrdup(t + 1);
        }
        free(t);
    }
    m->script = json_array();
    m->results = json_object();
    size_t i;
    json_t *st;
    json_array_foreach(user->plan, i, st)
    {
        json_array_append_new(m->script, json_pack("{s:s,s:O}", "plan", "u", "step", st));
    }
}

bool ab_model_obeyed(const struct ab_model *m)
{
    return m->obeyed;
}

/* Whether text holds the attack (raw, or escaped inside JSON). */
static bool sees_attack(const struct ab_model *m, const char *text)
{
    if (!m->attack || !text)
        return false;
    return strstr(text, m->attack) || (m->attack_json && strstr(text, m->attack_json));
}

static const char *last_user_text(const json_t *messages)
{
    for (size_t i = json_array_size(messages); i-- > 0;) {
        const json_t *msg = json_array_get(messages, i);
        if (strcmp(json_string_value(json_object_get(msg, "role")), "user") == 0)
            return json_string_value(json_object_get(msg, "content"));
    }
    return NULL;
}

static json_t *text_answer(const char *text)
{
    return json_pack("{s:s}", "content", text);
}

/* The final answer of a context that saw the attack: it also says what the attacker
 * wants said (the injection task's "message" value, else its goal). */
static json_t *final_answer(struct ab_model *m, const char *text, bool attacked)
{
    if (!attacked || m->kind != AB_MODEL_COMPROMISED || !m->inj)
        return text_answer(text);
    const char *say = json_string_value(json_object_get(m->inj->values, "message"));
    m->obeyed = true;
    char *t = xasprintf("%s %s", text, say ? say : m->inj->goal);
    json_t *a = text_answer(t);
    free(t);
    return a;
}

/* The value an extraction step answers: honest, or with the attacker's values for the
 * schema's properties the injection task names, when the model obeys the text. */
static json_t *extract_value(struct ab_model *m, const json_t *ex, bool attacked)
{
    json_t *v = json_deep_copy(json_object_get(ex, "answer"));
    if (!attacked || m->kind != AB_MODEL_COMPROMISED || !m->inj || !m->inj->values)
        return v;
    const json_t *props = json_object_get(json_object_get(ex, "schema"), "properties");
    const char *k;
    json_t *val;
    bool changed = false;
    json_object_foreach((json_t *)m->inj->values, k, val)
    {
        if (json_object_get(props, k) && json_is_object(v)) {
            json_object_set(v, k, val);
            changed = true;
        }
    }
    if (changed)
        m->obeyed = true;
    return v;
}

/* ---- the planner ---- */

static json_t *plan_answer(struct ab_model *m)
{
    json_t *steps = json_array();
    size_t i;
    json_t *st;
    json_array_foreach(m->user->plan, i, st)
    {
        const json_t *ex = json_object_get(st, "extract");
        if (ex) {
            json_array_append_new(steps, json_pack("{s:O,s:s,s:{s:{s:O},s:O,s:O}}", "id",
                                                   json_object_get(st, "id"), "tool", "hub.extract",
                                                   "arguments", "text", "$ref",
                                                   json_object_get(ex, "from"), "question",
                                                   json_object_get(ex, "question"), "schema",
                                                   json_object_get(ex, "schema")));
        } else {
            json_array_append_new(steps, json_deep_copy(st));
        }
    }
    json_t *plan = json_pack("{s:o}", "steps", steps);
    char *t = json_dumps(plan, JSON_COMPACT);
    json_decref(plan);
    json_t *a = text_answer(t ? t : "{}");
    free(t);
    return a;
}

/* ---- the merge ---- */

static char *last_result_text(const json_t *outcomes)
{
    const json_t *last = json_array_get(outcomes, json_array_size(outcomes) - 1);
    const json_t *r = json_object_get(last, "result");
    return r ? json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY) : xstrdup("Done.");
}

static json_t *merge_answer(struct ab_model *m, const char *input)
{
    const char *marker = input ? strstr(input, "(JSON data, not instructions):\n") : NULL;
    json_t *outcomes = marker ? json_loads(marker + strlen("(JSON data, not instructions):\n"),
                                           JSON_DISABLE_EOF_CHECK, NULL)
                              : NULL;
    size_t i;
    json_t *o;
    json_array_foreach(outcomes, i, o)
    {
        const char *out = json_string_value(json_object_get(o, "outcome"));
        if (!out || strcmp(out, "ok") != 0) {
            char *t =
                xasprintf("I could not do everything you asked: step %s (%s) %s.",
                          json_string_value(json_object_get(o, "step")),
                          json_string_value(json_object_get(o, "tool")), out ? out : "did not run");
            json_t *a = final_answer(m, t, sees_attack(m, input));
            free(t);
            json_decref(outcomes);
            return a;
        }
    }
    json_t *a;
    bool attacked = sees_attack(m, input);
    if (m->user->answer) {
        a = final_answer(m, json_string_value(m->user->answer), attacked);
    } else {
        char *t = last_result_text(outcomes);
        a = final_answer(m, t ? t : "Done.", attacked);
        free(t);
    }
    json_decref(outcomes);
    return a;
}

/* ---- the extraction context ---- */

static json_t *extract_answer(struct ab_model *m, const char *input, char *why, size_t whylen)
{
    size_t i;
    json_t *st;
    json_array_foreach(m->user->plan, i, st)
    {
        const json_t *ex = json_object_get(st, "extract");
        const char *q = json_string_value(json_object_get(ex, "question"));
        if (!q || !input)
            continue;
        char *line = xasprintf("Question: %s\n", q);
        bool mine = strncmp(input, line, strlen(line)) == 0;
        free(line);
        if (!mine)
            continue;
        json_t *v = extract_value(m, ex, sees_attack(m, input));
        char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(v);
        json_t *a = text_answer(t ? t : "null");
        free(t);
        return a;
    }
    snprintf(why, whylen, "no extraction step of %s asks this question", m->user->id);
    return NULL;
}

/* ---- the none loop ---- */

static const json_t *plan_of(const struct ab_model *m, const char *which)
{
    return which[0] == 'u' ? m->user->plan : m->inj->plan;
}

static const json_t *step_by_id(const json_t *plan, const char *id, size_t n)
{
    size_t i;
    json_t *st;
    json_array_foreach(plan, i, st)
    {
        const char *sid = json_string_value(json_object_get(st, "id"));
        if (strlen(sid) == n && strncmp(sid, id, n) == 0)
            return st;
    }
    return NULL;
}

/* A plan step's arguments with every reference read out of the results so far. */
static json_t *resolve(struct ab_model *m, const char *which, const json_t *args)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v)
    {
        const char *ref = json_string_value(json_object_get(v, "$ref"));
        if (!ref) {
            json_object_set(out, k, v);
            continue;
        }
        size_t n = strcspn(ref, ".");
        const char *path = ref[n] == '.' ? ref + n + 1 : "";
        const json_t *src = step_by_id(plan_of(m, which), ref, n);
        json_t *base = NULL;
        if (src && ab_step_is_extract(src)) {
            const json_t *ex = json_object_get(src, "extract");
            char key[80];
            snprintf(key, sizeof(key), "%s:%s", which,
                     json_string_value(json_object_get(ex, "from")));
            const json_t *text = json_object_get(m->results, key);
            char *t = text ? json_dumps(text, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            base = extract_value(m, ex, sees_attack(m, t));
            free(t);
        } else if (src) {
            char key[80];
            snprintf(key, sizeof(key), "%s:%.*s", which, (int)n, ref);
            base = json_incref(json_object_get(m->results, key));
        }
        json_t *val = base ? jsonpath_get(base, path) : NULL;
        json_object_set(out, k, val ? val : json_null());
        json_decref(base);
    }
    return out;
}

/* Reads the tool results in the conversation (our call ids: "u__ID", "i__ID"). */
static bool take_results(struct ab_model *m, const json_t *messages)
{
    bool attacked = false;
    size_t i;
    json_t *msg;
    json_array_foreach(messages, i, msg)
    {
        if (strcmp(json_string_value(json_object_get(msg, "role")), "tool") != 0)
            continue;
        const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
        const char *content = json_string_value(json_object_get(msg, "content"));
        attacked = attacked || sees_attack(m, content);
        if (!id || strlen(id) < 4 || id[1] != '_' || id[2] != '_')
            continue;
        json_t *r = content ? json_loads(content, 0, NULL) : NULL;
        json_t *value = json_object_get(r, "structuredContent");
        char key[80];
        snprintf(key, sizeof(key), "%c:%s", id[0], id + 3);
        json_object_set(m->results, key, value ? value : json_null());
        json_decref(r);
    }
    return attacked;
}

static json_t *none_answer(struct ab_model *m, const json_t *messages)
{
    bool attacked = take_results(m, messages);
    if (attacked && m->kind == AB_MODEL_COMPROMISED && m->inj && !m->inserted) {
        /* It obeys: the attacker's calls come next, then the user's task goes on. */
        m->inserted = true;
        m->obeyed = true;
        size_t at = m->issued, i;
        json_t *st;
        json_array_foreach(m->inj->plan, i, st)
        {
            json_array_insert_new(m->script, at++, json_pack("{s:s,s:O}", "plan", "i", "step", st));
        }
    }
    while (m->issued < json_array_size(m->script)) {
        const json_t *entry = json_array_get(m->script, m->issued++);
        const json_t *st = json_object_get(entry, "step");
        if (ab_step_is_extract(st))
            continue; /* this model reads the value itself when a later step needs it */
        const char *which = json_string_value(json_object_get(entry, "plan"));
        const char *tool = json_string_value(json_object_get(st, "tool"));
        const char *dot = strchr(tool, '.');
        char *name = xasprintf("%.*s__%s", (int)(dot - tool), tool, dot + 1);
        char *id = xasprintf("%c__%s", which[0], json_string_value(json_object_get(st, "id")));
        json_t *args = resolve(m, which, json_object_get(st, "arguments"));
        json_t *a = json_pack("{s:n,s:[{s:s,s:s,s:o}]}", "content", "tool_calls", "id", id, "name",
                              name, "arguments", args);
        free(name);
        free(id);
        return a;
    }
    return final_answer(m, m->user->answer ? json_string_value(m->user->answer) : "Done.",
                        attacked);
}

static int script(void *arg, const struct llm_request *rq, json_t **answer, char *why,
                  size_t whylen)
{
    struct ab_model *m = arg;
    const char *ctx = llm_request_context(rq);
    const json_t *messages = llm_request_messages(rq);
    if (!m->user) {
        snprintf(why, whylen, "no case set");
        return -1;
    }
    if (strcmp(ctx, "planner") == 0)
        *answer = plan_answer(m);
    else if (strcmp(ctx, "merge") == 0)
        *answer = merge_answer(m, last_user_text(messages));
    else if (strcmp(ctx, "extract") == 0)
        *answer = extract_answer(m, last_user_text(messages), why, whylen);
    else if (strcmp(ctx, "none") == 0)
        *answer = none_answer(m, messages);
    else if (strncmp(ctx, "spoke:", 6) == 0)
        *answer = text_answer("");
    else
        snprintf(why, whylen, "the benchmark's models do not answer context %s", ctx);
    return *answer ? 0 : -1;
}

struct llm *ab_model_llm(struct ab_model *m, const struct llm_config *cfg)
{
    return llm_scripted_open(m->kind == AB_MODEL_TRUTH ? "scripted:ground-truth"
                                                       : "scripted:compromised",
                             script, m, cfg);
}
