/* The held node's policy and its loader on the host (held.h). */
#include "held.h"
#include "filewrite.h"
#include "internal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char held_node_js[]; /* held_node.cjs, compiled in (module.mk) */

bool held_allowed(const struct hub *h, const struct manifest *m)
{
    return m->warm && !h->quit && h->cfg->isolation == ISO_NAMESPACE;
}

bool held_wanted(const struct hub *h, const struct manifest *m, const char *reason)
{
    /* Not for a stop that was asked for (stop, shutdown, a reload, a pin that no longer
     * holds): only where the spoke would start again for the next call as it was. */
    return held_allowed(h, m) && (strcmp(reason, "idle") == 0 || strcmp(reason, "exited") == 0);
}

const char *held_loader_path(struct hub *h, char *err, size_t errlen)
{
    if (h->held_loader)
        return h->held_loader;
    char *path = xasprintf("%s/held-node.cjs", h->cfg->run_dir);
    if (file_write_atomic(path, held_node_js, strlen(held_node_js), NULL, 0, 0644, err, errlen) <
        0) {
        free(path);
        return NULL;
    }
    h->held_loader = path;
    return path;
}
