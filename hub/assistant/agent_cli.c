/* `hub [OPTIONS]` with no sub-command: the personal assistant.
 *
 * On a terminal: a session with line editing and history, the answer streamed as it
 * arrives, the plan and each step shown as the hub's own lines, permission questions
 * in the hub's frame (term.c), and the commands /help /perms /revoke /spokes /history
 * /debug /quit. From a pipe: one request per line, each answer printed (or, with
 * --json, one JSON line per request: agent_result_json()); questions go to the
 * controlling terminal if there is one, else to --answers (default: deny). */
#include "agent.h"
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"
#include "llm/llm.h"
#include "planner.h"
#include "term.h"
#include "termtext.h"
#include "util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cmd_assistant(int argc, char **argv);
void cmd_assistant_usage(FILE *f);

static volatile sig_atomic_t cancel_request;

static void on_sigint(int sig)
{
    (void)sig;
    cancel_request = 1;
}

void cmd_assistant_usage(FILE *f)
{
    fprintf(
        f,
        "With no command, `hub [OPTIONS]` is the assistant: a session on a terminal, or\n"
        "one request per line from a pipe.\n\n"
        "In process and namespace modes the hub plans each request with the LLM, checks\n"
        "the plan, runs each step in its app's sandbox after asking you, and composes the\n"
        "answer in a context that has no tools. In none mode (the baseline) one LLM loop\n"
        "sees every tool and every result and runs what it likes. Permission questions\n"
        "are asked on the terminal (from a pipe: on /dev/tty, else denied) unless\n"
        "--answers scripts them.\n\n"
        "  --llm URL|replay:FILE  an OpenAI-compatible endpoint (default: hub.json llm),\n"
        "                     or recorded answers\n"
        "  --model NAME       the model to ask (default: hub.json llm.model)\n"
        "  --api-key-env VAR  the environment variable holding the API key (default:\n"
        "                     hub.json llm.api_key_env, else OPENAI_API_KEY; unset: no key)\n"
        "  --memory SPEC      none | unix:PATH | HOST:PORT (default: hub.json memory;\n"
        "                     with neither, a private redis-server in the run directory)\n"
        "  --record FILE      record the LLM's answers to FILE (a replay recording)\n"
        "  --json             from a pipe: one JSON result per request line\n"
        "  --extract          offer the planner the extraction step (hub.extract: values\n"
        "                     read out of a result by a model with no tools)\n"
        "  --answer-refs      the answer is written by reference: the model composing it\n"
        "                     sees the results' shape, the hub fills the texts in\n" CLI_COMMON_HELP
        "\nExit status: 0, 1 when a request from a pipe was not answered or a step of it\n"
        "failed (--json: status \"steps-failed\"), 2 usage or configuration error.\n");
}

/* --- output ----------------------------------------------------------------------- */

struct ui {
    struct term t;
    bool tty_out;
    bool json;
    bool show_progress;
    struct tt_stream answer;
    bool streaming;
    bool error_shown; /* this request's error is on the terminal already (an event) */
    struct session *s; /* for the grants a step line names (NULL before the session) */
};

struct session;
static size_t session_grant_number(struct session *s, const char *key);

static int on_answer(void *arg, const char *text, size_t len)
{
    struct ui *u = arg;
    if (!u->streaming) {
        tt_stream_init(&u->answer, u->t.out, u->tty_out ? TERM_QUOTE : "", 0);
        u->streaming = true;
    }
    tt_stream_write(&u->answer, text, len);
    return 0;
}

/* A wait before an LLM retry (a 429's Retry-After can be a minute): one status line,
 * redrawn each second and cleared when the wait ends. */
static void on_wait(void *arg, long left_ms, unsigned attempt, const char *why)
{
    struct ui *u = arg;
    if (!u->show_progress)
        return;
    fputs("\r\x1b[K", u->t.out);
    if (left_ms > 0)
        fprintf(u->t.out,
                "%shub:%s the LLM server turned down attempt %u (%s): trying again in %ld s; "
                "Ctrl-C cancels",
                term_bold(&u->t), term_reset(&u->t), attempt, why, (left_ms + 999) / 1000);
    fflush(u->t.out);
}

