/* Default configuration paths: see paths.h. */
#include "paths.h"
#include "util.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

char *paths_exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return xstrdup(".");
    buf[n] = '\0';
    return xstrdup(dirname(buf));
}

char *paths_default_config(const char *rel)
{
    char *exe = paths_exe_dir();
    /* The build tree first: a binary in build/ must never pick up an installed
     * configuration meant for the installed binaries. */
    char *candidates[] = {
        xasprintf("%s/../config/%s", exe, rel),
        xasprintf("%s/../../config/%s", exe, rel),
        xasprintf("%s/%s", ISOLATE_SYSCONFDIR, rel),
    };
    free(exe);
    char *found = NULL;
    for (size_t i = 0; i < ARRAY_LEN(candidates); i++) {
        if (!found && access(candidates[i], F_OK) == 0) {
            char *real = realpath(candidates[i], NULL);
            found = real ? real : xstrdup(candidates[i]);
        }
        free(candidates[i]);
    }
    return found ? found : xasprintf("config/%s", rel);
}
