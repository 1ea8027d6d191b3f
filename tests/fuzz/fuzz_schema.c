/* The JSON Schema subset (hub/runtime/schema.c) that checks every tool argument a planner or a
 * spoke sends and every result a spoke returns. The input is a schema (the first JSON
 * value, an object) followed by an instance (the rest, any JSON value): the schema
 * comes from a manifest, the instance from the hostile side.
 *
 * Invariants beyond "no crash": a refusal to compile or to validate says why (and a
 * validation error says where, starting with "$"); validation is deterministic and
 * does not depend on the instance being shared or copied. */
#include "jsonschema/jsonschema.h"
#include "tests/fuzz/fuzz_json.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *rest;
    size_t rest_len;
    json_t *js = fuzz_first_json(data, size, &rest, &rest_len);
    if (!js)
        return 0;
    char err[384];
    err[0] = '\0';
    struct schema *s = schema_compile(js, err, sizeof(err));
    json_decref(js);
    if (!s) {
        fuzz_assert(err[0] != '\0', "schema refused without a message");
        return 0;
    }
    json_t *inst = json_loadb(rest, rest_len, JSON_DECODE_ANY, NULL);
    if (inst) {
        char e1[384], e2[384];
        e1[0] = e2[0] = '\0';
        bool ok1 = schema_validate(s, inst, e1, sizeof(e1));
        json_t *copy = json_deep_copy(inst);
        bool ok2 = schema_validate(s, copy, e2, sizeof(e2));
        fuzz_assert(ok1 == ok2, "validation not deterministic");
        if (!ok1) {
            fuzz_assert(e1[0] == '$', "validation error without a path: %s", e1);
            fuzz_assert(strcmp(e1, e2) == 0, "different messages: %s / %s", e1, e2);
        }
        json_decref(copy);
        json_decref(inst);
    }
    schema_free(s);
    return 0;
}
