/* netproxy: the HTTPS CONNECT egress proxy at the only network exit of every spoke.
 * This file is the command line, the setup order (bind, open, drop, sandbox) and the
 * process lifecycle (SIGHUP reopen, SIGTERM drain). */
#include "notify.h"
#include "netproxy/core/core.h"
#include "netproxy/audit/audit.h"
#include "netproxy/control/control.h"
#include "lib/audit.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "netproxy/intercept/intercept.h"
#include "netproxy/egress/egress.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define MAX_REPEAT 64

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: netproxy --listen ADDR:PORT [--listen ...] --allow DOMAIN[,DOMAIN...] [--name "
        "SPOKE]\n"
        "                [OPTIONS]\n"
        "       netproxy --control FD [OPTIONS]\n"
        "\n"
        "An HTTPS CONNECT egress proxy. A CONNECT request is allowed when the registrable\n"
        "domain (eTLD+1, from the public suffix list) of its canonical host is in the spoke's\n"
        "allowlist and its port is allowed; the proxy then resolves the name itself, refuses\n"
        "non-public addresses, dials the address it checked and relays bytes both ways.\n"
        "Every decision and every tunnel close is written to the audit log as ECS JSON.\n"
        "\n"
        "Standalone mode (one policy, named SPOKE in the audit records):\n"
        "  --listen ADDR:PORT          listen here (repeatable; IPv6 as [ADDR]:PORT)\n"
        "  --allow DOMAIN[,...]        registrable domains (or exact IP literals) to allow;\n"
        "                              repeatable. A public suffix is refused.\n"
        "  --name SPOKE                spoke name for records and metrics (default standalone)\n"
        "Hub mode:\n"
        "  --control FD                SOCK_SEQPACKET control socket from the hub (lib/ctl.h):\n"
        "                              spokes, policies and listening sockets arrive on it.\n"
        "                              The proxy drains and exits when the hub closes it.\n"
        "                              A listener with IP_TRANSPARENT (the hub's gateway sends\n"
        "                              it every connection of the spoke with nftables' tproxy)\n"
        "                              also takes connections straight to their destination,\n"
        "                              and a resolver socket answers the spoke's DNS queries\n"
        "                              with synthetic addresses (docs/netproxy.md).\n"
        "The jail's resolver and transparent egress (hub mode):\n"
        "  --synthetic-range CIDR      addresses that stand for names (default 240.240.0.0/16)\n"
        "  --synthetic-max N           names per spoke (default 4096)\n"
        "  --dns-rate N                queries (and stray datagrams) per second per spoke,\n"
        "                              past which they are dropped (default 500)\n"
        "  --dns-burst N               ... and at once (default 1000)\n"
        "Secrets (hub mode; docs/secrets.md): for a host a spoke's secret is for, the proxy\n"
        "opens TLS with the hub's CA (sent on the control channel), checks each request\n"
        "and puts the value in place of the spoke's stand-in; other hosts' TLS is never\n"
        "opened.\n"
        "  --upstream-ca FILE          PEM bundle upstreams are verified with there (default\n"
        "                              " TLSCTX_DEFAULT_CA_FILE ")\n"
        "Policy:\n"
        "  --ports N[,N...]            allowed destination ports (default 443)\n"
        "  --report-only               log what would be refused, but allow it (the allowlist\n"
        "                              and ports only: the address guard, request checks and\n"
        "                              limits stay enforced)\n"
        "  --psl FILE                  public suffix list (default: the newest of the system\n"
        "                              list and libpsl's built-in one)\n"
        "Resolution and the address guard:\n"
        "  --resolve HOST:PORT:ADDR[,ADDR...]  answer HOST:PORT with ADDR, like curl (repeatable)\n"
        "  --upstream-allow-cidr CIDR  dial addresses in CIDR even though they are not public\n"
        "                              (repeatable; for stand-in upstreams in tests)\n"
        "  --dns-server ADDR:PORT      use this nameserver instead of resolv.conf (repeatable)\n"
        "  --resolv-conf FILE          nameservers from FILE (default /etc/resolv.conf)\n"
        "Audit and metrics:\n"
        "  --audit FILE|-              JSON lines (default -, stdout); reopened on SIGHUP\n"
        "  --audit-key FILE            hash-chain the records and sign checkpoints with this\n"
        "                              Ed25519 key (PEM, 0600; made when missing), read\n"
        "                              before privileges are dropped (hub audit verify)\n"
        "  --first-seen FILE           mark isolate.first_seen on allowed connects: the\n"
        "                              first time a user's app reaches a registrable domain\n"
        "                              (the store: FILE, opened before privileges drop)\n"
        "  --metrics ADDR:PORT         serve Prometheus metrics at http://ADDR:PORT/metrics\n"
        "Limits (over a limit: 503, or 429 per spoke, with Retry-After):\n"
        "  --max-tunnels N             tunnels in total (default 4096)\n"
        "  --max-tunnels-per-spoke N   tunnels per spoke (default 256)\n"
        "  --max-pending N             connections still sending their request (default 1024)\n"
        "  --max-pending-per-spoke N   the same, per spoke (default 256)\n"
        "  --retry-after S             Retry-After value in seconds (default 1)\n"
        "  --refusal-rate N            refusal records per second per spoke, sustained\n"
        "                              (default 10; 0: no budget); past the budget a summary\n"
        "                              per burst counts the rest (event.action\n"
        "                              refusal-summary)\n"
        "  --refusal-burst N           ... and at once (default 2000)\n"
        "  --conn-rate N               new connections per second per spoke, past which they\n"
        "                              are reset unread and counted (default 2000; 0: none)\n"
        "  --conn-burst N              ... and at once (default 10000)\n"
        "  --max-request-line BYTES    request line limit, 414 past it (default 8192)\n"
        "  --max-header-size BYTES     header section limit, 431 past it (default 32768)\n"
        "  --max-headers N             header field limit, 431 past it (default 100)\n"
        "Timeouts (DURATION: 250ms, 10s, 5m, 1h; a bare number is seconds):\n"
        "  --header-timeout D          to receive the request head (default 10s; 408)\n"
        "  --dns-timeout D             to resolve (default 5s; 504)\n"
        "  --connect-timeout D         to connect upstream (default 10s; 504)\n"
        "  --idle-timeout D            tunnel without a byte either way (default 5m)\n"
        "  --max-lifetime D            tunnel lifetime, 0 for none (default 1h)\n"
        "  --drain-timeout D           on SIGTERM, wait this long for tunnels (default 30s)\n"
        "  --workers N                 event loops, one thread each (default 1; at most 64):\n"
        "                              connections are spread over them, one audit stream\n"
        "  --pipe-size BYTES           splice pipe per busy direction (default 262144; the\n"
        "                              kernel caps it at /proc/sys/fs/pipe-max-size)\n"
        "Process:\n"
        "  --user USER                 when started as root, become USER after setup\n"
        "                              (default nobody)\n"
        "  --no-seccomp                do not install the seccomp filter (debugging only)\n"
        "  -v, --debug                 log each decision on stderr\n"
        "  -h, --help                  this text\n"
        "\n"
        "Signals: SIGHUP reopens the audit log; SIGTERM or SIGINT stops accepting, lets open\n"
        "tunnels finish (up to --drain-timeout) and exits 0; a second one ends them at once.\n"
        "Exit status: 0 after a drain, 1 when setup fails, 2 on a usage error.\n");
}

