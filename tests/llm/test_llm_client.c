/* The HTTP LLM client against the stand-in OpenAI-compatible server: request bodies
 * and headers, tool calls and server quirks, malformed and oversized answers,
 * retries with back-off and Retry-After, timeouts, HTTP errors, streaming, cancel,
 * audit records, and that the API key appears in no log line, error or record. */
#include "harness.h"
#include "test.h"

#include "audit.h"
#include "llm/llm.h"
#include "log.h"
#include "llm/replay.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define KEY "sk-test-7Hq2Zx9VbN4mK8pL3wR6tY1uJ5"
#define KEY_ENV "ISOLATE_TEST_LLM_KEY"

static struct audit *audit_log;
static char audit_file[600];
static unsigned key_leaks;

static struct llm_config base_config(const char *url)
{
    struct llm_config cfg;
    llm_config_defaults(&cfg);
    cfg.base_url = url;
    cfg.model = "test-model";
    cfg.api_key_env = KEY_ENV;
    cfg.connect_timeout_ms = 1000;
    cfg.timeout_ms = 3000;
    cfg.max_attempts = 4;
    cfg.backoff_ms = 20;
    cfg.backoff_max_ms = 80;
    cfg.audit = audit_log;
    return cfg;
}

static struct llm *open_cfg(const struct llm_config *cfg)
{
    char err[512];
    struct llm *llm = llm_open(NULL, cfg, err, sizeof(err));
    if (!llm)
        printf("# llm_open: %s\n", err);
    return llm;
}

static struct llm *open_url(const char *url)
{
    struct llm_config cfg = base_config(url);
    return open_cfg(&cfg);
}

static struct llm_request *simple_request(void)
{
    struct llm_request *rq = llm_request_new("planner");
    llm_request_system(rq, "You are a test.");
    llm_request_user(rq, "Say hello.");
    llm_request_set_user(rq, "alice");
    return rq;
}

/* Runs one call and counts any leak of the key into the error text. */
static int run(struct llm *llm, struct llm_request *rq, struct llm_response *rs,
               struct llm_error *e)
{
    int rc = llm_complete(llm, rq, rs, e);
    if (strstr(e->msg, KEY))
        key_leaks++;
    if (rc < 0)
        printf("# error (%s): %s\n", llm_error_kind_name(e->kind), e->msg);
    return rc;
}

static const char *jstr(json_t *root, const char *path)
{
    json_t *v = root;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, ".")) {
        char *end;
        long idx = strtol(tok, &end, 10);
        v = (*end == '\0') ? json_array_get(v, (size_t)idx) : json_object_get(v, tok);
    }
    return json_string_value(v);
}

static json_t *jget(json_t *root, const char *path)
{
    json_t *v = root;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, ".")) {
        char *end;
        long idx = strtol(tok, &end, 10);
        v = (*end == '\0') ? json_array_get(v, (size_t)idx) : json_object_get(v, tok);
    }
    return v;
}

/* A complete chat completion as a stand-in response (TEXT_BODY without the braces). */
#define TEXT_BODY(text)                                                                            \
    "'json':{'id':'c1','object':'chat.completion','model':'test-model','choices':[{'index':0,"     \
    "'message':{'role':'assistant','content':'" text "'},'finish_reason':'stop'}],"                \
    "'usage':{'prompt_tokens':11,'completion_tokens':3,'total_tokens':14}}"
#define TEXT_ANSWER(text) "{" TEXT_BODY(text) "}"

