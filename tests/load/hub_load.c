/* hub_load: the hub driving many spokes at once, for scripts/load/hub (not a test).
 *
 *   hub_load --mode none|process|namespace [--spokes N] [--seconds S]
 *
 * Through the public API (hub.h), on one event loop, as the repl-server drives it:
 * 1. one warm spoke: sequential echo calls for S/2 seconds (the unloaded latency);
 * 2. N instances of the same app started at once (one whoami each): time until every
 *    one answered, and the memory of the hub and of every spoke process;
 * 3. N warm instances under load: each keeps one echo call outstanding for S seconds;
 *    calls per second and the latency of each call (median, p99, max);
 * 4. every instance closed, then the hub freed: what is left of its processes (any
 *    descendant of this one), its gateway namespace and its veths.
 * Prints one JSON object. The app is tests/hub/manifests/alpha (testspoke) with a
 * network allowance added, so that in namespace mode every spoke has its veth and its
 * listener in the hub's netproxy, as a networked app does. Everything it names is this
 * run's own: the temp directory and the gateway namespace itest-load-PID, veths
 * vld<pid>-<slot> in the pool 169.254.116.0/22, host uids from 2,000,000. The caller
 * must be root for process and namespace modes. */
#include "runtime/answers.h"
#include "runtime/hub.h"
#include "tests/hub/hub_fixture.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct slot {
    char name[16];
    uint64_t t0;
    bool busy;
    bool again;  /* issue the next call when this one is answered (while running) */
    bool record; /* its latencies count */
};

static struct hub *hub;
static json_t *echo_args;
static uint64_t *lat;
static size_t n_lat, cap_lat;
static unsigned failures, answered;
static bool running;
static char last_error[256];

static void record(uint64_t ns)
{
    if (n_lat == cap_lat) {
        cap_lat = cap_lat ? cap_lat * 2 : 4096;
        lat = xrealloc(lat, cap_lat * sizeof(*lat));
    }
    lat[n_lat++] = ns;
}

static void issue(struct slot *s);

static void done(void *ud, const struct call_result *r)
{
    struct slot *s = ud;
    s->busy = false;
    if (r->result) {
        answered++;
        if (s->record)
            record(now_mono_ns() - s->t0);
    } else {
        /* Not issued again: a failure may be reported before hub_call() returns, and
         * a retry from here would recurse. */
        failures++;
        snprintf(last_error, sizeof(last_error), "%s", r->message ? r->message : "");
        return;
    }
    if (running && s->again)
        issue(s);
}

static void issue(struct slot *s)
{
    struct call_opts o = {.instance = s->name[0] ? s->name : NULL, .timeout_ms = 30000};
    s->busy = true;
    s->t0 = now_mono_ns();
    hub_call(hub, &o, "alpha", "echo", echo_args, done, s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static json_t *summary(double secs)
{
    if (n_lat == 0)
        return json_null();
    qsort(lat, n_lat, sizeof(*lat), cmp_u64);
    json_t *o = json_pack("{s:I,s:f,s:f,s:f,s:f}", "calls", (json_int_t)n_lat, "per_second",
                          n_lat / secs, "median_us", lat[n_lat / 2] / 1000.0, "p99_us",
                          lat[(size_t)(n_lat * 0.99)] / 1000.0, "max_us", lat[n_lat - 1] / 1000.0);
    n_lat = 0;
    return o;
}

/* Proportional set size of pid in KiB (shared pages divided among their users: the
 * honest figure to sum over many processes), or -1. */
static long pss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long pss = 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "Pss:", 4) == 0)
            pss = atol(line + 4);
    fclose(f);
    return pss;
}

/* VmRSS of pid in KiB, and its parent. */
static long rss_kib(pid_t pid, pid_t *ppid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long rss = 0;
    *ppid = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            rss = atol(line + 6);
        else if (strncmp(line, "PPid:", 5) == 0)
            *ppid = (pid_t)atol(line + 5);
    }
    fclose(f);
    return rss;
}

