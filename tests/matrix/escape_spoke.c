/* escape_spoke: the hostile spoke of the escape matrix (scripts/escape-matrix). An
 * ordinary SDK spoke with one tool, "attempt", that runs the named escape attempt
 * (escape_attempts.c) in a child process and answers its outcome:
 *
 *   {"attempt": "read_shadow", "outcome": "errno:ENOENT", "kind": "errno",
 *    "errno": "ENOENT", "detail": ""}
 *
 * kind is the first field of the outcome (ok, errno, signal, blocked, skip, error; see
 * tests/nsjail/probes.h). The outcome is only the spoke's own account: the script
 * judges from outside wherever it can. The schemas below must equal the manifest,
 * tests/matrix/escape.json (the hub refuses the spoke otherwise). */
#include "escape_attempts.h"
#include "spokes/sdk/mcp_server.h"
#include "tests/nsjail/probes.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTEMPT_TIMEOUT_S 25

static const char attempt_in[] =
    "{\"type\":\"object\",\"properties\":{\"attempt\":{\"type\":\"string\",\"pattern\":\"^[a-z0-"
    "9_]{1,40}$\"},\"target\":{\"type\":\"object\"}},\"required\":[\"attempt\"],"
    "\"additionalProperties\":false}";
static const char attempt_out[] =
    "{\"type\":\"object\",\"properties\":{\"attempt\":{\"type\":\"string\"},\"outcome\":{\"type\":"
    "\"string\"},\"kind\":{\"type\":\"string\"},\"errno\":{\"type\":\"string\"},\"detail\":{"
    "\"type\":\"string\"}},\"required\":[\"attempt\",\"outcome\",\"kind\"]}";

struct call {
    const struct escape_attempt *a;
    struct escape_ctx ctx;
};

static void run_in_child(void *ud)
{
    const struct call *c = ud;
    c->a->fn(&c->ctx);
}

static int tool_attempt(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *name = json_string_value(json_object_get(args, "attempt"));
    const struct escape_attempt *a = NULL;
    for (size_t i = 0; name && i < escape_attempt_count; i++)
        if (strcmp(escape_attempts[i].name, name) == 0)
            a = &escape_attempts[i];
    if (!a) {
        *result = mcp_error_result("unknown attempt %s", name ? name : "(none)");
        return 0;
    }
    json_t *target = json_object_get(args, "target");
    struct call c = {a,
                     {target ? target : json_object(), mcp_data_dir(s), mcp_server_raw_out_fd(s)}};
    char out[PROBE_OUT_MAX];
    probe_run(run_in_child, &c, ATTEMPT_TIMEOUT_S, out, sizeof(out));
    if (!target)
        json_decref((json_t *)c.ctx.target);
    /* "kind:errno-or-detail[:detail]" */
    size_t kl = strcspn(out, ":");
    json_t *r = json_pack("{s:s,s:s,s:s%}", "attempt", a->name, "outcome", out, "kind", out, kl);
    const char *rest = out[kl] ? out + kl + 1 : "";
    if (strncmp(out, "errno", kl) == 0 && kl == 5) {
        size_t el = strcspn(rest, ":");
        json_object_set_new(r, "errno", json_stringn(rest, el));
        rest = rest[el] ? rest + el + 1 : "";
    }
    json_object_set_new(r, "detail", json_string(rest));
    fprintf(stderr, "escape_spoke: %s -> %s\n", a->name, out);
    *result = mcp_structured_result(r);
    return 0;
}

/* escape_spoke --attempt NAME [TARGET_JSON]: one attempt, its outcome on stdout. The
 * matrix's node-exec column runs the attempts this way, as a host program a Node
 * spoke may run (--exec): the same attempts, under the node preset's +exec variant. */
static int run_once(const char *name, const char *target_json)
{
    const struct escape_attempt *a = NULL;
    for (size_t i = 0; i < escape_attempt_count; i++)
        if (strcmp(escape_attempts[i].name, name) == 0)
            a = &escape_attempts[i];
    json_t *target = target_json ? json_loads(target_json, 0, NULL) : json_object();
    if (!a || !json_is_object(target)) {
        printf("error:%s\n", a ? "the target is not a JSON object" : "unknown attempt");
        json_decref(target);
        return 2;
    }
    const char *data = getenv("SPOKE_DATA");
    struct call c = {a, {target, data ? data : "/data", -1}};
    char out[PROBE_OUT_MAX];
    probe_run(run_in_child, &c, ATTEMPT_TIMEOUT_S, out, sizeof(out));
    json_decref(target);
    printf("%s\n", out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--attempt") == 0)
        return run_once(argv[2], argc > 3 ? argv[3] : NULL);
    struct mcp_server *s = mcp_server_new("escape", "1.0");
    mcp_server_add_tool(s, "attempt",
                        "Runs one escape attempt of the escape matrix and reports its outcome.",
                        attempt_in, attempt_out, tool_attempt, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
