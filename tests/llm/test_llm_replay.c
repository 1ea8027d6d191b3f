/* Replay: recordings served through the same interface as the HTTP client; several
 * independent contexts; match conditions; uncovered requests named; hostile files
 * refused with file:field errors. */
#include "harness.h"
#include "test.h"

#include "audit.h"
#include "llm/llm.h"
#include "llm/replay.h"
#include "util.h"

#include <stdlib.h>

static struct llm_config cfg;

static struct llm *open_replay(const char *squoted, char *err, size_t errlen)
{
    static unsigned n;
    char name[32];
    snprintf(name, sizeof(name), "rec-%u.json", ++n);
    char *json = harness_json(squoted);
    const char *path = harness_write(name, json);
    free(json);
    char spec[700];
    snprintf(spec, sizeof(spec), "replay:%s", path);
    return llm_open(spec, &cfg, err, errlen);
}

static const char recording[] =
    "{'version':1,'description':'two contexts and a spoke',"
    " 'entries':["
    "  {'context':'planner','match':{'role':'user','contains':'airport'},"
    "   'response':{'content':null,'tool_calls':[{'id':'call_1','name':'metro_hail__estimate_fare',"
    "   'arguments':{'to':'airport'}}],'usage':{'prompt_tokens':50,'completion_tokens':8}}},"
    "  {'context':'planner','response':{'content':'second planner answer'}},"
    "  {'context':'none','match':{'role':'tool','tool':'metro_hail__estimate_fare'},"
    "   'response':{'content':'The fare is 42.'}},"
    "  {'context':'spoke:*','repeat':true,'response':{'content':'spoke says hi'}},"
    "  {'context':'merge','match':{'has_tools':false},"
    "   'response':{'content':'Merged \\u00e9l\\u00e8ve answer, long enough to be streamed in "
    "pieces.'}},"
    "  {'context':'flaky','error':{'kind':'rate-limit','message':'recorded 429'}},"
    "  {'context':'never','comment':'left unused','response':{'content':'x'}}"
    " ]}";

