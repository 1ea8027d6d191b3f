#include "mcp_server.h"
#include "jsonrpc.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SDK_MAX_FRAME (4 * 1024 * 1024)
/* Requests to the hub nested inside each other (a handler that calls back while the
 * hub calls it again for another chain) are bounded. */
#define SDK_MAX_NESTING 8

struct sdk_tool {
    char *name;
    char *description;
    json_t *input_schema;
    json_t *output_schema;
    mcp_tool_fn fn;
    void *ud;
};

struct sdk_method {
    char *method;
    char *capability;
    mcp_method_fn fn;
    void *ud;
};

struct mcp_server {
    char *name, *version;
    struct sdk_tool *tools;
    size_t n_tools;
    struct sdk_method *methods;
    size_t n_methods;
    const json_t *call_meta; /* the tools/call being served */
    const json_t *call_id;   /* its JSON-RPC id (or a method's), named in requests to the hub */
    int in_fd, out_fd;
    struct line_reader lr;
    json_int_t next_id;
    int nesting;
    /* Requests to the hub waiting for their answers, innermost last: an answer to an
     * outer one that comes while an inner call is served is kept for it. */
    json_int_t waiting[SDK_MAX_NESTING];
    json_t *answers[SDK_MAX_NESTING];
    bool broken;
    const char *data_dir;
    const char *spoke_name;
};

static void die(const char *what)
{
    fprintf(stderr, "mcp sdk: %s\n", what);
    abort();
}

struct mcp_server *mcp_server_new(const char *name, const char *version)
{
    struct mcp_server *s = xcalloc(1, sizeof(*s));
    s->name = xstrdup(name);
    s->version = xstrdup(version);
    s->in_fd = STDIN_FILENO;
    /* Protocol frames get a private copy of stdout; fd 1 becomes stderr so that a
     * stray printf lands in the log instead of corrupting the stream. */
    s->out_fd = dup(STDOUT_FILENO);
    if (s->out_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        die("cannot set up stdout");
    set_cloexec(s->out_fd, true);
    lr_init(&s->lr, SDK_MAX_FRAME);
    s->next_id = 1;
    const char *d = getenv("SPOKE_DATA");
    s->data_dir = d && *d ? d : ".";
    const char *n = getenv("SPOKE_NAME");
    s->spoke_name = n && *n ? n : s->name;
    return s;
}

void mcp_server_add_tool(struct mcp_server *s, const char *name, const char *description,
                         const char *input_schema, const char *output_schema, mcp_tool_fn fn,
                         void *ud)
{
    json_error_t e;
    json_t *in = json_loads(input_schema, 0, &e);
    json_t *out = output_schema ? json_loads(output_schema, 0, &e) : NULL;
    if (!json_is_object(in) || (output_schema && !json_is_object(out)))
        die("a tool schema is not a JSON object");
    s->tools = xrealloc(s->tools, (s->n_tools + 1) * sizeof(*s->tools));
    s->tools[s->n_tools++] = (struct sdk_tool){.name = xstrdup(name),
                                               .description = xstrdup(description),
                                               .input_schema = in,
                                               .output_schema = out,
                                               .fn = fn,
                                               .ud = ud};
}

void mcp_server_free(struct mcp_server *s)
{
    for (size_t i = 0; i < s->n_tools; i++) {
        free(s->tools[i].name);
        free(s->tools[i].description);
        json_decref(s->tools[i].input_schema);
        json_decref(s->tools[i].output_schema);
    }
    free(s->tools);
    for (size_t i = 0; i < s->n_methods; i++) {
        free(s->methods[i].method);
        free(s->methods[i].capability);
    }
    free(s->methods);
    lr_free(&s->lr);
    close(s->out_fd);
    free(s->name);
    free(s->version);
    free(s);
}

const char *mcp_data_dir(const struct mcp_server *s)
{
    return s->data_dir;
}

const char *mcp_spoke_name(const struct mcp_server *s)
{
    return s->spoke_name;
}

void mcp_server_add_method(struct mcp_server *s, const char *method, const char *capability,
                           mcp_method_fn fn, void *ud)
{
    s->methods = xrealloc(s->methods, (s->n_methods + 1) * sizeof(*s->methods));
    struct sdk_method *m = &s->methods[s->n_methods++];
    m->method = xstrdup(method);
    m->capability = capability ? xstrdup(capability) : NULL;
    m->fn = fn;
    m->ud = ud;
}

const json_t *mcp_call_meta(const struct mcp_server *s)
{
    return s->call_meta;
}

static int send_msg(struct mcp_server *s, json_t *msg);

int mcp_notify(struct mcp_server *s, const char *method, json_t *params_stolen)
{
    return send_msg(s, jrpc_notification(method, params_stolen));
}

int mcp_server_raw_out_fd(const struct mcp_server *s)
{
    return s->out_fd;
}

/* ---- results ---- */

json_t *mcp_text_result(const char *text)
{
    return json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text);
}

