/* The hub's voice on the terminal and the questions it alone asks (see term.h).
 *
 * A question is framed by lines that start at column 0 with a heavy bar; untrusted
 * text (what will be sent, an app's question) is quoted inside the frame after a
 * further prefix, and neutralised, so it can neither start a line of its own nor
 * draw a frame. Anything typed before a question appears is discarded, so type-ahead
 * cannot answer it; an answer needs Enter. */
#include "term.h"
#include "termtext.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FRAME "\u2503 "                 /* ┃ */
#define FRAME_TOP "\u250f\u2501\u2501 " /* ┏━━ */
#define FRAME_END "\u2517\u2501\u2501 " /* ┗━━ */
#define BODY_MAX 4096

void term_init(struct term *t, FILE *out, struct lineedit *le)
{
    memset(t, 0, sizeof(*t));
    t->out = out;
    t->le = le;
    const char *nc = getenv("NO_COLOR");
    t->color = isatty(fileno(out)) && !(nc && *nc);
}

const char *term_bold(const struct term *t)
{
    return t->color ? "\x1b[1m" : "";
}

const char *term_dim(const struct term *t)
{
    return t->color ? "\x1b[2m" : "";
}

const char *term_warn(const struct term *t)
{
    return t->color ? "\x1b[1;33m" : "";
}

const char *term_reset(const struct term *t)
{
    return t->color ? "\x1b[0m" : "";
}

void term_hub(struct term *t, const char *fmt, ...)
{
    fprintf(t->out, "%shub:%s ", term_bold(t), term_reset(t));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(t->out, fmt, ap);
    va_end(ap);
    fputc('\n', t->out);
    fflush(t->out);
}

void term_quote_json(struct term *t, const char *prefix, const json_t *v, size_t max_bytes)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
    struct tt_stream s;
    tt_stream_init(&s, t->out, prefix, max_bytes);
    tt_stream_write(&s, text ? text : "(unprintable)", text ? strlen(text) : 13);
    tt_stream_end(&s);
    free(text);
}

/* A line read for a question; NULL at end of input or on Ctrl-C, which cancels the
 * whole request when the terminal has a cancel flag (t->cancel). */
static char *read_answer(struct term *t, const char *prompt)
{
    char *line = NULL;
    size_t cols = 0;
    for (const char *p = prompt; *p; p++)
        cols += ((unsigned char)*p & 0xc0) != 0x80;
    enum le_status st = le_read(t->le, prompt, cols, &line);
    if (st == LE_INTERRUPT && t->cancel)
        *t->cancel = 1;
    if (st != LE_LINE) {
        free(line);
        return NULL;
    }
    /* Trim spaces around. */
    char *p = line;
    while (*p == ' ')
        p++;
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] == ' ')
        p[--n] = '\0';
    memmove(line, p, n + 1);
    return line;
}

