/* --allow entries checked before a spoke is added (cli_spokes_allow.c). */
#ifndef HUB_CLI_SPOKES_ALLOW_H
#define HUB_CLI_SPOKES_ALLOW_H

#include "runtime/runtime.h"

/* 0, or -1 when an entry of csv is a public suffix: said on stderr with what to allow
 * instead (the names under it that app asked for, from netproxy's audit). */
int allow_check(const struct hub_config *cfg, const char *app, const char *csv);

#endif
