/* `hub agentbench`: the AgentDojo-shaped benchmark (docs/benchmark.md). Suites in JSON,
 * apps as real spokes (spokes/suiteapp) in the chosen isolation mode, the hub's own
 * agent (planner, extraction, merge, the none loop) answered by scripted models (ground
 * truth, compromised) or a real one, defences as switches (consent, extract, policy),
 * and a report per suite, mode and defence set. The one public header of
 * hub/agentbench/; the files share agentbench_impl.h:
 *
 *   agentbench.c        the command: options, the runs, the report
 *   agentbench_suite.c  loading and checking a suite file
 *   agentbench_env.c    environments: injection, the apps' data directories, manifests
 *   agentbench_check.c  the suites' checks (predicates over the environment)
 *   agentbench_model.c  the scripted models (ground truth, compromised)
 *   agentbench_user.c   the scripted user who answers the consent questions
 *   agentbench_run.c    one suite in one mode with one defence set: every case */
#ifndef HUB_AGENTBENCH_H
#define HUB_AGENTBENCH_H

int cmd_agentbench(int argc, char **argv);

#endif