static void show_inline(struct ui *u, const char *label, const json_t *v, size_t cols)
{
    char *dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *safe = tt_inline_str(dump ? dump : "", cols);
    term_hub(&u->t, "%s%s%s %s%s", label, term_dim(&u->t), "", safe, term_reset(&u->t));
    free(safe);
    free(dump);
}

static void on_event(void *arg, const char *kind, const json_t *d)
{
    struct ui *u = arg;
    if (!u->show_progress)
        return;
    struct term *t = &u->t;
    const char *tool = json_string_value(json_object_get(d, "tool"));
    const char *id = json_string_value(json_object_get(d, "id"));
    if (!strcmp(kind, "plan")) {
        const json_t *steps = json_object_get(d, "steps");
        size_t n = json_array_size(steps);
        if (n == 0)
            return;
        /* Which steps will ask: a standing grant (this session's, or always) decides
         * the others. */
        size_t granted = 0, refused = 0, i;
        json_t *s;
        json_array_foreach(steps, i, s)
        {
            if (json_object_get(s, "grant"))
                json_is_true(json_object_get(s, "grant_allows")) ? granted++ : refused++;
        }
        char how[160];
        if (granted + refused == 0)
            snprintf(how, sizeof(how), "%s asks before it runs", n == 1 ? "it" : "each");
        else if (granted == n)
            snprintf(how, sizeof(how), "%s already granted: none asks", n == 1 ? "it is" : "all are");
        else if (granted + refused == n && granted == 0)
            snprintf(how, sizeof(how), "%s refused by your grants", n == 1 ? "it is" : "all are");
        else {
            size_t asks = n - granted - refused, off = 0;
            if (asks)
                off += (size_t)snprintf(how + off, sizeof(how) - off, "%zu ask%s before %s runs",
                                        asks, asks == 1 ? "s" : "", asks == 1 ? "it" : "each");
            if (granted)
                off += (size_t)snprintf(how + off, sizeof(how) - off, "%s%zu already granted",
                                        off ? ", " : "", granted);
            if (refused)
                snprintf(how + off, sizeof(how) - off, "%s%zu refused by your grants",
                         off ? ", " : "", refused);
        }
        term_hub(t, "plan (%zu step%s; %s):", n, n == 1 ? "" : "s", how);
        json_array_foreach(steps, i, s)
        {
            const char *g = json_string_value(json_object_get(s, "grant"));
            char note[96] = "";
            if (g)
                snprintf(note, sizeof(note), " (%s)",
                         !json_is_true(json_object_get(s, "grant_allows")) ? "refused: you said never"
                         : !strcmp(g, "session")                          ? "granted for this session"
                                                                          : "granted always");
            char *label = xasprintf("  %s %s%s", json_string_value(json_object_get(s, "id")),
                                    json_string_value(json_object_get(s, "tool")), note);
            show_inline(u, label, json_object_get(s, "arguments"), 100);
            free(label);
        }
    } else if (!strcmp(kind, "plan-refused")) {
        char *safe = tt_inline_str(json_string_value(json_object_get(d, "error")), 400);
        term_hub(t, "%s\u2717%s %s", term_warn(t), term_reset(t), safe);
        free(safe);
        u->error_shown = true; /* the request's error says the same: not twice */
    } else if (!strcmp(kind, "step-done")) {
        const char *outcome = json_string_value(json_object_get(d, "outcome"));
        const char *layer = json_string_value(json_object_get(d, "layer"));
        const char *grant = json_string_value(json_object_get(d, "grant"));
        bool ok = !strcmp(outcome, "ok");
        if (cancel_request && !ok) {
            term_hub(t, "\u2717 %s %s: not run (cancelled)", id, tool);
        } else if (grant) {
            /* Not a fresh "no": say which grant, and how to undo it. */
            char undo[80];
            size_t n = u->s ? session_grant_number(u->s, grant) : 0;
            if (n)
                snprintf(undo, sizeof(undo), "/revoke %zu removes it", n);
            else
                snprintf(undo, sizeof(undo), "/perms lists it, /revoke removes it");
            char cat[16] = "", peer[GRANT_NAME_MAX + 1] = "";
            sscanf(grant, "%15[^|]|%*[^|]|%*[^|]|%64s", cat, peer);
            term_hub(t, "\u2717 %s %s: refused by your standing grant (you said never to %s %s%s%s); %s", id,
                     tool, cat, tool, strcmp(peer, "*") && *peer ? " from " : "",
                     strcmp(peer, "*") && *peer ? peer : "", undo);
        } else if (layer && !strcmp(layer, "grant-store")) {
            term_hub(t, "\u2717 %s %s: not run: your grants cannot be read (the memory is "
                        "unreachable), so the hub cannot know whether you allow it; you denied "
                        "nothing",
                     id, tool);
        } else {
            term_hub(t, "%s %s %s: %s%s%s%s", ok ? "\u2713" : "\u2717", id, tool, outcome,
                     layer ? " (" : "", layer ? layer : "", layer ? ")" : "");
        }
    } else if (!strcmp(kind, "replan")) {
        term_hub(t, "planning again");
    } else if (!strcmp(kind, "tool-call")) {
        char *label = xasprintf("\u25b8 %s", tool);
        show_inline(u, label, json_object_get(d, "arguments"), 100);
        free(label);
    }
}

