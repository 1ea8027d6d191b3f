/* The program's own process: the last steps before execve, in the order the anchors
 * use. Descriptors, working directory and rlimits while capabilities are still held;
 * then capabilities, no_new_privs, and the seccomp filter last, so nothing after it
 * needs a syscall the filter might deny, except execve itself. An exec failure reaches
 * the monitor on exec_fd, a close-on-exec pipe (end of file means exec succeeded).
 *
 * The PATH search happens here, over candidates built by the caller from the jail's
 * own PATH (execvp would search the caller's PATH). */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

int exec_prepare(const struct jail_config *cfg, char *const argv[], struct jail_plan *p,
                 struct jail_error *err)
{
    if (!argv || !argv[0] || !argv[0][0]) {
        jail_err_set(err, 125, "no program to run");
        return -1;
    }
    /* Our own copy: init zeroes the caller's command line in its memory, and the
     * caller's argv may live there. */
    size_t argc = 0;
    while (argv[argc])
        argc++;
    p->argv = xcalloc(argc + 1, sizeof(char *));
    for (size_t i = 0; i < argc; i++)
        p->argv[i] = xstrdup(argv[i]);
    size_t n = 0;
    const char *path = NULL;
    for (char **e = cfg->env; e && *e; e++, n++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e) {
            jail_err_set(err, 125, "environment entry '%s' is not NAME=VALUE", *e);
            return -1;
        }
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    }
    p->envp = xcalloc(n + 2, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        p->envp[i] = xstrdup(cfg->env[i]);
    if (!path) {
        p->envp[n] = xstrdup("PATH=" DEFAULT_PATH);
        path = DEFAULT_PATH;
    }

    if (strchr(argv[0], '/')) {
        p->candidates = xcalloc(2, sizeof(char *));
        p->candidates[0] = xstrdup(argv[0]);
        p->n_candidates = 1;
        return 0;
    }
    size_t dirs = 1;
    for (const char *c = path; *c; c++)
        dirs += *c == ':';
    p->candidates = xcalloc(dirs + 1, sizeof(char *));
    const char *dir = path;
    for (;;) {
        const char *end = strchr(dir, ':');
        size_t len = end ? (size_t)(end - dir) : strlen(dir);
        /* An empty PATH element means the current directory, as in execvp. */
        p->candidates[p->n_candidates++] =
            len ? xasprintf("%.*s/%s", (int)len, dir, argv[0]) : xasprintf("./%s", argv[0]);
        if (!end)
            break;
        dir = end + 1;
    }
    return 0;
}

/* Moves the requested descriptors to 0, 1, 2 without clobbering one another. */
static void setup_stdio(const struct jail_plan *p, int exec_fd)
{
    int tmp[3];
    for (int i = 0; i < 3; i++) {
        int src = p->stdio[i] >= 0 ? p->stdio[i] : i;
        tmp[i] = fcntl(src, F_DUPFD_CLOEXEC, 3);
        if (tmp[i] < 0)
            child_fail_errno(exec_fd, 125, "descriptor %d for the program's fd %d", src, i);
    }
    for (int i = 0; i < 3; i++) {
        if (dup2(tmp[i], i) < 0)
            child_fail_errno(exec_fd, 125, "dup2 %d", i);
        close(tmp[i]);
    }
}

static void keep_only(const struct jail_plan *p, int exec_fd)
{
    int keep[64];
    size_t n = 0;
    keep[n++] = exec_fd;
    for (size_t i = 0; i < p->n_keep_fds && n < ARRAY_LEN(keep); i++) {
        keep[n++] = p->keep_fds[i];
        int flags = fcntl(p->keep_fds[i], F_GETFD);
        if (flags < 0 || fcntl(p->keep_fds[i], F_SETFD, flags & ~FD_CLOEXEC) < 0)
            child_fail_errno(exec_fd, 125, "keeping descriptor %d", p->keep_fds[i]);
    }
    if (close_fds_except(keep, n) < 0)
        child_fail_errno(exec_fd, 125, "closing inherited descriptors");
}

void exec_program(const struct jail_plan *p, int exec_fd)
{
    char why[256];
    /* Dispositions were reset by the monitor; the mask is ours to clear. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    setup_stdio(p, exec_fd);
    keep_only(p, exec_fd);
    if (chdir(p->cwd ? p->cwd : "/") < 0)
        child_fail_errno(exec_fd, 125, "chdir %s", p->cwd ? p->cwd : "/");
    if (rlimit_apply(p, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    plan_debug(p, "rlimits set, descriptors closed, exec %s", p->argv[0]);
    if (p->namespaces && caps_drop_all(p->cap_last, why, sizeof(why)) < 0)
        child_fail(exec_fd, 125, "%s", why);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        child_fail_errno(exec_fd, 125, "PR_SET_NO_NEW_PRIVS");
    if (seccomp_apply(&p->seccomp) < 0)
        child_fail_errno(exec_fd, 125, "loading the seccomp filter");

    int saved = ENOENT;
    for (size_t i = 0; i < p->n_candidates; i++) {
        execve(p->candidates[i], p->argv, p->envp);
        /* As execvp: keep looking past missing files, remember a permission error. */
        if (errno == EACCES)
            saved = EACCES;
        else if (errno != ENOENT && errno != ENOTDIR) {
            saved = errno;
            break;
        }
    }
    errno = saved;
    int code = (saved == ENOENT || saved == ENOTDIR) ? 127 : 126;
    child_fail_errno(exec_fd, code, "cannot run %s", p->argv[0]);
}