static void test_text_answer_and_request(void)
{
    struct standin s;
    CHECK(standin_start(&s, "{'responses':[" TEXT_ANSWER("Hello there") "]}"), "stand-in up");
    struct llm *llm = open_url(s.base_url);
    struct llm_request *rq = simple_request();
    json_t *schema =
        json_loads("{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\"}},"
                   "\"required\":[\"to\"]}",
                   0, NULL);
    char err[256];
    CHECK(llm_request_tool(rq, "metro_hail__estimate_fare", "Estimates fares", schema, err,
                           sizeof(err)) == 0,
          "a tool with a JSON Schema is accepted");
    CHECK(llm_request_tool(rq, "mail.send", "x", NULL, err, sizeof(err)) < 0 &&
              strstr(err, "app__tool"),
          "a tool name servers refuse (mail.send) is refused with a hint");
    llm_request_set_temperature(rq, 0.25);
    llm_request_set_max_tokens(rq, 77);
    llm_request_set_json_object(rq, true);
    struct llm_response rs;
    struct llm_error e;
    CHECK(run(llm, rq, &rs, &e) == 0, "a text answer is accepted");
    CHECK_STR(rs.content, "Hello there", "content");
    CHECK_STR(rs.finish_reason, "stop", "finish_reason");
    CHECK_STR(rs.model, "test-model", "model as reported");
    CHECK(rs.usage.present && rs.usage.prompt_tokens == 11 && rs.usage.completion_tokens == 3 &&
              rs.usage.total_tokens == 14,
          "usage tokens");
    CHECK(rs.n_tool_calls == 0 && rs.attempts == 1, "no tool calls, one attempt");

    json_t *reqs = standin_requests(&s);
    CHECK(json_array_size(reqs) == 1, "the server got one request");
    json_t *r0 = json_array_get(reqs, 0);
    CHECK_STR(jstr(r0, "method"), "POST", "POST");
    CHECK_STR(jstr(r0, "path"), "/v1/chat/completions", "path is base_url + /chat/completions");
    CHECK_STR(jstr(r0, "headers.authorization"), "Bearer " KEY,
              "the key is sent as a Bearer token");
    CHECK_STR(jstr(r0, "headers.content-type"), "application/json", "JSON content type");
    json_t *b = standin_body(reqs, 0);
    CHECK(b != NULL, "the body is JSON");
    CHECK_STR(jstr(b, "model"), "test-model", "body.model");
    CHECK_STR(jstr(b, "messages.0.role"), "system", "messages[0] is the system message");
    CHECK_STR(jstr(b, "messages.1.content"), "Say hello.", "messages[1] is the user message");
    CHECK_STR(jstr(b, "tools.0.type"), "function", "tools[0].type");
    CHECK_STR(jstr(b, "tools.0.function.name"), "metro_hail__estimate_fare", "tool name");
    CHECK_STR(jstr(b, "tools.0.function.parameters.required.0"), "to", "tool JSON Schema sent");
    CHECK(json_real_value(jget(b, "temperature")) == 0.25, "temperature");
    CHECK(json_integer_value(jget(b, "max_tokens")) == 77, "max_tokens");
    CHECK_STR(jstr(b, "response_format.type"), "json_object", "response_format json_object");
    CHECK(jget(b, "stream") == NULL, "not streamed unless asked");
    json_decref(b);
    json_decref(reqs);
    json_decref(schema);
    llm_response_free(&rs);
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static void test_no_key(void)
{
    struct standin s;
    CHECK(standin_start(&s, "{'responses':[" TEXT_ANSWER("ok") "]}"), "stand-in up");
    struct llm_config cfg = base_config(s.base_url);
    cfg.api_key_env = "ISOLATE_TEST_UNSET_VARIABLE";
    unsetenv("ISOLATE_TEST_UNSET_VARIABLE");
    struct llm *llm = open_cfg(&cfg);
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;
    CHECK(run(llm, rq, &rs, &e) == 0, "a local server needs no key");
    json_t *reqs = standin_requests(&s);
    CHECK(jget(json_array_get(reqs, 0), "headers.authorization") == NULL,
          "no Authorization header without a key");
    json_decref(reqs);
    llm_response_free(&rs);
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static void test_tool_calls(void)
{
    struct standin s;
    CHECK(standin_start(
              &s, "{'responses':["
                  /* OpenAI: content null, arguments a JSON string */
                  "{'json':{'choices':[{'message':{'role':'assistant','content':null,'tool_calls':["
                  "{'id':'call_a','type':'function','function':{'name':'metro_hail__estimate_fare',"
                  "'arguments':'{\\'to\\': \\'airport\\'}'}},"
                  "{'id':'call_b','type':'function','function':{'name':'calendar__list',"
                  "'arguments':''}}]},'finish_reason':'tool_calls'}],"
                  "'usage':{'prompt_tokens':5,'completion_tokens':7,'total_tokens':12}}},"
                  /* ollama: arguments as an object, no usage, no id */
                  "{'json':{'choices':[{'message':{'role':'assistant','content':'','tool_calls':["
                  "{'function':{'name':'mail__send','arguments':{'to':'bob','n':[1,2]}}}]},"
                  "'finish_reason':'stop'}]}},"
                  /* invalid arguments */
                  "{'json':{'choices':[{'message':{'role':'assistant','tool_calls':["
                  "{'id':'x','function':{'name':'f','arguments':'{not json'}}]}}]}},"
                  "{'json':{'choices':[{'message':{'role':'assistant','tool_calls':["
                  "{'id':'x','function':{'name':'f','arguments':'[1,2]'}}]}}]}},"
                  "{'json':{'choices':[{'message':{'role':'assistant','tool_calls':["
                  "{'id':'x','function':{'arguments':'{}'}}]}}]}}"
                  "]}"),
          "stand-in up");
    struct llm *llm = open_url(s.base_url);
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;
    CHECK(run(llm, rq, &rs, &e) == 0, "a tool-call plan is accepted");
    CHECK(rs.content == NULL, "content null with tool_calls");
    CHECK(rs.n_tool_calls == 2, "two tool calls");
    CHECK_STR(rs.tool_calls[0].id, "call_a", "call id");
    CHECK_STR(rs.tool_calls[0].name, "metro_hail__estimate_fare", "call name");
    CHECK_STR(rs.tool_calls[0].arguments, "{\"to\":\"airport\"}", "arguments normalised");
    CHECK_STR(rs.tool_calls[1].arguments, "{}", "empty arguments become {}");
    json_t *args = llm_tool_call_args(&rs.tool_calls[0]);
    CHECK_STR(json_string_value(json_object_get(args, "to")), "airport", "arguments parsed");
    json_decref(args);
    CHECK_STR(rs.finish_reason, "tool_calls", "finish_reason tool_calls");

    /* The tool loop continues: the answer and the tool results go back. */
    llm_request_assistant(rq, &rs);
    llm_request_tool_result(rq, "call_a", "metro_hail__estimate_fare", "{\"fare\": 42}");
    llm_request_tool_result(rq, "call_b", "calendar__list", "[]");
    llm_response_free(&rs);
    CHECK(run(llm, rq, &rs, &e) == 0, "ollama-style answer is accepted");
    CHECK(rs.n_tool_calls == 1 && rs.content == NULL, "one call; empty content is no content");
    CHECK_STR(rs.tool_calls[0].id, "call_0", "a missing id is synthesised");
    CHECK_STR(rs.tool_calls[0].arguments, "{\"to\":\"bob\",\"n\":[1,2]}",
              "object arguments become JSON text");
    CHECK(!rs.usage.present, "missing usage is allowed");
    llm_response_free(&rs);

    json_t *reqs = standin_requests(&s);
    json_t *b = standin_body(reqs, 1);
    CHECK_STR(jstr(b, "messages.2.role"), "assistant", "the assistant turn is sent back");
    CHECK(json_is_null(jget(b, "messages.2.content")), "its content is null");
    CHECK_STR(jstr(b, "messages.2.tool_calls.0.function.arguments"), "{\"to\":\"airport\"}",
              "its tool call arguments are a JSON string");
    CHECK_STR(jstr(b, "messages.3.role"), "tool", "then the tool result");
    CHECK_STR(jstr(b, "messages.3.tool_call_id"), "call_a", "with its tool_call_id");
    CHECK(jget(b, "messages.3.name") == NULL, "without our private name field");
    json_decref(b);
    json_decref(reqs);

    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED &&
              strstr(e.msg, "tool_calls[0]") && strstr(e.msg, "not valid JSON"),
          "invalid JSON arguments: malformed, naming the call");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED &&
              strstr(e.msg, "must be a JSON object"),
          "non-object arguments: malformed");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED && strstr(e.msg, "name"),
          "a call without a name: malformed");
    CHECK(e.attempts == 1, "malformed answers are not retried");
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static void test_malformed(void)
{
    struct standin s;
    CHECK(standin_start(&s, "{'responses':["
                            "{'body':'{\\'choices\\': [ {\\'message'},"
                            "{'json':{'choices':[]}},"
                            "{'json':{'choices':'no'}},"
                            "{'json':{'choices':[{'message':{'content':42}}]}},"
                            "{'body':'<html>hello</html>'},"
                            "{'json':[1,2,3]},"
                            "{'json':{'choices':[{'message':{'content':'x'},"
                            "'finish_reason':'stop\\nreally'}]}},"
                            "{'json':{'error':{'message':'overloaded, try later'}}}"
                            "]}"),
          "stand-in up");
    struct llm *llm = open_url(s.base_url);
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;
    const char *what[] = {"truncated JSON",
                          "empty choices",
                          "choices not an array",
                          "content a number",
                          "an HTML page",
                          "a JSON array",
                          "a control character in finish_reason"};
    for (size_t i = 0; i < ARRAY_LEN(what); i++)
        CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED, "%s is malformed", what[i]);
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_HTTP && strstr(e.msg, "overloaded"),
          "an error object with status 200 is an error with its message");
    json_t *reqs = standin_requests(&s);
    CHECK(json_array_size(reqs) == ARRAY_LEN(what) + 1, "none of them was retried");
    json_decref(reqs);
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static void test_retries(void)
{
    struct standin s;
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;

    /* 429 with Retry-After: 1, then success: the wait is honoured. */
    CHECK(standin_start(&s, "{'responses':[{'status':429,'headers':{'Retry-After':'1'},"
                            "'json':{'error':{'message':'slow down'}}}," TEXT_ANSWER("after") "]}"),
          "stand-in up");
    struct llm *llm = open_url(s.base_url);
    CHECK(run(llm, rq, &rs, &e) == 0 && rs.attempts == 2, "429 then success: two attempts");
    CHECK_STR(rs.content, "after", "the second answer is used");
    json_t *reqs = standin_requests(&s);
    long gap =
        (long)(json_integer_value(jget(reqs, "1.ms")) - json_integer_value(jget(reqs, "0.ms")));
    CHECK(gap >= 950 && gap < 3000, "Retry-After: 1 honoured (waited %ld ms)", gap);
    json_decref(reqs);
    llm_response_free(&rs);
    llm_close(llm);
    standin_stop(&s);

    /* Exponential back-off with jitter between 5xx answers. */
    CHECK(standin_start(
              &s, "{'responses':[{'status':503,'times':3,'body':'busy'}," TEXT_ANSWER("up") "]}"),
          "stand-in up");
    struct llm_config cfg = base_config(s.base_url);
    cfg.backoff_ms = 100;
    cfg.backoff_max_ms = 400;
    llm = open_cfg(&cfg);
    CHECK(run(llm, rq, &rs, &e) == 0 && rs.attempts == 4, "503 x3 then success: four attempts");
    reqs = standin_requests(&s);
    long g1 =
        (long)(json_integer_value(jget(reqs, "1.ms")) - json_integer_value(jget(reqs, "0.ms")));
    long g2 =
        (long)(json_integer_value(jget(reqs, "2.ms")) - json_integer_value(jget(reqs, "1.ms")));
    long g3 =
        (long)(json_integer_value(jget(reqs, "3.ms")) - json_integer_value(jget(reqs, "2.ms")));
    printf("# back-off gaps: %ld %ld %ld ms\n", g1, g2, g3);
    CHECK(g1 >= 50 && g2 >= 100 && g3 >= 200, "back-off doubles (at least half of 100/200/400 ms)");
    CHECK(g1 < 1000 && g2 < 1000 && g3 < 1500, "back-off is capped");
    json_decref(reqs);
    llm_response_free(&rs);
    llm_close(llm);
    standin_stop(&s);

    /* A 500 storm: bounded attempts, then a clear error. */
    CHECK(standin_start(&s, "{'responses':[],'otherwise':{'status':500,"
                            "'json':{'error':{'message':'kaboom'}}}}"),
          "stand-in up");
    cfg = base_config(s.base_url);
    cfg.max_attempts = 3;
    llm = open_cfg(&cfg);
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_SERVER, "500 storm: server error");
    CHECK(e.attempts == 3 && e.http_status == 500, "exactly max_attempts attempts");
    CHECK(strstr(e.msg, "kaboom") && strstr(e.msg, "3 attempts") && strstr(e.msg, "500"),
          "the message has the status, the server's words and the attempts");
    reqs = standin_requests(&s);
    CHECK(json_array_size(reqs) == 3, "the server saw three requests");
    json_decref(reqs);
    llm_close(llm);
    standin_stop(&s);

    /* A Retry-After longer than allowed ends the call at once. */
    CHECK(standin_start(&s, "{'responses':[{'status':429,'headers':{'Retry-After':'3600'},"
                            "'body':'later'}]}"),
          "stand-in up");
    llm = open_url(s.base_url);
    uint64_t t0 = now_mono_ns();
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_RATE_LIMIT &&
              strstr(e.msg, "retry_after_max_ms") && harness_ms(t0, now_mono_ns()) < 2000,
          "Retry-After: 3600 is a rate-limit error without waiting");
    llm_close(llm);
    standin_stop(&s);

    /* A dropped connection is retried. */
    CHECK(standin_start(&s, "{'responses':[{'close':true}," TEXT_ANSWER("again") "]}"),
          "stand-in up");
    llm = open_url(s.base_url);
    CHECK(run(llm, rq, &rs, &e) == 0 && rs.attempts == 2, "connection closed, then success");
    llm_response_free(&rs);
    llm_close(llm);
    standin_stop(&s);

    /* Nobody listening: connection refused on every attempt. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    close(fd);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", ntohs(sa.sin_port));
    cfg = base_config(url);
    cfg.max_attempts = 3;
    llm = open_cfg(&cfg);
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_CONNECT && e.attempts == 3 &&
              strstr(e.msg, url),
          "connection refused: connect error after 3 attempts, naming the URL");
    llm_close(llm);
    llm_request_free(rq);
}

static void test_timeout(void)
{
    struct standin s;
    CHECK(standin_start(&s, "{'responses':[{'delay_ms':4000," TEXT_BODY("late") "}]}"),
          "stand-in up");
    struct llm_config cfg = base_config(s.base_url);
    cfg.timeout_ms = 500;
    struct llm *llm = open_cfg(&cfg);
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;
    uint64_t t0 = now_mono_ns();
    int rc = run(llm, rq, &rs, &e);
    long ms = harness_ms(t0, now_mono_ns());
    CHECK(rc < 0 && e.kind == LLM_ERR_TIMEOUT && strstr(e.msg, "500 ms"),
          "a slow answer is a timeout naming the limit");
    CHECK(ms >= 450 && ms < 1500, "the timeout is honoured (%ld ms for 500)", ms);
    CHECK(e.attempts == 1, "a timeout after connecting is not retried");
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static void test_http_errors(void)
{
    struct standin s;
    CHECK(standin_start(&s, "{'responses':["
                            "{'status':401,'json':{'error':{'message':'Incorrect API key "
                            "provided: " KEY "','code':'invalid_api_key'}}},"
                            "{'status':403,'body':'forbidden for " KEY "'},"
                            "{'status':404,'json':{'error':{'message':'model not found, try "
                            "pulling it first'}}},"
                            "{'status':400,'json':{'error':{'message':'max_tokens is too "
                            "large: 999999'}}},"
                            "{'status':422,'json':{'detail':[{'msg':'field required'}]}},"
                            "{'status':302,'headers':{'Location':'http://elsewhere/'},'body':''}"
                            "]}"),
          "stand-in up");
    struct llm *llm = open_url(s.base_url);
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_AUTH && e.http_status == 401 &&
              strstr(e.msg, "Incorrect API key") && strstr(e.msg, "$" KEY_ENV),
          "401: auth error with the server's message and the variable's name");
    CHECK(!strstr(e.msg, KEY) && strstr(e.msg, "[redacted]"), "the echoed key is redacted");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_AUTH && e.http_status == 403 &&
              !strstr(e.msg, KEY),
          "403: auth error, key redacted");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_NOT_FOUND && strstr(e.msg, "test-model") &&
              strstr(e.msg, s.base_url) && strstr(e.msg, "/v1"),
          "404: names the model and the URL");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_BAD_REQUEST &&
              strstr(e.msg, "max_tokens is too large"),
          "400: the server's message");
    CHECK(strstr(e.detail, "max_tokens is too large") && strstr(e.msg, LLM_SERVER_SAID) &&
              strcmp(strstr(e.msg, LLM_SERVER_SAID) + strlen(LLM_SERVER_SAID), e.detail) > 0 &&
              strncmp(strstr(e.msg, LLM_SERVER_SAID) + strlen(LLM_SERVER_SAID), e.detail,
                      strlen(e.detail)) == 0,
          "400: ... kept apart in detail, and last in the message after LLM_SERVER_SAID");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_BAD_REQUEST &&
              strstr(e.msg, "field required"),
          "422: FastAPI detail (vLLM) shown");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_HTTP && strstr(e.msg, "redirect"),
          "a redirect is not followed (the key stays with this host)");
    json_t *reqs = standin_requests(&s);
    CHECK(json_array_size(reqs) == 6, "4xx and 3xx answers are not retried");
    json_decref(reqs);
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

struct collected {
    struct {
        char text[4096];
        size_t len;
    } b;
    unsigned calls;
    unsigned stop_after;
};

static int collect(void *arg, const char *text, size_t len)
{
    struct collected *c = arg;
    c->calls++;
    if (c->b.len + len < sizeof(c->b.text)) {
        memcpy(c->b.text + c->b.len, text, len);
        c->b.len += len;
        c->b.text[c->b.len] = '\0';
    }
    return c->stop_after && c->calls >= c->stop_after;
}

static void test_oversized(void)
{
    /* 300 KiB of content against a 64 KiB cap. */
    size_t n = 300 * 1024;
    char *big = xmalloc(n + 1);
    memset(big, 'A', n);
    big[n] = '\0';
    char *script = xasprintf("{'responses':[" TEXT_ANSWER("%s") ",{'sse':[{'choices':[{'delta':"
                                                                "{'content':'%s'}}]},'[DONE]']}]}",
                             big, big);
    free(big);
    struct standin s;
    CHECK(standin_start(&s, script), "stand-in up");
    free(script);
    struct llm_config cfg = base_config(s.base_url);
    cfg.max_response_bytes = 64 * 1024;
    struct llm *llm = open_cfg(&cfg);
    struct llm_request *rq = simple_request();
    struct llm_response rs;
    struct llm_error e;
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_TOO_LARGE &&
              strstr(e.msg, "max_response_bytes"),
          "an oversized answer is refused");
    CHECK(e.attempts == 1, "and not retried");
    struct collected c = {0};
    llm_request_set_stream(rq, collect, &c);
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_TOO_LARGE,
          "an oversized streamed answer is refused");
    llm_close(llm);
    standin_stop(&s);
    llm_request_free(rq);
}

