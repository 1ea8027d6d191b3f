/* conformance: the tools the official MCP conformance suite's server scenarios call
 * (npm @modelcontextprotocol/conformance), as a spoke on the project's SDK, so that the
 * suite can run against `hub serve --http --app conformance`: every answer it checks
 * has then come out of a sandbox and through the hub's mediation. Each tool returns
 * what its scenario describes; the text is the suite's, not ours to change. */
#include "spokes/sdk/mcp_server.h"
#include "jsonrpc.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A 1x1 red PNG and a WAV of eight silent samples. */
#define PNG_B64                                                                                    \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJg" \
    "gg=="
#define WAV_B64 "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static void pause_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static json_t *content(json_t *items)
{
    return json_pack("{s:o}", "content", items);
}

static int simple_text(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    *r = mcp_text_result("This is a simple text response for testing.");
    return 0;
}

static int image(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    *r = content(
        json_pack("[{s:s,s:s,s:s}]", "type", "image", "data", PNG_B64, "mimeType", "image/png"));
    return 0;
}

static int audio(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    *r = content(
        json_pack("[{s:s,s:s,s:s}]", "type", "audio", "data", WAV_B64, "mimeType", "audio/wav"));
    return 0;
}

static int embedded(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    *r = content(json_pack("[{s:s,s:{s:s,s:s,s:s}}]", "type", "resource", "resource", "uri",
                           "test://embedded-resource", "mimeType", "text/plain", "text",
                           "This is an embedded resource content."));
    return 0;
}

static int mixed(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    *r = content(json_pack("[{s:s,s:s},{s:s,s:s,s:s},{s:s,s:{s:s,s:s,s:s}}]", "type", "text",
                           "text", "Multiple content types test:", "type", "image", "data", PNG_B64,
                           "mimeType", "image/png", "type", "resource", "resource", "uri",
                           "test://mixed-content-resource", "mimeType", "application/json", "text",
                           "{\"test\":\"data\",\"value\":123}"));
    return 0;
}

static int error(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    *r = mcp_error_result("This tool intentionally returns an error for testing");
    return 0;
}

static void notify(struct mcp_server *s, const char *method, json_t *params)
{
    mcp_notify(s, method, params);
}

static int with_logging(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)a, (void)ud;
    static const char *const lines[] = {"Tool execution started", "Tool processing data",
                                        "Tool execution completed"};
    for (int i = 0; i < 3; i++) {
        if (i > 0)
            pause_ms(50);
        notify(
            s, "notifications/message",
            json_pack("{s:s,s:s,s:s}", "level", "info", "logger", "conformance", "data", lines[i]));
    }
    *r = mcp_text_result("Tool with logging executed successfully");
    return 0;
}

static int with_progress(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    (void)a;
    /* The hub's progress token for this call (it maps it back to the client's). */
    json_t *token = json_object_get(mcp_call_meta(s), "progressToken");
    for (int p = 0; p <= 100; p += 50) {
        if (p > 0)
            pause_ms(50);
        if (token)
            notify(s, "notifications/progress",
                   json_pack("{s:O,s:i,s:i}", "progressToken", token, "progress", p, "total", 100));
    }
    *r = mcp_text_result("Tool with progress executed successfully");
    return 0;
}

static int sampling(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    const char *prompt = json_string_value(json_object_get(a, "prompt"));
    json_t *res = NULL;
    char err[300];
    if (mcp_sample(s, prompt ? prompt : "", 100, &res, err, sizeof(err)) != 0) {
        *r = mcp_error_result("Sampling failed: %s", err);
        return 0;
    }
    const char *text = json_string_value(json_object_get(json_object_get(res, "content"), "text"));
    char *out = xasprintf("LLM response: %s", text ? text : "");
    *r = mcp_text_result(out);
    free(out);
    json_decref(res);
    return 0;
}

