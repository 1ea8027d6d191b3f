/* The repl-server's frames: length prefix, request checks, response encoding. */
#include "replframe.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum repl_frame_status repl_frame_next(const unsigned char *buf, size_t len, size_t max,
                                       uint32_t *payload_len)
{
    if (len < REPL_FRAME_HEADER)
        return REPL_FRAME_NEED_MORE;
    uint32_t n =
        (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | (uint32_t)buf[3];
    *payload_len = n;
    if (n > max)
        return REPL_FRAME_TOO_LONG;
    if (len - REPL_FRAME_HEADER < n)
        return REPL_FRAME_NEED_MORE;
    return REPL_FRAME_READY;
}

bool repl_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false; /* a continuation byte first, 0xc0/0xc1, or 0xf5.. */
        }
        if (len - i - 1 < n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        /* Overlong forms, UTF-16 surrogates, beyond Unicode. */
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
            cp > 0x10ffff)
            return false;
        i += n + 1;
    }
    return true;
}

static bool is_session_id(const char *s, size_t len)
{
    if (len != REPL_SESSION_ID_LEN)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

int repl_request_parse(const char *payload, size_t len, struct repl_request *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!repl_utf8_valid(payload, len)) {
        snprintf(err, errlen, "invalid request: the frame is not valid UTF-8");
        out->error = "invalid-utf8";
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadb(payload, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!root) {
        snprintf(err, errlen, "invalid request: not JSON (%.120s at byte %d)", je.text,
                 je.position);
        out->error = "invalid-json";
        return -1;
    }
    int rc = -1;
    out->error = "invalid-request";
    if (!json_is_object(root)) {
        snprintf(err, errlen, "invalid request: must be a JSON object");
        goto out;
    }
    json_t *code = json_object_get(root, "code");
    if (!code) {
        snprintf(err, errlen, "invalid request: \"code\" is missing");
        goto out;
    }
    if (!json_is_string(code)) {
        snprintf(err, errlen, "invalid request: \"code\" must be a string");
        goto out;
    }
    json_t *sid = json_object_get(root, "session_id");
    if (sid && !json_is_null(sid) && !json_is_string(sid)) {
        snprintf(err, errlen, "invalid request: \"session_id\" must be a string");
        goto out;
    }
    json_t *close = json_object_get(root, "close");
    if (close && !json_is_boolean(close)) {
        snprintf(err, errlen, "invalid request: \"close\" must be a boolean");
        goto out;
    }
    json_t *token = json_object_get(root, "token");
    if (token && (!json_is_string(token) || json_string_length(token) == 0 ||
                  json_string_length(token) > REPL_TOKEN_MAX)) {
        snprintf(err, errlen, "invalid request: \"token\" must be a string of 1 to %d bytes",
                 REPL_TOKEN_MAX);
        goto out;
    }
    if (json_is_string(sid)) {
        out->has_session = true;
        /* Anything but one of our ids stays "", which no session has. */
        if (is_session_id(json_string_value(sid), json_string_length(sid)))
            memcpy(out->session_id, json_string_value(sid), REPL_SESSION_ID_LEN + 1);
    }
    out->close = json_is_true(close);
    if (token) {
        out->token_len = json_string_length(token);
        out->token = xstrndup(json_string_value(token), out->token_len);
    }
    out->code_len = json_string_length(code);
    out->code = xstrndup(json_string_value(code), out->code_len);
    out->error = NULL;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

void repl_request_free(struct repl_request *r)
{
    free(r->code);
    r->code = NULL;
    if (r->token) {
        explicit_bzero(r->token, r->token_len);
        free(r->token);
    }
    r->token = NULL;
}

unsigned char *repl_response_encode(bool ok, const char *output, const char *error,
                                    const char *session_id, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(ok ? "ok" : "error"));
    json_object_set_new(o, "output", json_string(output ? output : ""));
    json_object_set_new(o, "error", json_string(error ? error : ""));
    json_object_set_new(o, "session_id", json_string(session_id ? session_id : ""));
    /* json_string() refuses invalid UTF-8: say so rather than send a broken frame. */
    if (!json_is_string(json_object_get(o, "output")) ||
        !json_is_string(json_object_get(o, "error"))) {
        json_object_set_new(o, "status", json_string("error"));
        json_object_set_new(o, "output", json_string(""));
        json_object_set_new(o, "error", json_string("the response was not valid UTF-8"));
    }
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        text = xstrdup("{\"status\":\"error\",\"output\":\"\",\"error\":\"out of memory\","
                       "\"session_id\":\"\"}");
    size_t n = strlen(text);
    unsigned char *buf = xmalloc(n + REPL_FRAME_HEADER);
    buf[0] = (unsigned char)(n >> 24);
    buf[1] = (unsigned char)(n >> 16);
    buf[2] = (unsigned char)(n >> 8);
    buf[3] = (unsigned char)n;
    memcpy(buf + REPL_FRAME_HEADER, text, n);
    free(text);
    *len = n + REPL_FRAME_HEADER;
    return buf;
}
