/* The assistant's interface to the other folders of hub/ (the case studies drive it):
 * the agent (agent.h) and its permission layer (perms.h). The other assistant headers
 * (planner, tools, terminal, line editor) are its own. */
#ifndef HUB_ASSISTANT_H
#define HUB_ASSISTANT_H

#include "agent.h"
#include "perms.h"

#endif
