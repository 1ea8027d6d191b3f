/* The case studies' results: the JSON document issue 6 specifies, and the table that
 * puts the modes side by side. */
#include "casestudies.h"
#include "util.h"

#include <string.h>

json_t *cs_results_json(const char *llm, const struct cs_case_result *rs, size_t n)
{
    json_t *cases = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct cs_case_result *r = &rs[i];
        json_t *steps = json_array();
        for (size_t k = 0; k < r->n_steps; k++) {
            const struct cs_step_result *s = &r->steps[k];
            const char *outcome = s->error ? "error" : s->succeeded ? "succeeded" : "blocked";
            json_array_append_new(steps,
                                  json_pack("{s:s,s:s,s:s,s:s?,s:s}", "attack", s->attack, "kind",
                                            s->llm ? "llm" : "os", "outcome", outcome, "layer",
                                            s->layer, "evidence", s->evidence));
        }
        json_t *c = json_pack("{s:s,s:s,s:o}", "case", r->name, "mode", isolation_name(r->mode),
                              "steps", steps);
        if (r->error)
            json_object_set_new(c, "error", json_string(r->error));
        json_array_append_new(cases, c);
    }
    return json_pack("{s:s,s:o}", "llm", llm, "cases", cases);
}

static const struct cs_step_result *find_step(const struct cs_case_result *r, const char *attack)
{
    for (size_t k = 0; k < r->n_steps; k++)
        if (strcmp(r->steps[k].attack, attack) == 0)
            return &r->steps[k];
    return NULL;
}

static void cell(const struct cs_step_result *s, char *out, size_t outlen)
{
    if (!s)
        snprintf(out, outlen, "-");
    else if (s->error)
        snprintf(out, outlen, "ERROR (did not run)");
    else if (s->succeeded)
        snprintf(out, outlen, "SUCCEEDED");
    else
        snprintf(out, outlen, "blocked (%s)", s->layer);
}

void cs_print_table(FILE *f, const char *llm, const struct cs_case_result *rs, size_t n)
{
    /* The modes that ran, in order, and the widest cell of each column. */
    bool ran[3] = {false, false, false};
    for (size_t i = 0; i < n; i++)
        ran[rs[i].mode] = true;
    size_t name_w = strlen("attack step"), col_w = strlen("namespace");
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < rs[i].n_steps; k++) {
            char c[96];
            cell(&rs[i].steps[k], c, sizeof(c));
            if (strlen(c) > col_w)
                col_w = strlen(c);
            if (strlen(rs[i].steps[k].attack) + 2 > name_w)
                name_w = strlen(rs[i].steps[k].attack) + 2;
        }
    fprintf(f, "Case studies (LLM: %s)\n\n", llm);
    fprintf(f, "%-*s  %-4s", (int)name_w, "attack step", "kind");
    int last_mode = 0;
    for (int m = 0; m < 3; m++)
        if (ran[m])
            last_mode = m;
    for (int m = 0; m < 3; m++)
        if (ran[m])
            fprintf(f, "  %-*s", m == last_mode ? 0 : (int)col_w,
                    isolation_name((enum isolation)m));
    fprintf(f, "\n");
    /* Cases in the order they first appear; within a case, steps in their order. */
    for (size_t i = 0; i < n; i++) {
        bool first = true;
        for (size_t j = 0; j < i; j++)
            if (rs[j].name == rs[i].name || strcmp(rs[j].name, rs[i].name) == 0)
                first = false;
        if (!first)
            continue;
        fprintf(f, "%s\n", rs[i].name);
        for (size_t k = 0; k < rs[i].n_steps; k++) {
            const char *attack = rs[i].steps[k].attack;
            fprintf(f, "  %-*s  %-4s", (int)name_w - 2, attack, rs[i].steps[k].llm ? "llm" : "os");
            for (int m = 0; m < 3; m++) {
                if (!ran[m])
                    continue;
                const struct cs_step_result *s = NULL;
                for (size_t j = 0; j < n && !s; j++)
                    if ((int)rs[j].mode == m && strcmp(rs[j].name, rs[i].name) == 0)
                        s = find_step(&rs[j], attack);
                char c[96];
                cell(s, c, sizeof(c));
                fprintf(f, "  %-*s", m == last_mode ? 0 : (int)col_w, c);
            }
            fprintf(f, "\n");
        }
        for (size_t j = 0; j < n; j++) {
            if (strcmp(rs[j].name, rs[i].name) != 0)
                continue;
            if (rs[j].error)
                fprintf(f, "  ! %s in %s: %s\n", rs[j].name, isolation_name(rs[j].mode),
                        rs[j].error);
            for (size_t k = 0; k < rs[j].n_steps; k++)
                if (rs[j].steps[k].error)
                    fprintf(f, "  ! %s in %s did not run: %s\n", rs[j].steps[k].attack,
                            isolation_name(rs[j].mode), rs[j].steps[k].evidence);
        }
    }
    fprintf(f, "\n");
    for (int m = 0; m < 3; m++) {
        if (!ran[m])
            continue;
        size_t total = 0, succeeded = 0, llm_ok = 0, os_ok = 0, errors = 0;
        for (size_t j = 0; j < n; j++)
            if ((int)rs[j].mode == m)
                for (size_t k = 0; k < rs[j].n_steps; k++) {
                    total++;
                    errors += rs[j].steps[k].error;
                    if (rs[j].steps[k].succeeded) {
                        succeeded++;
                        if (rs[j].steps[k].llm)
                            llm_ok++;
                        else
                            os_ok++;
                    }
                }
        fprintf(f,
                "%-9s  %zu of %zu attack steps SUCCEEDED (%zu LLM-level, %zu OS-level), %zu "
                "blocked, %zu could not run\n",
                isolation_name((enum isolation)m), succeeded, total, llm_ok, os_ok,
                total - succeeded - errors, errors);
    }
}