static _Noreturn void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "netproxy: %s\nTry 'netproxy --help'.\n", msg);
    exit(EXIT_USAGE);
}

struct options {
    struct np_config cfg;
    const char *listen[MAX_REPEAT];
    size_t nlisten;
    char *allow[POLICY_MAX_ENTRIES];
    size_t nallow;
    const char *name;
    const char *audit_path;
    const char *audit_key;
    const char *first_seen;
    const char *resolve[MAX_REPEAT];
    size_t nresolve;
    struct cidr cidrs[MAX_REPEAT];
    size_t ncidrs;
    const char *dns_servers[MAX_REPEAT];
    size_t ndns;
    const char *resolv_conf;
    const char *psl;
    const char *upstream_ca;
    const char *metrics;
    const char *user;
    int control_fd;
    bool no_seccomp;
    bool debug;
    unsigned workers;
};

static unsigned parse_count(const char *opt, const char *v, uint64_t min, uint64_t max)
{
    uint64_t n;
    if (!parse_u64(v, min, max, &n))
        usage_error("%s %s: expected a number from %llu to %llu", opt, v, (unsigned long long)min,
                    (unsigned long long)max);
    return (unsigned)n;
}

static uint64_t parse_duration(const char *opt, const char *v, bool zero_ok)
{
    uint64_t ms;
    if (!parse_duration_ms(v, 7ull * 24 * 3600 * 1000, &ms) || (!zero_ok && ms == 0))
        usage_error("%s %s: expected a duration like 250ms, 10s, 5m (at most 7 days)%s", opt, v,
                    zero_ok ? "" : ", not 0");
    return ms;
}