static void test_streaming(void)
{
    struct standin s;
    CHECK(
        standin_start(
            &s,
            "{'responses':["
            /* text, split into 7-byte writes, usage in a last chunk without choices */
            "{'split':7,'split_delay_ms':1,'sse':["
            "{'model':'test-model','choices':[{'index':0,'delta':{'role':'assistant','content':''}}"
            "]},"
            "{'choices':[{'index':0,'delta':{'content':'Hel'}}]},"
            "{'choices':[{'index':0,'delta':{'content':'lo, '}}]},"
            "{'choices':[{'index':0,'delta':{'content':'w\u00f6rld'}}]},"
            "{'choices':[{'index':0,'delta':{},'finish_reason':'stop'}]},"
            "{'choices':[],'usage':{'prompt_tokens':9,'completion_tokens':4,'total_tokens':13}},"
            "'[DONE]']},"
            /* two tool calls, interleaved, arguments in fragments */
            "{'sse':["
            "{'choices':[{'delta':{'role':'assistant','content':null,'tool_calls':[{'index':0,"
            "'id':'call_1','type':'function','function':{'name':'mail__send','arguments':''}}]}}]},"
            "{'choices':[{'delta':{'tool_calls':[{'index':1,'id':'call_2','type':'function',"
            "'function':{'name':'calendar__add','arguments':'{\\'day'}}]}}]},"
            "{'choices':[{'delta':{'tool_calls':[{'index':0,'function':{'arguments':'{\\'to\\':'}}]"
            "}}]},"
            "{'choices':[{'delta':{'tool_calls':[{'index':0,'function':{'arguments':' "
            "\\'bob\\'}'}}]}}]},"
            "{'choices':[{'delta':{'tool_calls':[{'index':1,'function':{'arguments':'\\': "
            "3}'}}]}}]},"
            "{'choices':[{'delta':{},'finish_reason':'tool_calls'}],"
            "'usage':{'prompt_tokens':1,'completion_tokens':2,'total_tokens':3}},"
            "'[DONE]']},"
            /* odd framing: CRLF, comments, event:, no [DONE] but a finish_reason */
            "{'sse_raw':': keep-alive\\r\\n\\r\\nevent: message\\r\\ndata: {\\'choices\\':"
            "[{\\'delta\\':{\\'content\\':\\'ok\\'},\\'finish_reason\\':\\'stop\\'}]}\\r\\n\\r\\n'}"
            ","
            /* a server that ignores stream:true */
            TEXT_ANSWER(
                "not streamed") ","
                                /* an error in the middle of the stream */
                                "{'sse':[{'choices':[{'delta':{'content':'par'}}]},{'error':{'"
                                "message':'model "
                                "crashed'}}]},"
                                /* cut off before the end */
                                "{'sse_raw':'data: "
                                "{\\'choices\\':[{\\'delta\\':{\\'content\\':\\'a\\'}}]}\\n\\n'},"
                                /* broken JSON in an event */
                                "{'sse':['{oops']},"
                                /* the callback cancels */
                                "{'sse':[{'choices':[{'delta':{'content':'one'}}]},{'choices':[{'"
                                "delta':{'content':'two'}}]},"
                                "{'choices':[{'delta':{},'finish_reason':'stop'}]},'[DONE]']}"
                                "]}"),
        "stand-in up");
    struct llm *llm = open_url(s.base_url);
    struct llm_request *rq = simple_request();
    struct collected c = {0};
    llm_request_set_stream(rq, collect, &c);
    struct llm_response rs;
    struct llm_error e;
    CHECK(run(llm, rq, &rs, &e) == 0, "a streamed answer is assembled");
    CHECK_STR(rs.content, "Hello, w\xc3\xb6rld", "content from deltas split across writes");
    CHECK_STR(c.b.text, "Hello, w\xc3\xb6rld", "the callback saw the same text");
    CHECK(c.calls == 3, "one callback per non-empty delta (%u)", c.calls);
    CHECK_STR(rs.finish_reason, "stop", "finish_reason");
    CHECK(rs.usage.present && rs.usage.total_tokens == 13, "usage from the last chunk");
    json_t *reqs = standin_requests(&s);
    json_t *b = standin_body(reqs, 0);
    CHECK(json_is_true(jget(b, "stream")) && json_is_true(jget(b, "stream_options.include_usage")),
          "stream and stream_options.include_usage sent");
    CHECK_STR(jstr(json_array_get(reqs, 0), "headers.accept"), "text/event-stream",
              "Accept: text/event-stream");
    json_decref(b);
    json_decref(reqs);
    llm_response_free(&rs);

    memset(&c, 0, sizeof(c));
    CHECK(run(llm, rq, &rs, &e) == 0, "streamed tool calls are assembled");
    CHECK(rs.n_tool_calls == 2 && rs.content == NULL, "two calls, no content");
    if (rs.n_tool_calls == 2) {
        CHECK_STR(rs.tool_calls[0].id, "call_1", "first id");
        CHECK_STR(rs.tool_calls[0].name, "mail__send", "first name");
        CHECK_STR(rs.tool_calls[0].arguments, "{\"to\":\"bob\"}", "first arguments from fragments");
        CHECK_STR(rs.tool_calls[1].name, "calendar__add", "second name");
        CHECK_STR(rs.tool_calls[1].arguments, "{\"day\":3}", "second arguments, interleaved");
    }
    CHECK(c.calls == 0, "tool-call deltas are not shown as text");
    llm_response_free(&rs);

    CHECK(run(llm, rq, &rs, &e) == 0 && rs.content && strcmp(rs.content, "ok") == 0,
          "CRLF framing, comments and event: lines");
    llm_response_free(&rs);

    memset(&c, 0, sizeof(c));
    CHECK(run(llm, rq, &rs, &e) == 0 && strcmp(c.b.text, "not streamed") == 0 && c.calls == 1,
          "a server that ignores stream: the text still reaches the callback");
    llm_response_free(&rs);

    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_SERVER && strstr(e.msg, "model crashed"),
          "an error event mid-stream is an error");
    CHECK(e.attempts == 1, "a stream that already showed text is not retried");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED && strstr(e.msg, "incomplete"),
          "a stream cut off before the end is incomplete");
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_MALFORMED &&
              strstr(e.msg, "not valid JSON"),
          "broken JSON in an event is malformed");
    memset(&c, 0, sizeof(c));
    c.stop_after = 1;
    CHECK(run(llm, rq, &rs, &e) < 0 && e.kind == LLM_ERR_CANCELLED && c.calls == 1,
          "the callback can cancel");
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);

    /* 429 before the stream starts: retried, and the text arrives once. */
    CHECK(standin_start(&s, "{'responses':[{'status':429,'body':'wait'},{'sse':["
                            "{'choices':[{'delta':{'content':'once'},'finish_reason':'stop'}]},"
                            "'[DONE]']}]}"),
          "stand-in up");
    llm = open_url(s.base_url);
    rq = simple_request();
    memset(&c, 0, sizeof(c));
    llm_request_set_stream(rq, collect, &c);
    CHECK(run(llm, rq, &rs, &e) == 0 && rs.attempts == 2 && strcmp(c.b.text, "once") == 0,
          "a stream retried after 429 shows its text once");
    llm_response_free(&rs);
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static volatile sig_atomic_t cancel_flag;

