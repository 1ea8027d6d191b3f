#include "jsonrpc.h"
#include "jsonline.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lr_init(struct line_reader *lr, size_t max_line)
{
    memset(lr, 0, sizeof(*lr));
    lr->max = max_line;
}

void lr_free(struct line_reader *lr)
{
    free(lr->buf);
    memset(lr, 0, sizeof(*lr));
}

size_t lr_pending(const struct line_reader *lr)
{
    return lr->len - lr->start;
}

/* Drops returned lines from the front so that the buffer never holds more than one
 * maximum line plus its newline. */
static void lr_compact(struct line_reader *lr)
{
    if (lr->start == 0)
        return;
    memmove(lr->buf, lr->buf + lr->start, lr->len - lr->start);
    lr->len -= lr->start;
    lr->start = 0;
}

static size_t lr_capacity(const struct line_reader *lr)
{
    return lr->max + 1; /* a full line and its '\n' */
}

static void lr_reserve(struct line_reader *lr)
{
    if (!lr->buf)
        lr->buf = xmalloc(lr_capacity(lr));
}

ssize_t lr_fill(struct line_reader *lr, int fd)
{
    lr_reserve(lr);
    lr_compact(lr);
    size_t room = lr_capacity(lr) - lr->len;
    if (room == 0) {
        errno = ENOBUFS;
        return -1;
    }
    ssize_t n;
    do {
        n = read(fd, lr->buf + lr->len, room);
    } while (n < 0 && errno == EINTR);
    if (n > 0)
        lr->len += (size_t)n;
    return n;
}

bool lr_feed(struct line_reader *lr, const void *data, size_t len)
{
    lr_reserve(lr);
    lr_compact(lr);
    if (len > lr_capacity(lr) - lr->len)
        return false;
    memcpy(lr->buf + lr->len, data, len);
    lr->len += len;
    return true;
}

enum lr_status lr_next(struct line_reader *lr, const char **line, size_t *len)
{
    size_t avail = lr->len - lr->start;
    char *base = lr->buf + lr->start;
    char *nl = avail > lr->scan ? memchr(base + lr->scan, '\n', avail - lr->scan) : NULL;
    if (!nl) {
        lr->scan = avail;
        return avail > lr->max ? LR_TOO_LONG : LR_NEED_MORE;
    }
    size_t n = (size_t)(nl - base);
    if (n > lr->max)
        return LR_TOO_LONG;
    *line = base;
    *len = n;
    lr->start += n + 1;
    lr->scan = 0;
    return LR_LINE;
}

static int jrpc_fail(int *code, int value, char *err, size_t errlen, const char *msg)
{
    *code = value;
    snprintf(err, errlen, "%s", msg);
    return -1;
}

int jrpc_parse(const char *line, size_t len, struct jrpc_msg *out, int *code, char *err,
               size_t errlen)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    /* JSON_REJECT_DUPLICATES: a frame with two "id"s or two "method"s is an attempt
     * to make two readers disagree about what was said. */
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES,
                              &jerr);
    if (!root) {
        *code = JRPC_PARSE_ERROR;
        snprintf(err, errlen, "invalid JSON at byte %d: %s", jerr.position, jerr.text);
        return -1;
    }
    return jrpc_parse_value(root, out, code, err, errlen);
}

enum jrpc_line jrpc_parse_line(const char *line, size_t len, struct jrpc_msg *out, json_t **batch,
                               int *code, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    *batch = NULL;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_array(root)) {
        *batch = root;
        return JRPC_LINE_BATCH;
    }
    if (!json_is_object(root) || !json_object_get(root, "jsonrpc")) {
        json_decref(root);
        return JRPC_LINE_NOISE;
    }
    if (jrpc_parse_value(root, out, code, err, errlen) < 0)
        return JRPC_LINE_INVALID;
    return JRPC_LINE_MESSAGE;
}