static void parse_ports(const char *v, struct np_config *cfg)
{
    char *copy = xstrdup(v);
    cfg->nports = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (cfg->nports == POLICY_MAX_PORTS)
            usage_error("--ports: at most %d ports", POLICY_MAX_PORTS);
        cfg->ports[cfg->nports++] = (uint16_t)parse_count("--ports", tok, 1, 65535);
    }
    free(copy);
    if (cfg->nports == 0)
        usage_error("--ports %s: no port", v);
}

static void add_repeat(const char **arr, size_t *n, const char *v, const char *opt)
{
    if (*n == MAX_REPEAT)
        usage_error("%s: at most %d times", opt, MAX_REPEAT);
    arr[(*n)++] = v;
}

enum {
    OPT_LISTEN = 256,
    OPT_ALLOW,
    OPT_NAME,
    OPT_PORTS,
    OPT_AUDIT,
    OPT_AUDIT_KEY,
    OPT_FIRST_SEEN,
    OPT_RESOLVE,
    OPT_CIDR,
    OPT_REPORT_ONLY,
    OPT_CONTROL,
    OPT_METRICS,
    OPT_DNS_SERVER,
    OPT_RESOLV_CONF,
    OPT_PSL,
    OPT_USER,
    OPT_NO_SECCOMP,
    OPT_MAX_TUNNELS,
    OPT_MAX_TUNNELS_SPOKE,
    OPT_MAX_PENDING,
    OPT_MAX_PENDING_SPOKE,
    OPT_RETRY_AFTER,
    OPT_MAX_LINE,
    OPT_MAX_HEADER_SIZE,
    OPT_MAX_HEADERS,
    OPT_HEADER_TIMEOUT,
    OPT_DNS_TIMEOUT,
    OPT_CONNECT_TIMEOUT,
    OPT_IDLE_TIMEOUT,
    OPT_MAX_LIFETIME,
    OPT_DRAIN_TIMEOUT,
    OPT_PIPE_SIZE,
    OPT_WORKERS,
    OPT_SYNTHETIC_RANGE,
    OPT_SYNTHETIC_MAX,
    OPT_DNS_RATE,
    OPT_DNS_BURST,
    OPT_UPSTREAM_CA,
    OPT_REFUSAL_RATE,
    OPT_REFUSAL_BURST,
    OPT_CONN_RATE,
    OPT_CONN_BURST,
};