static void on_alarm(int sig)
{
    (void)sig;
    cancel_flag = 1;
}

static void test_cancel_flag(void)
{
    struct standin s;
    CHECK(standin_start(&s, "{'responses':[{'delay_ms':3000," TEXT_BODY("late") "}]}"),
          "stand-in up");
    struct llm *llm = open_url(s.base_url);
    struct llm_request *rq = simple_request();
    llm_request_set_cancel(rq, &cancel_flag);
    signal(SIGALRM, on_alarm);
    struct itimerval it = {.it_value = {.tv_sec = 0, .tv_usec = 200000}};
    setitimer(ITIMER_REAL, &it, NULL);
    struct llm_response rs;
    struct llm_error e;
    uint64_t t0 = now_mono_ns();
    int rc = run(llm, rq, &rs, &e);
    long ms = harness_ms(t0, now_mono_ns());
    CHECK(rc < 0 && e.kind == LLM_ERR_CANCELLED && ms < 1500,
          "a cancel flag set by a signal stops the call (%ld ms)", ms);
    llm_request_free(rq);
    llm_close(llm);
    standin_stop(&s);
}

static void test_config_checks(void)
{
    char err[512];
    struct llm_config cfg = base_config("http://user:" KEY "@127.0.0.1:1/v1");
    CHECK(llm_open(NULL, &cfg, err, sizeof(err)) == NULL && strstr(err, "credentials") &&
              !strstr(err, KEY),
          "a base URL with credentials is refused without echoing them");
    cfg = base_config("ftp://127.0.0.1/v1");
    CHECK(llm_open(NULL, &cfg, err, sizeof(err)) == NULL && strstr(err, "http"),
          "only http and https");
    cfg = base_config(NULL);
    CHECK(llm_open(NULL, &cfg, err, sizeof(err)) == NULL && strstr(err, "no LLM configured") &&
              strstr(err, "ollama") && strstr(err, "replay:"),
          "no LLM configured: the message says how to set one up");
    cfg = base_config("http://127.0.0.1:1/v1");
    cfg.model = NULL;
    CHECK(llm_open(NULL, &cfg, err, sizeof(err)) == NULL && strstr(err, "llm.model"),
          "a missing model is named");
    setenv("ISOLATE_TEST_BAD_KEY", "sk-abc\r\nX-Injected: 1", 1);
    cfg = base_config("http://127.0.0.1:1/v1");
    cfg.api_key_env = "ISOLATE_TEST_BAD_KEY";
    CHECK(llm_open(NULL, &cfg, err, sizeof(err)) == NULL && strstr(err, "ISOLATE_TEST_BAD_KEY") &&
              !strstr(err, "sk-abc"),
          "a key that would inject headers is refused, and not echoed");
    cfg = base_config("http://127.0.0.1:1/v1/");
    struct llm *llm = llm_open("http://127.0.0.1:2/v1/", &cfg, err, sizeof(err));
    CHECK(llm && strcmp(llm_describe(llm), "http://127.0.0.1:2/v1 (model test-model)") == 0,
          "--llm URL overrides the config; describe has no key");
    llm_close(llm);

    /* hub.json's "llm" object */
    const char *text = "{\"base_url\": \"http://127.0.0.1:8080/v1\", \"model\": \"qwen\", "
                       "\"api_key_env\": \"OPENAI_API_KEY\", \"timeout_ms\": 5000, "
                       "\"max_attempts\": 2, \"temperature\": 0.5}";
    struct jf_ctx jc = {.file = "hub.json", .err = err, .errlen = sizeof(err)};
    json_t *obj = jf_parse(&jc, text, strlen(text));
    llm_config_defaults(&cfg);
    CHECK(llm_config_parse(&jc, obj, "llm", &cfg) && cfg.timeout_ms == 5000 &&
              cfg.max_attempts == 2 && cfg.has_temperature && strcmp(cfg.model, "qwen") == 0,
          "llm config parsed");
    json_decref(obj);
    text = "{\"api_key_env\": \"sk-live-123\"}";
    obj = jf_parse(&jc, text, strlen(text));
    CHECK(!llm_config_parse(&jc, obj, "llm", &cfg) && strstr(err, "hub.json: llm.api_key_env"),
          "a key pasted into api_key_env is refused (%s)", err);
    json_decref(obj);
    text = "{\"timeout\": 5}";
    obj = jf_parse(&jc, text, strlen(text));
    CHECK(!llm_config_parse(&jc, obj, "llm", &cfg) && strstr(err, "llm.timeout: unknown key"),
          "unknown keys are errors");
    json_decref(obj);
}

