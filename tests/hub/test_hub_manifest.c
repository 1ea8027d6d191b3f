/* Manifests and hub.json: strict loading, errors that name the file and the field,
 * and the veth pool (never 169.254.169.254). */
#include "config/config.h"
#include "net/net.h"
#include "tests/unit/test.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/itest-hub-manifest.XXXXXX";

static char *write_file(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

#define GOOD_TOOL "{\"name\":\"t\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"}}"

static void expect_error(const char *name, const char *text, const char *want)
{
    char err[512] = "";
    char *path = write_file(name, text);
    struct manifest *m = manifest_load(path, err, sizeof(err));
    CHECK(m == NULL && strstr(err, want) != NULL && strstr(err, path) != NULL,
          "%s is refused with \"%s\" (got: %s)", name, want, err);
    manifest_free(m);
    unlink(path);
    free(path);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    char err[512];
    char *p = write_file("ok.json", "{\"name\":\"ok\",\"description\":\"x\",\"command\":[\"ok\"],"
                                    "\"network\":{\"allow\":[\"example.com\"]},"
                                    "\"limits\":{\"cpu_s\":5},\"env\":{\"MODE\":\"a\"},"
                                    "\"tools\":[" GOOD_TOOL "]}");
    struct manifest *m = manifest_load(p, err, sizeof(err));
    CHECK(m != NULL, "a good manifest loads (%s)", m ? "" : err);
    if (m) {
        CHECK(m->n_ports == 1 && m->ports[0] == 443, "ports default to 443 with a network");
        CHECK(m->limits.cpu_s == 5 && m->limits.as_mb == 0, "limits left out stay 0");
        CHECK_STR(m->env[0], "MODE=a", "env becomes NAME=VALUE");
        CHECK_STR(m->runtime, "c", "runtime defaults to c");
    }
    manifest_free(m);
    unlink(p);
    free(p);

    expect_error("typo.json",
                 "{\"name\":\"typo\",\"description\":\"x\",\"comand\":[\"x\"],\"tools\":[" GOOD_TOOL
                 "]}",
                 "comand: unknown key");
    expect_error(
        "other.json",
        "{\"name\":\"wrong\",\"description\":\"x\",\"command\":[\"x\"],\"tools\":[" GOOD_TOOL "]}",
        "name: must equal the file name");
    expect_error(
        "lim.json",
        "{\"name\":\"lim\",\"description\":\"x\",\"command\":[\"x\"],\"limits\":{\"cpu_s\":0},"
        "\"tools\":[" GOOD_TOOL "]}",
        "limits.cpu_s: must be an integer from 1");
    expect_error(
        "net.json",
        "{\"name\":\"net\",\"description\":\"x\",\"command\":[\"x\"],\"network\":{\"allow\":["
        "\"https://Example.com\"]},\"tools\":[" GOOD_TOOL "]}",
        "network.allow: item 0");
    expect_error(
        "env.json",
        "{\"name\":\"env\",\"description\":\"x\",\"command\":[\"x\"],\"env\":{\"LD_PRELOAD\":"
        "\"/x.so\"},\"tools\":[" GOOD_TOOL "]}",
        "env.LD_PRELOAD: is set by the hub");
    expect_error(
        "schema.json",
        "{\"name\":\"schema\",\"description\":\"x\",\"command\":[\"x\"],\"tools\":[{\"name\":"
        "\"t\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
        "\"a\":{\"anyOf\":[]}}}}]}",
        "tools[0].inputSchema: properties.a.anyOf: must be a non-empty array");
    /* server-gitlab installed alone (zod 4 beside zod-to-json-schema 3): the cause named */
    expect_error("empty.json",
                 "{\"name\":\"empty\",\"description\":\"x\",\"command\":[\"x\"],\"tools\":[{"
                 "\"name\":\"t\",\"description\":\"d\",\"inputSchema\":{\"$schema\":"
                 "\"http://json-schema.org/draft-07/schema#\"}}]}",
                 "tools[0].inputSchema: is empty (no \"type\": \"object\", no properties): the "
                 "server's zod-to-json-schema");
    expect_error("str.json",
                 "{\"name\":\"str\",\"description\":\"x\",\"command\":[\"x\"],\"tools\":[{"
                 "\"name\":\"t\",\"description\":\"d\",\"inputSchema\":{\"type\":\"string\"}}]}",
                 "tools[0].inputSchema: must be a schema with \"type\": \"object\"");
    expect_error("dup.json",
                 "{\"name\":\"dup\",\"description\":\"x\",\"command\":[\"x\"],\"tools\":[" GOOD_TOOL
                 "," GOOD_TOOL "]}",
                 "tools[1].name: duplicate tool name");
    expect_error("bad.json", "{\"name\":", "invalid JSON");

    char app[65], tool[65];
    CHECK(
        manifest_split_name("notes.add", app, sizeof(app), tool, sizeof(tool), err, sizeof(err)) &&
            strcmp(app, "notes") == 0 && strcmp(tool, "add") == 0,
        "APP.TOOL splits");
    CHECK(!manifest_split_name("../x.y", app, sizeof(app), tool, sizeof(tool), err, sizeof(err)),
          "app names cannot be paths");
    CHECK(!user_id_valid("..") && !user_id_valid("a/b") && !user_id_valid("-x") &&
              user_id_valid("alice_1"),
          "user ids cannot be paths or options");

    /* hub.json */
    struct hub_config c;
    config_defaults(&c, "/opt/hub");
    CHECK_STR(c.spoke_bin_dir, "/opt/hub/spokes", "spoke binaries default beside the hub");
    p = write_file("hub.json", "{\"data_root\":\"data\",\"network\":{\"veth_pool\":"
                               "\"169.254.104.0/22\"},\"llm\":{\"api_key_env\":\"MY_KEY\","
                               "\"model\":\"m\"}}");
    CHECK(config_load(&c, p, err, sizeof(err)) == 0, "hub.json loads (%s)", err);
    char *want = xasprintf("%s/data", dir);
    CHECK_STR(c.data_root, want, "relative paths resolve against the file's directory");
    free(want);
    CHECK_STR(c.llm_key_env, "MY_KEY", "llm.api_key_env is read");
    CHECK(c.llm && json_is_string(json_object_get(c.llm, "model")), "the rest of llm is kept");
    unlink(p);
    free(p);
    p = write_file("hub2.json", "{\"network\":{\"veth_pool\":\"8.8.8.0/24\"}}");
    CHECK(config_load(&c, p, err, sizeof(err)) < 0 && strstr(err, "network.veth_pool"),
          "a public veth pool is refused (%s)", err);
    unlink(p);
    free(p);
    config_free(&c);

    /* the veth pool */
    struct cidr pool;
    cidr_parse("169.254.64.0/18", &pool);
    CHECK(veth_pool_size(&pool) == 4096, "the default pool holds 4096 /30s");
    struct veth_addrs va;
    veth_pool_addrs(&pool, 0, &va);
    CHECK_STR(va.host_cidr, "169.254.64.1/30", "slot 0 host side");
    CHECK_STR(va.spoke_cidr, "169.254.64.2/30", "slot 0 spoke side");
    cidr_parse("169.254.169.0/24", &pool);
    size_t n = veth_pool_size(&pool);
    CHECK(n == 63, "a pool around 169.254.169.254 loses exactly that /30 (%zu)", n);
    bool metadata = false;
    for (size_t i = 0; i < n; i++) {
        veth_pool_addrs(&pool, i, &va);
        if (strcmp(va.host_ip, "169.254.169.253") == 0 ||
            strcmp(va.spoke_ip, "169.254.169.254") == 0)
            metadata = true;
    }
    CHECK(!metadata, "no slot hands out 169.254.169.252/30");
    CHECK(!veth_pool_addrs(&pool, n, &va), "slots past the end are refused");
    rmdir(dir);
    return test_done();
}