/* --- commands --------------------------------------------------------------------- */

struct session {
    struct ui *u;
    struct agent *agent;
    struct memory *mem;
    const struct manifest_set *ms;
    const struct hub_config *cfg;
    struct grant *listed; /* the last /perms listing, for /revoke N */
    size_t n_listed;
    const char *private_redis; /* the hub's own redis-server's directory, or NULL */
};

static void cmd_help(struct session *s)
{
    struct term *t = &s->u->t;
    term_hub(t, "type a request, or:");
    term_hub(t, "  /perms            your permission grants (numbered)");
    term_hub(t, "  /revoke N|APP[.TOOL]|all   remove grants");
    term_hub(t, "  /spokes           the installed apps and their tools");
    term_hub(t, "  /history          your last requests and answers");
    term_hub(t, "  /debug            show more (each step's result, debug log) or less");
    term_hub(t, "  /quit             end the session (also Ctrl-D)");
    term_hub(t, "questions from the hub appear in a frame; app text is quoted after \"\u250a\".");
}

static void cmd_perms(struct session *s)
{
    struct term *t = &s->u->t;
    char err[300];
    free(s->listed);
    s->listed = NULL;
    s->n_listed = 0;
    if (memory_grant_list(s->mem, agent_user(s->agent), &s->listed, &s->n_listed, err,
                          sizeof(err)) < 0) {
        term_hub(t, "grants cannot be read: %s", err);
        return;
    }
    if (s->n_listed == 0) {
        term_hub(t, "no grants: every action is asked");
        return;
    }
    for (size_t i = 0; i < s->n_listed; i++) {
        const struct grant *g = &s->listed[i];
        char peer[120] = "";
        if (g->category == GRANT_DATA)
            snprintf(peer, sizeof(peer), "  from %s",
                     strcmp(g->peer, PERMS_MEMORY_PEER) == 0 ? "your earlier conversation"
                                                             : g->peer);
        else if (g->category == GRANT_COLLAB)
            snprintf(peer, sizeof(peer), "  called by %s", g->peer);
        term_hub(t, "%2zu. %-7s %-6s %s.%s%s", i + 1, grant_scope_name(g->scope),
                 grant_category_name(g->category), g->app,
                 strcmp(g->tool, "*") == 0 ? "(all tools)" : g->tool, peer);
    }
}

/* The grant with key "category|app|tool|peer" in a fresh listing (which /revoke N
 * then uses): its number, or 0 when it is not there or the grants cannot be read. */
static size_t session_grant_number(struct session *s, const char *key)
{
    struct grant *list = NULL;
    size_t n = 0, found = 0;
    char err[300];
    if (memory_grant_list(s->mem, agent_user(s->agent), &list, &n, err, sizeof(err)) < 0)
        return 0;
    for (size_t i = 0; i < n && !found; i++) {
        char k[4 * (GRANT_NAME_MAX + 1)];
        snprintf(k, sizeof(k), "%s|%s|%s|%s", grant_category_name(list[i].category), list[i].app,
                 list[i].tool, list[i].peer);
        if (strcmp(k, key) == 0)
            found = i + 1;
    }
    free(s->listed);
    s->listed = list;
    s->n_listed = n;
    return found;
}

