/* build/nsjail-lite: the command line over jail.h. Loads the profile, applies the
 * options over it and hands over to jail_exec(): the launcher becomes the jail's
 * monitor, ends the whole jail on SIGINT/SIGTERM/SIGHUP, and exits with the program's
 * status (env(1)/timeout(1) style codes). */
#include "cli.h"
#include "jail.h"
#include "log.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: nsjail-lite [OPTIONS] -- PROGRAM [ARGS...]\n"
            "\n"
            "Runs PROGRAM in fresh user, mount, pid, ipc, uts and network namespaces, as its\n"
            "own unprivileged host uid/gid, on a read-only tmpfs root with read-only system\n"
            "binds, under rlimits and a seccomp allowlist, with no capabilities.\n"
            "\n"
            "  --profile FILE        JSON sandbox profile (default: profiles/spoke.json of\n"
            "                        the tree's config/ beside the build directory, else\n"
            "                        /etc/isolategpt/, else ./config/; without any, the\n"
            "                        same built-in defaults)\n"
            "  --net none            loopback only (the default)\n"
            "  --net veth:HOST_CIDR,SPOKE_CIDR\n"
            "                        one veth: the jail's eth0 gets SPOKE_CIDR and a route to\n"
            "                        the host side only (no default route, no DNS)\n"
            "  --veth-host-netns PATH  put the veth's host side in this network namespace\n"
            "                        (/run/netns/NAME, /proc/PID/ns/net) instead of ours\n"
            "  --veth-gateway        the host side is the jail's gateway and resolver: a\n"
            "                        default route through it and /etc/resolv.conf naming it\n"
            "                        (for a gateway that takes every connection, as the hub's)\n"
            "  --exec PROGRAM        a host program the jail may run (repeatable): it, its\n"
            "                        interpreter and the libraries it loads bound read-only,\n"
            "                        and the preset's +exec variant, which allows processes\n"
            "  --bind-ro SRC[:DST]   read-only bind mount (SRC's own mount; every directory\n"
            "                        along SRC writable by root or you only, no other\n"
            "                        user's symlink followed)\n"
            "  --bind-rw SRC[:DST]   writable bind mount\n"
            "  --rbind-ro SRC[:DST]  read-only, with the mounts below SRC too\n"
            "  --rbind-rw SRC[:DST]  writable, with the mounts below SRC too\n"
            "  --tmpfs DST[:SIZE_MB] a tmpfs (default 16 MiB)\n"
            "  --env NAME=VALUE      set a variable (the environment is otherwise empty but\n"
            "                        for PATH)\n"
            "  --cwd DIR             working directory inside (default /)\n"
            "  --rootfs DIR          DIR as the root (a container image's) instead of the\n"
            "                        profile's system binds; shown read-only, nosuid, nodev\n"
            "  --hostname NAME       hostname inside (default from the profile)\n"
            "  --host-ids BASE:COUNT range of host uids/gids to pick this jail's id from\n"
            "  --rlimit-as MB  --rlimit-cpu S  --rlimit-fsize MB  --rlimit-nofile N\n"
            "  --rlimit-nproc N      resource limits (0 keeps the caller's)\n"
            "  --wall-time S         kill the whole jail after S seconds (0: no limit)\n"
            "  --memory-mb MB        the jail's cgroup memory limit, shared memory and tmpfs\n"
            "                        included, swap off; the jail's processes are OOM-killed\n"
            "                        at it (reason \"memory\"; 0: no limit)\n"
            "  --pids N              the jail's cgroup limit on processes and threads\n"
            "  --cpu-percent P       the jail's CPU time, in percent of one CPU (cgroup)\n"
            "  --cgroup-parent PATH  make the jail's cgroup under this cgroup (as\n"
            "                        /proc/self/cgroup names it; default: our own)\n"
            "  --cgroup-pool N       keep N cgroups of these limits made ahead (default 4,\n"
            "                        at most 64): a start claims one, a helper removes it\n"
            "                        and refills after the jail (0: no pool)\n"
            "  --no-cgroup-pool      make the cgroup at start, remove it before the status\n"
            "  --no-netns-pool       --net none: a network namespace made in clone() instead\n"
            "                        of one made ahead (root: 4 kept ready)\n"
            "  --seccomp PRESET|FILE seccomp preset (c) or policy file (JSON)\n"
            "  --seccomp-action errno|kill  what a denied syscall gets (default errno: EPERM)\n"
            "  --no-namespaces       rlimits, no_new_privs and seccomp only (the hub's\n"
            "                        \"process\" isolation mode; direct network)\n"
            "  --keep-fd N           keep descriptor N open in the program (repeatable)\n"
            "  --status-fd N         write the result as one JSON line on descriptor N:\n"
            "                        {\"exit_code\":N,\"signal\":N|null,\"reason\":\"...\"}\n"
            "  --dump-seccomp FILE   write the compiled seccomp program (struct sock_filter[],\n"
            "                        as bwrap --seccomp reads it) to FILE and exit\n"
            "  -v, --debug           print each setup step\n"
            "  -h, --help            this text\n"
            "\n"
            "Exit status: the program's, 128+N if it died of signal N, 125 if nsjail-lite\n"
            "failed (the message says why), 126 if PROGRAM is not executable, 127 if it was\n"
            "not found. SIGINT, SIGTERM or SIGHUP to nsjail-lite end the whole jail (137,\n"
            "reason \"killed\"). Needs root (CAP_SETUID, CAP_SETGID; --net veth also\n"
            "CAP_NET_ADMIN; the cgroup limits write access to the cgroup hierarchy).\n");
}

