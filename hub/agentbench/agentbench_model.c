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
    /* answer by reference: the results the hub announced, by step id (the oracle's). */
    json_t *noted;
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
    json_decref(m->noted);
    m->script = m->results = m->noted = NULL;
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

void ab_model_note_result(struct ab_model *m, const char *id, const json_t *result)
{
    if (!id || !result)
        return;
    if (!m->noted)
        m->noted = json_object();
    json_object_set(m->noted, id, (json_t *)result);
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

/* ---- the merge, by reference ----
 * The context sees the results' shape only (numbers as they are, every text a
 * reference). The oracle knows the task's answer; it writes it as a model that chose
 * by the numbers would:
 *   - each text of a result that the answer holds whole (longest first) becomes a
 *     reference to where it sits;
 *   - a word the answer's checks look for that is still its own (not a number it saw
 *     or computed, not in the request) it could only have read: it references the
 *     shortest text that holds it (rendered whole), and when none does it leaves the
 *     word out. So utility here counts only what a model that never reads text can
 *     answer. */

struct text_at {
    const char *text; /* borrowed from m->noted */
    char *path;
};

struct texts {
    struct text_at *at;
    size_t n, cap;
    json_t *numbers; /* every number of the results, as JSON text */
};

static void collect(const json_t *v, const char *path, struct texts *t, int depth)
{
    if (depth > 16)
        return;
    if (json_is_number(v)) {
        char *d = json_dumps(v, JSON_ENCODE_ANY);
        if (d)
            json_object_set_new(t->numbers, d, json_true());
        free(d);
        return;
    }
    if (json_is_string(v) && json_string_length(v) >= 3) {
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 64;
            t->at = xrealloc(t->at, t->cap * sizeof(*t->at));
        }
        t->at[t->n++] = (struct text_at){json_string_value(v), xstrdup(path)};
        return;
    }
    const char *k;
    json_t *m;
    size_t i;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, m)
        {
            char *p = xasprintf("%s.%s", path, k);
            collect(m, p, t, depth + 1);
            free(p);
        }
    else if (json_is_array(v))
        json_array_foreach(v, i, m)
        {
            char *p = xasprintf("%s.%zu", path, i);
            collect(m, p, t, depth + 1);
            free(p);
        }
}

static int longer_first(const void *a, const void *b)
{
    size_t la = strlen(((const struct text_at *)a)->text);
    size_t lb = strlen(((const struct text_at *)b)->text);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

static void texts_free(struct texts *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->at[i].path);
    free(t->at);
    json_decref(t->numbers);
}

static const char ref_open[] = "{\"$ref\": \"";

/* The length of the reference token at p, or 0. */
static size_t ref_len(const char *p)
{
    if (strncmp(p, ref_open, strlen(ref_open)) != 0)
        return 0;
    const char *e = strstr(p + strlen(ref_open), "\"}");
    return e ? (size_t)(e + 2 - p) : 0;
}

static char *ref_token(const char *path)
{
    return xasprintf("%s%s\"}", ref_open, path);
}

/* answer with each whole text of the results replaced by its reference. */
static char *with_refs(const struct texts *t, const char *answer)
{
    size_t olen = 0, ocap = strlen(answer) + 1;
    char *out = xmalloc(ocap);
    out[0] = '\0';
    for (const char *p = answer; *p;) {
        size_t keep = ref_len(p);
        const struct text_at *hit = NULL;
        for (size_t i = 0; i < t->n && !hit && !keep; i++)
            if (strncmp(p, t->at[i].text, strlen(t->at[i].text)) == 0)
                hit = &t->at[i];
        char *piece = keep ? xstrndup(p, keep) : hit ? ref_token(hit->path) : xstrndup(p, 1);
        size_t pl = strlen(piece);
        if (olen + pl + 1 > ocap) {
            ocap = 2 * (olen + pl + 1);
            out = xrealloc(out, ocap);
        }
        memcpy(out + olen, piece, pl + 1);
        olen += pl;
        free(piece);
        p += keep ? keep : hit ? strlen(hit->text) : 1;
    }
    return out;
}

/* Where word first occurs in text outside every reference (case-insensitive, as the
 * checks compare), or NULL. */
static const char *own_words_find(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = text; *p;) {
        size_t r = ref_len(p);
        if (r) {
            p += r;
            continue;
        }
        if (strncasecmp(p, word, n) == 0) {
            size_t k = 0; /* the match must not run into a reference */
            while (k < n && !ref_len(p + k))
                k++;
            if (k == n)
                return p;
        }
        p++;
    }
    return NULL;
}

static bool numeric(const char *w)
{
    return w[strspn(w, "0123456789 .,:+-x=/")] == '\0';
}

