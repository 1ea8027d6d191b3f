/* The pin (hub/config/pin.c): what a spoke lists in tools/list, held against the tool
 * objects a manifest pinned. The input is the pinned list (the first JSON value) and
 * the listed one (the rest, any JSON value): the second comes from the hostile side.
 *
 * Invariants beyond "no crash": a list always matches itself (up to the comparison's
 * depth bound), a refusal says why, and the one-line check and the full diff agree. */
#include "config/config.h"
#include "tests/fuzz/fuzz_json.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

/* Tool objects with distinct string names: what a loaded manifest's pin looks like. */
static bool plausible_pin(const json_t *v)
{
    if (!json_is_array(v))
        return false;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *n = json_object_get(json_array_get(v, i), "name");
        if (!json_is_string(n) || json_object_get(json_array_get(v, i), "irreversible"))
            return false;
        for (size_t j = 0; j < i; j++)
            if (json_equal((json_t *)n, json_object_get(json_array_get(v, j), "name")))
                return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *rest;
    size_t rest_len;
    json_t *pinned = fuzz_first_json(data, size, &rest, &rest_len);
    if (!pinned)
        return 0;
    json_t *listed = json_loadb(rest, rest_len, JSON_DECODE_ANY, NULL);
    if (!listed)
        listed = json_deep_copy(pinned);
    char err[1024];
    err[0] = '\0';
    if (json_is_array(pinned) && json_is_array(listed)) {
        bool ok = pin_check_tools(pinned, listed, err, sizeof(err));
        char *diff = pin_diff_text(pinned, listed);
        fuzz_assert(ok == (diff == NULL), "check (%d) and diff (%s) disagree", ok,
                    diff ? diff : "none");
        fuzz_assert(ok || err[0] != '\0', "a refusal without a reason");
        free(diff);
        if (plausible_pin(pinned)) {
            json_t *copy = json_deep_copy(pinned);
            char e2[1024] = "";
            bool self = pin_check_tools(pinned, copy, e2, sizeof(e2));
            /* Only a value nested past the bound may fail to equal its copy. */
            fuzz_assert(self || strstr(e2, "changed"), "a pin does not match itself: %s", e2);
            json_decref(copy);
        }
    }
    char path[256];
    bool differ = pin_first_diff(pinned, listed, path, sizeof(path));
    fuzz_assert(differ == !pin_json_equal(pinned, listed), "first_diff and equal disagree");
    json_decref(pinned);
    json_decref(listed);
    return 0;
}
