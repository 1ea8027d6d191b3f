/* Unit tests of the assistant's parts that need no spoke: the offered tool names,
 * plan validation and references, the memory heuristic, scripted answers, the
 * terminal's neutralisation of untrusted text, and secret memory across fork. */
#include "assistant/agent_impl.h"
#include "runtime/answers.h"
#include "assistant/planner.h"
#include "secret.h"
#include "runtime/spoke_env.h"
#include "termtext.h"
#include "test.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct manifest_set ms;
static struct tool_map map;
static char tmpdir[] = "/tmp/itest-agent-units-XXXXXX";

/* A response with tool calls "name", "json args" pairs (NULL-terminated). */
static void mkcalls(struct llm_response *rs, const char *const *pairs)
{
    memset(rs, 0, sizeof(*rs));
    size_t n = 0;
    while (pairs[2 * n])
        n++;
    rs->tool_calls = xcalloc(n + 1, sizeof(*rs->tool_calls));
    rs->n_tool_calls = n;
    for (size_t i = 0; i < n; i++) {
        rs->tool_calls[i].id = xasprintf("call_%zu", i);
        rs->tool_calls[i].name = xstrdup(pairs[2 * i]);
        rs->tool_calls[i].arguments = xstrdup(pairs[2 * i + 1]);
    }
}

static int plan_calls(const char *const *pairs, struct plan *p, char *err, size_t errlen)
{
    struct llm_response rs;
    mkcalls(&rs, pairs);
    int rc = plan_from_response(&rs, &map, NULL, 0, 0, 8, p, err, errlen);
    llm_response_free(&rs);
    return rc;
}

static int plan_text(const char *content, struct plan *p, char *err, size_t errlen)
{
    struct llm_response rs = {.content = xstrdup(content)};
    int rc = plan_from_response(&rs, &map, NULL, 0, 0, 8, p, err, errlen);
    llm_response_free(&rs);
    return rc;
}

static void test_tool_map(void)
{
    CHECK(tool_map_find(&map, "fare__estimate") != NULL,
          "fare.estimate is offered as fare__estimate");
    CHECK(tool_map_find(&map, "mail__delete") == NULL, "an invented name finds nothing");
    CHECK(tool_map_find(&map, "fare.estimate") == NULL, "the dotted name is not an offered name");
    /* Long names get a hash suffix, still unique and within 64. */
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/long", tmpdir);
    mkdir_p(dir, 0700);
    const char *app = "an_app_with_a_really_long_name_that_goes_on_and_on";
    snprintf(path, sizeof(path), "%s/%s.json", dir, app);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "{\"name\":\"%s\",\"description\":\"d\",\"command\":[\"x\"],\"runtime\":\"c\","
            "\"tools\":[{\"name\":\"a_tool_with_a_long_name_too_1\",\"description\":\"t\","
            "\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"a_tool_with_a_long_name_too_2\","
            "\"description\":\"t\",\"inputSchema\":{\"type\":\"object\"}}]}",
            app);
    fclose(f);
    struct manifest_set lms = {0};
    char err[500] = "";
    CHECK(manifest_set_load(dir, &lms, err, sizeof(err)) == 0, "long-named manifest loads (%s)",
          err);
    struct tool_map lm;
    tool_map_build(&lm, &lms);
    CHECK(lm.n == 2 && strlen(lm.v[0].name) <= 64 && strlen(lm.v[1].name) <= 64 &&
              strcmp(lm.v[0].name, lm.v[1].name) != 0,
          "names too long for 64 are shortened and stay distinct (%s, %s)", lm.v[0].name,
          lm.v[1].name);
    CHECK(tool_map_find(&lm, lm.v[1].name) == &lm.v[1], "... and map back exactly");
    tool_map_free(&lm);
    manifest_set_free(&lms);
}