json_t *mcp_structured_result(json_t *structured)
{
    char *text = json_dumps(structured, JSON_COMPACT);
    json_t *r = json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text",
                          text ? text : "", "structuredContent", structured);
    free(text);
    return r;
}

json_t *mcp_error_result(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", msg, "isError", 1);
}

/* ---- transport ---- */

static int send_msg(struct mcp_server *s, json_t *msg)
{
    if (jrpc_send(s->out_fd, msg) < 0) {
        s->broken = true;
        return -1;
    }
    return 0;
}

/* The next frame, parsed: 1, 0 at end of input, -1 on a broken stream. */
static int next_msg(struct mcp_server *s, struct jrpc_msg *msg)
{
    for (;;) {
        const char *line;
        size_t len;
        enum lr_status st = lr_next(&s->lr, &line, &len);
        if (st == LR_TOO_LONG) {
            fprintf(stderr, "mcp sdk: frame from the hub too long\n");
            return -1;
        }
        if (st == LR_LINE) {
            if (len == 0)
                continue;
            int code;
            char err[200];
            if (jrpc_parse(line, len, msg, &code, err, sizeof(err)) < 0) {
                /* Answer what can be answered and go on: the hub is trusted, but a
                 * library should not die on one bad line. */
                send_msg(s, jrpc_error(NULL, code, err, NULL));
                continue;
            }
            return 1;
        }
        ssize_t n = lr_fill(&s->lr, s->in_fd);
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* ---- serving ---- */

static json_t *tools_list(struct mcp_server *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->n_tools; i++) {
        json_t *t = json_pack("{s:s,s:s,s:O}", "name", s->tools[i].name, "description",
                              s->tools[i].description, "inputSchema", s->tools[i].input_schema);
        if (s->tools[i].output_schema)
            json_object_set(t, "outputSchema", s->tools[i].output_schema);
        json_array_append_new(arr, t);
    }
    return json_pack("{s:o}", "tools", arr);
}

static void handle_call(struct mcp_server *s, struct jrpc_msg *m)
{
    const char *name = json_string_value(json_object_get(m->params, "name"));
    json_t *args = json_object_get(m->params, "arguments");
    struct sdk_tool *t = NULL;
    for (size_t i = 0; name && i < s->n_tools; i++)
        if (strcmp(s->tools[i].name, name) == 0)
            t = &s->tools[i];
    if (!t) {
        send_msg(s, jrpc_error(m->id, JRPC_INVALID_PARAMS, "unknown tool", NULL));
        return;
    }
    json_t *empty = NULL;
    if (!json_is_object(args))
        args = empty = json_object();
    json_t *result = NULL;
    /* The hub may send another call while this one waits on the hub (nested): each
     * call restores the one it interrupted. */
    const json_t *outer_meta = s->call_meta, *outer_id = s->call_id;
    s->call_meta = json_object_get(m->params, "_meta");
    s->call_id = m->id;
    int rc = t->fn(s, args, &result, t->ud);
    s->call_meta = outer_meta;
    s->call_id = outer_id;
    json_decref(empty);
    if (!result)
        result = mcp_error_result("%s failed%s", t->name, rc == 0 ? " without a result" : "");
    send_msg(s, jrpc_result(m->id, result));
}

/* A method added with mcp_server_add_method(); false when there is none. */
static bool handle_method(struct mcp_server *s, struct jrpc_msg *m)
{
    for (size_t i = 0; i < s->n_methods; i++) {
        if (strcmp(s->methods[i].method, m->method) != 0)
            continue;
        json_t *empty = NULL, *result = NULL;
        const json_t *params = m->params ? m->params : (empty = json_object());
        const json_t *outer_meta = s->call_meta, *outer_id = s->call_id;
        s->call_meta = NULL;
        s->call_id = m->id;
        int rc = s->methods[i].fn(s, params, &result, s->methods[i].ud);
        s->call_meta = outer_meta;
        s->call_id = outer_id;
        json_decref(empty);
        if (rc == 0 && result) {
            send_msg(s, jrpc_result(m->id, result));
        } else {
            const char *why = json_string_value(result);
            send_msg(s,
                     jrpc_error(m->id, rc ? rc : JRPC_INTERNAL_ERROR, why ? why : "failed", NULL));
            json_decref(result);
        }
        return true;
    }
    return false;
}

static void dispatch(struct mcp_server *s, struct jrpc_msg *m)
{
    if (m->kind == JRPC_NOTIFICATION || m->kind == JRPC_RESULT || m->kind == JRPC_ERROR)
        return; /* initialized, cancelled, or an answer to nobody */
    if (strcmp(m->method, "initialize") == 0) {
        json_t *r = json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion",
                              MCP_SDK_PROTOCOL_VERSION, "capabilities", "tools", "serverInfo",
                              "name", s->name, "version", s->version);
        json_t *caps = json_object_get(r, "capabilities");
        for (size_t i = 0; i < s->n_methods; i++)
            if (s->methods[i].capability)
                json_object_set_new(caps, s->methods[i].capability, json_object());
        send_msg(s, jrpc_result(m->id, r));
    } else if (strcmp(m->method, "tools/list") == 0) {
        send_msg(s, jrpc_result(m->id, tools_list(s)));
    } else if (strcmp(m->method, "tools/call") == 0) {
        handle_call(s, m);
    } else if (strcmp(m->method, "ping") == 0) {
        send_msg(s, jrpc_result(m->id, json_object()));
    } else if (handle_method(s, m)) {
        return;
    } else {
        send_msg(s, jrpc_error(m->id, JRPC_METHOD_NOT_FOUND, "method not found", NULL));
    }
}