static void cmd_revoke(struct session *s, const char *arg)
{
    struct term *t = &s->u->t;
    char err[300];
    int n;
    uint64_t idx;
    if (!*arg) {
        term_hub(t, "/revoke N (from /perms), /revoke APP, /revoke APP.TOOL or /revoke all");
        return;
    }
    const char *user = agent_user(s->agent);
    if (!strcmp(arg, "all")) {
        n = memory_grant_revoke(s->mem, user, -1, NULL, NULL, NULL, err, sizeof(err));
    } else if (parse_u64(arg, 1, 100000, &idx)) {
        if (idx > s->n_listed) {
            term_hub(t, "no grant %llu in the last /perms listing", (unsigned long long)idx);
            return;
        }
        const struct grant *g = &s->listed[idx - 1];
        n = memory_grant_revoke(s->mem, user, (int)g->category, g->app, g->tool, g->peer, err,
                                sizeof(err));
    } else {
        char app[MANIFEST_NAME_MAX + 1], tool[MANIFEST_NAME_MAX + 1];
        if (strchr(arg, '.')) {
            if (!manifest_split_name(arg, app, sizeof(app), tool, sizeof(tool), err, sizeof(err))) {
                term_hub(t, "%s", err);
                return;
            }
        } else if (!manifest_valid_app_name(arg)) {
            term_hub(t, "not an app name");
            return;
        } else {
            str_copy(app, arg, sizeof(app));
        }
        n = memory_grant_revoke(s->mem, user, -1, app, strchr(arg, '.') ? tool : NULL, NULL, err,
                                sizeof(err));
    }
    if (n < 0) {
        term_hub(t, "revoke failed: %s", err);
    } else if (n == 0 && strcmp(arg, "all") != 0) {
        /* Say why nothing went: a typo reads differently from an app without grants. */
        char app[MANIFEST_NAME_MAX + 1];
        snprintf(app, sizeof(app), "%.*s", (int)strcspn(arg, "."), arg);
        const struct manifest *m = manifest_find(s->ms, app);
        const char *tool = strchr(arg, '.') ? strchr(arg, '.') + 1 : NULL;
        bool tool_known = false;
        for (size_t i = 0; m && tool && i < m->n_tools; i++)
            tool_known = tool_known || strcmp(m->tools[i].name, tool) == 0;
        if (!m)
            term_hub(t, "no app named %s is installed and no grant names it: nothing removed "
                        "(/spokes lists the apps, /perms the grants)", app);
        else if (tool && !tool_known && strcmp(tool, "*") != 0)
            term_hub(t, "the app %s has no tool named %s and no grant names it: nothing removed "
                        "(/perms lists the grants)", app, tool);
        else
            term_hub(t, "no grant for %s: nothing removed (/perms lists the grants)", arg);
    } else {
        term_hub(t, "%d grant%s removed", n, n == 1 ? "" : "s");
    }
}

static void cmd_spokes(struct session *s)
{
    struct term *t = &s->u->t;
    for (size_t i = 0; i < s->ms->n; i++) {
        const struct manifest *m = s->ms->v[i];
        char *desc = tt_inline_str(m->description, 100);
        term_hub(t, "%s%s%s %s(network: %s)%s", term_bold(t), m->name, term_reset(t), term_dim(t),
                 m->n_allow ? m->allow[0] : "none", term_reset(t));
        fprintf(t->out, TERM_QUOTE "%s\n", desc);
        free(desc);
        for (size_t j = 0; j < m->n_tools; j++) {
            char *td = tt_inline_str(m->tools[j].description, 90);
            term_hub(t, "  .%s%s", m->tools[j].name,
                     m->tools[j].irreversible ? " (irreversible)" : "");
            fprintf(t->out, TERM_QUOTE "  %s\n", td);
            free(td);
        }
    }
}