static void test_plans(void)
{
    struct plan p;
    char err[700] = "";
    const char *ok[] = {"fare__estimate", "{\"from\":\"Main Street\",\"to\":\"Elm Avenue\"}",
                        "mail__send", "{\"to\":\"me@example.org\",\"body\":{\"$ref\":\"s1.fare\"}}",
                        NULL};
    CHECK(plan_calls(ok, &p, err, sizeof(err)) == 0 && p.n == 2,
          "a tool-call plan with a reference is valid (%s)", err);
    if (p.n != 2)
        return;
    CHECK_STR(p.steps[1].id, "s2", "steps are numbered s1, s2");
    json_t *pj = plan_json(&p);
    CHECK_STR(
        json_string_value(json_object_get(json_array_get(json_object_get(pj, "steps"), 1), "tool")),
        "mail.send", "plan_json names app.tool");
    json_decref(pj);
    plan_free(&p);

    const char *unknown[] = {"mail__delete", "{}", NULL};
    CHECK(plan_calls(unknown, &p, err, sizeof(err)) < 0 && strstr(err, "step 1") &&
              strstr(err, "\"mail__delete\" is not an installed tool"),
          "an unknown tool is refused: %s", err);
    const char *badargs[] = {"fare__estimate", "{\"from\":\"\",\"to\":\"x\"}", NULL};
    CHECK(plan_calls(badargs, &p, err, sizeof(err)) < 0 && strstr(err, "step 1 (fare.estimate)") &&
              strstr(err, "$.from"),
          "arguments breaking the inputSchema are refused: %s", err);
    const char *extra[] = {"fare__estimate", "{\"from\":\"a\",\"to\":\"b\",\"tip\":5}", NULL};
    CHECK(plan_calls(extra, &p, err, sizeof(err)) < 0,
          "an argument the schema does not allow is refused: %s", err);
    const char *later[] = {"mail__send", "{\"to\":\"x\",\"body\":{\"$ref\":\"s2\"}}",
                           "fare__estimate", "{\"from\":\"a\",\"to\":\"b\"}", NULL};
    CHECK(plan_calls(later, &p, err, sizeof(err)) < 0 && strstr(err, "not an earlier step"),
          "a reference to a later step is refused: %s", err);
    const char *field[] = {"fare__estimate", "{\"from\":\"a\",\"to\":\"b\"}", "mail__send",
                           "{\"to\":\"x\",\"body\":{\"$ref\":\"s1.price\"}}", NULL};
    CHECK(plan_calls(field, &p, err, sizeof(err)) < 0 && strstr(err, "no field \"price\""),
          "a reference to an undeclared field is refused: %s", err);
    const char *nested[] = {"fare__estimate", "{\"from\":\"a\",\"to\":\"b\"}", "mail__send",
                            "{\"to\":\"x\",\"body\":\"y\",\"cc\":[{\"$ref\":\"s1\"}]}", NULL};
    CHECK(plan_calls(nested, &p, err, sizeof(err)) < 0 && strstr(err, "whole argument value"),
          "a reference inside a value is refused: %s", err);
    const char *badref[] = {"fare__estimate", "{\"from\":\"a\",\"to\":\"b\"}", "mail__send",
                            "{\"to\":\"x\",\"body\":{\"$ref\":\"s1\",\"x\":1}}", NULL};
    CHECK(plan_calls(badref, &p, err, sizeof(err)) < 0,
          "a reference with extra keys is refused: %s", err);
    const char *callid[] = {"fare__estimate", "{\"from\":\"a\",\"to\":\"b\"}", "mail__send",
                            "{\"to\":\"x\",\"body\":{\"$ref\":\"call_0.fare\"}}", NULL};
    CHECK(plan_calls(callid, &p, err, sizeof(err)) == 0 &&
              strcmp(json_string_value(
                         json_object_get(json_object_get(p.steps[1].args, "body"), "$ref")),
                     "s1.fare") == 0,
          "a reference by tool call id becomes the step id (%s)", err);
    plan_free(&p);
    const char *many[] = {"mail__read", "{}",         "mail__read", "{}",         "mail__read",
                          "{}",         "mail__read", "{}",         "mail__read", "{}",
                          "mail__read", "{}",         "mail__read", "{}",         "mail__read",
                          "{}",         "mail__read", "{}",         NULL};
    CHECK(plan_calls(many, &p, err, sizeof(err)) < 0 && strstr(err, "9 steps; at most 8"),
          "too many steps are refused: %s", err);

    CHECK(plan_text("```json\n{\"steps\":[{\"tool\":\"fare.estimate\",\"arguments\":{\"from\":"
                    "\"a\",\"to\":\"b\"}},"
                    "{\"id\":\"x\",\"app\":\"mail\",\"tool\":\"send\",\"arguments\":{\"to\":\"t\","
                    "\"body\":{\"$ref\":\"s1.fare\"}}}]}\n```",
                    &p, err, sizeof(err)) == 0 &&
              p.n == 2 && strcmp(p.steps[1].id, "x") == 0,
          "a JSON plan in a code fence, with app and tool apart, is valid (%s)", err);
    plan_free(&p);
    CHECK(plan_text("{\"steps\":[{\"tool\":\"fare.estimate\",\"args\":{}}]}", &p, err,
                    sizeof(err)) < 0 &&
              strstr(err, "unknown key \"args\""),
          "a step with an unknown key is refused: %s", err);
    CHECK(plan_text("{\"steps\":[{\"id\":\"a\",\"tool\":\"mail.read\"},{\"id\":\"a\",\"tool\":"
                    "\"mail.read\"}]}",
                    &p, err, sizeof(err)) < 0 &&
              strstr(err, "used twice"),
          "duplicate step ids are refused: %s", err);
    CHECK(plan_text("{\"steps\": [", &p, err, sizeof(err)) < 0 && strstr(err, "not valid JSON"),
          "malformed JSON is refused: %s", err);
    CHECK(plan_text("Hello! How can I help?", &p, err, sizeof(err)) == 0 && p.n == 0 && p.answer &&
              strcmp(p.answer, "Hello! How can I help?") == 0,
          "plain text is a direct answer");
    plan_free(&p);
    CHECK(plan_text("", &p, err, sizeof(err)) < 0, "an empty answer is refused");

    /* A re-plan may use known steps and numbers its own after them. */
    struct plan_known known[] = {{"s1", manifest_tool(manifest_find(&ms, "fare"), "estimate")}};
    const char *re[] = {"mail__send", "{\"to\":\"x\",\"body\":{\"$ref\":\"s1.fare\"}}", NULL};
    struct llm_response rs;
    mkcalls(&rs, re);
    CHECK(plan_from_response(&rs, &map, known, 1, 1, 8, &p, err, sizeof(err)) == 0 &&
              strcmp(p.steps[0].id, "s2") == 0,
          "a re-plan references a step that ran and numbers from s2 (%s)", err);
    plan_free(&p);
    llm_response_free(&rs);
}