int mcp_server_run(struct mcp_server *s)
{
    for (;;) {
        struct jrpc_msg m;
        int rc = next_msg(s, &m);
        if (rc <= 0)
            return rc < 0 ? 1 : 0;
        dispatch(s, &m);
        jrpc_msg_free(&m);
        if (s->broken)
            return 1;
    }
}

/* ---- calls to the hub ---- */

int mcp_request(struct mcp_server *s, const char *method, json_t *params_stolen, json_t **result,
                char *err, size_t errlen)
{
    *result = NULL;
    if (s->nesting >= SDK_MAX_NESTING) {
        json_decref(params_stolen);
        snprintf(err, errlen, "requests to the hub nested too deeply");
        return JRPC_INTERNAL_ERROR;
    }
    json_int_t id = s->next_id++;
    /* The call this request is made for: with several calls in flight the hub cannot
     * tell otherwise (MCP's stdio transport carries no association of its own). */
    if (s->call_id && json_is_object(params_stolen) && !json_object_get(params_stolen, "_meta"))
        json_object_set_new(params_stolen, "_meta",
                            json_pack("{s:O}", "relatedRequestId", s->call_id));
    if (send_msg(s, jrpc_request(id, method, params_stolen)) < 0) {
        snprintf(err, errlen, "cannot write to the hub");
        return JRPC_INTERNAL_ERROR;
    }
    int level = s->nesting++;
    s->waiting[level] = id;
    s->answers[level] = NULL;
    int code = JRPC_INTERNAL_ERROR;
    snprintf(err, errlen, "the hub closed the connection");
    for (;;) {
        json_t *kept = s->answers[level];
        if (kept) {
            /* Came while a call nested inside this wait was served. */
            s->answers[level] = NULL;
            json_t *res = json_object_get(kept, "result"), *e = json_object_get(kept, "error");
            if (res) {
                *result = json_incref(res);
                code = 0;
                err[0] = '\0';
            } else {
                const char *text = json_string_value(json_object_get(e, "message"));
                code = (int)json_integer_value(json_object_get(e, "code"));
                snprintf(err, errlen, "%s", text ? text : "error");
            }
            json_decref(kept);
            break;
        }
        struct jrpc_msg m;
        if (next_msg(s, &m) <= 0)
            break;
        bool answer = (m.kind == JRPC_RESULT || m.kind == JRPC_ERROR) && json_is_integer(m.id);
        bool mine = answer && json_integer_value(m.id) == id;
        if (!mine) {
            int outer = -1;
            for (int i = 0; answer && i < level; i++)
                if (s->waiting[i] == json_integer_value(m.id))
                    outer = i;
            if (outer >= 0 && !s->answers[outer])
                s->answers[outer] = json_incref(m.root);
            else
                dispatch(s, &m); /* the hub may ask something meanwhile (a ping, a call) */
            jrpc_msg_free(&m);
            continue;
        }
        if (m.kind == JRPC_RESULT) {
            *result = json_incref(m.result);
            code = 0;
            err[0] = '\0';
        } else {
            code = (int)m.error_code;
            snprintf(err, errlen, "%s", m.error_message);
        }
        jrpc_msg_free(&m);
        break;
    }
    s->nesting--;
    return code;
}

int mcp_isolate_call(struct mcp_server *s, const char *tool, const json_t *args, json_t **result,
                     char *err, size_t errlen)
{
    json_t *params = json_pack("{s:s,s:O}", "tool", tool, "arguments", args);
    return mcp_request(s, "isolate/call", params, result, err, errlen);
}

int mcp_sample(struct mcp_server *s, const char *prompt, int max_tokens, json_t **result, char *err,
               size_t errlen)
{
    json_t *params = json_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages", "role", "user", "content",
                               "type", "text", "text", prompt, "maxTokens", max_tokens);
    return mcp_request(s, "sampling/createMessage", params, result, err, errlen);
}

int mcp_elicit(struct mcp_server *s, const char *message, const json_t *requested_schema,
               json_t **result, char *err, size_t errlen)
{
    json_t *params =
        json_pack("{s:s,s:O}", "message", message, "requestedSchema", requested_schema);
    return mcp_request(s, "elicitation/create", params, result, err, errlen);
}