static void cmd_history(struct session *s)
{
    struct term *t = &s->u->t;
    struct memory_msg *msgs = NULL;
    size_t n = 0;
    char err[300];
    if (memory_history_last(s->mem, agent_user(s->agent), 10, &msgs, &n, err, sizeof(err)) < 0) {
        term_hub(t, "history cannot be read: %s", err);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char *safe = tt_inline_str(msgs[i].text, 110);
        term_hub(t, "%-9s", msgs[i].role);
        fprintf(t->out, TERM_QUOTE "%s\n", safe);
        free(safe);
    }
    if (n == 0)
        term_hub(t, "no history yet");
    memory_msgs_free(msgs, n);
}

/* true when the line was a command (handled); *quit set for /quit. */
static bool command(struct session *s, const char *line, bool *quit)
{
    if (line[0] != '/')
        return false;
    const char *arg = line + strcspn(line, " ");
    size_t n = (size_t)(arg - line);
    while (*arg == ' ')
        arg++;
#define IS(name) (n == strlen(name) && strncmp(line, name, n) == 0)
    if (IS("/quit") || IS("/exit"))
        *quit = true;
    else if (IS("/help") || IS("/?"))
        cmd_help(s);
    else if (IS("/perms"))
        cmd_perms(s);
    else if (IS("/revoke"))
        cmd_revoke(s, arg);
    else if (IS("/spokes"))
        cmd_spokes(s);
    else if (IS("/history"))
        cmd_history(s);
    else if (IS("/debug")) {
        s->u->t.verbose = !s->u->t.verbose;
        log_set_debug(s->u->t.verbose);
        term_hub(&s->u->t, "debug %s", s->u->t.verbose ? "on: each step's result is shown" : "off");
    } else
        term_hub(&s->u->t, "unknown command; /help lists them");
#undef IS
    return true;
}

/* --- one request ----------------------------------------------------------------- */

/* When no answer could be composed (the model failed at the answer step), what the
 * steps that ran returned: the user still gets the result, as quoted data. */
static void show_results(struct ui *u, const struct agent_result *res)
{
    bool any = false;
    size_t i;
    json_t *c;
    json_array_foreach(res->calls, i, c)
    {
        const json_t *r = json_object_get(c, "result");
        if (!r)
            continue;
        const char *step = json_string_value(json_object_get(c, "step"));
        const char *tool = json_string_value(json_object_get(c, "tool"));
        json_t *v = plan_result_value(r);
        if (u->tty_out) {
            if (!any)
                term_hub(&u->t, "no answer was composed; what the steps returned (data, quoted):");
            term_hub(&u->t, "  %s%s%s:", step ? step : "", step ? " " : "", tool);
            term_quote_json(&u->t, TERM_QUOTE, v, 8192);
        } else {
            if (!any)
                fprintf(stderr, "hub: no answer was composed; what the steps returned is on "
                                "stdout\n");
            char *dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            char *safe = tt_inline_str(dump ? dump : "null", 8192);
            printf("%s%s%s: %s\n", step ? step : "", step ? " " : "", tool, safe);
            free(safe);
            free(dump);
        }
        json_decref(v);
        any = true;
    }
}

/* Tool calls an LLM asked for where none may run (the answer step) or that name no
 * installed tool (none mode): not run, and said, with the call quoted as data. */
static void show_ignored_calls(struct ui *u, const struct agent_result *res)
{
    size_t i;
    json_t *c;
    json_array_foreach(res->ignored_tool_calls, i, c)
    {
        bool merge = !strcmp(json_string_value(json_object_get(c, "context")), "merge");
        const char *what = merge ? "the model asked to call a tool while composing the answer; "
                                   "it was not run (that step has no tools):"
                                 : "the model asked for a tool that is not installed; it was not "
                                   "run:";
        char *args = json_dumps(json_object_get(c, "arguments"), JSON_COMPACT | JSON_ENCODE_ANY);
        char *line = xasprintf("%s %s", json_string_value(json_object_get(c, "name")),
                               args ? args : "{}");
        char *safe = tt_inline_str(line, 400);
        if (u->tty_out) {
            term_hub(&u->t, "%s!%s %s", term_warn(&u->t), term_reset(&u->t), what);
            fprintf(u->t.out, TERM_QUOTE "%s\n", safe);
        } else {
            fprintf(stderr, "hub: %s\n" TERM_QUOTE "%s\n", what, safe);
        }
        free(safe);
        free(line);
        free(args);
    }
}