struct sink {
    char text[512];
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

static void test_covered(void)
{
    char err[1024];
    struct llm *llm = open_replay(recording, err, sizeof(err));
    CHECK(llm != NULL, "recording loads (%s)", llm ? "" : err);
    if (!llm)
        return;
    CHECK(strncmp(llm_describe(llm), "replay:", 7) == 0, "describe says replay");
    struct llm_response rs;
    struct llm_error e;

    /* Contexts are independent: the spoke and the merge context first. */
    struct llm_request *spoke = llm_request_new("spoke:mail");
    llm_request_user(spoke, "summarise");
    CHECK(llm_complete(llm, spoke, &rs, &e) == 0 && strcmp(rs.content, "spoke says hi") == 0,
          "a wildcard context serves spoke:mail");
    llm_response_free(&rs);
    llm_request_free(spoke);
    spoke = llm_request_new("spoke:calendar");
    llm_request_user(spoke, "anything");
    CHECK(llm_complete(llm, spoke, &rs, &e) == 0 && strcmp(rs.content, "spoke says hi") == 0,
          "a repeat entry serves again, for another spoke");
    llm_response_free(&rs);
    llm_request_free(spoke);

    struct llm_request *merge = llm_request_new("merge");
    llm_request_user(merge, "combine results");
    char terr[128];
    llm_request_tool(merge, "x", NULL, NULL, terr, sizeof(terr));
    CHECK(llm_complete(llm, merge, &rs, &e) < 0 && e.kind == LLM_ERR_UNCOVERED,
          "has_tools:false does not serve a request that offers tools");
    llm_request_free(merge);
    merge = llm_request_new("merge");
    llm_request_user(merge, "combine results");
    struct sink snk = {0};
    llm_request_set_stream(merge, sink, &snk);
    CHECK(llm_complete(llm, merge, &rs, &e) == 0, "the tool-less merge request is served");
    CHECK(rs.content && strcmp(snk.text, rs.content) == 0 && snk.calls > 2,
          "streaming gets the content in %u pieces", snk.calls);
    llm_response_free(&rs);
    llm_request_free(merge);

    /* The planner's context: matched on the user's words, then in order. */
    struct llm_request *pl = llm_request_new("planner");
    llm_request_system(pl, "plan");
    llm_request_user(pl, "Book a ride to the airport");
    CHECK(llm_complete(llm, pl, &rs, &e) == 0 && rs.n_tool_calls == 1, "planner gets a tool call");
    CHECK_STR(rs.tool_calls[0].arguments, "{\"to\":\"airport\"}",
              "recorded arguments as JSON text");
    CHECK_STR(rs.finish_reason, "tool_calls", "finish_reason defaults to tool_calls");
    CHECK(rs.usage.present && rs.usage.prompt_tokens == 50, "recorded usage");

    /* The none baseline's loop: the tool result comes back to the same context. */
    struct llm_request *none = llm_request_new("none");
    llm_request_user(none, "Book a ride to the airport");
    llm_request_assistant(none, &rs);
    llm_request_tool_result(none, "call_1", "metro_hail__estimate_fare", "{\"fare\":42}");
    llm_response_free(&rs);
    CHECK(llm_complete(llm, none, &rs, &e) == 0 && strcmp(rs.content, "The fare is 42.") == 0,
          "match on the tool whose result is last");
    CHECK_STR(rs.finish_reason, "stop", "finish_reason defaults to stop");
    llm_response_free(&rs);

    CHECK(llm_complete(llm, pl, &rs, &e) == 0 && strcmp(rs.content, "second planner answer") == 0,
          "the planner's next request gets the next entry");
    llm_response_free(&rs);
    CHECK(llm_complete(llm, pl, &rs, &e) < 0 && e.kind == LLM_ERR_UNCOVERED,
          "the third planner request is not covered");
    printf("# %s\n", e.msg);
    CHECK(strstr(e.msg, "context \"planner\"") && strstr(e.msg, "request 3") &&
              strstr(e.msg, "Book a ride to the airport") && strstr(e.msg, "rec-"),
          "the error names the file, the context, the request number and an excerpt");
    llm_request_free(pl);
    llm_request_free(none);

    struct llm_request *fl = llm_request_new("flaky");
    llm_request_user(fl, "x");
    CHECK(llm_complete(llm, fl, &rs, &e) < 0 && e.kind == LLM_ERR_RATE_LIMIT &&
              strstr(e.msg, "recorded 429"),
          "a recorded error is replayed as that error");
    llm_request_free(fl);

    struct llm_request *other = llm_request_new("spokes");
    llm_request_user(other, "line one\nline \"two\" \x01");
    CHECK(llm_complete(llm, other, &rs, &e) < 0 && e.kind == LLM_ERR_UNCOVERED &&
              !strchr(e.msg, '\n') && !strchr(e.msg, '\x01'),
          "\"spoke:*\" does not cover \"spokes\"; the excerpt is one clean line");
    llm_request_free(other);

    char first[128];
    CHECK(llm_replay_unused(llm, first, sizeof(first)) == 1 && strstr(first, "never"),
          "the one unused entry is reported (%s)", first);
    llm_close(llm);
}

static void expect_refused(const char *squoted, const char *needle, const char *what)
{
    char err[1024] = "";
    struct llm *llm = open_replay(squoted, err, sizeof(err));
    CHECK(llm == NULL && strstr(err, needle) && strstr(err, "rec-"), "%s: %s", what, err);
    llm_close(llm);
}

static void test_malformed_files(void)
{
    char err[512];
    CHECK(llm_open("replay:/nonexistent/rec.json", &cfg, err, sizeof(err)) == NULL &&
              strstr(err, "/nonexistent/rec.json") && strstr(err, "No such file"),
          "a missing file is named");
    CHECK(llm_open("replay:", &cfg, err, sizeof(err)) == NULL && strstr(err, "FILE"),
          "replay: without a file");
    expect_refused("{'entries':[", "invalid JSON", "truncated JSON");
    expect_refused("[]", "must be a JSON object", "not an object");
    expect_refused("{'entries':[],'entries':[]}", "invalid JSON", "duplicate keys");
    expect_refused("{'version':2,'entries':[]}", "version", "unknown version");
    expect_refused("{'entries':{}}", "entries: must be an array", "entries not an array");
    expect_refused("{'entries':[],'extra':1}", "extra: unknown key", "unknown top-level key");
    expect_refused("{'entries':[{'response':{'content':'x'}}]}", "entries[0].context: is required",
                   "no context");
    expect_refused("{'entries':[{'context':'a b','response':{'content':'x'}}]}",
                   "entries[0].context", "bad context label");
    expect_refused("{'entries':[{'context':'a*b*','response':{'content':'x'}}]}",
                   "entries[0].context", "a wildcard only at the end");
    expect_refused("{'entries':[{'context':'a'}]}", "exactly one of", "neither response nor error");
    expect_refused(
        "{'entries':[{'context':'a','response':{'content':'x'},'error':{'kind':'timeout'}}]}",
        "exactly one of", "both response and error");
    expect_refused("{'entries':[{'context':'a','response':{'content':7}}]}",
                   "entries[0].response.content: must be a string or null", "content a number");
    expect_refused("{'entries':[{'context':'a','response':{}}]}", "needs", "empty response");
    expect_refused("{'entries':[{'context':'a','response':{'tool_calls':[{'name':'f',"
                   "'arguments':'{broken'}]}}]}",
                   "entries[0].response: tool_calls[0] (f): arguments are not valid JSON",
                   "broken tool arguments");
    expect_refused("{'entries':[{'context':'a','response':{'tool_calls':[{'arguments':{}}]}}]}",
                   "entries[0].response: tool_calls[0]", "tool call without a name");
    expect_refused(
        "{'entries':[{'context':'a','match':{'role':'robot'},'response':{'content':'x'}}]}",
        "entries[0].match.role", "unknown role");
    expect_refused(
        "{'entries':[{'context':'a','match':{'regex':'.*'},'response':{'content':'x'}}]}",
        "entries[0].match.regex: unknown key", "unknown match key");
    expect_refused("{'entries':[{'context':'a','error':{'kind':'meltdown'}}]}",
                   "entries[0].error.kind", "unknown error kind");
    expect_refused("{'entries':[{'context':'a','response':{'content':'x','usage':"
                   "{'prompt_tokens':-1}}}]}",
                   "entries[0].response.usage.prompt_tokens", "negative tokens");
    expect_refused("{'entries':[{'context':'a','repeat':'yes','response':{'content':'x'}}]}",
                   "entries[0].repeat", "repeat not a bool");

    /* Bounds: a file over 16 MiB is refused before parsing. */
    const char *path = harness_write("huge.json", "");
    FILE *f = fopen(path, "w");
    fputs("{\"entries\":[", f);
    char chunk[4096];
    memset(chunk, ' ', sizeof(chunk));
    for (size_t i = 0; i < (17u << 20) / sizeof(chunk); i++)
        fwrite(chunk, 1, sizeof(chunk), f);
    fputs("]}", f);
    fclose(f);
    char spec[700];
    snprintf(spec, sizeof(spec), "replay:%s", path);
    CHECK(llm_open(spec, &cfg, err, sizeof(err)) == NULL && strstr(err, "allowed"),
          "a file over 16 MiB is refused: %s", err);
    unlink(path);
}

static void test_audit(void)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/audit.jsonl", harness_dir());
    char err[256];
    struct audit *a = audit_open(path, "hub", err, sizeof(err));
    struct llm_config c = cfg;
    c.audit = a;
    c.model = "recorded-model";
    char *json = harness_json("{'entries':[{'context':'planner','response':{'content':'secret "
                              "answer','usage':{'prompt_tokens':3,'completion_tokens':2}}}]}");
    const char *file = harness_write("audit-rec.json", json);
    free(json);
    char spec[700];
    snprintf(spec, sizeof(spec), "replay:%s", file);
    struct llm *llm = llm_open(spec, &c, err, sizeof(err));
    struct llm_request *rq = llm_request_new("planner");
    llm_request_user(rq, "secret question");
    llm_request_set_user(rq, "alice");
    struct llm_response rs;
    struct llm_error e;
    CHECK(llm_complete(llm, rq, &rs, &e) == 0, "served");
    llm_response_free(&rs);
    CHECK(llm_complete(llm, rq, &rs, &e) < 0, "uncovered");
    llm_request_free(rq);
    llm_close(llm);
    audit_close(a);
    FILE *f = fopen(path, "r");
    char line[4096];
    json_t *first = fgets(line, sizeof(line), f) ? json_loads(line, 0, NULL) : NULL;
    bool leaked = strstr(line, "secret") != NULL;
    json_t *second = fgets(line, sizeof(line), f) ? json_loads(line, 0, NULL) : NULL;
    fclose(f);
    json_t *llmrec = json_object_get(json_object_get(first, "isolate"), "llm");
    CHECK(first &&
              json_integer_value(json_object_get(json_object_get(llmrec, "tokens"), "total")) == 5,
          "audit: tokens recorded");
    CHECK_STR(json_string_value(json_object_get(llmrec, "backend")), "replay", "audit: backend");
    CHECK_STR(json_string_value(json_object_get(llmrec, "model")), "recorded-model",
              "audit: model");
    CHECK_STR(json_string_value(json_object_get(json_object_get(first, "isolate"), "user")),
              "alice", "audit: user");
    CHECK(!leaked, "audit: no content without --debug");
    CHECK_STR(json_string_value(json_object_get(json_object_get(second, "event"), "reason")),
              "uncovered", "audit: the uncovered request is a failure with its reason");
    json_decref(first);
    json_decref(second);

    /* An audit log that cannot be written withholds the answer. */
    a = audit_open("/dev/full", "hub", err, sizeof(err));
    c.audit = a;
    llm = llm_open(spec, &c, err, sizeof(err));
    rq = llm_request_new("planner");
    llm_request_user(rq, "q");
    CHECK(llm_complete(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_AUDIT && rs.content == NULL,
          "an unwritable audit log withholds the answer");
    llm_request_free(rq);
    llm_close(llm);
    audit_close(a);
}

int main(void)
{
    llm_config_defaults(&cfg);
    test_covered();
    test_malformed_files();
    test_audit();
    harness_cleanup();
    return test_done();
}
