/* symptom_solver: objective, factual information about symptoms (case study 4), from
 * the knowledge base kb.json in its data directory:
 *   {"source": TEXT, "general_advice": TEXT,
 *    "conditions": [{"name", "keywords": [...], "advice", "see_a_doctor_if": [...]}]}
 * A condition matches when one of its keywords occurs in the symptoms (any case). */
#include "symptom_solver_manifest.h"
#include "spokes/sdk/datafile.h"
#include "spokes/sdk/manifest_tools.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KB_MAX (1u << 20)

static bool mentions(const char *text, const json_t *keywords)
{
    size_t i;
    json_t *k;
    json_array_foreach(keywords, i, k)
    {
        const char *w = json_string_value(k);
        if (w && *w && strcasestr(text, w))
            return true;
    }
    return false;
}

static void add_unique(json_t *arr, json_t *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_equal(v, s)) return;
    json_array_append(arr, s);
}

static int tool_assess(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *symptoms = json_string_value(json_object_get(args, "symptoms"));
    char err[256];
    json_t *kb = mcp_data_load(s, "kb.json", KB_MAX, err, sizeof(err));
    if (!kb) {
        *result = mcp_error_result("knowledge base unavailable: %s", err);
        return 0;
    }
    json_t *causes = json_array(), *doctor = json_array();
    char *advice = xstrdup("");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(kb, "conditions"), i, c)
    {
        if (!mentions(symptoms, json_object_get(c, "keywords")))
            continue;
        json_array_append(causes, json_object_get(c, "name"));
        const char *a = json_string_value(json_object_get(c, "advice"));
        if (a) {
            char *more = xasprintf("%s%s%s", advice, *advice ? " " : "", a);
            free(advice);
            advice = more;
        }
        size_t j;
        json_t *d;
        json_array_foreach(json_object_get(c, "see_a_doctor_if"), j, d) add_unique(doctor, d);
    }
    if (!*advice) {
        const char *g = json_string_value(json_object_get(kb, "general_advice"));
        free(advice);
        advice = xstrdup(g ? g : "No matching entry; please describe the symptoms to a doctor.");
    }
    json_t *src = json_object_get(kb, "source");
    *result = mcp_structured_result(json_pack("{s:o,s:s,s:o,s:O}", "possible_causes", causes,
                                              "advice", advice, "see_a_doctor_if", doctor, "source",
                                              src ? src : json_string("")));
    free(advice);
    json_decref(kb);
    return 0;
}

int main(void)
{
    struct mcp_server *s = mcp_server_new("symptom_solver", "1.0");
    static const struct mcp_handler handlers[] = {{"assess", tool_assess, NULL}};
    mcp_server_add_manifest_tools(s, symptom_solver_manifest, handlers, ARRAY_LEN(handlers));
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    return rc;
}