/* The request's error as the hub's line; an LLM server's own words in it (its error
 * message) after it as quoted data, never as part of the hub's line. */
static void show_error(struct ui *u, const struct agent_result *res)
{
    size_t hub_len = strlen(res->error);
    const char *said = res->error_detail[0] ? strstr(res->error, LLM_SERVER_SAID) : NULL;
    if (said)
        hub_len = (size_t)(said - res->error);
    char *hub = xstrndup(res->error, hub_len);
    char *safe = tt_inline_str(hub, 600);
    const char *tail = said ? "; the server said:" : "";
    if (u->tty_out)
        term_hub(&u->t, "%s\u2717%s %s%s", term_warn(&u->t), term_reset(&u->t), safe, tail);
    else
        fprintf(stderr, "hub: %s%s\n", safe, tail);
    if (said) {
        char *data = tt_inline_str(res->error_detail, 600);
        fprintf(u->tty_out ? u->t.out : stderr, TERM_QUOTE "%s\n", data);
        free(data);
    }
    free(safe);
    free(hub);
}

/* The hub's own redis-server, when it has one, is started again if it stopped (it
 * owns it): otherwise every request would wait out the reconnect window and fail. */
static void revive_memory(struct session *s)
{
    char err[1024];
    if (!s->private_redis)
        return;
    int rc = agent_memory_revive_private(s->private_redis, err, sizeof(err));
    if (rc == 0)
        return;
    if (rc > 0)
        snprintf(err, sizeof(err),
                 "the hub's private redis-server (%s) was not running: started it again",
                 s->private_redis);
    if (s->u->tty_out)
        term_hub(&s->u->t, "%s!%s %s", term_warn(&s->u->t), term_reset(&s->u->t), err);
    else
        fprintf(stderr, "hub: %s\n", err);
}

static bool run_request(struct session *s, const char *line)
{
    struct ui *u = s->u;
    revive_memory(s);
    cancel_request = 0;
    u->streaming = false;
    u->error_shown = false;
    struct agent_result res;
    le_quiet(u->t.le, true); /* no echo of type-ahead or "^C" while it runs */
    int rc = agent_run(s->agent, line, &res);
    le_quiet(u->t.le, false);
    if (rc < 0 && cancel_request && !u->json) {
        /* Ctrl-C: one line says so (the LLM's or a step's "cancelled" would repeat it). */
        res.error_detail[0] = '\0';
        snprintf(res.error, sizeof(res.error), "request cancelled (Ctrl-C)");
    }
    if (u->json) {
        json_t *j = agent_result_json(&res);
        char *text = json_dumps(j, JSON_COMPACT);
        printf("%s\n", text ? text : "{}");
        fflush(stdout);
        free(text);
        json_decref(j);
    } else {
        if (!u->streaming && res.answer)
            on_answer(u, res.answer, strlen(res.answer));
        if (u->streaming)
            tt_stream_end(&u->answer);
        if (u->t.verbose && u->show_progress) {
            size_t i;
            json_t *c;
            json_array_foreach(res.calls, i, c)
            {
                const json_t *r = json_object_get(c, "result");
                if (!r)
                    continue;
                term_hub(&u->t, "result of %s:", json_string_value(json_object_get(c, "tool")));
                term_quote_json(&u->t, TERM_QUOTE, r, 8192);
            }
        }
        if (rc < 0 && !u->error_shown)
            show_error(u, &res);
        if (!res.answer && !(u->t.verbose && u->show_progress))
            show_results(u, &res);
        show_ignored_calls(u, &res);
        size_t i;
        json_t *w;
        if (!u->tty_out && res.status == AGENT_STEPS_FAILED)
            fprintf(stderr, "hub: %zu step%s failed (--json shows each)\n",
                    agent_steps_failed(&res), agent_steps_failed(&res) == 1 ? "" : "s");
        json_array_foreach(res.warnings, i, w)
        {
            char *safe = tt_inline_str(json_string_value(w), 600);
            if (u->tty_out)
                term_hub(&u->t, "%s!%s %s", term_warn(&u->t), term_reset(&u->t), safe);
            else
                fprintf(stderr, "hub: warning: %s\n", safe);
            free(safe);
        }
    }
    bool answered = rc == 0 && res.status == AGENT_OK;
    agent_result_free(&res);
    return answered;
}