int jrpc_parse_value(json_t *root, struct jrpc_msg *out, int *code, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->root = root;
    if (!json_is_object(root)) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen, "frame is not a JSON object");
    }
    const char *version = json_string_value(json_object_get(root, "jsonrpc"));
    if (!version || strcmp(version, "2.0") != 0) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen, "\"jsonrpc\" must be \"2.0\"");
    }
    json_t *id = json_object_get(root, "id");
    if (id && !json_is_integer(id) && !json_is_string(id)) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                         "\"id\" must be an integer or a string");
    }
    if (json_is_string(id) && json_string_length(id) > 256) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen, "\"id\" is too long");
    }
    out->id = id;
    json_t *method = json_object_get(root, "method");
    json_t *result = json_object_get(root, "result");
    json_t *error = json_object_get(root, "error");
    if (method) {
        if (!json_is_string(method) || json_string_length(method) == 0 ||
            json_string_length(method) > JRPC_MAX_METHOD) {
            jrpc_msg_free(out);
            return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                             "\"method\" must be a non-empty string of at most 128 bytes");
        }
        if (result || error) {
            jrpc_msg_free(out);
            return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                             "a request cannot carry \"result\" or \"error\"");
        }
        json_t *params = json_object_get(root, "params");
        if (params && !json_is_object(params) && !json_is_array(params)) {
            jrpc_msg_free(out);
            return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                             "\"params\" must be an object or an array");
        }
        out->method = json_string_value(method);
        out->params = params;
        out->kind = id ? JRPC_REQUEST : JRPC_NOTIFICATION;
        return 0;
    }
    if (!id) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                         "a response needs an \"id\"");
    }
    if ((result != NULL) == (error != NULL)) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                         "a response carries exactly one of \"result\" and \"error\"");
    }
    if (result) {
        out->kind = JRPC_RESULT;
        out->result = result;
        return 0;
    }
    json_t *ecode = json_object_get(error, "code");
    json_t *emsg = json_object_get(error, "message");
    if (!json_is_object(error) || !json_is_integer(ecode) || !json_is_string(emsg)) {
        jrpc_msg_free(out);
        return jrpc_fail(code, JRPC_INVALID_REQUEST, err, errlen,
                         "\"error\" must be an object with an integer \"code\" and a string "
                         "\"message\"");
    }
    out->kind = JRPC_ERROR;
    out->error = error;
    out->error_code = (long)json_integer_value(ecode);
    out->error_message = json_string_value(emsg);
    return 0;
}

void jrpc_msg_free(struct jrpc_msg *m)
{
    json_decref(m->root);
    memset(m, 0, sizeof(*m));
}

static json_t *jrpc_envelope(void)
{
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    return m;
}

json_t *jrpc_request(json_int_t id, const char *method, json_t *params_stolen)
{
    json_t *m = jrpc_envelope();
    json_object_set_new(m, "id", json_integer(id));
    json_object_set_new(m, "method", json_string(method));
    if (params_stolen)
        json_object_set_new(m, "params", params_stolen);
    return m;
}

json_t *jrpc_notification(const char *method, json_t *params_stolen)
{
    json_t *m = jrpc_envelope();
    json_object_set_new(m, "method", json_string(method));
    if (params_stolen)
        json_object_set_new(m, "params", params_stolen);
    return m;
}

json_t *jrpc_result(json_t *id, json_t *result_stolen)
{
    json_t *m = jrpc_envelope();
    json_object_set_new(m, "id", id ? json_deep_copy(id) : json_null());
    json_object_set_new(m, "result", result_stolen ? result_stolen : json_object());
    return m;
}

json_t *jrpc_error(json_t *id, long code, const char *message, json_t *data_stolen)
{
    json_t *m = jrpc_envelope();
    json_object_set_new(m, "id", id ? json_deep_copy(id) : json_null());
    json_t *e = json_object();
    json_object_set_new(e, "code", json_integer(code));
    json_object_set_new(e, "message", json_string(message));
    if (data_stolen)
        json_object_set_new(e, "data", data_stolen);
    json_object_set_new(m, "error", e);
    return m;
}

char *jrpc_dump_line(json_t *msg, size_t *len)
{
    /* Compact output escapes every control character, so the line holds no raw
     * newline: the frame boundary is unambiguous. jl_json_line() writes jansson's
     * bytes at half its cost; an odd message goes through jansson itself. */
    size_t fast;
    const char *here = jl_json_line_here(msg, &fast);
    if (here) {
        char *line = xstrndup(here, fast);
        json_decref(msg);
        *len = fast;
        return line;
    }
    char *s = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *line = xrealloc(s, n + 2);
    line[n] = '\n';
    line[n + 1] = '\0';
    *len = n + 1;
    return line;
}

int jrpc_send(int fd, json_t *msg)
{
    size_t len;
    char *line = jrpc_dump_line(msg, &len);
    if (!line) {
        errno = ENOMEM;
        return -1;
    }
    int rc = write_all(fd, line, len);
    int saved = errno;
    free(line);
    errno = saved;
    return rc;
}
