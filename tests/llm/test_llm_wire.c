/* The wire format without a network: hostile chat completion bodies, the SSE parser
 * fed one byte at a time and in one piece, error-message extraction and redaction,
 * and the request body. White-box: uses hub/llm/llm_impl.h. */
#include "test.h"

#include "llm/llm_impl.h"
#include "util.h"

#include <stdlib.h>

static int parse(const char *body, struct llm_response *rs, struct llm_error *e)
{
    memset(rs, 0, sizeof(*rs));
    memset(e, 0, sizeof(*e));
    int rc = llm_wire_parse(body, strlen(body), rs, e);
    if (rc < 0)
        llm_response_free(rs);
    return rc;
}

static void test_hostile_bodies(void)
{
    static const char *const bad[] = {
        "",
        "null",
        "{}",
        "{\"choices\":null}",
        "{\"choices\":[null]}",
        "{\"choices\":[{}]}",
        "{\"choices\":[{\"message\":\"hi\"}]}",
        "{\"choices\":[{\"message\":{\"content\":{}}}]}",
        "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"image\"}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":{}}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[7]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"type\":\"code\",\"function\":"
        "{\"name\":\"f\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":[]}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"a\\nb\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"content\":null}}]}",
        "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":[]}}]}",
        /* names and ids are identifiers (found by fuzz_replay: a name with a space) */
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"a b\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"c 1\",\"function\":"
        "{\"name\":\"f\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":5,\"function\":{\"name\":\"f\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"f\","
        "\"arguments\":7}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"f\","
        "\"arguments\":\"\\\"just a string\\\"\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\\u0000b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":5}]}",
        "{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"choices\":[]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\ud800\"}}]}",
    };
    struct llm_response rs;
    struct llm_error e;
    unsigned refused = 0;
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        if (parse(bad[i], &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED && e.msg[0])
            refused++;
        else
            printf("# accepted: %s\n", bad[i]);
    }
    CHECK(refused == ARRAY_LEN(bad), "%u of %zu hostile bodies refused as malformed", refused,
          ARRAY_LEN(bad));

    /* 65 tool calls: one more than allowed. */
    char *body = xstrdup("{\"choices\":[{\"message\":{\"tool_calls\":[");
    for (int i = 0; i < 65; i++) {
        char *next = xasprintf("%s%s{\"function\":{\"name\":\"f\"}}", body, i ? "," : "");
        free(body);
        body = next;
    }
    char *full = xasprintf("%s]}}]}", body);
    free(body);
    CHECK(parse(full, &rs, &e) < 0 && strstr(e.msg, "64"), "more than 64 tool calls refused");
    free(full);

    /* Deep nesting does not crash (jansson limits depth). */
    size_t depth = 100000;
    char *deep = xmalloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    CHECK(parse(deep, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED, "deep nesting refused");
    free(deep);

    /* Accepted quirks. */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                "{\"type\":\"text\",\"text\":\"b\"}]}}]}",
                &rs, &e) == 0 &&
              strcmp(rs.content, "ab") == 0,
          "content as text parts is joined");
    llm_response_free(&rs);
    CHECK(parse("{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"same\",\"function\":"
                "{\"name\":\"f\",\"arguments\":\"\\\"{\\\\\\\"a\\\\\\\":1}\\\"\"}},"
                "{\"id\":\"same\",\"function\":{\"name\":\"g\",\"arguments\":null}}]}}]}",
                &rs, &e) == 0 &&
              rs.n_tool_calls == 2,
          "double-encoded and null arguments accepted");
    if (rs.n_tool_calls == 2) {
        CHECK_STR(rs.tool_calls[0].arguments, "{\"a\":1}", "double-encoded arguments decoded");
        CHECK_STR(rs.tool_calls[1].arguments, "{}", "null arguments are {}");
        CHECK(strcmp(rs.tool_calls[0].id, rs.tool_calls[1].id) != 0, "duplicate ids made unique");
    }
    llm_response_free(&rs);
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":-4,"
                "\"completion_tokens\":\"many\"}}",
                &rs, &e) == 0 &&
              !rs.usage.present,
          "nonsense usage is ignored, not trusted");
    llm_response_free(&rs);
}

struct sink {
    char text[1024];
    size_t len;
    unsigned calls;
};

static int sink(void *arg, const char *t, size_t n)
{
    struct sink *s = arg;
    s->calls++;
    if (s->len + n < sizeof(s->text)) {
        memcpy(s->text + s->len, t, n);
        s->len += n;
        s->text[s->len] = '\0';
    }
    return 0;
}

