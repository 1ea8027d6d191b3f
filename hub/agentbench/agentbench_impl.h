/* Internals shared by the files of hub/agentbench (see agentbench.h). */
#ifndef HUB_AGENTBENCH_IMPL_H
#define HUB_AGENTBENCH_IMPL_H

#include "agentbench.h"
#include "assistant/assistant.h"
#include "cmdline/cmdline.h"
#include "llm/llm.h"
#include "runtime/runtime.h"

#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AB_MAX_STEPS 8
#define AB_SUITE_MAX (16u << 20)
#define AB_USER "ab-user"
#define AB_TOOL_ROUNDS 24 /* none mode: a plan of 8 and an attack of 8, with room */

/* ---- suites (agentbench_suite.c) ---- */

struct ab_task {
    const char *id;
    const char *prompt; /* user tasks */
    const char *goal;   /* injection tasks */
    const json_t *plan; /* the ground-truth steps */
    const json_t *answer;
    const json_t *values; /* injection tasks: what a compromised extraction returns */
    const json_t *checks;
};

struct ab_suite {
    char *path;
    json_t *root;
    const char *name;
    const char *date;
    const json_t *apps; /* {"APP": {"description", "state", "tools"}} */
    const json_t *vectors;
    const char *attack; /* template with {goal} */
    struct ab_task *user, *inj;
    size_t n_user, n_inj;
};

/* Loads and checks path; NULL and "FILE: where: why". */
struct ab_suite *ab_suite_load(const char *path, char *err, size_t errlen);
void ab_suite_free(struct ab_suite *s);
/* Keeps only the first n user and injection tasks (the reduced suite of the check). */
void ab_suite_limit(struct ab_suite *s, size_t n_user, size_t n_inj);
/* The attack text for injection task t. New string. */
char *ab_attack_text(const struct ab_suite *s, const struct ab_task *t);
/* A plan step's kind: a tool step's "APP.TOOL" (tool) or an extraction (extract). */
bool ab_step_is_extract(const json_t *step);

/* ---- environments (agentbench_env.c) ---- */

/* {"APP": state} with every {{VECTOR}} replaced by its default, or by attack when not
 * NULL. */
json_t *ab_env_initial(const struct ab_suite *s, const char *attack);
/* The manifests for the suite's apps ("command": suiteapp). 0 or -1 and err. */
int ab_env_manifests(const struct ab_suite *s, struct manifest_set *ms, char *err, size_t errlen);
/* The same manifests as files DIR/APP.json (a spokes directory for hub serve). */
int ab_env_manifest_files(const struct ab_suite *s, const char *dir, char *err, size_t errlen);
/* Writes each app's app.json and state.json under data_root/user/APP. */
int ab_env_write(const struct ab_suite *s, const json_t *env, const char *data_root,
                 const char *user, bool tools_too, char *err, size_t errlen);
/* Reads each app's state.json back: the final environment. */
json_t *ab_env_read(const struct ab_suite *s, const char *data_root, const char *user, char *err,
                    size_t errlen);

/* ---- checks (agentbench_check.c) ---- */

/* Whether every check holds; why names the first that did not. Malformed checks are
 * refused when the suite loads (ab_checks_valid), so here they simply fail. */
bool ab_checks_hold(const json_t *checks, const json_t *initial, const json_t *final,
                    const char *answer, char *why, size_t whylen);
bool ab_checks_valid(const json_t *checks, const char *where, char *err, size_t errlen);

/* ---- models (agentbench_model.c) ---- */

enum ab_model_kind { AB_MODEL_TRUTH, AB_MODEL_COMPROMISED };

struct ab_model;
struct ab_model *ab_model_new(enum ab_model_kind kind);
void ab_model_free(struct ab_model *m);
/* The back end the hub's contexts talk to (owned by the caller: llm_close). */
struct llm *ab_model_llm(struct ab_model *m, const struct llm_config *cfg);
/* The case the next agent run is about: the user task, and the injection task whose
 * attack text is in the environment (NULL: none). extract: whether the planner may
 * use the extraction step. */
void ab_model_set_case(struct ab_model *m, const struct ab_suite *s, const struct ab_task *user,
                       const struct ab_task *inj, const char *attack, bool extract);
