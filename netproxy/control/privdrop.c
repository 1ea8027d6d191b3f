#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int privdrop(const char *user, char *err, size_t errlen)
{
    if (geteuid() != 0)
        return 0;
    errno = 0;
    struct passwd *pw = getpwnam(user);
    if (!pw) {
        snprintf(err, errlen, "--user %s: no such user%s%s", user, errno ? ": " : "",
                 errno ? strerror(errno) : "");
        return -1;
    }
    uid_t uid = pw->pw_uid;
    gid_t gid = pw->pw_gid;
    if (uid == 0) {
        snprintf(err, errlen, "--user %s: refusing to run as uid 0", user);
        return -1;
    }
    if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
        snprintf(err, errlen, "dropping privileges to %s: %s", user, strerror(errno));
        return -1;
    }
    /* Prove there is no way back: a process that can become root again has not
     * dropped anything. */
    if (setuid(0) == 0 || seteuid(0) == 0 || getuid() != uid || geteuid() != uid ||
        getgid() != gid || getegid() != gid) {
        snprintf(err, errlen, "dropping privileges to %s did not stick", user);
        return -1;
    }
    /* Not dumpable: other processes of the same user cannot ptrace us or read our
     * memory through /proc. (The uid change already cleared the flag; say it anyway.
     * The SAN=1 build sets it back: LeakSanitizer reads /proc/self/task and ptraces
     * its own threads at exit.) */
#if defined(__SANITIZE_ADDRESS__)
    int dumpable = 1;
#else
    int dumpable = 0;
#endif
    if (prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0) < 0) {
        snprintf(err, errlen, "PR_SET_DUMPABLE: %s", strerror(errno));
        return -1;
    }
    return 0;
}