/* Total RSS (or PSS) of every descendant of this process (the spokes, their jails'
 * monitors and inits), and how many there are. */
static long descendants_mem(unsigned *count, bool pss)
{
    enum { MAXP = 65536 };
    static pid_t pids[MAXP], parents[MAXP];
    static long rss[MAXP];
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < MAXP) {
        pid_t pid = (pid_t)atol(e->d_name);
        if (pid <= 0)
            continue;
        long r = rss_kib(pid, &parents[n]);
        if (r < 0)
            continue;
        pids[n] = pid;
        rss[n++] = r;
    }
    if (d)
        closedir(d);
    static bool mine[MAXP];
    long total = 0;
    *count = 0;
    bool grew = true;
    memset(mine, 0, sizeof(mine));
    while (grew) { /* a fixed point: descendants of descendants */
        grew = false;
        for (size_t i = 0; i < n; i++) {
            if (mine[i])
                continue;
            bool child = parents[i] == getpid();
            for (size_t k = 0; !child && k < n; k++)
                child = mine[k] && pids[k] == parents[i];
            if (child) {
                mine[i] = grew = true;
                long p = pss ? pss_kib(pids[i]) : rss[i];
                total += p > 0 ? p : 0;
                (*count)++;
            }
        }
    }
    return total;
}

/* Host links whose name starts with prefix. */
static int links_named(const char *prefix)
{
    int n = 0;
    DIR *d = opendir("/sys/class/net");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    if (d)
        closedir(d);
    return n;
}

/* Links named prefix* in network namespace ns (the hub's gateway: the host sides of
 * the spokes' veths), counted with ip(8); 0 when there is no such namespace. */
static int veths_in(const char *ns, const char *prefix)
{
    char *cmd = xasprintf("ip -n %s -o link show 2>/dev/null", ns);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p)
        return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), p)) {
        char *name = strchr(line, ' '); /* "N: NAME@...: <...>" */
        if (name && strncmp(name + 1, prefix, strlen(prefix)) == 0)
            n++;
    }
    pclose(p);
    return n;
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_BUILD 1
#endif
#endif

/* The manifest of tests/hub/manifests/alpha.json with a network allowance, written
 * to dir/spokes/alpha.json, and in a sanitizer build dir/profile.json too, both
 * adjusted as tests/hub/hub_lib.sh does (ASan's shadow memory needs an unlimited
 * RLIMIT_AS; LeakSanitizer cannot run in a pid namespace under seccomp); false (and
 * why on stderr) when they cannot be written. */
static bool write_manifest(const char *root, const char *dir)
{
    char *src = xasprintf("%s/tests/hub/manifests/alpha.json", root);
    char *sdir = xasprintf("%s/spokes", dir);
    char *dst = xasprintf("%s/alpha.json", sdir);
    json_error_t jerr;
    json_t *m = json_load_file(src, 0, &jerr);
    bool ok =
        m && mkdir(sdir, 0755) == 0 &&
        json_object_set_new(m, "network",
                            json_pack("{s:[s],s:[i]}", "allow", "load.example", "ports", 443)) == 0;
#ifdef SANITIZER_BUILD
    char *psrc = xasprintf("%s/config/profiles/spoke.json", root);
    char *pdst = xasprintf("%s/profile.json", dir);
    json_t *prof = json_load_file(psrc, 0, &jerr);
    ok = ok && prof &&
         json_object_set_new(json_object_get(prof, "limits"), "as_mb", json_integer(0)) == 0 &&
         json_dump_file(prof, pdst, JSON_INDENT(1)) == 0;
    json_object_del(json_object_get(m, "limits"), "as_mb");
    ok = ok &&
         json_object_set_new(m, "env", json_pack("{s:s}", "ASAN_OPTIONS", "detect_leaks=0")) == 0;
    json_decref(prof);
    free(psrc);
    free(pdst);
#endif
    ok = ok && json_dump_file(m, dst, JSON_INDENT(1)) == 0;
    if (!ok)
        fprintf(stderr, "hub_load: cannot write %s from %s: %s\n", dst, src,
                m ? strerror(errno) : jerr.text);
    json_decref(m);
    free(src);
    free(sdir);
    free(dst);
    return ok;
}

