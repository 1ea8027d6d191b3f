/* The repl-server's frame reader and request parser (hub/repl/replframe.c) on every class
 * of malformed input, and the response encoder's round trip. */
#include "repl/replframe.h"
#include "tests/unit/test.h"
#include "util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static size_t frame(unsigned char *out, const char *payload, size_t len)
{
    out[0] = (unsigned char)(len >> 24);
    out[1] = (unsigned char)(len >> 16);
    out[2] = (unsigned char)(len >> 8);
    out[3] = (unsigned char)len;
    memcpy(out + 4, payload, len);
    return len + 4;
}

static void test_frame_next(void)
{
    unsigned char buf[64] = {0};
    uint32_t n = 0;
    CHECK(repl_frame_next(buf, 0, 100, &n) == REPL_FRAME_NEED_MORE, "no bytes: need more");
    size_t len = frame(buf, "{\"code\":\"1\"}", 12);
    for (size_t i = 0; i < len; i++)
        if (repl_frame_next(buf, i, 100, &n) != REPL_FRAME_NEED_MORE)
            CHECK(false, "a frame cut at %zu bytes is incomplete", i);
    CHECK(repl_frame_next(buf, len, 100, &n) == REPL_FRAME_READY && n == 12,
          "a whole frame is ready (%u bytes)", n);
    CHECK(repl_frame_next(buf, len + 7, 100, &n) == REPL_FRAME_READY && n == 12,
          "bytes of the next frame do not change this one");
    CHECK(repl_frame_next(buf, len, 12, &n) == REPL_FRAME_READY, "exactly the maximum is allowed");
    CHECK(repl_frame_next(buf, len, 11, &n) == REPL_FRAME_TOO_LONG && n == 12,
          "one byte over the maximum is too long");
    const unsigned char huge[4] = {0xff, 0xff, 0xff, 0xff};
    CHECK(repl_frame_next(huge, 4, REPL_MAX_MAX_FRAME, &n) == REPL_FRAME_TOO_LONG &&
              n == 0xffffffffu,
          "a 4 GiB header is refused from the header alone");
    const unsigned char be[4] = {0x00, 0x01, 0x02, 0x03};
    CHECK(repl_frame_next(be, 4, REPL_MAX_MAX_FRAME, &n) == REPL_FRAME_NEED_MORE && n == 0x010203,
          "the length is big-endian");
    const unsigned char zero[4] = {0, 0, 0, 0};
    CHECK(repl_frame_next(zero, 4, 100, &n) == REPL_FRAME_READY && n == 0,
          "an empty frame is a (bad) frame, not a wait");
}