static void frame_line(struct term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void frame_line(struct term *t, const char *fmt, ...)
{
    fprintf(t->out, "%s" FRAME "%s", term_warn(t), term_reset(t));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(t->out, fmt, ap);
    va_end(ap);
    fputc('\n', t->out);
}

static void show_question(struct term *t, const struct perm_request *q, bool offer_always)
{
    FILE *o = t->out;
    fprintf(o, "%s" FRAME_TOP "hub: permission needed%s %s(asked by the hub, not by an app)%s\n",
            term_warn(t), term_reset(t), term_dim(t), term_reset(t));
    const char *b = term_bold(t), *r = term_reset(t);
    switch (q->category) {
    case PERM_EXEC:
        frame_line(t, "run %s%s.%s%s for you", b, q->app, q->tool, r);
        break;
    case PERM_DATA:
        if (q->caller && strcmp(q->caller, PERMS_MEMORY_PEER) == 0)
            frame_line(t, "share words from %syour earlier conversation%s with %s%s.%s%s", b, r, b,
                       q->app, q->tool, r);
        else
            frame_line(t, "share the result of app %s%s%s with %s%s.%s%s", b,
                       q->caller ? q->caller : "?", r, b, q->app, q->tool, r);
        break;
    case PERM_COLLAB:
        if (q->stage == PERM_STAGE_CALL)
            frame_line(t, "let app %s%s%s call %s%s.%s%s", b, q->caller ? q->caller : "?", r, b,
                       q->app, q->tool, r);
        else
            frame_line(t, "give app %s%s%s the result of %s%s.%s%s", b, q->caller ? q->caller : "?",
                       r, b, q->app, q->tool, r);
        break;
    case PERM_SECRET:
        frame_line(t, "let the %s of %s%s.%s%s through: it carries %s%s%s (not shown)",
                   q->stage == PERM_STAGE_RELAY ? "result" : "arguments", b, q->app, q->tool, r, b,
                   q->detail ? q->detail : "a secret", r);
        break;
    }
    if (!q->in_plan)
        frame_line(t, "%s\u26a0 this is NOT a step of the plan you were shown%s", term_warn(t), r);
    if (q->irreversible)
        frame_line(t, "%s\u26a0 irreversible:%s it cannot be undone, so \"always\" is not offered",
                   term_warn(t), r);
    if (q->body) {
        frame_line(t, "%s:",
                   q->stage == PERM_STAGE_RELAY ? "the result it would get" : "what will be sent");
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%s" FRAME "%s" TERM_QUOTE, term_warn(t), r);
        term_quote_json(t, prefix, q->body, BODY_MAX);
    }
    fprintf(o, "%s" FRAME_END "%s[y] once  [s] this session  %s[n] no  [d] never\n", term_warn(t),
            r, offer_always ? "[a] always  " : "");
    fflush(o);
}

static enum perm_answer ask(struct perm_asker *a, const struct perm_request *q, bool offer_always,
                            char *why, size_t whylen)
{
    struct term *t = a->ud;
    le_discard_input(t->le);
    show_question(t, q, offer_always);
    for (;;) {
        char *line = read_answer(t, "answer\u203a ");
        if (!line) {
            snprintf(why, whylen, t->cancel && *t->cancel ? "the user cancelled the request"
                                                          : "the user gave no answer");
            return PERM_ANSWER_NO;
        }
        enum perm_answer ans;
        bool ok = true;
        if (!strcmp(line, "y") || !strcmp(line, "yes") || !strcmp(line, "once"))
            ans = PERM_ANSWER_ONCE;
        else if (!strcmp(line, "s") || !strcmp(line, "session"))
            ans = PERM_ANSWER_SESSION;
        else if (offer_always && (!strcmp(line, "a") || !strcmp(line, "always")))
            ans = PERM_ANSWER_ALWAYS;
        else if (!strcmp(line, "n") || !strcmp(line, "no"))
            ans = PERM_ANSWER_NO;
        else if (!strcmp(line, "d") || !strcmp(line, "never"))
            ans = PERM_ANSWER_NEVER;
        else
            ok = false;
        free(line);
        if (ok) {
            snprintf(why, whylen, "the user answered");
            return ans;
        }
        fprintf(t->out, "%s" FRAME_END "%sanswer y, s,%s n or d\n", term_warn(t), term_reset(t),
                offer_always ? " a," : "");
    }
}

static bool confirm(struct perm_asker *a, const char *question)
{
    struct term *t = a->ud;
    le_discard_input(t->le);
    fprintf(t->out, "%s" FRAME_TOP "hub:%s %s [y/N]\n", term_warn(t), term_reset(t), question);
    char *line = read_answer(t, "answer\u203a ");
    bool yes = line && (!strcmp(line, "y") || !strcmp(line, "yes"));
    free(line);
    return yes;
}

static void asker_free(struct perm_asker *a)
{
    free(a);
}

struct perm_asker *term_asker(struct term *t)
{
    struct perm_asker *a = xcalloc(1, sizeof(*a));
    a->ask = ask;
    a->confirm = confirm;
    a->free = asker_free;
    a->ud = t;
    return a;
}

/* --- elicitation ------------------------------------------------------------------ */

#define ELICIT_MAX_FIELDS 16

/* One field's answer as the schema's type wants it; NULL when it does not parse. */
static json_t *field_value(const json_t *schema, const char *text)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    if (!type || !strcmp(type, "string"))
        return json_string(text);
    if (!strcmp(type, "boolean")) {
        if (!strcmp(text, "y") || !strcmp(text, "yes") || !strcmp(text, "true"))
            return json_true();
        if (!strcmp(text, "n") || !strcmp(text, "no") || !strcmp(text, "false"))
            return json_false();
        return NULL;
    }
    if (!strcmp(type, "integer")) {
        int64_t v;
        return parse_i64(text, INT64_MIN / 2, INT64_MAX / 2, &v) ? json_integer(v) : NULL;
    }
    if (!strcmp(type, "number")) {
        char *end;
        double d = strtod(text, &end);
        return *text && !*end ? json_real(d) : NULL;
    }
    return NULL;
}