/* Record a run against the server, then replay it offline: same answers. */
static void test_record_replay(void)
{
    struct standin s;
    CHECK(standin_start(
              &s,
              "{'responses':[" TEXT_ANSWER(
                  "Hello there") ","
                                 "{'json':{'choices':[{'message':{'content':null,'tool_calls':["
                                 "{'id':'call_9','type':'function','function':{'name':'mail__send',"
                                 "'arguments':'{\\'to\\':\\'bob\\'}'}}]},"
                                 "'finish_reason':'tool_calls'}]}}]}"),
          "stand-in up");
    char err[512];
    char path[600];
    snprintf(path, sizeof(path), "%s/recorded.json", harness_dir());
    struct llm *inner = open_url(s.base_url);
    struct llm *rec = llm_record_open(inner, path, err, sizeof(err));
    CHECK(rec != NULL, "recorder opens");
    struct llm_request *a = simple_request();
    struct llm_request *b = llm_request_new("spoke:mail");
    llm_request_user(b, "Mail bob");
    llm_request_tool_result(b, "call_1", "notes__read", "an \xc3\xa9l\xc3\xa8ve wrote this");
    struct llm_response ra, rb, pa, pb;
    struct llm_error e;
    CHECK(run(rec, a, &ra, &e) == 0 && run(rec, b, &rb, &e) == 0, "two calls recorded");
    llm_close(rec);
    standin_stop(&s);

    char spec[700];
    snprintf(spec, sizeof(spec), "replay:%s", path);
    struct llm_config cfg = base_config(NULL);
    struct llm *rep = llm_open(spec, &cfg, err, sizeof(err));
    CHECK(rep != NULL, "the recording loads as a replay file (%s)", rep ? "ok" : err);
    if (rep) {
        CHECK(run(rep, b, &pb, &e) == 0 && pb.n_tool_calls == 1 &&
                  strcmp(pb.tool_calls[0].arguments, rb.tool_calls[0].arguments) == 0 &&
                  strcmp(pb.tool_calls[0].id, "call_9") == 0,
              "the tool call replays (contexts are independent of order)");
        CHECK(run(rep, a, &pa, &e) == 0 && strcmp(pa.content, ra.content) == 0 &&
                  pa.usage.total_tokens == ra.usage.total_tokens,
              "the text answer replays with its usage");
        llm_response_free(&pa);
        llm_response_free(&pb);
        CHECK(run(rep, a, &pa, &e) < 0 && e.kind == LLM_ERR_UNCOVERED,
              "a request beyond the recording is uncovered");
        llm_close(rep);
    }
    llm_response_free(&ra);
    llm_response_free(&rb);
    llm_request_free(a);
    llm_request_free(b);
}