static void test_utf8(void)
{
    static const struct {
        const char *s;
        size_t len;
        bool ok;
        const char *what;
    } cases[] = {
        {"plain ascii", 11, true, "ASCII"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d", 14, true, "2, 3 and 4-byte forms"},
        {"\xc3", 1, false, "a truncated 2-byte form"},
        {"\xe2\x82", 2, false, "a truncated 3-byte form"},
        {"\x80", 1, false, "a lone continuation byte"},
        {"\xc0\xaf", 2, false, "an overlong '/' (0xc0)"},
        {"\xe0\x80\xaf", 3, false, "an overlong 3-byte form"},
        {"\xf0\x80\x80\xaf", 4, false, "an overlong 4-byte form"},
        {"\xed\xa0\x80", 3, false, "a UTF-16 surrogate (U+D800)"},
        {"\xf4\x90\x80\x80", 4, false, "beyond U+10FFFF"},
        {"\xf5\x80\x80\x80", 4, false, "a 0xf5 lead byte"},
        {"\xff", 1, false, "0xff"},
        {"a\0b", 3, true, "NUL is valid UTF-8 (JSON refuses it later)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK(repl_utf8_valid(cases[i].s, cases[i].len) == cases[i].ok, "UTF-8: %s is %s",
              cases[i].what, cases[i].ok ? "valid" : "refused");
}

static void parse_fails(const char *payload, size_t len, const char *kind, const char *msg,
                        const char *what)
{
    struct repl_request r;
    char err[256] = "";
    int rc = repl_request_parse(payload, len, &r, err, sizeof(err));
    CHECK(rc < 0 && r.error && strcmp(r.error, kind) == 0 && strstr(err, msg),
          "%s is refused as %s: %s", what, kind, err);
    if (rc == 0)
        repl_request_free(&r);
}

static void test_parse(void)
{
    struct repl_request r;
    char err[256];
    const char *ok = "{\"code\":\"x = 1\\nprint(x)\"}";
    CHECK(repl_request_parse(ok, strlen(ok), &r, err, sizeof(err)) == 0 && !r.has_session &&
              strcmp(r.code, "x = 1\nprint(x)") == 0 && r.code_len == 14 && !r.close,
          "a request without a session");
    repl_request_free(&r);
    const char *with = "{\"code\":\"\",\"session_id\":\"0123456789abcdef0123456789abcdef\","
                       "\"close\":true,\"extra\":[1]}";
    CHECK(repl_request_parse(with, strlen(with), &r, err, sizeof(err)) == 0 && r.has_session &&
              strcmp(r.session_id, "0123456789abcdef0123456789abcdef") == 0 && r.close &&
              r.code_len == 0,
          "a request with a session id, close, and an unknown field (ignored)");
    repl_request_free(&r);
    const char *null_sid = "{\"code\":\"1\",\"session_id\":null}";
    CHECK(repl_request_parse(null_sid, strlen(null_sid), &r, err, sizeof(err)) == 0 &&
              !r.has_session,
          "session_id null means none");
    repl_request_free(&r);
    static const char *const foreign[] = {"", "abc", "0123456789ABCDEF0123456789ABCDEF",
                                          "../../../../etc/passwd/0123456789abcd",
                                          "0123456789abcdef0123456789abcdef0"};
    for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
        json_t *o = json_pack("{s:s,s:s}", "code", "1", "session_id", foreign[i]);
        char *text = json_dumps(o, JSON_COMPACT);
        CHECK(repl_request_parse(text, strlen(text), &r, err, sizeof(err)) == 0 && r.has_session &&
                  r.session_id[0] == '\0',
              "session_id \"%s\" parses as an id no session has", foreign[i]);
        repl_request_free(&r);
        free(text);
        json_decref(o);
    }
    const char *uni = "{\"code\":\"s = '\xc3\xa9\\u00e9\\ud83d\\udc0d'\"}";
    CHECK(repl_request_parse(uni, strlen(uni), &r, err, sizeof(err)) == 0 &&
              strcmp(r.code, "s = '\xc3\xa9\xc3\xa9\xf0\x9f\x90\x8d'") == 0,
          "UTF-8 and escaped non-ASCII code");
    repl_request_free(&r);

    parse_fails("\xff\xfe{}", sizeof("\xff\xfe{}") - 1, "invalid-utf8", "not valid UTF-8",
                "invalid UTF-8");
    parse_fails("{\"code\":\"\xc0\xaf\"}", sizeof("{\"code\":\"\xc0\xaf\"}") - 1, "invalid-utf8",
                "UTF-8", "an overlong form in code");
    parse_fails("", sizeof("") - 1, "invalid-json", "not JSON", "an empty frame");
    parse_fails("{\"code\": ", sizeof("{\"code\": ") - 1, "invalid-json", "not JSON",
                "truncated JSON");
    parse_fails("{\"code\":\"1\"} x", sizeof("{\"code\":\"1\"} x") - 1, "invalid-json", "not JSON",
                "trailing garbage");
    parse_fails("{\"code\":\"1\",\"code\":\"2\"}", sizeof("{\"code\":\"1\",\"code\":\"2\"}") - 1,
                "invalid-json", "not JSON", "a duplicate key");
    parse_fails("{\"code\":\"a\\u0000b\"}", sizeof("{\"code\":\"a\\u0000b\"}") - 1, "invalid-json",
                "not JSON", "NUL in a string");
    parse_fails("{\"code\":\"\\ud800\"}", sizeof("{\"code\":\"\\ud800\"}") - 1, "invalid-json",
                "not JSON", "a lone surrogate escape");
    parse_fails("[1,2]", sizeof("[1,2]") - 1, "invalid-request", "must be a JSON object",
                "an array");
    parse_fails("\"code\"", sizeof("\"code\"") - 1, "invalid-request", "must be a JSON object",
                "a string");
    parse_fails("42", sizeof("42") - 1, "invalid-request", "must be a JSON object", "a number");
    parse_fails("null", sizeof("null") - 1, "invalid-request", "must be a JSON object", "null");
    parse_fails("{}", sizeof("{}") - 1, "invalid-request", "\"code\" is missing", "no code");
    parse_fails("{\"session_id\":\"x\"}", sizeof("{\"session_id\":\"x\"}") - 1, "invalid-request",
                "\"code\" is missing", "only a session id");
    parse_fails("{\"code\":1}", sizeof("{\"code\":1}") - 1, "invalid-request",
                "\"code\" must be a string", "code a number");
    parse_fails("{\"code\":null}", sizeof("{\"code\":null}") - 1, "invalid-request",
                "\"code\" must be a string", "code null");
    parse_fails("{\"code\":[\"x\"]}", sizeof("{\"code\":[\"x\"]}") - 1, "invalid-request",
                "\"code\" must be a string", "code an array");
    parse_fails("{\"code\":{\"a\":1}}", sizeof("{\"code\":{\"a\":1}}") - 1, "invalid-request",
                "\"code\" must be a string", "code an object");
    parse_fails("{\"code\":true}", sizeof("{\"code\":true}") - 1, "invalid-request",
                "\"code\" must be a string", "code a boolean");
    parse_fails("{\"code\":\"1\",\"session_id\":5}",
                sizeof("{\"code\":\"1\",\"session_id\":5}") - 1, "invalid-request",
                "\"session_id\" must be a string", "session_id a number");
    parse_fails("{\"code\":\"1\",\"session_id\":{}}",
                sizeof("{\"code\":\"1\",\"session_id\":{}}") - 1, "invalid-request",
                "\"session_id\" must be a string", "session_id an object");
    parse_fails("{\"code\":\"1\",\"close\":\"yes\"}",
                sizeof("{\"code\":\"1\",\"close\":\"yes\"}") - 1, "invalid-request",
                "\"close\" must be a boolean", "close a string");
    parse_fails("{\"code\":\"1\",\"close\":1}", sizeof("{\"code\":\"1\",\"close\":1}") - 1,
                "invalid-request", "\"close\" must be a boolean", "close a number");

    /* Deep nesting must not exhaust the stack (jansson limits its depth). */
    size_t depth = 100000;
    char *deep = xmalloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    parse_fails(deep, 2 * depth, "invalid-json", "not JSON", "100000 nested arrays");
    free(deep);
}

static void test_response(void)
{
    size_t len;
    unsigned char *f =
        repl_response_encode(true, "2\n", "", "0123456789abcdef0123456789abcdef", &len);
    uint32_t n = 0;
    CHECK(repl_frame_next(f, len, REPL_DEFAULT_MAX_FRAME, &n) == REPL_FRAME_READY &&
              n + REPL_FRAME_HEADER == len,
          "a response is one whole frame");
    json_t *o = json_loadb((const char *)f + 4, n, 0, NULL);
    CHECK(o && strcmp(json_string_value(json_object_get(o, "status")), "ok") == 0 &&
              strcmp(json_string_value(json_object_get(o, "output")), "2\n") == 0 &&
              strcmp(json_string_value(json_object_get(o, "error")), "") == 0 &&
              strcmp(json_string_value(json_object_get(o, "session_id")),
                     "0123456789abcdef0123456789abcdef") == 0 &&
              json_object_size(o) == 4,
          "it carries exactly status, output, error and session_id");
    json_decref(o);
    free(f);
    f = repl_response_encode(false, NULL, "boom \"quoted\"\n", NULL, &len);
    o = json_loadb((const char *)f + 4, len - 4, 0, NULL);
    CHECK(o && strcmp(json_string_value(json_object_get(o, "status")), "error") == 0 &&
              strcmp(json_string_value(json_object_get(o, "error")), "boom \"quoted\"\n") == 0 &&
              strcmp(json_string_value(json_object_get(o, "session_id")), "") == 0,
          "an error response, NULLs as empty strings");
    json_decref(o);
    free(f);
    f = repl_response_encode(true, "bad \xff", "", "", &len);
    o = json_loadb((const char *)f + 4, len - 4, 0, NULL);
    CHECK(o && strcmp(json_string_value(json_object_get(o, "status")), "error") == 0,
          "output that is not UTF-8 becomes an error, never a broken frame");
    json_decref(o);
    free(f);
}

int main(void)
{
    test_frame_next();
    test_utf8();
    test_parse();
    test_response();
    return test_done();
}
