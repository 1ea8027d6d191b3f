/* no_openat2 ERRNO -- PROGRAM [ARG...]: runs PROGRAM where openat2() is refused whole,
 * as systemd's RestrictSUIDSGID= (ENOSYS), systemd-nspawn or an older container
 * runtime's default action (EPERM) refuse it. For tests/nsjail/test_bindsrc.sh: the bind
 * sources' walk (nsjail-lite/bindsrc.c) must keep its guarantees there.
 *
 * The filter is inherited by PROGRAM and all it starts. It is installed without
 * no_new_privs (the tests run as root) so that nothing else about PROGRAM changes, and
 * checked before the exec: a wrapper whose filter did not take would prove nothing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: no_openat2 ENOSYS|EPERM -- PROGRAM [ARG...]\n");
    return 125;
}

int main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[2], "--") != 0)
        return usage();
    int err = strcmp(argv[1], "ENOSYS") == 0 ? ENOSYS : strcmp(argv[1], "EPERM") == 0 ? EPERM : 0;
    if (!err)
        return usage();
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = ctx ? seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) : -ENOMEM;
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)err), SCMP_SYS(openat2), 0);
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc != 0) {
        fprintf(stderr, "no_openat2: seccomp filter: %s\n", strerror(-rc));
        return 125;
    }
    struct open_how how = {.flags = O_PATH | O_CLOEXEC};
    errno = 0;
    if (syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how)) >= 0 || errno != err) {
        fprintf(stderr, "no_openat2: openat2 is not refused with %s (%s)\n", argv[1],
                strerror(errno));
        return 125;
    }
    execvp(argv[3], argv + 3);
    fprintf(stderr, "no_openat2: %s: %s\n", argv[3], strerror(errno));
    return 127;
}