/* Serves every spoke until the time is up. */
static void run_for(struct event_base *base, double secs)
{
    struct timeval tv = {.tv_sec = (time_t)secs,
                         .tv_usec = (suseconds_t)((secs - (time_t)secs) * 1e6)};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

int main(int argc, char **argv)
{
    const char *mode = "none";
    int n = 100;
    double seconds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mode") == 0)
            mode = argv[i + 1];
        else if (strcmp(argv[i], "--spokes") == 0)
            n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
    }
    signal(SIGPIPE, SIG_IGN);
    char err[512];
    const char *bin = getenv("BIN") ? getenv("BIN") : "build";
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/itest-load-%d.XXXXXX", (int)getpid());
    if (!mkdtemp(dir) || chmod(dir, 0711) < 0) /* jailed uids pass through to /data */
        return 1;
    if (!write_manifest(root, dir))
        return 1;
    char gw_name[32], veth_prefix[32];
    snprintf(gw_name, sizeof(gw_name), "itest-load-%d", (int)getpid());
    snprintf(veth_prefix, sizeof(veth_prefix), "vld%x-", (unsigned)getpid());
    struct hub_config cfg;
    char *spokes = xasprintf("%s/spokes", dir);
    hub_fixture_config(&cfg, bin, dir, spokes);
    free(spokes);
    if (!isolation_parse(mode, &cfg.isolation)) {
        fprintf(stderr, "hub_load: bad mode %s\n", mode);
        return 2;
    }
    free(cfg.profile);
#ifdef SANITIZER_BUILD
    cfg.profile = xasprintf("%s/profile.json", dir);
#else
    cfg.profile = xasprintf("%s/config/profiles/spoke.json", root);
#endif
    free(cfg.netproxy_audit);
    cfg.netproxy_audit = xasprintf("%s/netproxy.jsonl", dir);
    config_set(&cfg.gateway_netns, gw_name);
    str_copy(cfg.veth_prefix, "vld", sizeof(cfg.veth_prefix));
    if (!config_set_veth_pool(&cfg, "169.254.116.0/22", err, sizeof(err))) {
        fprintf(stderr, "hub_load: %s\n", err);
        return 1;
    }
    cfg.max_spokes = (size_t)n + 8;
    cfg.host_id_base = 2000000 + (uint32_t)(getpid() % 1000) * 256; /* no other test's */
    cfg.host_id_count = 256;
    struct manifest_set ms;
    if (manifest_set_load(cfg.spokes_dir, &ms, err, sizeof(err)) < 0) {
        fprintf(stderr, "hub_load: %s\n", err);
        return 1;
    }
    struct event_base *base = event_base_new();
    hub = hub_new(&cfg, &ms, base, false, err, sizeof(err));
    if (!hub) {
        fprintf(stderr, "hub_load: %s\n", err);
        return 1;
    }
    echo_args = json_pack("{s:s}", "text", "ping");
    json_t *out = json_object();
    json_object_set_new(out, "mode", json_string(mode));
    json_object_set_new(out, "spokes", json_integer(n));

    /* 1. One warm spoke, sequential calls. */
    struct slot one = {.name = "", .again = true, .record = true};
    running = true;
    issue(&one);
    run_for(base, 0.5); /* start and warm up */
    n_lat = 0;
    uint64_t t = now_mono_ns();
    run_for(base, seconds / 2);
    running = false;
    json_object_set_new(out, "one_spoke", summary((double)(now_mono_ns() - t) / 1e9));
    while (one.busy)
        event_base_loop(base, EVLOOP_ONCE);
    unsigned procs0;
    long pss0 = descendants_mem(&procs0, true);

    /* 2. N instances started at once, while the warm spoke goes on answering: its
     * latency meanwhile shows whether starting spokes holds up the others. */
    struct slot *slots = xcalloc((size_t)n, sizeof(*slots));
    answered = failures = 0;
    n_lat = 0;
    running = true;
    issue(&one);
    t = now_mono_ns();
    for (int i = 0; i < n; i++) {
        snprintf(slots[i].name, sizeof(slots[i].name), "load%d", i);
        issue(&slots[i]);
    }
    while (answered + failures < (unsigned)n + (unsigned)n_lat && !hub_quit_requested(hub))
        event_base_loop(base, EVLOOP_ONCE);
    json_object_set_new(out, "start_all_s", json_real((double)(now_mono_ns() - t) / 1e9));
    running = false;
    while (one.busy)
        event_base_loop(base, EVLOOP_ONCE);
    json_object_set_new(out, "one_spoke_during_starts", summary((double)(now_mono_ns() - t) / 1e9));
    json_object_set_new(out, "start_failures", json_integer(failures));
    n_lat = 0;
    unsigned procs;
    long spokes_pss = descendants_mem(&procs, true) - pss0;
    long hub_rss;
    pid_t pp;
    hub_rss = rss_kib(getpid(), &pp);
    json_object_set_new(out, "hub_rss_kib", json_integer(hub_rss));
    json_object_set_new(out, "spoke_processes", json_integer(procs - procs0));
    json_object_set_new(out, "veths_in_gateway", json_integer(veths_in(gw_name, veth_prefix)));
    json_object_set_new(out, "spokes_pss_kib", json_integer(spokes_pss));
    json_object_set_new(out, "hub_pss_kib", json_integer(pss_kib(getpid())));

    /* 3. Every instance with one call outstanding. */
    answered = failures = 0;
    running = true;
    for (int i = 0; i < n; i++) {
        slots[i].again = slots[i].record = true;
        issue(&slots[i]);
    }
    t = now_mono_ns();
    run_for(base, seconds);
    running = false;
    json_object_set_new(out, "loaded", summary((double)(now_mono_ns() - t) / 1e9));
    json_object_set_new(out, "failures", json_integer(failures));
    if (failures)
        json_object_set_new(out, "last_error", json_string(last_error));
    for (int i = 0; i < n; i++)
        while (slots[i].busy)
            event_base_loop(base, EVLOOP_ONCE);
    json_object_set_new(out, "hub_rss_kib_after", json_integer(rss_kib(getpid(), &pp)));

    for (int i = 0; i < n; i++)
        hub_spoke_close(hub, NULL, "alpha", slots[i].name);
    hub_spoke_close(hub, NULL, "alpha", NULL);
    uint64_t until = now_mono_ns() + 10000000000ULL;
    size_t left, held;
    do {
        hub_resource_counts(hub, &left, &held);
        if (left == 0)
            break;
        event_base_loop(base, EVLOOP_ONCE);
    } while (now_mono_ns() < until);
    json_object_set_new(out, "left_after_close", json_integer((json_int_t)left));
    hub_free(hub);
    event_base_free(base);
    /* What hub_free() left: processes (reaped or not), the gateway namespace, veths. */
    unsigned procs_left = 0;
    until = now_mono_ns() + 5000000000ULL;
    do {
        descendants_mem(&procs_left, false);
        if (procs_left == 0)
            break;
        usleep(50000);
    } while (now_mono_ns() < until);
    char *ns_path = xasprintf("/run/netns/%s", gw_name);
    json_object_set_new(out, "left_processes", json_integer(procs_left));
    json_object_set_new(out, "left_netns", json_integer(access(ns_path, F_OK) == 0));
    json_object_set_new(out, "left_veths",
                        json_integer(links_named(veth_prefix) + veths_in(gw_name, veth_prefix)));
    free(ns_path);
    char *s = json_dumps(out, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(out);
    json_decref(echo_args);
    free(slots);
    free(lat);
    manifest_set_free(&ms);
    config_free(&cfg);
    char *cmd = xasprintf("rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "hub_load: could not remove %s\n", dir);
    free(cmd);
    return 0;
}