static const json_t *lookup_one(void *ud, const char *id)
{
    return strcmp(id, "s1") == 0 ? ud : NULL;
}

static void test_resolve(void)
{
    struct plan p;
    char err[500] = "";
    const char *ok[] = {"fare__estimate", "{\"from\":\"a\",\"to\":\"b\"}", "mail__send",
                        "{\"to\":\"me\",\"body\":{\"$ref\":\"s1.fare\"}}", NULL};
    plan_calls(ok, &p, err, sizeof(err));
    json_t *res = json_pack("{s:[{s:s,s:s}],s:{s:s}}", "content", "type", "text", "text", "x",
                            "structuredContent", "fare", "23 USD");
    json_t *args = plan_resolve(&p.steps[1], lookup_one, res, err, sizeof(err));
    CHECK(args && strcmp(json_string_value(json_object_get(args, "body")), "23 USD") == 0,
          "a reference resolves to the field of the result");
    json_decref(args);
    json_t *text_only = json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "content", "type", "text", "text",
                                  "one", "type", "text", "text", "two");
    json_object_set_new(json_object_get(p.steps[1].args, "body"), "$ref", json_string("s1"));
    args = plan_resolve(&p.steps[1], lookup_one, text_only, err, sizeof(err));
    CHECK(args && strcmp(json_string_value(json_object_get(args, "body")), "one\ntwo") == 0,
          "a whole result without structuredContent is its text");
    json_decref(args);
    args = plan_resolve(&p.steps[1], lookup_one, NULL, err, sizeof(err));
    CHECK(!args && strstr(err, "has no result"), "a step without a result cannot be referenced: %s",
          err);
    json_decref(res);
    json_decref(text_only);
    plan_free(&p);
}

