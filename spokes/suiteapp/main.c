/* suiteapp: the agent benchmark's generic app. Its tools and their operations come
 * from <data>/app.json (written by the runner from the suite, docs/benchmark.md) and
 * its whole state is <data>/state.json, read for every call and rewritten after a
 * call that changed it: the runner resets an app between cases by rewriting that file,
 * so one spoke serves a whole suite. No network, no calls to other apps. */
#include "benchops.h"
#include "spokes/sdk/datafile.h"
#include "spokes/sdk/mcp_server.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APP_MAX (4u << 20)
#define STATE_MAX (16u << 20)

static const char *suite_date = "";

/* Written whole and renamed over the old file; no fsync: the state is the benchmark's
 * scratch, rewritten by the runner for every case. */
static int save_state(struct mcp_server *s, const json_t *state, char *err, size_t errlen)
{
    char *path = xasprintf("%s/state.json", mcp_data_dir(s));
    char *tmp = xasprintf("%s.tmp", path);
    char *text = json_dumps(state, JSON_COMPACT);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int rc = -1;
    if (fd < 0 || !text || write_all(fd, text, strlen(text)) < 0)
        snprintf(err, errlen, "state.json: %s", strerror(errno));
    else if (close(fd) < 0 || (fd = -1, rename(tmp, path) < 0))
        snprintf(err, errlen, "state.json: %s", strerror(errno));
    else
        rc = 0;
    if (fd >= 0)
        close(fd);
    free(text);
    free(tmp);
    free(path);
    return rc;
}

static int tool_call(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    const json_t *tool = ud;
    char err[512];
    json_t *state = mcp_data_load(s, "state.json", STATE_MAX, err, sizeof(err));
    if (!json_is_object(state)) {
        *result =
            mcp_error_result("the app's state cannot be read: %s", state ? "not an object" : err);
        json_decref(state);
        return 0;
    }
    bool changed = false;
    json_t *out = suiteapp_run(tool, args, state, suite_date, &changed, err, sizeof(err));
    if (!out)
        *result = mcp_error_result("%s", err);
    else if (changed && save_state(s, state, err, sizeof(err)) < 0) {
        json_decref(out);
        *result = mcp_error_result("the app's state cannot be saved: %s", err);
    } else
        *result = mcp_structured_result(out);
    json_decref(state);
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("suiteapp", "1.0");
    char err[512];
    json_t *app = mcp_data_load(s, "app.json", APP_MAX, err, sizeof(err));
    const json_t *tools = json_object_get(app, "tools");
    if (!json_is_array(tools)) {
        fprintf(stderr, "suiteapp: %s\n", app ? "app.json: no tools array" : err);
        return 1;
    }
    if (json_is_string(json_object_get(app, "date")))
        suite_date = json_string_value(json_object_get(app, "date"));
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        char why[300];
        if (!name || !suiteapp_tool_valid(t, why, sizeof(why))) {
            fprintf(stderr, "suiteapp: app.json: tools[%zu]: %s\n", i, name ? why : "no name");
            return 1;
        }
        const char *desc = json_string_value(json_object_get(t, "description"));
        char *in = json_dumps(json_object_get(t, "inputSchema"), JSON_COMPACT);
        mcp_server_add_tool(s, name, desc ? desc : "", in, NULL, tool_call, t);
        free(in);
    }
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    json_decref(app);
    return rc;
}