/* Asks, and answers with what came back. */
static int ask(struct mcp_server *s, const char *message, const char *schema_text,
               const char *prefix, json_t **r)
{
    json_t *schema = json_loads(schema_text, 0, NULL);
    json_t *res = NULL;
    char err[300];
    int code = mcp_elicit(s, message, schema, &res, err, sizeof(err));
    json_decref(schema);
    if (code != 0) {
        *r = mcp_error_result("Elicitation failed: %s", err);
        return 0;
    }
    const char *action = json_string_value(json_object_get(res, "action"));
    json_t *c = json_object_get(res, "content");
    char *ctext = c ? json_dumps(c, JSON_COMPACT) : NULL;
    char *out =
        xasprintf("%saction=%s, content=%s", prefix, action ? action : "?", ctext ? ctext : "{}");
    *r = mcp_text_result(out);
    free(out);
    free(ctext);
    json_decref(res);
    return 0;
}

static int elicitation(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    const char *message = json_string_value(json_object_get(a, "message"));
    return ask(s, message ? message : "",
               "{\"type\":\"object\",\"properties\":{\"username\":{\"type\":\"string\","
               "\"description\":\"User's response\"},\"email\":{\"type\":\"string\","
               "\"description\":\"User's email address\"}},\"required\":[\"username\",\"email\"]}",
               "User response: ", r);
}

static int elicit_defaults(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)a, (void)ud;
    return ask(s, "Please review and update the form fields with defaults",
               "{\"type\":\"object\",\"properties\":{"
               "\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John "
               "Doe\"},"
               "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
               "\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
               "\"status\":{\"type\":\"string\",\"description\":\"User status\",\"enum\":["
               "\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
               "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\","
               "\"default\":true}},\"required\":[]}",
               "Elicitation completed: ", r);
}

static int elicit_enums(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)a, (void)ud;
    return ask(
        s, "Please select options from the enum fields",
        "{\"type\":\"object\",\"properties\":{"
        "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one option\",\"enum\":["
        "\"option1\",\"option2\",\"option3\"]},"
        "\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one option with titles\","
        "\"oneOf\":[{\"const\":\"value1\",\"title\":\"First Option\"},{\"const\":\"value2\","
        "\"title\":\"Second Option\"},{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
        "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one option (legacy)\","
        "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],\"enumNames\":[\"Option One\",\"Option Two\","
        "\"Option Three\"]},"
        "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options\","
        "\"minItems\":1,\"maxItems\":3,\"items\":{\"type\":\"string\",\"enum\":[\"option1\","
        "\"option2\",\"option3\"]}},"
        "\"titledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options with "
        "titles\",\"minItems\":1,\"maxItems\":3,\"items\":{\"anyOf\":[{\"const\":\"value1\","
        "\"title\":\"First Choice\"},{\"const\":\"value2\",\"title\":\"Second Choice\"},"
        "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},\"required\":[]}",
        "Elicitation completed: ", r);
}

static int schema_2020(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)ud;
    char *text = json_dumps(a, JSON_COMPACT);
    char *out = xasprintf("Received: %s", text ? text : "{}");
    *r = mcp_text_result(out);
    free(out);
    free(text);
    return 0;
}

static int reconnection(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s, (void)a, (void)ud;
    pause_ms(100);
    *r = mcp_text_result("Reconnection test completed successfully");
    return 0;
}

/* ---- resources ---- */

#define TEMPLATE_PREFIX "test://template/"

static int resources_list(struct mcp_server *s, const json_t *p, json_t **r, void *ud)
{
    (void)s, (void)p, (void)ud;
    *r = json_pack("{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}", "resources",
                   "uri", "test://static-text", "name", "static-text", "description",
                   "A static text resource for testing", "mimeType", "text/plain", "uri",
                   "test://static-binary", "name", "static-binary", "description",
                   "A static binary resource (image) for testing", "mimeType", "image/png", "uri",
                   "test://watched-resource", "name", "watched-resource", "description",
                   "A resource for subscription testing", "mimeType", "text/plain");
    return 0;
}

