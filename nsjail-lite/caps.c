/* Capabilities: what the caller must hold to build a jail (checked before anything is
 * created, so a caller without them gets one clear message and no half-built
 * sandbox), and dropping every set in the jail before exec. */
#include "internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int capget_self(struct __user_cap_data_struct data[2])
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    return (int)syscall(SYS_capget, &hdr, data);
}

static bool cap_effective(const struct __user_cap_data_struct data[2], int cap)
{
    return (data[cap / 32].effective >> (cap % 32)) & 1;
}

bool caps_have(int cap)
{
    struct __user_cap_data_struct data[2];
    return capget_self(data) == 0 && cap_effective(data, cap);
}

struct need {
    int cap;
    const char *name;
};

int caps_check_caller(const struct jail_config *cfg, struct jail_error *err)
{
    if (!cfg->namespaces)
        return 0; /* rlimits, no_new_privs and seccomp need no privilege */
    struct __user_cap_data_struct data[2];
    if (capget_self(data) < 0) {
        jail_err_set(err, 125, "capget: %s", strerror(errno));
        return -1;
    }
    char missing[256] = "";
    size_t len = 0;
    const struct need ids[] = {{CAP_SETUID, "CAP_SETUID"}, {CAP_SETGID, "CAP_SETGID"}};
    for (size_t i = 0; i < ARRAY_LEN(ids); i++)
        if (!cap_effective(data, ids[i].cap))
            len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%s", len ? ", " : "",
                                    ids[i].name);
    if (len) {
        jail_err_set(err, 125,
                     "missing capability %s: each jail runs as its own unprivileged host "
                     "uid/gid, and mapping it needs CAP_SETUID and CAP_SETGID on the host "
                     "(run nsjail-lite as root)",
                     missing);
        return -1;
    }
    if (cfg->net == JAIL_NET_VETH && !cap_effective(data, CAP_NET_ADMIN)) {
        jail_err_set(err, 125,
                     "missing capability CAP_NET_ADMIN: --net veth needs CAP_NET_ADMIN on the "
                     "host to create the veth pair (run as root, or use --net none)");
        return -1;
    }
    if (cfg->net == JAIL_NET_VETH && cfg->veth_host_netns_fd >= 0 &&
        !cap_effective(data, CAP_SYS_ADMIN)) {
        jail_err_set(err, 125,
                     "missing capability CAP_SYS_ADMIN: --veth-host-netns needs it to enter "
                     "that network namespace");
        return -1;
    }
    for (size_t i = 0; i < cfg->n_binds; i++) {
        if (cfg->binds[i].chown && !cap_effective(data, CAP_CHOWN)) {
            jail_err_set(err, 125,
                         "missing capability CAP_CHOWN: needed to give %s to the jail's host uid",
                         cfg->binds[i].src);
            return -1;
        }
    }
    return 0;
}

int caps_last_cap(void)
{
    static int cached = -1;
    if (cached >= 0)
        return cached;
    int last = CAP_LAST_CAP;
    int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[16];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        uint64_t v;
        if (n > 0) {
            buf[n] = '\0';
            if (buf[n - 1] == '\n')
                buf[n - 1] = '\0';
            if (parse_u64(buf, 0, 63, &v))
                last = (int)v;
        }
    }
    cached = last;
    return last;
}

int caps_drop_all(int cap_last, char *err, size_t errlen)
{
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
        snprintf(err, errlen, "clearing the ambient capabilities: %s", strerror(errno));
        return -1;
    }
    /* The bounding set first: dropping from it needs CAP_SETPCAP, which capset then
     * removes. */
    for (int cap = 0; cap <= cap_last; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
            snprintf(err, errlen, "dropping capability %d from the bounding set: %s", cap,
                     strerror(errno));
            return -1;
        }
    }
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capset, &hdr, data) < 0) {
        snprintf(err, errlen, "clearing the capability sets: %s", strerror(errno));
        return -1;
    }
    return 0;
}