static void elicit(struct elicit_hook *h, const struct hook_request *req, hook_done_fn done,
                   void *done_ud)
{
    struct term *t = h->ud;
    const char *msg = json_string_value(json_object_get(req->params, "message"));
    const json_t *props =
        json_object_get(json_object_get(req->params, "requestedSchema"), "properties");
    le_discard_input(t->le);
    fprintf(t->out,
            "%s" FRAME_TOP "hub: the app %s%s%s%s asks you something%s %s(its words, quoted)%s\n",
            term_warn(t), term_bold(t), req->app, term_reset(t), term_warn(t), term_reset(t),
            term_dim(t), term_reset(t));
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s" FRAME "%s" TERM_QUOTE, term_warn(t), term_reset(t));
    struct tt_stream s;
    tt_stream_init(&s, t->out, prefix, BODY_MAX);
    tt_stream_write(&s, msg ? msg : "", msg ? strlen(msg) : 0);
    tt_stream_end(&s);
    fprintf(t->out, "%s" FRAME_END "%s[a] answer  [d] decline  [c] cancel\n", term_warn(t),
            term_reset(t));
    char *line = read_answer(t, "answer\u203a ");
    const char *action = line && !strcmp(line, "a")   ? "accept"
                         : line && !strcmp(line, "c") ? "cancel"
                                                      : "decline";
    free(line);
    json_t *result = json_pack("{s:s}", "action", action);
    if (!strcmp(action, "accept")) {
        json_t *content = json_object();
        const char *key;
        json_t *fs;
        size_t n = 0;
        json_object_foreach((json_t *)props, key, fs)
        {
            if (++n > ELICIT_MAX_FIELDS)
                break;
            char *name = tt_inline_str(key, 40);
            const char *type = json_string_value(json_object_get(fs, "type"));
            char *prompt = xasprintf("%s (%s)\u203a ", name, type ? type : "string");
            free(name);
            for (;;) {
                char *v = read_answer(t, prompt);
                if (!v)
                    break;
                bool empty = v[0] == '\0';
                json_t *val = empty ? NULL : field_value(fs, v);
                free(v);
                if (val)
                    json_object_set_new(content, key, val);
                if (val || empty)
                    break;
                term_hub(t, "that is not a %s; again, or an empty line to skip",
                         type ? type : "value");
            }
            free(prompt);
        }
        json_object_set_new(result, "content", content);
    }
    done(done_ud, result, 0, NULL);
}

static void elicit_free(struct elicit_hook *h)
{
    free(h);
}

struct elicit_hook *term_elicit_hook(struct term *t)
{
    struct elicit_hook *h = xcalloc(1, sizeof(*h));
    h->create = elicit;
    h->free = elicit_free;
    h->ud = t;
    return h;
}
