/* The replay file loader (hub/llm/replay.c, `--llm replay:FILE`), which treats a recording
 * as hostile, and the answers it then serves: after a load, requests from the
 * contexts the hub uses (planner, a spoke's, merge, the none baseline; with and
 * without tools; the last one streaming) are completed until the recording runs out.
 *
 * Invariants beyond "no crash": a refusal names the file; a served answer is what
 * the HTTP client would return (content or tool calls, at most LLM_MAX_TOOL_CALLS,
 * each with a bounded printable name and arguments that are a JSON object); a
 * failed call says why; streamed pieces add up to the content. */
#include "llm/llm.h"
#include "llm/replay.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

struct stream {
    char buf[4096];
    size_t len;
    bool overflow;
};

static int on_delta(void *arg, const char *text, size_t len)
{
    struct stream *s = arg;
    if (s->len + len >= sizeof(s->buf))
        s->overflow = true;
    else {
        memcpy(s->buf + s->len, text, len);
        s->len += len;
    }
    return 0;
}

static void check_response(const struct llm_response *rs, const struct stream *st)
{
    fuzz_assert(rs->content || rs->n_tool_calls > 0, "empty answer");
    fuzz_assert(rs->n_tool_calls <= LLM_MAX_TOOL_CALLS, "%zu tool calls", rs->n_tool_calls);
    fuzz_assert(rs->finish_reason != NULL, "no finish reason");
    for (size_t i = 0; i < rs->n_tool_calls; i++) {
        const struct llm_tool_call *tc = &rs->tool_calls[i];
        size_t n = strlen(tc->name);
        fuzz_assert(n >= 1 && n <= LLM_MAX_NAME, "tool name of %zu bytes", n);
        for (size_t k = 0; k < n; k++)
            fuzz_assert((unsigned char)tc->name[k] > 0x20 && (unsigned char)tc->name[k] != 0x7f,
                        "unprintable tool name");
        json_t *args = llm_tool_call_args(tc);
        fuzz_assert(json_is_object(args), "arguments are not an object: %s", tc->arguments);
        json_decref(args);
        fuzz_assert(tc->id && tc->id[0], "tool call without an id");
    }
    if (st && rs->content && !st->overflow)
        fuzz_assert(st->len == strlen(rs->content) && memcmp(st->buf, rs->content, st->len) == 0,
                    "streamed pieces differ from the content");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("recording.json", data, size);
    struct llm_config cfg;
    llm_config_defaults(&cfg);
    cfg.model = "fuzz-model";
    char err[768];
    err[0] = '\0';
    struct llm *llm = llm_open(NULL, &cfg, err, sizeof(err)); /* no LLM: must refuse */
    fuzz_assert(llm == NULL, "opened an LLM without a URL");
    char spec[4200];
    snprintf(spec, sizeof(spec), "replay:%s", path);
    llm = llm_open(spec, &cfg, err, sizeof(err));
    if (!llm) {
        fuzz_assert(strstr(err, path) != NULL, "refusal does not name the file: %s", err);
        return 0;
    }
    static const char *const contexts[] = {"planner", "spoke:metro_hail", "merge",
                                           "none",    "planner",          "spoke:quick_ride"};
    for (size_t i = 0; i < 12; i++) {
        const char *ctx = contexts[i % 6];
        struct llm_request *rq = llm_request_new(ctx);
        llm_request_system(rq, "You plan tool calls.");
        llm_request_user(rq, i % 2 ? "What is the fare to the airport?" : "Summarize my mail");
        if (i % 3 == 0) {
            json_t *params = json_pack("{s:s,s:{}}", "type", "object", "properties");
            fuzz_assert(
                llm_request_tool(rq, "mail__read", "Reads mail", params, err, sizeof(err)) == 0,
                "tool: %s", err);
            json_decref(params);
        }
        if (i % 4 == 3) {
            llm_request_assistant_text(rq, "calling a tool");
            llm_request_tool_result(rq, "call_1", "metro_hail__estimate_fare", "42 EUR");
        }
        struct stream st = {.len = 0};
        if (i >= 10)
            llm_request_set_stream(rq, on_delta, &st);
        struct llm_response rs;
        struct llm_error e;
        memset(&e, 0, sizeof(e));
        if (llm_complete(llm, rq, &rs, &e) == 0) {
            check_response(&rs, i >= 10 ? &st : NULL);
            llm_response_free(&rs);
        } else {
            fuzz_assert(e.kind != LLM_OK && e.msg[0] != '\0', "failed without a reason");
        }
        llm_request_free(rq);
    }
    char first[256];
    (void)llm_replay_unused(llm, first, sizeof(first));
    llm_close(llm);
    return 0;
}
