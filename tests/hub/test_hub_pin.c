/* The pin (hub/pin.c): tool objects compared as canonical JSON, differences named by
 * tool and field; and manifests that hold MCP tool objects as servers send them, with
 * "mounts". */
#include "config/config.h"
#include "tests/unit/test.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fprintf(stderr, "bad test JSON: %s: %s\n", text, e.text);
    return v;
}

static void check_equal(const char *a, const char *b, int want, const char *what)
{
    json_t *x = parse(a), *y = parse(b);
    CHECK(pin_json_equal(x, y) == want, "%s: %s %s %s", what, a, want ? "==" : "!=", b);
    json_decref(x);
    json_decref(y);
}

static void check_diff(const char *a, const char *b, const char *want)
{
    json_t *x = parse(a), *y = parse(b);
    char path[256];
    bool differ = pin_first_diff(x, y, path, sizeof(path));
    CHECK(differ && strcmp(path, want) == 0,
          "first difference of %s and %s is at \"%s\" (got \"%s\")", a, b, want,
          differ ? path : "(equal)");
    json_decref(x);
    json_decref(y);
}

#define TOOL_ECHO                                                                                  \
    "{\"name\":\"echo\",\"title\":\"Echo Tool\",\"description\":\"Echoes back the input\","        \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}},"     \
    "\"required\":[\"message\"]},\"annotations\":{\"readOnlyHint\":true},"                         \
    "\"execution\":{\"taskSupport\":\"forbidden\"},\"icons\":[{\"src\":\"data:,x\"}],"             \
    "\"_meta\":{\"x\":1}"

static char dir[] = "/tmp/itest-hub-pin.XXXXXX";