enum {
    OPT_PROFILE = 256,
    OPT_NET,
    OPT_VETH_NETNS,
    OPT_VETH_GATEWAY,
    OPT_BIND_RO,
    OPT_BIND_RW,
    OPT_RBIND_RO,
    OPT_RBIND_RW,
    OPT_TMPFS,
    OPT_ENV,
    OPT_CWD,
    OPT_ROOTFS,
    OPT_HOSTNAME,
    OPT_HOST_IDS,
    OPT_RL_AS,
    OPT_RL_CPU,
    OPT_RL_FSIZE,
    OPT_RL_NOFILE,
    OPT_RL_NPROC,
    OPT_WALL,
    OPT_MEMORY,
    OPT_PIDS,
    OPT_CPU_PERCENT,
    OPT_CGROUP_PARENT,
    OPT_CGROUP_POOL,
    OPT_NO_CGROUP_POOL,
    OPT_NO_NETNS_POOL,
    OPT_SECCOMP,
    OPT_SECCOMP_ACTION,
    OPT_NO_NS,
    OPT_KEEP_FD,
    OPT_EXEC,
    OPT_STATUS_FD,
    OPT_DUMP_SECCOMP,
};

static const struct option options[] = {
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"net", required_argument, NULL, OPT_NET},
    {"veth-host-netns", required_argument, NULL, OPT_VETH_NETNS},
    {"veth-gateway", no_argument, NULL, OPT_VETH_GATEWAY},
    {"exec", required_argument, NULL, OPT_EXEC},
    {"bind-ro", required_argument, NULL, OPT_BIND_RO},
    {"bind-rw", required_argument, NULL, OPT_BIND_RW},
    {"rbind-ro", required_argument, NULL, OPT_RBIND_RO},
    {"rbind-rw", required_argument, NULL, OPT_RBIND_RW},
    {"tmpfs", required_argument, NULL, OPT_TMPFS},
    {"env", required_argument, NULL, OPT_ENV},
    {"cwd", required_argument, NULL, OPT_CWD},
    {"rootfs", required_argument, NULL, OPT_ROOTFS},
    {"hostname", required_argument, NULL, OPT_HOSTNAME},
    {"host-ids", required_argument, NULL, OPT_HOST_IDS},
    {"rlimit-as", required_argument, NULL, OPT_RL_AS},
    {"rlimit-cpu", required_argument, NULL, OPT_RL_CPU},
    {"rlimit-fsize", required_argument, NULL, OPT_RL_FSIZE},
    {"rlimit-nofile", required_argument, NULL, OPT_RL_NOFILE},
    {"rlimit-nproc", required_argument, NULL, OPT_RL_NPROC},
    {"wall-time", required_argument, NULL, OPT_WALL},
    {"memory-mb", required_argument, NULL, OPT_MEMORY},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"cpu-percent", required_argument, NULL, OPT_CPU_PERCENT},
    {"cgroup-parent", required_argument, NULL, OPT_CGROUP_PARENT},
    {"cgroup-pool", required_argument, NULL, OPT_CGROUP_POOL},
    {"no-cgroup-pool", no_argument, NULL, OPT_NO_CGROUP_POOL},
    {"no-netns-pool", no_argument, NULL, OPT_NO_NETNS_POOL},
    {"seccomp", required_argument, NULL, OPT_SECCOMP},
    {"seccomp-action", required_argument, NULL, OPT_SECCOMP_ACTION},
    {"no-namespaces", no_argument, NULL, OPT_NO_NS},
    {"keep-fd", required_argument, NULL, OPT_KEEP_FD},
    {"status-fd", required_argument, NULL, OPT_STATUS_FD},
    {"dump-seccomp", required_argument, NULL, OPT_DUMP_SECCOMP},
    {"debug", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int status_fd = -1;
/* File scope: die() may exit() from anywhere while it is in use. */
static struct jail_config config;

/* Launcher failures end here: message, status line, env(1)-style code. */
static _Noreturn void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void die(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_warnx("%s", msg);
    struct jail_status st;
    jail_status_of_error(code, &st);
    if (status_fd >= 0 && jail_status_write(status_fd, &st) < 0)
        log_warn("writing the status line to descriptor %d", status_fd);
    exit(code);
}

static uint64_t number(const char *opt, const char *s, uint64_t max)
{
    uint64_t v;
    if (!parse_u64(s, 0, max, &v))
        die(125, "%s: '%s' is not a number from 0 to %llu", opt, s, (unsigned long long)max);
    return v;
}

static void parse_net(struct jail_config *cfg, const char *arg)
{
    if (strcmp(arg, "none") == 0) {
        cfg->net = JAIL_NET_NONE;
        return;
    }
    const char *comma = strncmp(arg, "veth:", 5) == 0 ? strchr(arg + 5, ',') : NULL;
    if (!comma || comma == arg + 5 || !comma[1])
        die(125, "--net: '%s' is neither 'none' nor 'veth:HOST_CIDR,SPOKE_CIDR'", arg);
    cfg->net = JAIL_NET_VETH;
    free(cfg->veth_host_cidr);
    free(cfg->veth_spoke_cidr);
    cfg->veth_host_cidr = xstrndup(arg + 5, (size_t)(comma - (arg + 5)));
    cfg->veth_spoke_cidr = xstrdup(comma + 1);
}

static void parse_bind(struct jail_config *cfg, const char *arg, bool writable, bool recursive)
{
    const char *colon = strchr(arg, ':');
    char *src = colon ? xstrndup(arg, (size_t)(colon - arg)) : xstrdup(arg);
    if (src[0] != '/' || (colon && colon[1] != '/'))
        die(125, "--%sbind-%s %s: paths must be absolute (SRC[:DST])", recursive ? "r" : "",
            writable ? "rw" : "ro", arg);
    jail_config_add_bind(cfg, src, colon ? colon + 1 : NULL, writable);
    cfg->binds[cfg->n_binds - 1].recursive = recursive;
    free(src);
}

static void parse_tmpfs(struct jail_config *cfg, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char *dst = colon ? xstrndup(arg, (size_t)(colon - arg)) : xstrdup(arg);
    uint64_t size = 16;
    if (colon) {
        char *num = xstrdup(colon + 1);
        size_t len = strlen(num);
        if (len && (num[len - 1] == 'm' || num[len - 1] == 'M'))
            num[len - 1] = '\0';
        if (!parse_u64(num, 1, 65536, &size))
            die(125, "--tmpfs %s: size must be 1 to 65536 (MiB)", arg);
        free(num);
    }
    if (dst[0] != '/')
        die(125, "--tmpfs %s: the path must be absolute", arg);
    jail_config_add_tmpfs(cfg, dst, size);
    free(dst);
}

static void parse_host_ids(struct jail_config *cfg, const char *arg)
{
    const char *colon = strchr(arg, ':');
    uint64_t base, count;
    char *b = colon ? xstrndup(arg, (size_t)(colon - arg)) : NULL;
    if (!b || !parse_u64(b, 65536, INT32_MAX - 1, &base) ||
        !parse_u64(colon + 1, 1, 1 << 20, &count) || base + count > INT32_MAX)
        die(125, "--host-ids %s: expected BASE:COUNT with BASE >= 65536 and BASE+COUNT < 2^31",
            arg);
    free(b);
    cfg->host_id_base = (uint32_t)base;
    cfg->host_id_count = (uint32_t)count;
}

static void parse_seccomp(struct jail_config *cfg, const char *arg)
{
    char err[JAIL_ERR_MAX];
    if (strchr(arg, '/') || (strlen(arg) > 5 && strcmp(arg + strlen(arg) - 5, ".json") == 0)) {
        if (jail_config_load_seccomp(cfg, arg, err, sizeof(err)) < 0)
            die(125, "--seccomp: %s", err);
        return;
    }
    /* A preset name: validated by jail_start (the message lists the known ones). */
    free(cfg->seccomp_preset);
    cfg->seccomp_preset = xstrdup(arg);
}

static int open_fd_arg(const char *opt, const char *arg)
{
    int fd = (int)number(opt, arg, 1 << 20);
    if (fcntl(fd, F_GETFD) < 0)
        die(125, "%s %d: descriptor is not open", opt, fd);
    return fd;
}

static void apply_option(struct jail_config *cfg, int opt, const char *arg)
{
    switch (opt) {
    case OPT_NET:
        parse_net(cfg, arg);
        break;
    case OPT_VETH_GATEWAY:
        cfg->veth_gateway = true;
        break;
    case OPT_EXEC: {
        size_t n = 0;
        while (cfg->programs && cfg->programs[n])
            n++;
        cfg->programs = xrealloc(cfg->programs, (n + 2) * sizeof(char *));
        cfg->programs[n] = xstrdup(arg);
        cfg->programs[n + 1] = NULL;
        break;
    }
    case OPT_VETH_NETNS: {
        int fd = open(arg, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die(125, "--veth-host-netns %s: %s", arg, strerror(errno));
        if (cfg->veth_host_netns_fd >= 0)
            close(cfg->veth_host_netns_fd);
        cfg->veth_host_netns_fd = fd;
        break;
    }
    case OPT_BIND_RO:
    case OPT_BIND_RW:
        parse_bind(cfg, arg, opt == OPT_BIND_RW, false);
        break;
    case OPT_RBIND_RO:
    case OPT_RBIND_RW:
        parse_bind(cfg, arg, opt == OPT_RBIND_RW, true);
        break;
    case OPT_TMPFS:
        parse_tmpfs(cfg, arg);
        break;
    case OPT_ENV:
        if (!strchr(arg, '=') || arg[0] == '=')
            die(125, "--env %s: expected NAME=VALUE", arg);
        jail_config_set_env(cfg, arg);
        break;
    case OPT_CWD:
        free(cfg->cwd);
        cfg->cwd = xstrdup(arg);
        break;
    case OPT_HOSTNAME:
        free(cfg->hostname);
        cfg->hostname = xstrdup(arg);
        break;
    case OPT_HOST_IDS:
        parse_host_ids(cfg, arg);
        break;
    case OPT_RL_AS:
        cfg->limits.as_mb = number("--rlimit-as", arg, 1 << 20);
        break;
    case OPT_RL_CPU:
        cfg->limits.cpu_s = number("--rlimit-cpu", arg, 7 * 86400);
        break;
    case OPT_RL_FSIZE:
        cfg->limits.fsize_mb = number("--rlimit-fsize", arg, 1 << 20);
        break;
    case OPT_RL_NOFILE:
        cfg->limits.nofile = number("--rlimit-nofile", arg, 1 << 20);
        break;
    case OPT_RL_NPROC:
        cfg->limits.nproc = number("--rlimit-nproc", arg, 1 << 20);
        break;
    case OPT_WALL:
        cfg->limits.wall_s = number("--wall-time", arg, 30 * 86400);
        break;
    case OPT_MEMORY:
        cfg->limits.memory_mb = number("--memory-mb", arg, 1 << 30);
        break;
    case OPT_PIDS:
        cfg->limits.pids = number("--pids", arg, 1 << 22);
        break;
    case OPT_CPU_PERCENT:
        cfg->limits.cpu_percent = number("--cpu-percent", arg, 100000);
        break;
    case OPT_CGROUP_PARENT:
        free(cfg->cgroup_parent);
        cfg->cgroup_parent = xstrdup(arg);
        break;
    case OPT_CGROUP_POOL:
        cfg->cgroup_pool = (int)number("--cgroup-pool", arg, JAIL_CGROUP_POOL_MAX);
        if (cfg->cgroup_pool == 0)
            cfg->cgroup_pool = -1;
        break;
    case OPT_NO_CGROUP_POOL:
        cfg->cgroup_pool = -1;
        break;
    case OPT_NO_NETNS_POOL:
        cfg->netns_pool = -1;
        break;
    case OPT_SECCOMP:
        parse_seccomp(cfg, arg);
        break;
    case OPT_SECCOMP_ACTION:
        if (strcmp(arg, "errno") == 0)
            cfg->seccomp_action = JAIL_SECCOMP_ERRNO;
        else if (strcmp(arg, "kill") == 0)
            cfg->seccomp_action = JAIL_SECCOMP_KILL;
        else
            die(125, "--seccomp-action: '%s' is neither 'errno' nor 'kill'", arg);
        break;
    case OPT_NO_NS:
        cfg->namespaces = false;
        break;
    case OPT_KEEP_FD:
        cfg->keep_fds = xrealloc(cfg->keep_fds, (cfg->n_keep_fds + 1) * sizeof(int));
        cfg->keep_fds[cfg->n_keep_fds++] = open_fd_arg("--keep-fd", arg);
        break;
    default:
        break;
    }
}

char **nsjail_cli_argv;

int main(int argc, char **argv)
{
    nsjail_cli_argv = argv;
    log_init(argv[0], false);
    jail_config_init(&config);

    /* First pass: the profile and -v, so that the other options override the
     * profile whatever their order. */
    const char *profile = NULL, *dump_seccomp = NULL, *rootfs = NULL;
    bool verbose = false;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "+vh", options, NULL)) != -1) {
        if (opt == OPT_PROFILE)
            profile = optarg;
        else if (opt == 'v')
            verbose = true;
        else if (opt == OPT_STATUS_FD)
            status_fd = open_fd_arg("--status-fd", optarg);
        else if (opt == OPT_DUMP_SECCOMP)
            dump_seccomp = optarg;
        else if (opt == OPT_ROOTFS)
            rootfs = optarg;
        else if (opt == 'h') {
            usage(stdout);
            jail_config_free(&config);
            return 0;
        } else if (opt == '?') {
            usage(stderr);
            die(125, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    char err[JAIL_ERR_MAX];
    char *default_profile = profile ? NULL : paths_default_config("profiles/spoke.json");
    struct stat st;
    if (default_profile && stat(default_profile, &st) == 0)
        profile = default_profile;
    if (profile && jail_config_load_profile(&config, profile, err, sizeof(err)) < 0)
        die(125, "%s", err);
    free(default_profile); /* the profile is loaded: its path is no longer needed */
    /* Replaces the profile's system binds; --bind options (the second pass) add to it. */
    if (rootfs && jail_config_set_rootfs(&config, rootfs) < 0)
        die(125, "--rootfs %s: the path must be absolute", rootfs);
    config.verbose = verbose;

    optind = 0; /* glibc: rescan from the start */
    while ((opt = getopt_long(argc, argv, "+vh", options, NULL)) != -1)
        apply_option(&config, opt, optarg);
    if (dump_seccomp) {
        struct jail_error jerr;
        int fd = open(dump_seccomp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            die(125, "--dump-seccomp %s: %s", dump_seccomp, strerror(errno));
        if (jail_seccomp_export(&config, fd, &jerr) < 0)
            die(125, "%s", jerr.message);
        close(fd);
        jail_config_free(&config);
        return 0;
    }
    if (optind >= argc)
        die(125, "no PROGRAM given (usage: nsjail-lite [OPTIONS] -- PROGRAM [ARGS...])");
    if (config.namespaces &&
        jail_host_ids_check(config.host_id_base, config.host_id_count, err, sizeof(err)) < 0)
        die(125, "%s", err);

    /* Signals that arrive while the jail is being built stay pending until the
     * launcher, now the jail's monitor, waits for it: then they end the jail. */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, NULL);
    jail_exec(&config, argv + optind, status_fd);
}
