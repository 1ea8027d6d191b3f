/* lib/jsonrpc: bounded line framing and strict JSON-RPC envelopes. */
#include "jsonrpc.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

static int parse(const char *s, struct jrpc_msg *m, int *code)
{
    char err[256];
    return jrpc_parse(s, strlen(s), m, code, err, sizeof(err));
}

int main(void)
{
    struct line_reader lr;
    const char *line;
    size_t len;
    lr_init(&lr, 16);
    CHECK(lr_feed(&lr, "abc\ndef", 7), "feed two partial lines");
    CHECK(lr_next(&lr, &line, &len) == LR_LINE && len == 3 && memcmp(line, "abc", 3) == 0,
          "first line returned");
    CHECK(lr_next(&lr, &line, &len) == LR_NEED_MORE, "partial second line waits");
    CHECK(lr_feed(&lr, "\n", 1) && lr_next(&lr, &line, &len) == LR_LINE && len == 3,
          "second line completes");
    CHECK(lr_feed(&lr, "0123456789abcdef", 16), "a line of exactly the maximum fits");
    CHECK(lr_next(&lr, &line, &len) == LR_NEED_MORE, "max-length line waits for its newline");
    CHECK(lr_feed(&lr, "\n", 1) && lr_next(&lr, &line, &len) == LR_LINE && len == 16,
          "max-length line accepted");
    CHECK(lr_feed(&lr, "0123456789abcdefX", 17), "one byte over the maximum is buffered");
    CHECK(lr_next(&lr, &line, &len) == LR_TOO_LONG, "and reported as too long");
    CHECK(!lr_feed(&lr, "more", 4), "the buffer never grows past one line");
    lr_free(&lr);

    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    lr_init(&lr, 1024);
    CHECK(write(fds[1], "{\"a\":1}\n{\"b\"", 12) == 12, "write frames");
    CHECK(lr_fill(&lr, fds[0]) == 12, "fill reads from a descriptor");
    CHECK(lr_next(&lr, &line, &len) == LR_LINE && len == 7, "line from descriptor");
    close(fds[1]);
    CHECK(lr_fill(&lr, fds[0]) == 0, "end of file reported");
    CHECK(lr_pending(&lr) == 4, "unterminated tail is pending");
    close(fds[0]);
    lr_free(&lr);

    struct jrpc_msg m;
    int code;
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &m, &code) == 0 &&
              m.kind == JRPC_REQUEST && strcmp(m.method, "tools/list") == 0,
          "request parsed");
    jrpc_msg_free(&m);
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, &code) ==
                  0 &&
              m.kind == JRPC_NOTIFICATION,
          "notification parsed");
    jrpc_msg_free(&m);
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}", &m, &code) == 0 &&
              m.kind == JRPC_RESULT,
          "result parsed");
    jrpc_msg_free(&m);
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-1,\"message\":\"no\"}}", &m,
                &code) == 0 &&
              m.kind == JRPC_ERROR && m.error_code == -1,
          "error parsed");
    jrpc_msg_free(&m);

    static const char *bad[] = {
        "",
        "not json",
        "[1,2]",
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}",
        "{\"id\":1,\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"method\":\"y\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"1\",\"message\":\"m\"}}",
        "{\"jsonrpc\":\"2.0\",\"result\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0000b\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i], &m, &code);
        CHECK(rc == -1 && (code == JRPC_PARSE_ERROR || code == JRPC_INVALID_REQUEST),
              "bad frame %zu refused", i);
    }

    size_t n;
    char *s = jrpc_dump_line(jrpc_request(7, "tools/call", json_pack("{s:s}", "t", "a\nb")), &n);
    CHECK(s && s[n - 1] == '\n' && memchr(s, '\n', n - 1) == NULL,
          "a frame with a newline in a string stays one line");
    free(s);
    return test_done();
}