static const char stream_text[] =
    ": comment\r\n"
    "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"Gr\\u00fc\"}}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"\\u00dfe\"}}]}\r\r"
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"c1\",\"function\":"
    "{\"name\":\"get\",\"arguments\":\"{\\\"k\\\"\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"get\","
    "\"arguments\":\": 1}\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"c2\",\"function\":"
    "{\"name\":\"put\",\"arguments\":{\"v\":true}}}]}}]}\n\n"
    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}],"
    "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n"
    "data: [DONE]\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"after done\"}}]}\n\n";

static void check_stream(size_t piece, const char *how)
{
    struct sink snk = {0};
    struct llm_sse *s = llm_sse_new(1 << 20, sink, &snk, NULL);
    struct llm_error e = {0};
    struct llm_response rs = {0};
    size_t n = strlen(stream_text);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i += piece)
        rc = llm_sse_feed(s, stream_text + i, n - i < piece ? n - i : piece, &e);
    CHECK(rc == 0 && llm_sse_finish(s, &rs, &e) == 0, "stream fed %s is assembled", how);
    CHECK_STR(rs.content,
              "Gr\xc3\xbc\xc3\x9f"
              "e",
              "%s: content across CR, LF and CRLF", how);
    CHECK(rs.n_tool_calls == 2, "%s: tool calls without index: a new id starts a new call", how);
    if (rs.n_tool_calls == 2) {
        CHECK_STR(rs.tool_calls[0].name, "get", "%s: a repeated name is not doubled", how);
        CHECK_STR(rs.tool_calls[0].arguments, "{\"k\":1}", "%s: fragments joined", how);
        CHECK_STR(rs.tool_calls[1].arguments, "{\"v\":true}", "%s: object arguments", how);
    }
    CHECK(rs.usage.present && rs.usage.total_tokens == 7, "%s: usage, total computed", how);
    CHECK_STR(rs.model, "m", "%s: model", how);
    CHECK(snk.calls == 2 && llm_sse_delivered(s), "%s: two content deltas delivered", how);
    llm_response_free(&rs);
    llm_sse_free(s);
}

static void test_sse(void)
{
    check_stream(1, "byte by byte");
    check_stream(7, "7 bytes at a time");
    check_stream(1 << 20, "in one piece");

    struct llm_error e;
    struct llm_response rs = {0};
    struct llm_sse *s = llm_sse_new(64, NULL, NULL, NULL);
    char line[200];
    memset(line, 'x', sizeof(line));
    CHECK(llm_sse_feed(s, line, sizeof(line), &e) < 0 && e.kind == LLM_ERR_TOO_LARGE,
          "an endless line hits the cap");
    CHECK(llm_sse_feed(s, "\n\n", 2, &e) < 0, "a failed stream stays failed");
    llm_sse_free(s);

    s = llm_sse_new(1 << 20, NULL, NULL, "sk-SECRET-123");
    const char *err_event = "event: error\ndata: {\"message\":\"bad key sk-SECRET-123\"}\n\n";
    CHECK(llm_sse_feed(s, err_event, strlen(err_event), &e) < 0 && e.kind == LLM_ERR_SERVER &&
              !strstr(e.msg, "sk-SECRET-123") && !strstr(e.detail, "sk-SECRET-123") &&
              strstr(e.detail, "[redacted]") && !strstr(e.msg, "bad key"),
          "an error event is an error, the server's words apart (key redacted) from the hub's");
    llm_sse_free(s);

    s = llm_sse_new(1 << 20, NULL, NULL, NULL);
    const char *multi = "data: {\"choices\":\ndata: [{\"delta\":{\"content\":\"m\"},"
                        "\"finish_reason\":\"stop\"}]}\n\n";
    CHECK(llm_sse_feed(s, multi, strlen(multi), &e) == 0 && llm_sse_finish(s, &rs, &e) == 0 &&
              rs.content && strcmp(rs.content, "m") == 0,
          "multi-line data fields are joined");
    llm_response_free(&rs);
    llm_sse_free(s);

    s = llm_sse_new(1 << 20, NULL, NULL, NULL);
    const char *bad_index =
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":99}]}}]}\n\n";
    CHECK(llm_sse_feed(s, bad_index, strlen(bad_index), &e) < 0 && e.kind == LLM_ERR_MALFORMED,
          "a tool call index out of range is malformed");
    llm_sse_free(s);
}

/* finish_reason "length" (the model's token limit): cut arguments are TRUNCATED with a
 * hint, never "not valid JSON"; whole ones parse (the caller sees rs.finish_reason). */