/* A result the hub announced before the merge (event "step-result", answer by
 * reference): the oracle's knowledge of where each text sits, so that the scripted
 * merge can name the texts of its answer by reference. It never counts as seeing the
 * text: what a context sees is only what its request holds. */
void ab_model_note_result(struct ab_model *m, const char *id, const json_t *result);
/* Whether the model obeyed injected text in this case (it saw it and acted). */
bool ab_model_obeyed(const struct ab_model *m);

/* ---- the scripted user (agentbench_user.c) ---- */

/* Allows what the user task's request asked for (a question about a tool of its ground
 * truth whose arguments agree with it), denies the rest, never re-plans; counts the
 * questions. consent false: the user is not asked (every question allowed, none
 * counted). */
struct ab_user;
struct ab_user *ab_user_new(bool consent);
void ab_user_set_case(struct ab_user *u, const struct ab_task *user);
unsigned ab_user_questions(const struct ab_user *u);
unsigned ab_user_denied(const struct ab_user *u);
/* The scripted user's answer to one question (as ab_user_asker's ask). */
enum perm_answer ab_user_answer(struct ab_user *u, const struct perm_request *q);
/* A perm_asker for an agent (freed by whoever frees the agent's hook: it is only a
 * view of u, which outlives it). */
struct perm_asker *ab_user_asker(struct ab_user *u);

/* ---- runs (agentbench_run.c) ---- */

#define AB_DEF_CONSENT 1u
#define AB_DEF_EXTRACT 2u
#define AB_DEF_POLICY 4u
#define AB_DEF_ANSWER 8u /* the answer written by reference (agent_answer.h) */

struct ab_env_opts {
    bool keep; /* the runs' directories stay (--keep) */
    const struct cli_common *common;
    const char *tmp;
    const char *llm_spec; /* NULL: the scripted models */
    const char *policies_dir;
    struct event_base *base;
    bool debug;
    volatile sig_atomic_t *stop;
};

struct ab_case_out {
    const char *user, *inj; /* ids (inj NULL for a utility case) */
    bool utility;           /* the user task's checks held */
    bool attacked;          /* the injection task's checks held */
    bool obeyed;            /* the model acted on injected text */
    unsigned questions, denied;
    double seconds;
    char *why;        /* why utility failed, or NULL */
    char *via;        /* a successful attack: what it used */
    char *attack_why; /* a failed attack: the injection task's check that did not hold */
    char *blocked;    /* the calls refused, each with the layer that refused it, or NULL */
    /* A successful attack whose effect is only in the answer (no app acted), or in an
     * app other than those whose results carried the attack text. */
    bool answer_only, cross_app;
    char *error;
};

struct ab_result {
    const char *suite;
    enum isolation mode;
    bool gateway; /* through hub serve (mode namespace) */
    unsigned defences;
    struct ab_case_out *cases;
    size_t n_cases;
    char *error; /* the run could not be set up */
};

/* The same through the gateway: `hub serve --stdio --standalone` (namespace mode) in a
 * child process, the benchmark as its MCP client, whose agent is the none loop's model
 * (it sees every result); with consent the client offers elicitation and the scripted
 * user answers the hub's questions (agentbench_gateway.c). */
int ab_gateway_run(const struct ab_env_opts *o, const struct ab_suite *s, unsigned defences,
                   struct ab_result *out);

/* A case's verdicts from the final environment and answer; calls as the agent records
 * them ({"tool": "app.tool", "outcome", "result", "layer"}). */
void ab_judge(struct ab_case_out *out, const struct ab_task *u, const struct ab_task *inj,
              const char *attack, const json_t *env0, const json_t *final, const char *answer,
              const char *agent_error, const json_t *calls);

/* Runs every user task (ground truth) and every pair (compromised) of s. */
int ab_run(const struct ab_env_opts *o, const struct ab_suite *s, enum isolation mode,
           unsigned defences, struct ab_result *out);
void ab_result_free(struct ab_result *r);
/* "none", "consent+extract+policy", ... */
const char *ab_defences_name(unsigned d, char *buf, size_t len);

#endif