static void seed_history(struct session *s, struct lineedit *le)
{
    struct memory_msg *msgs = NULL;
    size_t n = 0;
    char err[300];
    if (memory_history_last(s->mem, agent_user(s->agent), 200, &msgs, &n, err, sizeof(err)) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(msgs[i].role, "user") && !strchr(msgs[i].text, '\n'))
            le_history_add(le, msgs[i].text);
    memory_msgs_free(msgs, n);
}

int cmd_assistant(int argc, char **argv)
{
    static const struct option opts[] = {{"llm", required_argument, NULL, 'l'},
                                         CLI_LLM_OPTIONS,
                                         {"memory", required_argument, NULL, 'm'},
                                         {"record", required_argument, NULL, 'r'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"extract", no_argument, NULL, 'x'},
                                         {"answer-refs", no_argument, NULL, 'A'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = cmd_assistant_usage};
    const char *llm_spec = NULL, *mem_spec = NULL, *record = NULL;
    bool json = false, extract = false, answer_refs = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'l':
            llm_spec = optarg;
            break;
        case 'm':
            mem_spec = optarg;
            break;
        case 'r':
            record = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'x':
            extract = true;
            break;
        case 'A':
            answer_refs = true;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT) /* `hub --help` is main.c's; this one after other options */
        return a.exit;
    if (optind < argc) {
        log_warnx("unexpected argument \"%s\" (the assistant reads requests from its input)",
                  argv[optind]);
        cmd_assistant_usage(stderr);
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    char err[1024];
    struct agent_limits limits;
    if (rc == EXIT_OK && agent_config_limits(&cfg, &limits, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        rc = EXIT_USAGE;
    }
    struct event_base *base = NULL;
    struct hub *h = NULL;
    struct llm *llm = NULL;
    struct memory *mem = NULL;
    struct private_redis *private_redis = NULL;
    struct answers *answers = NULL;
    struct perm_asker *asker = NULL;
    struct lineedit *le = le_new(STDIN_FILENO, STDOUT_FILENO);
    struct lineedit *tty_le = NULL;
    int tty_fd = -1;
    FILE *tty_out = NULL;
    struct agent *agent = NULL;
    struct policy *policy = NULL;
    struct ui u = {0};
    struct session s = {0};
    if (rc != EXIT_OK)
        goto out;

    if (!(h = cli_hub_new(&a.common, &cfg, &ms, &base))) {
        rc = EXIT_USAGE;
        goto out;
    }
    llm = agent_llm_open(&cfg, llm_spec, hub_audit(h), a.common.debug, err, sizeof(err));
    if (!llm) {
        fprintf(stderr, "hub: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    if (record) {
        struct llm *rec = llm_record_open(llm, record, err, sizeof(err));
        if (!rec) {
            log_warnx("--record: %s", err);
            rc = EXIT_USAGE;
            goto out;
        }
        llm = rec;
    }
    mem = agent_memory_open(&cfg, mem_spec, &private_redis, err, sizeof(err));
    if (!mem) {
        fprintf(stderr, "hub: memory: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    memory_set_audit(mem, hub_audit(h)); /* a Redis failover is on record */
    hub_set_first_seen(h, memory_first_seen_hook, mem);

    bool interactive = le_is_tty(le) && !json;
    u.json = json;
    u.tty_out = isatty(STDOUT_FILENO);
    u.show_progress = u.tty_out && !json;
    term_init(&u.t, stdout, le);
    if (a.common.answers) {
        answers = answers_load(a.common.answers, err, sizeof(err));
        if (!answers) {
            log_warnx("--answers: %s", err);
            rc = EXIT_USAGE;
            goto out;
        }
        asker = perm_asker_scripted(answers);
        hub_set_elicit_hook(h, answers_elicit_hook(answers));
    } else if (interactive) {
        asker = term_asker(&u.t);
        hub_set_elicit_hook(h, term_elicit_hook(&u.t));
    } else if ((tty_fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)) >= 0 &&
               (tty_out = fdopen(tty_fd, "w")) != NULL) {
        /* Requests from a pipe, questions to the user's terminal. */
        tty_le = le_new(tty_fd, tty_fd);
        static struct term tty_term;
        term_init(&tty_term, tty_out, tty_le);
        asker = term_asker(&tty_term);
        hub_set_elicit_hook(h, term_elicit_hook(&tty_term));
    } else {
        if (tty_fd >= 0)
            close(tty_fd);
        tty_fd = -1;
        log_warnx("no terminal to ask permission questions on: each is denied (use --answers)");
        answers = answers_load("deny", err, sizeof(err));
        asker = perm_asker_scripted(answers);
    }

    struct agent_options ao = {
        .user = cfg.user,
        .limits = limits,
        .debug = a.common.debug,
        .on_answer = json ? NULL : on_answer,
        .answer_arg = &u,
        .on_event = on_event,
        .event_arg = &u,
        .cancel = &cancel_request,
        .on_wait = on_wait,
        .wait_arg = &u,
    };
    /* hub.json's "policies" and the manifests' "policy" blocks decide before asking. */
    policy = policy_for_hub(cfg.policies, &ms, err, sizeof(err));
    if (!policy && err[0]) {
        log_warnx("policies: %s", err);
        rc = EXIT_USAGE;
        goto out;
    }
    ao.policy = policy;
    ao.extract = extract;
    ao.answer_refs = answer_refs;
    agent = agent_new(h, base, &cfg, &ms, llm, mem, asker, &ao, err, sizeof(err));
    if (!agent) {
        log_warnx("%s", err);
        rc = EXIT_USAGE;
        goto out;
    }
    s = (struct session){
        .u = &u, .agent = agent, .mem = mem, .ms = &ms, .cfg = &cfg, .private_redis = agent_private_redis_dir(private_redis)};
    u.s = &s;
    if (interactive) {
        u.t.cancel = &cancel_request; /* Ctrl-C at a question cancels the request too */
        /* Ctrl-C while a request runs stops it (at the prompt it is a key). */
        struct sigaction sa = {.sa_handler = on_sigint};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        seed_history(&s, le);
        term_hub(&u.t, "IsolateGPT-C assistant for %s%s%s, isolation %s", term_bold(&u.t),
                 agent_user(agent), term_reset(&u.t), isolation_name(cfg.isolation));
        term_hub(&u.t, "LLM %s; memory %s", llm_describe(llm), memory_describe(mem));
        term_hub(&u.t, "type a request, or /help");
    }
    bool all_ok = true;
    char prompt[64];
    snprintf(prompt, sizeof(prompt), "%syou\u203a%s ", term_bold(&u.t), term_reset(&u.t));
    for (;;) {
        char *line = NULL;
        enum le_status st = le_read(le, prompt, 5, &line);
        if (st == LE_EOF)
            break;
        if (st == LE_INTERRUPT) {
            free(line);
            continue;
        }
        size_t n = strlen(line);
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = '\0';
        const char *req = line + strspn(line, " \t");
        bool quit = false;
        if (*req && !command(&s, req, &quit)) {
            le_history_add(le, req);
            all_ok = run_request(&s, req) && all_ok;
        }
        free(line);
        if (quit || hub_quit_requested(h))
            break;
    }
    rc = all_ok || interactive ? EXIT_OK : 1;
out:
    free(s.listed);
    if (h)
        hub_free(h); /* before the agent: its hooks point at it */
    agent_free(agent);
    policy_free(policy);
    if (asker)
        asker->free(asker);
    answers_free(answers);
    le_free(tty_le);
    if (tty_out)
        fclose(tty_out);
    llm_close(llm);
    memory_close(mem);
    agent_memory_release_private(private_redis);
    if (base)
        event_base_free(base);
    le_free(le);
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