static int templates_list(struct mcp_server *s, const json_t *p, json_t **r, void *ud)
{
    (void)s, (void)p, (void)ud;
    *r = json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "resourceTemplates", "uriTemplate",
                   TEMPLATE_PREFIX "{id}/data", "name", "template-data", "description",
                   "A resource template with an id parameter", "mimeType", "application/json");
    return 0;
}

static json_t *text_contents(const char *uri, const char *mime, const char *text)
{
    return json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", mime, "text", text);
}

static int resources_read(struct mcp_server *s, const json_t *p, json_t **r, void *ud)
{
    (void)s, (void)ud;
    const char *uri = json_string_value(json_object_get(p, "uri"));
    size_t plen = strlen(TEMPLATE_PREFIX);
    if (!uri) {
        *r = json_string("uri required");
        return JRPC_INVALID_PARAMS;
    }
    if (strcmp(uri, "test://static-text") == 0) {
        *r = text_contents(uri, "text/plain", "This is the content of the static text resource.");
    } else if (strcmp(uri, "test://static-binary") == 0) {
        *r = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "image/png",
                       "blob", PNG_B64);
    } else if (strcmp(uri, "test://watched-resource") == 0) {
        *r = text_contents(uri, "text/plain", "Watched resource content.");
    } else if (strncmp(uri, TEMPLATE_PREFIX, plen) == 0 && strlen(uri) > plen + 5 &&
               strcmp(uri + strlen(uri) - 5, "/data") == 0 && strlen(uri) - plen - 5 < 64) {
        char id[64];
        size_t n = strlen(uri) - plen - 5;
        memcpy(id, uri + plen, n);
        id[n] = '\0';
        json_t *o =
            json_pack("{s:s,s:b,s:s+}", "id", id, "templateTest", 1, "data", "Data for ID: ", id);
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        *r = text_contents(uri, "application/json", text);
        free(text);
    } else {
        *r = json_string("resource not found");
        return -32002;
    }
    return 0;
}

/* ---- prompts ---- */

static int prompts_list(struct mcp_server *s, const json_t *p, json_t **r, void *ud)
{
    (void)s, (void)p, (void)ud;
    *r = json_pack(
        "{s:[{s:s,s:s},{s:s,s:s,s:[{s:s,s:s,s:b},{s:s,s:s,s:b}]},{s:s,s:s,s:[{s:s,s:s,s:b}]},"
        "{s:s,s:s}]}",
        "prompts", "name", "test_simple_prompt", "description", "A simple prompt without arguments",
        "name", "test_prompt_with_arguments", "description", "A prompt with required arguments",
        "arguments", "name", "arg1", "description", "First test argument", "required", 1, "name",
        "arg2", "description", "Second test argument", "required", 1, "name",
        "test_prompt_with_embedded_resource", "description", "A prompt with an embedded resource",
        "arguments", "name", "resourceUri", "description", "URI of the resource to embed",
        "required", 1, "name", "test_prompt_with_image", "description",
        "A prompt with image content");
    return 0;
}

static json_t *user_text(const char *text)
{
    return json_pack("{s:s,s:{s:s,s:s}}", "role", "user", "content", "type", "text", "text", text);
}