static void parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"allow", required_argument, NULL, OPT_ALLOW},
        {"name", required_argument, NULL, OPT_NAME},
        {"ports", required_argument, NULL, OPT_PORTS},
        {"audit", required_argument, NULL, OPT_AUDIT},
        {"audit-key", required_argument, NULL, OPT_AUDIT_KEY},
        {"first-seen", required_argument, NULL, OPT_FIRST_SEEN},
        {"resolve", required_argument, NULL, OPT_RESOLVE},
        {"upstream-allow-cidr", required_argument, NULL, OPT_CIDR},
        {"report-only", no_argument, NULL, OPT_REPORT_ONLY},
        {"control", required_argument, NULL, OPT_CONTROL},
        {"metrics", required_argument, NULL, OPT_METRICS},
        {"dns-server", required_argument, NULL, OPT_DNS_SERVER},
        {"resolv-conf", required_argument, NULL, OPT_RESOLV_CONF},
        {"psl", required_argument, NULL, OPT_PSL},
        {"user", required_argument, NULL, OPT_USER},
        {"no-seccomp", no_argument, NULL, OPT_NO_SECCOMP},
        {"max-tunnels", required_argument, NULL, OPT_MAX_TUNNELS},
        {"max-tunnels-per-spoke", required_argument, NULL, OPT_MAX_TUNNELS_SPOKE},
        {"max-pending", required_argument, NULL, OPT_MAX_PENDING},
        {"max-pending-per-spoke", required_argument, NULL, OPT_MAX_PENDING_SPOKE},
        {"retry-after", required_argument, NULL, OPT_RETRY_AFTER},
        {"max-request-line", required_argument, NULL, OPT_MAX_LINE},
        {"max-header-size", required_argument, NULL, OPT_MAX_HEADER_SIZE},
        {"max-headers", required_argument, NULL, OPT_MAX_HEADERS},
        {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
        {"dns-timeout", required_argument, NULL, OPT_DNS_TIMEOUT},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
        {"max-lifetime", required_argument, NULL, OPT_MAX_LIFETIME},
        {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
        {"pipe-size", required_argument, NULL, OPT_PIPE_SIZE},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"synthetic-range", required_argument, NULL, OPT_SYNTHETIC_RANGE},
        {"synthetic-max", required_argument, NULL, OPT_SYNTHETIC_MAX},
        {"dns-rate", required_argument, NULL, OPT_DNS_RATE},
        {"dns-burst", required_argument, NULL, OPT_DNS_BURST},
        {"upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA},
        {"refusal-rate", required_argument, NULL, OPT_REFUSAL_RATE},
        {"refusal-burst", required_argument, NULL, OPT_REFUSAL_BURST},
        {"conn-rate", required_argument, NULL, OPT_CONN_RATE},
        {"conn-burst", required_argument, NULL, OPT_CONN_BURST},
        {"debug", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    config_defaults(&o->cfg);
    o->name = "standalone";
    o->audit_path = "-";
    o->user = "nobody";
    o->control_fd = -1;
    o->workers = 1;
    struct np_config *cfg = &o->cfg;
    int ch;
    while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (ch) {
        case OPT_LISTEN:
            add_repeat(o->listen, &o->nlisten, optarg, "--listen");
            break;
        case OPT_ALLOW: {
            char *copy = xstrdup(optarg), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (o->nallow == POLICY_MAX_ENTRIES)
                    usage_error("--allow: at most %d entries", POLICY_MAX_ENTRIES);
                o->allow[o->nallow++] = xstrdup(t);
            }
            free(copy);
            break;
        }
        case OPT_NAME:
            if (!spoke_name_valid(optarg))
                usage_error("--name %s: 1 to 64 characters of A-Z a-z 0-9 _ . -", optarg);
            o->name = optarg;
            break;
        case OPT_PORTS:
            parse_ports(optarg, cfg);
            break;
        case OPT_AUDIT:
            o->audit_path = optarg;
            break;
        case OPT_AUDIT_KEY:
            o->audit_key = optarg;
            break;
        case OPT_FIRST_SEEN:
            o->first_seen = optarg;
            break;
        case OPT_RESOLVE:
            add_repeat(o->resolve, &o->nresolve, optarg, "--resolve");
            break;
        case OPT_CIDR:
            if (o->ncidrs == MAX_REPEAT)
                usage_error("--upstream-allow-cidr: at most %d times", MAX_REPEAT);
            if (!cidr_parse(optarg, &o->cidrs[o->ncidrs]))
                usage_error("--upstream-allow-cidr %s: expected a CIDR like 127.0.0.1/32 "
                            "(host bits zero)",
                            optarg);
            o->ncidrs++;
            break;
        case OPT_REPORT_ONLY:
            cfg->report_only = true;
            break;
        case OPT_CONTROL:
            o->control_fd = (int)parse_count("--control", optarg, 0, 1 << 20);
            break;
        case OPT_METRICS:
            o->metrics = optarg;
            break;
        case OPT_DNS_SERVER:
            add_repeat(o->dns_servers, &o->ndns, optarg, "--dns-server");
            break;
        case OPT_RESOLV_CONF:
            o->resolv_conf = optarg;
            break;
        case OPT_PSL:
            o->psl = optarg;
            break;
        case OPT_UPSTREAM_CA:
            o->upstream_ca = optarg;
            break;
        case OPT_USER:
            o->user = optarg;
            break;
        case OPT_NO_SECCOMP:
            o->no_seccomp = true;
            break;
        case OPT_MAX_TUNNELS:
            cfg->max_tunnels = parse_count("--max-tunnels", optarg, 1, 1000000);
            break;
        case OPT_MAX_TUNNELS_SPOKE:
            cfg->max_tunnels_per_spoke = parse_count("--max-tunnels-per-spoke", optarg, 1, 1000000);
            break;
        case OPT_MAX_PENDING:
            cfg->max_pending = parse_count("--max-pending", optarg, 1, 1000000);
            break;
        case OPT_MAX_PENDING_SPOKE:
            cfg->max_pending_per_spoke = parse_count("--max-pending-per-spoke", optarg, 1, 1000000);
            break;
        case OPT_RETRY_AFTER:
            cfg->retry_after_s = parse_count("--retry-after", optarg, 0, 86400);
            break;
        case OPT_MAX_LINE:
            cfg->req.max_line = parse_count("--max-request-line", optarg, 64, 1 << 20);
            break;
        case OPT_MAX_HEADER_SIZE:
            cfg->req.max_header_bytes = parse_count("--max-header-size", optarg, 64, 1 << 20);
            break;
        case OPT_MAX_HEADERS:
            cfg->req.max_headers = parse_count("--max-headers", optarg, 1, 10000);
            break;
        case OPT_HEADER_TIMEOUT:
            cfg->header_timeout_ms = parse_duration("--header-timeout", optarg, false);
            break;
        case OPT_DNS_TIMEOUT:
            cfg->dns_timeout_ms = parse_duration("--dns-timeout", optarg, false);
            break;
        case OPT_CONNECT_TIMEOUT:
            cfg->connect_timeout_ms = parse_duration("--connect-timeout", optarg, false);
            break;
        case OPT_IDLE_TIMEOUT:
            cfg->idle_timeout_ms = parse_duration("--idle-timeout", optarg, false);
            break;
        case OPT_MAX_LIFETIME:
            cfg->max_lifetime_ms = parse_duration("--max-lifetime", optarg, true);
            break;
        case OPT_DRAIN_TIMEOUT:
            cfg->drain_timeout_ms = parse_duration("--drain-timeout", optarg, true);
            break;
        case OPT_PIPE_SIZE:
            cfg->pipe_size = parse_count("--pipe-size", optarg, 4096, 64u << 20);
            break;
        case OPT_WORKERS:
            o->workers = parse_count("--workers", optarg, 1, 64);
            break;
        case OPT_SYNTHETIC_RANGE: {
            char why[200];
            struct synth_map *probe = NULL;
            if (!cidr_parse(optarg, &cfg->synthetic) ||
                !(probe = synth_new(&cfg->synthetic, 1, why, sizeof(why))))
                usage_error("--synthetic-range %s: expected an IPv4 CIDR from /4 to /24 (host "
                            "bits zero)",
                            optarg);
            synth_free(probe);
            break;
        }
        case OPT_SYNTHETIC_MAX:
            cfg->synthetic_max = parse_count("--synthetic-max", optarg, 1, 65536);
            break;
        case OPT_DNS_RATE:
            cfg->dns_rate = parse_count("--dns-rate", optarg, 1, 1000000);
            break;
        case OPT_DNS_BURST:
            cfg->dns_burst = parse_count("--dns-burst", optarg, 1, 1000000);
            break;
        case OPT_REFUSAL_RATE:
            cfg->refusal_rate = parse_count("--refusal-rate", optarg, 0, 1000000);
            break;
        case OPT_REFUSAL_BURST:
            cfg->refusal_burst = parse_count("--refusal-burst", optarg, 1, 10000000);
            break;
        case OPT_CONN_RATE:
            cfg->conn_rate = parse_count("--conn-rate", optarg, 0, 1000000);
            break;
        case OPT_CONN_BURST:
            cfg->conn_burst = parse_count("--conn-burst", optarg, 1, 10000000);
            break;
        case 'v':
            o->debug = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            fprintf(stderr, "Try 'netproxy --help'.\n");
            exit(EXIT_USAGE);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument: %s", argv[optind]);
    if (o->control_fd >= 0 && (o->nlisten || o->nallow))
        usage_error("--control (hub mode) and --listen/--allow (standalone) exclude each other");
    if (o->control_fd < 0 && o->nlisten == 0)
        usage_error("nothing to serve: give --listen ADDR:PORT or --control FD");
    char why[200];
    struct synth_map *probe = synth_new(&cfg->synthetic, cfg->synthetic_max, why, sizeof(why));
    if (!probe)
        usage_error("--synthetic-max %u: %s", cfg->synthetic_max, why);
    synth_free(probe);
}

/* Enough descriptors for the limits: two per tunnel, one per pending connection. */
static void raise_nofile(const struct np_config *cfg)
{
    rlim_t need = 2 * (rlim_t)cfg->max_tunnels + cfg->max_pending + 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return;
    rlim_t want = need;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        want = rl.rlim_max;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || want < need)
        log_warnx("RLIMIT_NOFILE is %llu but the limits need %llu descriptors; accept() may "
                  "fail before --max-tunnels is reached",
                  (unsigned long long)want, (unsigned long long)need);
}

static struct proxy px_storage;
static struct control *control;
static struct event *ev_hup, *ev_term, *ev_int;

/* For the log: the count workers change under the lock. */
static unsigned tunnels_now(struct proxy *px)
{
    pthread_mutex_lock(&px->lock);
    unsigned n = px->tunnels;
    pthread_mutex_unlock(&px->lock);
    return n;
}

/* Ends every connection on every worker now, then the main loop (the threads are
 * joined after it). */
static void abort_now(struct proxy *px)
{
    __atomic_store_n(&px->aborting, true, __ATOMIC_RELEASE);
    worker_abort_all(&px->workers[0]);
    workers_wake(px);
    event_base_loopexit(px->base, NULL);
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy *px = arg;
    log_info("drain timeout: closing %u tunnels", tunnels_now(px));
    abort_now(px);
}

/* The drain is complete when no worker has a connection left. */
static void exit_if_drained(struct proxy *px)
{
    if (px->draining && !px->workers[0].conns && workers_others_exited(px))
        event_base_loopexit(px->base, NULL);
}

static void on_worker_exited(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    exit_if_drained(arg);
}

void proxy_start_drain(struct proxy *px, const char *why)
{
    if (px->draining)
        return;
    __atomic_store_n(&px->draining, true, __ATOMIC_RELEASE);
    log_info("%s: draining (%u tunnels open)", why, tunnels_now(px));
    for (struct spoke *s = px->spokes; s; s = s->next)
        spoke_close_endpoints(s);
    workers_wake(px);
    px->drain_timer = evtimer_new(px->base, on_drain_timeout, px);
    struct timeval tv = {.tv_sec = (time_t)(px->cfg->drain_timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(px->cfg->drain_timeout_ms % 1000) * 1000};
    if (px->drain_timer)
        evtimer_add(px->drain_timer, &tv);
    exit_if_drained(px);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct proxy *px = arg;
    if (sig == SIGHUP) {
        if (!px->opener)
            return;
        int fd = logopener_open(px->opener);
        if (fd < 0) {
            log_warn("SIGHUP: cannot reopen the audit log %s; still writing to the old file",
                     audit_path(px->audit));
            return;
        }
        audit_reopen_fd(px->audit, fd);
        log_info("SIGHUP: audit log %s reopened", audit_path(px->audit));
        return;
    }
    if (px->draining) {
        log_info("second signal: closing %u tunnels now", tunnels_now(px));
        abort_now(px);
        return;
    }
    proxy_start_drain(px, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

static struct event *watch_signal(struct proxy *px, int sig)
{
    struct event *ev = evsignal_new(px->base, sig, on_signal, px);
    if (!ev || evsignal_add(ev, NULL) < 0)
        fatalx("cannot watch signal %d", sig);
    return ev;
}

static void setup_standalone(struct proxy *px, struct options *o)
{
    char err[512];
    struct policy *pol = policy_new((const char *const *)o->allow, o->nallow, o->cfg.ports,
                                    o->cfg.nports, err, sizeof(err));
    if (!pol)
        fatalx("--allow: %s", err);
    if (o->nallow == 0)
        log_warnx("no --allow given: every request will be refused");
    struct spoke *s = spoke_new(px, o->name, NULL, pol);
    for (size_t i = 0; i < o->nlisten; i++) {
        /* With workers, one SO_REUSEPORT socket each: the kernel spreads the
         * connections, and no worker wakes for another's. Port 0 would give each its
         * own port, so it is one shared socket then. */
        struct sockaddr_storage ss;
        socklen_t sslen;
        bool own = px->nworkers > 1 && sockaddr_parse_hostport(o->listen[i], &ss, &sslen) &&
                   sockaddr_port((struct sockaddr *)&ss) != 0;
        for (unsigned w = 0; w < (own ? px->nworkers : 1); w++) {
            int fd = listener_bind(o->listen[i], own, err, sizeof(err));
            if (fd < 0 || !listener_add(px, s, fd, own ? (int)w : -1, NULL, err, sizeof(err)))
                fatalx("%s", err);
        }
    }
}

static int bind_metrics(const char *hostport)
{
    char err[512];
    int fd = listener_bind(hostport, false, err, sizeof(err));
    if (fd < 0)
        fatalx("--metrics: %s", err + strlen("--listen "));
    return fd;
}

int main(int argc, char **argv)
{
    struct options o;
    log_init("netproxy", false);
    log_set_fatal_status(1);
    parse_args(argc, argv, &o);
    log_set_debug(o.debug);
    /* Descriptors a parent left open would count against RLIMIT_NOFILE (two per tunnel)
     * and could reach whatever they point to: keep only stdio and the hub's socket. */
    if (close_fds_except(&o.control_fd, o.control_fd >= 0 ? 1 : 0) < 0)
        fatal("closing inherited descriptors");
    signal(SIGPIPE, SIG_IGN);
    raise_nofile(&o.cfg);

    char err[512];
    if (!policy_psl_init(o.psl, err, sizeof(err)))
        fatalx("%s", err);

    struct proxy *px = &px_storage;
    px->cfg = &o.cfg;
    px->audit = audit_open(o.audit_path, "netproxy", err, sizeof(err));
    if (!px->audit)
        fatalx("%s", err);
    if (o.audit_key && np_audit_chain(px, o.audit_key, err, sizeof(err)) < 0)
        fatalx("%s", err);
    if (o.first_seen && np_firstseen_open(o.first_seen, err, sizeof(err)) < 0)
        fatalx("%s", err);
    /* Forked before the event loop exists and while we still hold our privileges. */
    if (strcmp(o.audit_path, "-") != 0) {
        px->opener = logopener_start(o.audit_path, !o.no_seccomp, err, sizeof(err));
        if (!px->opener)
            fatalx("%s", err);
    }

    /* Loops on several threads: libevent locks each loop, so the main thread may add
     * listeners to the workers' loops and wake them. One loop needs none of it. */
    if (o.workers > 1 && evthread_use_pthreads() < 0)
        fatalx("cannot enable libevent's thread support");
    pthread_mutex_init(&px->lock, NULL);
    px->base = event_base_new();
    if (!px->base)
        fatalx("cannot create the event loop");
    /* Seed libevent's RNG (DNS transaction ids) now, before the sandbox. */
    evutil_secure_rng_init();
    px->metrics = metrics_new();
    px->nworkers = o.workers;
    px->workers = xcalloc(px->nworkers, sizeof(*px->workers));
    for (unsigned i = 0; i < px->nworkers; i++) {
        struct event_base *base = i == 0 ? px->base : event_base_new();
        if (!base)
            fatalx("cannot create worker %u's event loop", i);
        worker_init(px, &px->workers[i], i, base);
    }
    px->worker_exited = event_new(px->base, -1, 0, on_worker_exited, px);
    if (!px->worker_exited)
        fatalx("cannot create the event loop");
    px->guard = addrguard_new();
    for (size_t i = 0; i < o.ncidrs; i++)
        addrguard_allow_cidr(px->guard, &o.cidrs[i]);
    if (addrguard_load_own(px->guard) < 0)
        fatal("getifaddrs");

    struct resolver_config rc = {
        .resolv_conf = o.resolv_conf,
        .dns_servers = o.dns_servers,
        .ndns_servers = o.ndns,
        .timeout_ms = o.cfg.dns_timeout_ms,
    };
    /* A resolver per worker: evdns runs on one loop. Each reads resolv.conf now,
     * before the sandbox. */
    for (unsigned w = 0; w < px->nworkers; w++) {
        struct worker *wk = &px->workers[w];
        wk->resolver = resolver_new(wk->base, &rc, err, sizeof(err));
        if (!wk->resolver)
            fatalx("%s", err);
        for (size_t i = 0; i < o.nresolve; i++)
            if (!resolver_add_override(wk->resolver, o.resolve[i], err, sizeof(err)))
                fatalx("%s", err);
    }

    pthread_mutex_init(&px->creds_lock, NULL);
    if (o.control_fd >= 0) {
        /* The TLS contexts for secrets, made now: OpenSSL opens files on first use, the
         * sandbox forbids that later. A missing bundle is said, not fatal: spokes
         * without secrets are served as before. */
        px->tls = intercept_tls_new(o.upstream_ca ? o.upstream_ca : TLSCTX_DEFAULT_CA_FILE, err,
                                    sizeof(err));
        if (!px->tls)
            log_warnx("%s: secrets cannot be put into requests", err);
        control = control_new(px, o.control_fd, err, sizeof(err));
        if (!control)
            fatalx("%s", err);
    } else {
        setup_standalone(px, &o);
    }
    if (o.metrics) {
        int fd = bind_metrics(o.metrics);
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
            addrguard_add_endpoint(px->guard, (struct sockaddr *)&ss);
        if (metrics_serve(px->metrics, px, fd) < 0)
            fatalx("--metrics %s: cannot serve", o.metrics);
    }
    px->budget_timer = refusal_budget_timer_new(px);
    if (!px->budget_timer)
        fatalx("cannot start the refusal budget's timer");
    np_audit_tick_start(px);
    ev_hup = watch_signal(px, SIGHUP);
    ev_term = watch_signal(px, SIGTERM);
    ev_int = watch_signal(px, SIGINT);

    /* Listening already; said before the seccomp filter, which has no AF_UNIX datagram
     * socket for sd_notify. */
    notify_ready(o.control_fd >= 0 ? "hub mode" : "standalone");
    if (privdrop(o.user, err, sizeof(err)) < 0)
        fatalx("%s", err);
    /* The threads start now, before the filter that forbids clone(), and wait at the
     * gate until the filter covers them too. */
    if (workers_start(px, err, sizeof(err)) < 0)
        fatalx("%s", err);
    if (o.no_seccomp)
        log_warnx("--no-seccomp: running without the seccomp filter");
    else if (sandbox_apply(err, sizeof(err)) < 0)
        fatalx("%s", err);
    workers_open(px);

    log_info("ready: %s mode, %u worker%s, uid %u, seccomp %s, public suffix list: %s",
             o.control_fd >= 0 ? "hub" : "standalone", px->nworkers, px->nworkers > 1 ? "s" : "",
             (unsigned)getuid(), o.no_seccomp ? "off" : "on", policy_psl_source());
    event_base_dispatch(px->base);

    /* Teardown, so that leak checkers see a clean exit. */
    workers_stop(px);
    control_free(control);
    while (px->spokes)
        spoke_remove(px, px->spokes);
    metrics_free(px->metrics);
    /* Cancelled DNS lookups report back through the loop once more: let them, before
     * the resolver they belong to goes away. (The threads are joined: each loop is
     * run from here.) */
    for (unsigned i = 0; i < px->nworkers; i++) {
        struct worker *w = &px->workers[i];
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        resolver_free(w->resolver);
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        pipe_pool_free(w->pipes);
        if (w->spare_fd >= 0)
            close(w->spare_fd);
        if (w->wake)
            event_free(w->wake);
        if (i > 0)
            event_base_free(w->base);
    }
    free(px->workers);
    event_free(px->worker_exited);
    if (px->drain_timer)
        event_free(px->drain_timer);
    event_free(px->budget_timer);
    np_audit_tick_stop();
    event_free(ev_hup);
    event_free(ev_term);
    event_free(ev_int);
    addrguard_free(px->guard);
    tlsca_free(px->ca);
    tlsctx_free(px->tls);
    event_base_free(px->base);
    audit_close(px->audit);
    np_firstseen_close();
    logopener_stop(px->opener);
    policy_psl_free();
    for (size_t i = 0; i < o.nallow; i++)
        free(o.allow[i]);
    log_info("exiting");
    return 0;
}
