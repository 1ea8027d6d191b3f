/* The gateway namespace and the netproxy supervisor, against a stand-in netproxy
 * (fake_netproxy) that speaks lib/ctl.h and reports what it holds:
 *   - a listener made in the gateway before any veth exists, living in that namespace
 *     and not in ours;
 *   - add hands the socket over; a killed proxy is restarted and gets every socket
 *     again; a proxy that stops answering pings is killed and restarted;
 *   - a refused add reaches the error callback; remove hands it back;
 *   - the published /run/netns name disappears with the gateway. */
#include "net/net.h"
#include "tests/unit/test.h"
#include "util.h"

#include <fcntl.h>
#include <libgen.h>
#include <linux/sockios.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static char state_path[512], mode_path[512];
static char errored_key[128];
static int errors;

static void on_error(void *ud, const char *key, const char *msg)
{
    (void)ud;
    (void)msg;
    errors++;
    snprintf(errored_key, sizeof(errored_key), "%s", key ? key : "(all)");
}

static char *read_state(void)
{
    int fd = open(state_path, O_RDONLY);
    if (fd < 0)
        return xstrdup("");
    char *buf = xcalloc(1, 4096);
    if (read_full(fd, buf, 4095) < 0)
        buf[0] = '\0';
    close(fd);
    return buf;
}

static pid_t state_pid(void)
{
    char *s = read_state();
    pid_t pid = 0;
    sscanf(s, "pid %d", &pid);
    free(s);
    return pid;
}