static void test_length(void)
{
    struct llm_response rs;
    struct llm_error e;
    const char *cut = "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":"
                      "\"f\",\"arguments\":\"{\\\"a\\\": \\\"x\"}}]},\"finish_reason\":\"length\"}]}";
    CHECK(parse(cut, &rs, &e) < 0 && e.kind == LLM_ERR_TRUNCATED &&
              strstr(e.msg, "token limit") && strstr(e.msg, "llm.max_tokens") &&
              !strstr(e.msg, "not valid JSON"),
          "cut tool arguments with finish_reason length: truncated, with the fix");
    char *stop = xstrdup(cut);
    memcpy(strstr(stop, "length"), "stop\"}]}", 9);
    CHECK(parse(stop, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED && strstr(e.msg, "not valid JSON"),
          "the same arguments with finish_reason stop: malformed");
    free(stop);
    const char *whole = "{\"choices\":[{\"message\":{\"content\":\"Hel\"},\"finish_reason\":"
                        "\"length\"}]}";
    CHECK(parse(whole, &rs, &e) == 0 && strcmp(rs.finish_reason, "length") == 0 &&
              strcmp(rs.content, "Hel") == 0,
          "cut text parses, finish_reason kept");
    llm_response_free(&rs);

    struct llm_sse *s = llm_sse_new(1 << 20, NULL, NULL, NULL);
    const char *stream =
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
        "\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"k\\\"\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n";
    memset(&rs, 0, sizeof(rs));
    CHECK(llm_sse_feed(s, stream, strlen(stream), &e) == 0 && llm_sse_finish(s, &rs, &e) < 0 &&
              e.kind == LLM_ERR_TRUNCATED,
          "a stream whose tool arguments were cut: truncated");
    llm_response_free(&rs);
    llm_sse_free(s);
}

static void test_error_messages(void)
{
    const char *cases[][2] = {
        {"{\"error\":{\"message\":\"m1\",\"type\":\"x\"}}", "m1"},
        {"{\"error\":\"m2\"}", "m2"},
        {"{\"object\":\"error\",\"message\":\"m3\"}", "m3"},
        {"{\"detail\":\"m4\"}", "m4"},
        {"plain\ntext", "plain text"},
        {"", "(empty body)"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char *m = llm_wire_error_message(cases[i][0], strlen(cases[i][0]), NULL);
        CHECK_STR(m, cases[i][1], "error message from %s",
                  cases[i][0][0] ? cases[i][0] : "nothing");
        free(m);
    }
    char big[2000];
    memset(big, 'e', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    char *m = llm_wire_error_message(big, strlen(big), NULL);
    CHECK(strlen(m) < 400, "a long error body is capped (%zu)", strlen(m));
    free(m);
    /* The key just past the cap: not even a piece of it may survive. */
    char *tail = xasprintf("%.295s%s", big, "sk-LONGSECRETKEY0123456789");
    m = llm_wire_error_message(tail, strlen(tail), "sk-LONGSECRETKEY0123456789");
    CHECK(!strstr(m, "sk-LONG") && !strstr(m, "sk-"), "a key cut by the cap leaves no piece");
    free(m);
    free(tail);
}

static void test_body(void)
{
    struct llm_config cfg;
    llm_config_defaults(&cfg);
    cfg.model = "m";
    cfg.max_tokens = 100;
    cfg.max_completion_tokens = true;
    cfg.has_temperature = true;
    cfg.temperature = 0.0;
    struct llm_request *rq = llm_request_new("ctx");
    llm_request_user(rq, "bad \xff utf8");
    json_t *b = llm_wire_body(&cfg, rq, false);
    CHECK(json_integer_value(json_object_get(b, "max_completion_tokens")) == 100 &&
              !json_object_get(b, "max_tokens"),
          "max_completion_tokens when configured");
    CHECK(json_is_real(json_object_get(b, "temperature")), "config temperature used");
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(b, "messages"), 0), "content"));
    CHECK(text && strstr(text, "\xef\xbf\xbd"), "invalid UTF-8 in a message becomes U+FFFD");
    CHECK(!json_object_get(b, "tools"), "no tools key without tools");
    json_decref(b);
    cfg.stream_usage = false;
    b = llm_wire_body(&cfg, rq, true);
    CHECK(json_is_true(json_object_get(b, "stream")) && !json_object_get(b, "stream_options"),
          "stream_options can be turned off for servers that refuse it");
    json_decref(b);
    llm_request_free(rq);
}

int main(void)
{
    test_hostile_bodies();
    test_sse();
    test_length();
    test_error_messages();
    test_body();
    return test_done();
}