static bool file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getline(&line, &cap, f) > 0)
        found = strstr(line, needle) != NULL;
    free(line);
    fclose(f);
    return found;
}

static void test_audit_records(void)
{
    FILE *f = fopen(audit_file, "r");
    char *line = NULL;
    size_t cap = 0;
    unsigned records = 0, ok = 0, failures = 0, with_tokens = 0, content = 0;
    while (f && getline(&line, &cap, f) > 0) {
        json_t *rec = json_loads(line, 0, NULL);
        if (!rec)
            continue;
        records++;
        const char *outcome = jstr(rec, "event.outcome");
        if (outcome && strcmp(outcome, "success") == 0 &&
            strcmp(jstr(rec, "event.action"), "llm-call") == 0 && jget(rec, "event.duration") &&
            jstr(rec, "isolate.llm.model") && jstr(rec, "isolate.llm.context"))
            ok++;
        if (outcome && strcmp(outcome, "failure") == 0 && jstr(rec, "event.reason"))
            failures++;
        if (jget(rec, "isolate.llm.tokens.prompt"))
            with_tokens++;
        if (strstr(line, "Say hello.") || strstr(line, "Hello there"))
            content++;
        json_decref(rec);
    }
    free(line);
    if (f)
        fclose(f);
    CHECK(records > 20, "one audit record per call (%u)", records);
    CHECK(ok > 5 && failures > 5, "successes and failures recorded (%u, %u)", ok, failures);
    CHECK(with_tokens > 3, "token counts recorded");
    CHECK(content == 0, "no prompt or answer text in the audit log");
    CHECK(!file_contains(audit_file, KEY), "the key is not in the audit log");
}

