/* A spoke for the fault tests whose calls go on at a moment the test chooses: each
 * tool waits until a file of the given name appears in its data directory (the test
 * creates it from outside). "relay_when" then calls the tool given through the hub and
 * returns what the hub answered; "give_when" then returns the text given (and leaves
 * a file "gave" holding it, so the test knows it ran); "ask_when" then asks the user
 * (an elicitation) and returns what the hub answered. So a test can change the world
 * (fill the disk under the hub's audit log) between the hub's start of a call and the
 * mediated call it leads to, or between a call's start and the use of its result. */
#include "spokes/sdk/mcp_server.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RELAY_WHEN_IN                                                                              \
    "{\"type\":\"object\",\"properties\":{\"file\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9_.-" \
    "]"                                                                                            \
    "+$\"},\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"}},\"required\":["     \
    "\"file\",\"tool\"]}"
#define GIVE_WHEN_IN                                                                               \
    "{\"type\":\"object\",\"properties\":{\"file\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9_.-" \
    "]+$\"},\"text\":{\"type\":\"string\"}},\"required\":[\"file\",\"text\"]}"
#define GIVE_WHEN_OUT "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}"
#define ASK_WHEN_IN                                                                                \
    "{\"type\":\"object\",\"properties\":{\"file\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9_.-" \
    "]+$\"}},\"required\":[\"file\"]}"
#define WAIT_MAX_MS 15000
#define POLL_MS 20

/* true once the file named by a's "file" is in the data directory; false (and *r
 * saying so) when it did not appear in time. */
static bool wait_for_file(struct mcp_server *s, const json_t *a, json_t **r)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", mcp_data_dir(s),
             json_string_value(json_object_get(a, "file")));
    int waited = 0;
    while (access(path, F_OK) != 0) {
        if (waited >= WAIT_MAX_MS) {
            *r = mcp_error_result("%s did not appear within %d ms", path, WAIT_MAX_MS);
            return false;
        }
        nanosleep(&(struct timespec){.tv_nsec = POLL_MS * 1000000L}, NULL);
        waited += POLL_MS;
    }
    return true;
}

static int t_give_when(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    if (!wait_for_file(s, a, r))
        return 0;
    const char *text = json_string_value(json_object_get(a, "text"));
    char path[4096];
    snprintf(path, sizeof(path), "%s/gave", mcp_data_dir(s));
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    *r = mcp_structured_result(json_pack("{s:s}", "text", text));
    return 0;
}

static int t_ask_when(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    if (!wait_for_file(s, a, r))
        return 0;
    json_t *schema = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", "secret",
                               "type", "string", "required", "secret");
    json_t *res = NULL;
    char err[600];
    int code = mcp_elicit(s, "Your secret?", schema, &res, err, sizeof(err));
    json_decref(schema);
    if (code == 0)
        *r = mcp_structured_result(json_pack("{s:b,s:o}", "ok", 1, "answer", res));
    else
        *r = mcp_structured_result(
            json_pack("{s:b,s:i,s:s}", "ok", 0, "code", code, "message", err));
    return 0;
}

static int t_relay_when(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    if (!wait_for_file(s, a, r))
        return 0;
    json_t *args = json_object_get(a, "arguments");
    json_t *empty = json_object();
    json_t *res = NULL;
    char err[600];
    int code = mcp_isolate_call(s, json_string_value(json_object_get(a, "tool")),
                                args ? args : empty, &res, err, sizeof(err));
    json_decref(empty);
    if (code == 0)
        *r = mcp_structured_result(json_pack("{s:b,s:o}", "ok", 1, "result", res));
    else
        *r = mcp_structured_result(
            json_pack("{s:b,s:i,s:s}", "ok", 0, "code", code, "message", err));
    return 0;
}

/* The tools an app's manifest lists: "waitspoke holder" gives, "waitspoke" relays. */
int main(int argc, char **argv)
{
    bool holder = argc > 1 && strcmp(argv[1], "holder") == 0;
    struct mcp_server *s = mcp_server_new(holder ? "holder" : "waiter", "1");
    if (holder) {
        mcp_server_add_tool(s, "give_when",
                            "Waits for a file in its data directory, then returns the text given.",
                            GIVE_WHEN_IN, GIVE_WHEN_OUT, t_give_when, NULL);
        mcp_server_add_tool(s, "ask_when",
                            "Waits for a file in its data directory, then asks the user.",
                            ASK_WHEN_IN, NULL, t_ask_when, NULL);
    } else
        mcp_server_add_tool(s, "relay_when",
                            "Waits for a file in its data directory, then calls a tool of another "
                            "app.",
                            RELAY_WHEN_IN, NULL, t_relay_when, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
