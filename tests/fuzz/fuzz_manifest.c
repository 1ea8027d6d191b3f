/* Spoke manifests (hub/config/manifest.c, with the JSON Schema compiler it calls for every
 * tool): the file the hub plans from. Loaded through manifest_load() from a real file
 * named after the input's "name" when that is a valid app name (the loader insists
 * that they match), so that most mutations get past the first check.
 *
 * Invariants beyond "no crash": a loaded manifest has what the loader promises (a
 * valid name equal to the file's, a program, 1..64 tools with valid unique names and
 * compiled input schemas, 1..16 ports), and every lookup finds what it loaded. */
#include "config/config.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void file_name(const uint8_t *data, size_t size, char *out, size_t outlen)
{
    snprintf(out, outlen, "fuzz.json");
    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    const char *name = json_string_value(json_object_get(root, "name"));
    if (name && manifest_valid_app_name(name))
        snprintf(out, outlen, "%s.json", name);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char fname[80];
    file_name(data, size, fname, sizeof(fname));
    const char *path = fuzz_write_file(fname, data, size);
    char err[512];
    err[0] = '\0';
    struct manifest *m = manifest_load(path, err, sizeof(err));
    if (!m) {
        fuzz_assert(err[0] != '\0' && memchr(err, '\0', sizeof(err)), "refused without a message");
        fuzz_assert(strncmp(err, path, strlen(path)) == 0, "message does not name the file: %s",
                    err);
        return 0;
    }
    fuzz_assert(manifest_valid_app_name(m->name), "name %s", m->name);
    fuzz_assert(strlen(fname) == strlen(m->name) + 5 &&
                    strncmp(fname, m->name, strlen(m->name)) == 0,
                "file %s holds %s", fname, m->name);
    fuzz_assert(m->command && m->command[0], "no command");
    fuzz_assert(m->n_tools >= 1 && m->n_tools <= MANIFEST_MAX_TOOLS, "%zu tools", m->n_tools);
    fuzz_assert(m->n_ports <= MANIFEST_MAX_PORTS && (m->n_ports > 0 || m->n_allow == 0),
                "%zu ports for %zu domains", m->n_ports, m->n_allow);
    for (size_t i = 0; i < m->n_ports; i++)
        fuzz_assert(m->ports[i] != 0, "port 0");
    for (size_t i = 0; i < m->n_allow; i++)
        fuzz_assert(m->allow[i] && m->allow[i][0], "empty allow entry");
    fuzz_assert(m->allow[m->n_allow] == NULL, "allow list not terminated");
    struct manifest_set set = {.v = &m, .n = 1};
    fuzz_assert(manifest_find(&set, m->name) == m, "manifest_find");
    for (size_t i = 0; i < m->n_tools; i++) {
        const struct manifest_tool *t = &m->tools[i];
        fuzz_assert(manifest_valid_tool_name(t->name), "tool name %s", t->name);
        fuzz_assert(manifest_tool(m, t->name) == t, "duplicate tool %s", t->name);
        fuzz_assert(t->input != NULL && t->input_schema_json != NULL, "tool without a schema");
        /* The hub validates {} when a planner step passes no arguments. */
        json_t *empty = json_object();
        char verr[256];
        (void)schema_validate(t->input, empty, verr, sizeof(verr));
        json_decref(empty);
        char full[160], app[80], tool[80];
        snprintf(full, sizeof(full), "%s.%s", m->name, t->name);
        fuzz_assert(
            manifest_split_name(full, app, sizeof(app), tool, sizeof(tool), verr, sizeof(verr)) &&
                strcmp(app, m->name) == 0 && strcmp(tool, t->name) == 0,
            "split %s", full);
    }
    manifest_free(m);
    return 0;
}
