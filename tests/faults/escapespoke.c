/* A hostile spoke for the fault tests: its "detach" tool starts a process that leaves
 * the spoke's process group and session (fork, setsid, fork again: a daemon's double
 * fork) and sleeps for ever, so that ending the spoke's group does not end it. Its
 * pid is returned. Whatever ends the spoke (the hub, the hub's death) must end it too. */
#include "spokes/sdk/mcp_server.h"
#include "util.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#define DETACH_IN "{\"type\":\"object\"}"

static int t_detach(struct mcp_server *s, const json_t *a, json_t **r, void *ud)
{
    (void)s;
    (void)a;
    (void)ud;
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        close(p[0]);
        setsid();
        pid_t grandchild = fork();
        if (grandchild == 0) {
            close(p[1]);
            for (;;)
                pause();
        }
        _exit(write_all(p[1], &grandchild, sizeof(grandchild)) < 0);
    }
    close(p[1]);
    pid_t detached = -1;
    if (read(p[0], &detached, sizeof(detached)) != (ssize_t)sizeof(detached))
        detached = -1;
    close(p[0]);
    *r = mcp_text_result("detached");
    json_object_set_new(*r, "structuredContent",
                        json_pack("{s:i,s:i}", "pid", (int)detached, "session", (int)getsid(0)));
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("escape", "1");
    mcp_server_add_tool(s, "detach", "Starts a process outside the spoke's group.", DETACH_IN, NULL,
                        t_detach, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