static void test_history_heuristic(void)
{
    char *hist[] = {"I need an appointment. I am Ann Lee, born 1985-04-12, I had heart surgery "
                    "and have hypertension and asthma; ann@example.org"};
    const char *req = "I'd like to book a flight from Irvine to Paris on June 10th.";
    char snip[120];
    json_t *a1 = json_pack("{s:s,s:s}", "from", "Irvine", "to", "Paris");
    CHECK(!agent_args_use_history(a1, hist, 1, req, snip, sizeof(snip)),
          "words from the current request are not memory");
    json_t *a2 = json_pack("{s:s,s:s}", "to", "Paris", "notes", "passenger: hypertension");
    CHECK(agent_args_use_history(a2, hist, 1, req, snip, sizeof(snip)) &&
              strcmp(snip, "hypertension") == 0,
          "a long word from an earlier request is memory (%s)", snip);
    json_t *a3 = json_pack("{s:s}", "dob", "1985-04-12");
    CHECK(agent_args_use_history(a3, hist, 1, req, snip, sizeof(snip)),
          "a date from an earlier request is memory");
    json_t *a4 = json_pack("{s:[s]}", "contacts", "Ann Lee, born 1985");
    CHECK(agent_args_use_history(a4, hist, 1, req, snip, sizeof(snip)),
          "three words in a row from an earlier request are memory (%s)", snip);
    CHECK(!agent_args_use_history(a2, NULL, 0, req, snip, sizeof(snip)), "no history, no memory");
    json_decref(a1);
    json_decref(a2);
    json_decref(a3);
    json_decref(a4);
}

static void test_answers(void)
{
    char path[300], err[300], why[64];
    snprintf(path, sizeof(path), "%s/answers.json", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("{\"default\":\"no\",\"replan\":true,\"rules\":["
          "{\"in_plan\":false,\"decision\":\"deny\"},"
          "{\"app\":\"mail\",\"tool\":\"send\",\"decision\":\"never\"},"
          "{\"category\":\"exec\",\"app\":\"fare\",\"decision\":\"always\"},"
          "{\"category\":\"data\",\"caller\":\"_memory\",\"decision\":\"session\"}]}",
          f);
    fclose(f);
    struct answers *a = answers_load(path, err, sizeof(err));
    CHECK(a != NULL, "an answers file with scopes loads (%s)", err);
    struct perm_request q = {
        .category = PERM_EXEC, .app = "fare", .tool = "estimate", .user = "u", .in_plan = true};
    CHECK(answers_decide(a, &q, why, sizeof(why)) == PERM_ANSWER_ALWAYS, "always is scripted (%s)",
          why);
    q.in_plan = false;
    CHECK(answers_decide(a, &q, why, sizeof(why)) == PERM_ANSWER_NO,
          "deny what is not in the plan (%s)", why);
    struct perm_request d = {.category = PERM_DATA,
                             .app = "travel",
                             .tool = "book",
                             .caller = "_memory",
                             .in_plan = true};
    CHECK(answers_decide(a, &d, why, sizeof(why)) == PERM_ANSWER_SESSION,
          "data from memory: session");
    struct perm_request m = {.category = PERM_EXEC, .app = "mail", .tool = "send", .in_plan = true};
    CHECK(answers_decide(a, &m, why, sizeof(why)) == PERM_ANSWER_NEVER, "never is scripted");
    struct perm_request o = {.category = PERM_EXEC, .app = "x", .tool = "y", .in_plan = true};
    CHECK(answers_decide(a, &o, why, sizeof(why)) == PERM_ANSWER_NO &&
              strcmp(why, "scripted default") == 0,
          "the default answers the rest");
    CHECK(answers_replan(a), "replan is read");
    answers_free(a);
    f = fopen(path, "w");
    fputs("{\"rules\":[{\"decision\":\"sometimes\"}]}", f);
    fclose(f);
    CHECK(answers_load(path, err, sizeof(err)) == NULL && strstr(err, "rules[0].decision"),
          "an unknown decision is refused: %s", err);
}

static void test_termtext(void)
{
    char *s = tt_inline_str("a\x1b[31mred\r\nx\xe2\x80\xae"
                            "b\xc2\x9b"
                            "c\xff",
                            200);
    CHECK_STR(s, "a^[[31mred^M\u23cex\\u202eb\\u009bc\xef\xbf\xbd",
              "escape, CR, newline, bidi override, C1 and invalid bytes are neutralised");
    free(s);
    s = tt_inline_str("abcdefghij", 5);
    CHECK_STR(s, "abcde...", "inline text is cut at its width");
    free(s);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct tt_stream st;
    tt_stream_init(&st, f, "> ", 0);
    tt_stream_write(&st, "one\ntw", 6);
    tt_stream_write(&st, "o \xe2\x82", 4); /* a euro sign split across writes */
    tt_stream_write(&st, "\xac\n\nend\x07", 7);
    tt_stream_end(&st);
    fclose(f);
    CHECK_STR(buf, "> one\n> two \xe2\x82\xac\n> \n> end^G\n",
              "every line of a stream is prefixed, a split UTF-8 sequence survives, BEL is shown");
    free(buf);
    f = open_memstream(&buf, &len);
    tt_stream_init(&st, f, "> ", 0);
    tt_stream_write(&st, "x\xe2\x82", 3);
    tt_stream_end(&st);
    fclose(f);
    CHECK_STR(buf, "> x\xef\xbf\xbd\n", "a sequence cut short at the end becomes U+FFFD");
    free(buf);
}

/* Scans this process's memory for key (given XORed with 0x55, so that the pattern
 * itself is no hit); skip is a buffer to leave out (the scan's own). */
static bool memory_holds(const unsigned char *xkey, size_t n, const void *skip)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    FILE *mem = fopen("/proc/self/mem", "r");
    static unsigned char buf[1 << 16];
    char line[512];
    bool found = false;
    while (!found && maps && mem && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
            strstr(line, "[vvar]") || strstr(line, "[vsyscall]"))
            continue;
        if ((unsigned long)skip >= lo && (unsigned long)skip < hi)
            continue;
        if (hi - lo > (1UL << 30))
            continue; /* ASan's shadow: terabytes of zeroes; the key is in small mappings */
        for (unsigned long off = lo; off < hi && !found; off += sizeof(buf) - n) {
            size_t want = hi - off < sizeof(buf) ? hi - off : sizeof(buf);
            if (fseek(mem, (long)off, SEEK_SET) != 0)
                break;
            size_t got = fread(buf, 1, want, mem);
            if (got < n)
                break;
            for (size_t i = 0; i < got; i++)
                buf[i] ^= 0x55;
            found = memmem(buf, got, xkey, n) != NULL;
            if (got < want)
                break;
        }
    }
    if (maps)
        fclose(maps);
    if (mem)
        fclose(mem);
    return found;
}

