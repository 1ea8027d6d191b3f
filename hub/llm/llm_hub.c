/* The hub's LLM client from hub.json's "llm" object, which holds the client's settings
 * and the assistant's limits side by side: the assistant's keys are left to it (it
 * reads them itself), the client refuses any other key it does not know. */
#include "llm_impl.h"
#include "runtime/runtime.h"

const char *const llm_hub_agent_keys[] = {
    "max_plan_steps",  "max_tool_rounds",     "max_replans",
    "history_entries", "result_max_bytes",    "sampling_per_minute",
    "sampling_burst",  "sampling_max_tokens", NULL};

struct llm *llm_open_hub(const struct hub_config *cfg, const char *spec, struct audit *audit,
                         bool debug, char *err, size_t errlen)
{
    struct llm_config lc;
    llm_config_defaults(&lc);
    json_t *rest = cfg->llm ? json_deep_copy(cfg->llm) : json_object();
    for (size_t i = 0; llm_hub_agent_keys[i]; i++)
        json_object_del(rest, llm_hub_agent_keys[i]);
    struct jf_ctx c = {.file = cfg->file ? cfg->file : "hub.json", .err = err, .errlen = errlen};
    struct llm *llm = NULL;
    if (llm_config_parse(&c, rest, "llm", &lc)) {
        lc.api_key_env = cfg->llm_key_env;
        lc.api_key = cfg->llm_api_key;
        lc.audit = audit;
        lc.audit_content = debug;
        llm = llm_open(spec, &lc, err, errlen); /* copies what it keeps */
    }
    json_decref(rest);
    return llm;
}
