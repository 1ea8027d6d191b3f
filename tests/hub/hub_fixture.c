#include "hub_fixture.h"
#include "util.h"

#include <stdlib.h>

void hub_fixture_config(struct hub_config *cfg, const char *bin, const char *dir,
                        const char *spokes_dir)
{
    config_defaults(cfg, bin);
    free(cfg->spokes_dir);
    cfg->spokes_dir = xstrdup(spokes_dir);
    free(cfg->spoke_bin_dir);
    cfg->spoke_bin_dir = xasprintf("%s/tests/hub", bin);
    free(cfg->data_root);
    cfg->data_root = xasprintf("%s/data", dir);
    free(cfg->run_dir);
    cfg->run_dir = xasprintf("%s/run", dir);
    free(cfg->audit_path);
    cfg->audit_path = xasprintf("%s/audit.jsonl", dir);
}
