/* The statically linked launcher's way to a systemd scope. build/nsjail-lite is linked
 * -static-pie when the build allows it (nsjail-lite/module.mk): every jail start is
 * an exec of it, and ld.so's work was a tenth of a /bin/true jail. A static binary
 * cannot dlopen() libsystemd (it would bring a second libc), so when the launcher
 * finds itself in a cgroup of systemd's that is not delegated (cgroup_base.c), it
 * execs its dynamic twin, nsjail-lite-dynamic, with the same argv, descriptors,
 * environment and signal mask: the twin is the same program linked against the
 * shared libc, and it asks systemd for the scope as cgroup_scope.c does. Linked
 * before libnsjail-lite.a, this definition keeps the archive's cgroup_scope.o (and
 * dlopen) out of the static binary. Nothing returns on success. */
#include "cli.h"
#include "internal.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TWIN_NAME "nsjail-lite-dynamic"

int cgroup_scope_delegate_self(char *name, size_t namelen, char *err, size_t errlen)
{
    (void)name;
    (void)namelen;
    char *exe = paths_exe_dir();
    /* The build tree keeps it beside the launcher; scripts/install under LIBEXECDIR. */
    char *candidates[] = {
        xasprintf("%s/" TWIN_NAME, exe),
        xasprintf("%s/../libexec/isolategpt/" TWIN_NAME, exe),
    };
    free(exe);
    int tried_errno = ENOENT;
    for (size_t i = 0; i < ARRAY_LEN(candidates) && nsjail_cli_argv; i++) {
        if (access(candidates[i], X_OK) == 0) {
            execv(candidates[i], nsjail_cli_argv);
            tried_errno = errno;
        }
    }
    snprintf(err, errlen,
             "this nsjail-lite is linked statically and asks systemd for a scope through its "
             "dynamic twin, which could not be run (%s beside it or in ../libexec/isolategpt: "
             "%s)",
             TWIN_NAME, strerror(tried_errno));
    for (size_t i = 0; i < ARRAY_LEN(candidates); i++)
        free(candidates[i]);
    return -1;
}