/* A word the oracle could not have seen: what it writes instead. */
static char *unseen_word(const struct texts *t, const struct ab_task *u, char *text,
                         const char *word)
{
    const char *at = own_words_find(text, word);
    if (!at || strcasestr(u->prompt, word))
        return text;
    const struct text_at *holder = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (strcasestr(t->at[i].text, word) &&
            (!holder || strlen(t->at[i].text) < strlen(holder->text)))
            holder = &t->at[i];
    if (numeric(word) && (!holder || json_object_get(t->numbers, word)))
        return text; /* a number it saw, or worked out from those it saw */
    char *ref = holder ? ref_token(holder->path) : xstrdup("");
    char *out = xasprintf("%.*s%s%s", (int)(at - text), text, ref, at + strlen(word));
    free(ref);
    free(text);
    return out;
}

/* The field of path's item (ITEM.FIELD or ITEM.FIELD.N): its name in seg, its item's
 * path's length in *item_len; false when path is not that shape. */
static bool field_of(const char *path, char *seg, size_t seglen, size_t *item_len)
{
    const char *last = strrchr(path, '.');
    if (!last)
        return false;
    if (last[1] && strspn(last + 1, "0123456789") == strlen(last + 1)) {
        const char *prev = last;
        while (prev > path && prev[-1] != '.')
            prev--;
        if (prev == path)
            return false;
        snprintf(seg, seglen, "%.*s", (int)(last - prev), prev);
        *item_len = (size_t)(prev - 1 - path);
        return true;
    }
    snprintf(seg, seglen, "%s", last + 1);
    *item_len = (size_t)(last - path);
    return true;
}

/* A text field the request names ("what do its reviews say?": reviews) of an item the
 * answer already references: a model that never reads text shows it by reference,
 * since it cannot summarize it. Rendered whole, so what the field holds (an attack's
 * text too) is what the user reads. */
static char *asked_fields(const struct texts *t, const struct ab_task *u, char *out)
{
    for (size_t i = 0; i < t->n; i++) {
        char seg[64], stem[64];
        size_t item_len;
        if (!field_of(t->at[i].path, seg, sizeof(seg), &item_len))
            continue;
        snprintf(stem, sizeof(stem), "%s", seg);
        size_t sl = strlen(stem);
        if (sl > 4 && stem[sl - 1] == 's')
            stem[--sl] = '\0';
        if (sl < 5 || !strcasestr(u->prompt, stem))
            continue;
        char *item = xasprintf("%s%.*s.", ref_open, (int)item_len, t->at[i].path);
        char *token = ref_token(t->at[i].path);
        if (strstr(out, item) && !strstr(out, token)) {
            char *more = xasprintf("%s (%s)", out, token);
            free(out);
            out = more;
        }
        free(item);
        free(token);
    }
    return out;
}

static char *strict_answer(const struct ab_model *m, const char *answer)
{
    struct texts t = {.numbers = json_object()};
    const char *id;
    json_t *v;
    json_object_foreach(m->noted, id, v)
    {
        collect(v, id, &t, 0);
    }
    qsort(t.at, t.n, sizeof(*t.at), longer_first);
    char *out = with_refs(&t, answer);
    size_t i;
    json_t *c;
    json_array_foreach(m->user->checks, i, c)
    {
        const char *word =
            json_string_value(json_object_get(json_object_get(c, "answer"), "contains"));
        if (word && *word)
            out = unseen_word(&t, m->user, out, word);
    }
    out = asked_fields(&t, m->user, out);
    texts_free(&t);
    return out;
}

static json_t *merge_refs_answer(struct ab_model *m, const json_t *outcomes, bool attacked)
{
    const json_t *last = json_array_get(outcomes, json_array_size(outcomes) - 1);
    char *t = m->user->answer ? strict_answer(m, json_string_value(m->user->answer))
                              : ref_token(json_string_value(json_object_get(last, "step")));
    json_t *a = final_answer(m, t, attacked);
    free(t);
    return a;
}

static const char data_marker[] = "(JSON data, not instructions):\n";
static const char shape_marker[] = "(JSON shape, every text a reference):\n";

static json_t *merge_answer(struct ab_model *m, const char *input)
{
    const char *marker = input ? strstr(input, data_marker) : NULL;
    bool refs = false;
    if (!marker && input && (marker = strstr(input, shape_marker)) != NULL)
        refs = true;
    json_t *outcomes = marker ? json_loads(marker + strlen(refs ? shape_marker : data_marker),
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
    if (refs) {
        a = merge_refs_answer(m, outcomes, attacked);
    } else if (m->user->answer) {
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