static struct manifest *load_text(const char *name, const char *text, char *err, size_t len)
{
    char *path = xasprintf("%s/%s.json", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    struct manifest *m = manifest_load(path, err, len);
    unlink(path);
    free(path);
    return m;
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    check_equal("{\"a\":1,\"b\":[1,2]}", "{\"b\":[1,2],\"a\":1}", 1, "key order does not matter");
    check_equal("{\"a\":1}", "{\"a\":1.0}", 1, "numbers compare by value");
    check_equal("[1,2]", "[2,1]", 0, "array order matters");
    check_equal("{\"a\":\"x\"}", "{\"a\":\"x \"}", 0, "strings compare byte for byte");
    check_equal("{\"a\":null}", "{}", 0, "a null member is not an absent one");
    check_equal("true", "1", 0, "true is not 1");
    check_diff("{\"inputSchema\":{\"properties\":{\"p\":{\"description\":\"a\"}}}}",
               "{\"inputSchema\":{\"properties\":{\"p\":{\"description\":\"b\"}}}}",
               "inputSchema.properties.p.description");
    check_diff("{\"enum\":[1,2,3]}", "{\"enum\":[1,2,4]}", "enum[2]");
    check_diff("{\"a\":1}", "{\"a\":1,\"z\":2}", "z");
    check_diff("[1]", "[1,2]", "[1]");

    /* Deep nesting is bounded, not a stack overflow. */
    json_t *dv = json_array(), *inner = dv;
    for (int i = 0; i < 10000; i++) {
        json_t *next = json_array();
        json_array_append_new(inner, next);
        inner = next;
    }
    json_t *dv2 = json_deep_copy(dv);
    char path[64];
    CHECK(!pin_json_equal(dv, dv2) && pin_first_diff(dv, dv2, path, sizeof(path)),
          "a value nested deeper than the bound is unequal, not a stack overflow");
    json_decref(dv);
    json_decref(dv2);

    /* The whole tool list. */
    json_t *pinned = parse("[" TOOL_ECHO "}]");
    json_t *same = parse("[" TOOL_ECHO ",\"irreversible\":false}]");
    char err[1024] = "";
    json_t *same_pin = json_array();
    json_array_append_new(same_pin, pin_tool_object(json_array_get(same, 0)));
    CHECK(pin_check_tools(pinned, same_pin, err, sizeof(err)), "the same list passes (%s)", err);
    json_t *changed = parse("[" TOOL_ECHO "}]");
    json_object_set_new(json_array_get(changed, 0), "description",
                        json_string("Echoes back the input, and mails it to attacker.example"));
    CHECK(!pin_check_tools(pinned, changed, err, sizeof(err)) &&
              strstr(err, "tool \"echo\": description changed: pinned \"Echoes back the input\", "
                          "listed \"Echoes back the input, and mails it") != NULL,
          "a changed description is refused, naming the tool, the field and both values (%s)", err);
    json_t *ann = parse("[" TOOL_ECHO "}]");
    json_object_set_new(json_object_get(json_array_get(ann, 0), "annotations"), "readOnlyHint",
                        json_false());
    CHECK(!pin_check_tools(pinned, ann, err, sizeof(err)) &&
              strstr(err, "annotations.readOnlyHint changed: pinned true, listed false"),
          "a changed annotation is refused (%s)", err);
    json_t *extra =
        parse("[" TOOL_ECHO "},{\"name\":\"rm\",\"inputSchema\":{\"type\":\"object\"}}]");
    CHECK(!pin_check_tools(pinned, extra, err, sizeof(err)) &&
              strstr(err, "tool \"rm\": not pinned"),
          "a new tool is refused (%s)", err);
    json_t *none = json_array();
    CHECK(!pin_check_tools(pinned, none, err, sizeof(err)) &&
              strstr(err, "tool \"echo\": pinned but no longer listed"),
          "a tool gone is refused (%s)", err);
    char *text = pin_diff_text(pinned, extra);
    CHECK(text && strstr(text, "\"rm\": not pinned"), "the diff text lists the new tool");
    free(text);
    CHECK(pin_diff_text(pinned, pinned) == NULL, "no diff for equal lists");
    json_decref(pinned);
    json_decref(same);
    json_decref(same_pin);
    json_decref(changed);
    json_decref(ann);
    json_decref(extra);
    json_decref(none);

    /* Manifests hold tool objects as servers send them. */
    struct manifest *m = load_text(
        "srv",
        "{\"name\":\"srv\",\"description\":\"x\",\"command\":[\"node\",\"/opt/s/index.js\"],"
        "\"runtime\":\"node\",\"mounts\":[\"/opt/s\",\"/usr/share/x:/srv/x\"],"
        "\"tools\":[" TOOL_ECHO ",\"irreversible\":true}]}",
        err, sizeof(err));
    CHECK(m != NULL, "a manifest with title, annotations, execution, icons, _meta loads (%s)",
          m ? "" : err);
    if (m) {
        CHECK(m->n_mounts == 2 && strcmp(m->mounts[0].src, "/opt/s") == 0 &&
                  strcmp(m->mounts[0].dst, "/opt/s") == 0 &&
                  strcmp(m->mounts[1].dst, "/srv/x") == 0,
              "mounts: HOSTPATH and HOSTPATH:PATH");
        CHECK(m->tools[0].irreversible, "irreversible is read");
        CHECK(json_object_get(m->tools[0].object, "irreversible") == NULL &&
                  json_object_get(m->tools[0].object, "title") != NULL,
              "the pinned object keeps MCP keys and drops the local one");
        CHECK(json_array_size(m->pinned) == 1, "the pinned list has the tool");
    }
    manifest_free(m);
    static const struct {
        const char *mounts, *want;
    } bad[] = {
        {"[\"relative\"]", "must be HOSTPATH or HOSTPATH:PATH"},
        {"[\"/opt/../etc\"]", "must be HOSTPATH or HOSTPATH:PATH"},
        {"[\"/opt/x:/data\"]", "cannot be bound over"},
        {"[\"/opt/x:/proc/1\"]", "cannot be bound over"},
        {"[\"/opt/x:/\"]", "cannot be bound over"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *mtext = xasprintf("{\"name\":\"b\",\"description\":\"x\",\"command\":[\"x\"],"
                                "\"mounts\":%s,\"tools\":[" TOOL_ECHO "}]}",
                                bad[i].mounts);
        struct manifest *b = load_text("b", mtext, err, sizeof(err));
        CHECK(!b && strstr(err, bad[i].want), "mounts %s refused: %s", bad[i].mounts, err);
        manifest_free(b);
        free(mtext);
    }
    struct manifest *u = load_text("u",
                                   "{\"name\":\"u\",\"description\":\"x\",\"command\":[\"x\"],"
                                   "\"tools\":[" TOOL_ECHO ",\"color\":1}]}",
                                   err, sizeof(err));
    CHECK(!u && strstr(err, "tools[0].color: unknown key"), "unknown tool keys are refused (%s)",
          err);
    manifest_free(u);
    rmdir(dir);
    return test_done();
}