static void test_secret(void)
{
    /* The key is built here and never exists in plain form outside secret memory
     * (the environment string is overwritten by secret_env_take). */
    unsigned char xkey[24];
    char plain[25];
    for (size_t i = 0; i < sizeof(xkey); i++) {
        plain[i] = (char)('a' + (getpid() + i * 7 + (unsigned)time(NULL)) % 26);
        xkey[i] = (unsigned char)plain[i] ^ 0x55;
    }
    plain[24] = '\0';
    setenv("ITEST_AGENT_KEY", plain, 1);
    explicit_bzero(plain, sizeof(plain));
    char *key = secret_env_take("ITEST_AGENT_KEY");
    CHECK(key && strlen(key) == 24 && getenv("ITEST_AGENT_KEY") == NULL,
          "the key is taken out of the environment");
    struct llm_config cfg;
    llm_config_defaults(&cfg);
    cfg.base_url = "http://127.0.0.1:9/v1";
    cfg.model = "m";
    cfg.api_key_env = "ITEST_AGENT_KEY";
    cfg.api_key = key;
    char err[300] = "";
    struct llm *llm = llm_open(NULL, &cfg, err, sizeof(err));
    CHECK(llm != NULL, "an HTTP client opens with the key (%s)", err);
    CHECK(secret_wipeonfork(), "the kernel wipes secret memory on fork");
    CHECK(memory_holds(xkey, sizeof(xkey), NULL), "control: the parent's memory holds the key");
    pid_t pid = fork();
    if (pid == 0) {
        /* The child is a copy like nsjail-lite's monitor and the jail's init. */
        _exit(memory_holds(xkey, sizeof(xkey), NULL) ? 1 : key[0] == '\0' ? 0 : 2);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "a forked child finds the key nowhere in its memory, and its copy of the secret page "
          "is zeroes (status %d)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    llm_close(llm);
    secret_free(key);
}

int main(void)
{
    const char *root = getenv("ROOT");
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/tests/agent/manifests", root ? root : ".");
    char err[600] = "";
    if (!mkdtemp(tmpdir) || manifest_set_load(dir, &ms, err, sizeof(err)) < 0) {
        printf("not ok - setup: %s\n", err);
        return 1;
    }
    tool_map_build(&map, &ms);
    test_tool_map();
    test_plans();
    test_resolve();
    test_history_heuristic();
    test_answers();
    test_termtext();
    test_secret();
    tool_map_free(&map);
    manifest_set_free(&ms);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", tmpdir);
    return test_done();
}