int main(void)
{
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("https_proxy");
    unsetenv("HTTPS_PROXY");
    unsetenv("ALL_PROXY");
    unsetenv("all_proxy");
    setenv(KEY_ENV, KEY, 1);
    signal(SIGPIPE, SIG_IGN);

    /* Everything the client logs (debug included) goes to a file we search for the key. */
    char stderr_file[600];
    snprintf(stderr_file, sizeof(stderr_file), "%s/stderr.log", harness_dir());
    int saved_stderr = dup(2);
    if (!freopen(stderr_file, "w", stderr))
        return 2;
    setvbuf(stderr, NULL, _IONBF, 0);
    log_init("test_llm_client", true);

    snprintf(audit_file, sizeof(audit_file), "%s/audit.jsonl", harness_dir());
    char err[256];
    audit_log = audit_open(audit_file, "hub", err, sizeof(err));

    test_text_answer_and_request();
    test_no_key();
    test_tool_calls();
    test_malformed();
    test_retries();
    test_timeout();
    test_http_errors();
    test_oversized();
    test_streaming();
    test_cancel_flag();
    test_config_checks();
    test_record_replay();
    test_audit_records();

    CHECK(key_leaks == 0, "the key never appeared in an error message");
    CHECK(file_contains(stderr_file, "retrying in"), "debug logging was on (retries logged)");
    CHECK(!file_contains(stderr_file, KEY), "the key never appeared in the log output");
    audit_close(audit_log);
    fflush(stderr);
    dup2(saved_stderr, 2);
    harness_cleanup();
    return test_done();
}