static int prompts_get(struct mcp_server *s, const json_t *p, json_t **r, void *ud)
{
    (void)s, (void)ud;
    const char *name = json_string_value(json_object_get(p, "name"));
    json_t *args = json_object_get(p, "arguments");
    if (!name) {
        *r = json_string("name required");
        return JRPC_INVALID_PARAMS;
    }
    if (strcmp(name, "test_simple_prompt") == 0) {
        *r = json_pack("{s:[o]}", "messages", user_text("This is a simple prompt for testing."));
    } else if (strcmp(name, "test_prompt_with_arguments") == 0) {
        const char *a1 = json_string_value(json_object_get(args, "arg1"));
        const char *a2 = json_string_value(json_object_get(args, "arg2"));
        char *text =
            xasprintf("Prompt with arguments: arg1='%s', arg2='%s'", a1 ? a1 : "", a2 ? a2 : "");
        *r = json_pack("{s:[o]}", "messages", user_text(text));
        free(text);
    } else if (strcmp(name, "test_prompt_with_embedded_resource") == 0) {
        const char *uri = json_string_value(json_object_get(args, "resourceUri"));
        *r = json_pack("{s:[{s:s,s:{s:s,s:{s:s,s:s,s:s}}},o]}", "messages", "role", "user",
                       "content", "type", "resource", "resource", "uri",
                       uri ? uri : "test://embedded-resource", "mimeType", "text/plain", "text",
                       "Embedded resource content for testing.",
                       user_text("Please process the embedded resource above."));
    } else if (strcmp(name, "test_prompt_with_image") == 0) {
        *r = json_pack("{s:[{s:s,s:{s:s,s:s,s:s}},o]}", "messages", "role", "user", "content",
                       "type", "image", "data", PNG_B64, "mimeType", "image/png",
                       user_text("Please analyze the image above."));
    } else {
        *r = json_string("no such prompt");
        return JRPC_INVALID_PARAMS;
    }
    return 0;
}

static int complete(struct mcp_server *s, const json_t *p, json_t **r, void *ud)
{
    (void)s, (void)p, (void)ud;
    *r = json_pack("{s:{s:[sss],s:i,s:b}}", "completion", "values", "paris", "park", "party",
                   "total", 3, "hasMore", 0);
    return 0;
}

static const struct {
    const char *name, *description, *input;
    mcp_tool_fn fn;
} tools[] = {
    {"test_simple_text", "Tests simple text content response", NO_ARGS, simple_text},
    {"test_image_content", "Tests image content response", NO_ARGS, image},
    {"test_audio_content", "Tests audio content response", NO_ARGS, audio},
    {"test_embedded_resource", "Tests embedded resource content response", NO_ARGS, embedded},
    {"test_multiple_content_types", "Tests response with multiple content types", NO_ARGS, mixed},
    {"test_tool_with_logging", "Tests tool that emits log messages during execution", NO_ARGS,
     with_logging},
    {"test_tool_with_progress", "Tests tool that reports progress notifications", NO_ARGS,
     with_progress},
    {"test_error_handling", "Tests error response handling", NO_ARGS, error},
    {"test_sampling", "Tests server-initiated sampling (LLM completion request)",
     "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\",\"description\":"
     "\"The prompt to send to the LLM\"}},\"required\":[\"prompt\"]}",
     sampling},
    {"test_elicitation", "Tests server-initiated elicitation (user input request)",
     "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\",\"description\":"
     "\"The message to show the user\"}},\"required\":[\"message\"]}",
     elicitation},
    {"test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034",
     NO_ARGS, elicit_defaults},
    {"test_elicitation_sep1330_enums", "Tests elicitation with enum schemas per SEP-1330", NO_ARGS,
     elicit_enums},
    {"json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
     "\"$defs\":{\"address\":{\"type\":\"object\",\"properties\":{\"street\":{\"type\":"
     "\"string\"},\"city\":{\"type\":\"string\"}}}},\"properties\":{\"name\":{\"type\":"
     "\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"}},\"additionalProperties\":false}",
     schema_2020},
    {"test_reconnection", "Tests SSE stream reconnection during a call", NO_ARGS, reconnection},
};

int main(void)
{
    struct mcp_server *s = mcp_server_new("conformance", "1.0");
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        mcp_server_add_tool(s, tools[i].name, tools[i].description, tools[i].input, NULL,
                            tools[i].fn, NULL);
    mcp_server_add_method(s, "resources/list", "resources", resources_list, NULL);
    mcp_server_add_method(s, "resources/templates/list", NULL, templates_list, NULL);
    mcp_server_add_method(s, "resources/read", NULL, resources_read, NULL);
    mcp_server_add_method(s, "prompts/list", "prompts", prompts_list, NULL);
    mcp_server_add_method(s, "prompts/get", NULL, prompts_get, NULL);
    mcp_server_add_method(s, "completion/complete", "completions", complete, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