/* Runs the loop until the state file contains needle (or lacks it), or 5 s pass. */
static bool wait_state(struct event_base *base, const char *needle, bool present)
{
    uint64_t until = now_mono_ns() + 5000000000ULL;
    while (now_mono_ns() < until) {
        char *s = read_state();
        bool has = strstr(s, needle) != NULL;
        free(s);
        if (has == present)
            return true;
        struct timeval tv = {.tv_usec = 20000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    return false;
}

static ino_t netns_inode(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    if (geteuid() != 0) {
        printf("ok - supervisor and gateway # SKIP needs root\n");
        return 0;
    }
    char dir[] = "/tmp/itest-hub-proxy.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char err[512];
    char name[64];
    snprintf(name, sizeof(name), "itest-hub-%d", (int)getpid());

    struct gateway *gw = gateway_new(name, err, sizeof(err));
    CHECK(gw != NULL, "the gateway namespace is created (%s)", gw ? "" : err);
    if (!gw)
        return test_done();
    char *pub = xasprintf("/run/netns/%s", name);
    CHECK(access(pub, F_OK) == 0, "it is published as %s", pub);
    int lfd = gateway_listen(gw, "169.254.104.1", 3128, err, sizeof(err));
    CHECK(lfd >= 0, "a listener binds 169.254.104.1 before any veth exists (%s)",
          lfd < 0 ? err : "");
    int sk_ns = ioctl(lfd, SIOCGSKNS);
    int our_ns = open("/proc/self/ns/net", O_RDONLY);
    CHECK(sk_ns >= 0 && netns_inode(sk_ns) == netns_inode(gateway_netns_fd(gw)),
          "the listener lives in the gateway namespace");
    CHECK(netns_inode(sk_ns) != netns_inode(our_ns), "... not in the hub's");
    close(sk_ns);
    close(our_ns);
    int lfd2 = gateway_listen(gw, "169.254.104.5", 3128, err, sizeof(err));

    char *exe = xstrdup(argv[0]);
    struct hub_config cfg;
    config_defaults(&cfg, dirname(exe));
    free(exe);
    free(cfg.netproxy_bin);
    cfg.netproxy_bin =
        xasprintf("%s/tests/hub/fake_netproxy", getenv("BIN") ? getenv("BIN") : "build");
    free(cfg.netproxy_audit);
    cfg.netproxy_audit = xasprintf("%s/netproxy.jsonl", dir);
    cfg.netproxy_ping_ms = 500; /* slack for a sanitizer build's slow start */
    snprintf(state_path, sizeof(state_path), "%s.state", cfg.netproxy_audit);
    snprintf(mode_path, sizeof(mode_path), "%s.mode", cfg.netproxy_audit);
    char *audit_path = xasprintf("%s/hub.jsonl", dir);
    struct audit *audit = audit_open(audit_path, "hub", err, sizeof(err));
    char *log = xasprintf("%s/netproxy.log", dir);
    struct event_base *base = event_base_new();
    struct proxy_sup *p =
        proxy_sup_new(base, audit, &cfg, log, false, on_error, NULL, err, sizeof(err));
    CHECK(p != NULL, "the supervisor starts the proxy (%s)", p ? "" : err);
    if (!p)
        return test_done();
    char *allow[] = {"example.com", NULL};
    uint16_t ports[] = {443};
    proxy_add(p, "alpha-1", "tester", allow, ports, 1, "169.254.104.1:3128", lfd, NULL);
    proxy_add(p, "beta-2", "tester", allow, ports, 1, "169.254.104.5:3128", lfd2, NULL);
    CHECK(wait_state(base, "alpha-1 169.254.104.1:3128", true),
          "the proxy holds alpha's listening socket, bound where the message says");
    CHECK(wait_state(base, "beta-2 169.254.104.5:3128", true), "... and beta's");

    pid_t first = state_pid();
    kill(first, SIGKILL);
    uint64_t until = now_mono_ns() + 5000000000ULL;
    while (now_mono_ns() < until && (state_pid() == first || !proxy_alive(p))) {
        struct timeval tv = {.tv_usec = 20000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    CHECK(state_pid() != first && proxy_restarts(p) >= 1, "a killed proxy is restarted");
    CHECK(wait_state(base, "alpha-1 169.254.104.1:3128", true) &&
              wait_state(base, "beta-2 169.254.104.5:3128", true),
          "... and every listener is handed over again");

    proxy_remove(p, "beta-2");
    CHECK(wait_state(base, "beta-2", false), "remove takes the listener back");
    CHECK(proxy_entries(p) == 1, "one spoke left registered");

    /* A proxy that stops answering: killed at the next ping, restarted. */
    FILE *f = fopen(mode_path, "w");
    fputs("hang\n", f);
    fclose(f);
    pid_t second = state_pid();
    kill(second, SIGKILL);
    until = now_mono_ns() + 5000000000ULL;
    pid_t hung = 0;
    while (now_mono_ns() < until && (hung = state_pid()) == second) {
        struct timeval tv = {.tv_usec = 20000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    unlink(mode_path);
    until = now_mono_ns() + 5000000000ULL;
    while (now_mono_ns() < until && state_pid() == hung) {
        struct timeval tv = {.tv_usec = 20000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    CHECK(hung != second && state_pid() != hung && proxy_restarts(p) >= 3,
          "a proxy that ignores pings is killed and replaced (%u restarts)", proxy_restarts(p));
    CHECK(wait_state(base, "alpha-1 169.254.104.1:3128", true), "... and gets the listeners");

    f = fopen(mode_path, "w");
    fputs("refuse\n", f);
    fclose(f);
    kill(state_pid(), SIGKILL);
    until = now_mono_ns() + 5000000000ULL;
    while (now_mono_ns() < until && errors == 0) {
        struct timeval tv = {.tv_usec = 20000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    CHECK(errors > 0 && strcmp(errored_key, "alpha-1") == 0,
          "a refused listener is reported for its spoke (%s)", errored_key);
    unlink(mode_path);

    proxy_sup_free(p);
    event_base_free(base);
    audit_close(audit);
    close(lfd);
    close(lfd2);
    gateway_free(gw);
    CHECK(access(pub, F_OK) != 0, "the gateway's /run/netns name is gone");
    char *cmd = xasprintf("rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    free(cmd);
    free(pub);
    free(log);
    free(audit_path);
    config_free(&cfg);
    return test_done();
}
