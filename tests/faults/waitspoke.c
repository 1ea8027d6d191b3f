/* A spoke for the fault tests that makes its isolate/call at a moment the test
 * chooses: "relay_when" waits until a file of the given name appears in its data
 * directory (the test creates it from outside), then calls the tool given through the
 * hub and returns what the hub answered. So a test can change the world (fill the
 * disk under the hub's audit log) between the hub's start of this call and the
 * mediated call it leads to. */
#include "spokes/sdk/mcp_server.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define RELAY_WHEN_IN                                                                              \
    "{\"type\":\"object\",\"properties\":{\"file\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9_.-" \
    "]"                                                                                            \
    "+$\"},\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"}},\"required\":["     \
    "\"file\",\"tool\"]}"
#define WAIT_MAX_MS 15000
#define POLL_MS 20

static int t_relay_when(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)ud;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", mcp_data_dir(s),
             json_string_value(json_object_get(a, "file")));
    int waited = 0;
    while (access(path, F_OK) != 0) {
        if (waited >= WAIT_MAX_MS) {
            *r = mcp_error_result("%s did not appear within %d ms", path, WAIT_MAX_MS);
            return 0;
        }
        nanosleep(&(struct timespec){.tv_nsec = POLL_MS * 1000000L}, NULL);
        waited += POLL_MS;
    }
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

int main(void)
{
    struct mcp_server *s = mcp_server_new("waiter", "1");
    mcp_server_add_tool(s, "relay_when",
                        "Waits for a file in its data directory, then calls a tool of another "
                        "app.",
                        RELAY_WHEN_IN, NULL, t_relay_when, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
