/* `hub repl-server`: the command line over replserver.c. */
#include "notify.h"
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "log.h"
#include "repl/repl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_repl_server(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: hub repl-server [--listen ADDR:PORT] [--max-sessions N] [--idle-timeout S]\n"
        "                       [--max-frame BYTES] [--time-limit S] [--pool N] [OPTIONS]\n"
        "Serves sandboxed Python sessions over TCP. Each message is a 4-byte big-endian\n"
        "length and then UTF-8 JSON:\n"
        "  request  {\"code\": \"...\", \"session_id\": \"optional\", \"close\": optional bool}\n"
        "  response {\"status\": \"ok\"|\"error\", \"output\": \"...\", \"error\": \"...\",\n"
        "            \"session_id\": \"...\"}\n"
        "Without session_id a new session starts (its id is in the response); each is its\n"
        "own jail of the code app (config/spokes/code.json) that keeps its variables,\n"
        "functions and imports between requests. \"close\": true ends it after the run.\n"
        "Exit status: 0 after SIGTERM/SIGINT (every session's sandbox ended), 1 when it\n"
        "cannot listen, 2 usage or configuration error. SIGHUP reopens the audit logs\n"
        "(the hub's and its netproxy's), for logrotate.\n\n"
        "  --listen ADDR:PORT  where to listen (default " REPL_DEFAULT_LISTEN
        "; IPv6 as [ADDR]:PORT;\n"
        "                      port 0 picks a free one, printed on stdout)\n"
        "  --max-sessions N    sessions at once, pre-started ones included (default %d)\n"
        "  --idle-timeout S    end a session, and close a connection, idle this long\n"
        "                      (default %d)\n"
        "  --max-frame BYTES   longest request accepted (default %d)\n"
        "  --time-limit S      per run; then KeyboardInterrupt, and %d ms later the\n"
        "                      session's sandbox is killed (default %g)\n"
        "  --pool N            sessions kept pre-started for new clients (default %d)\n"
        "  --max-clients N     connections at once (default %d)\n"
        "  --data-mb MB        each session's /data: a tmpfs of this size that ends with\n"
        "                      the session (namespace isolation; default %d)\n"
        "  --tokens FILE       require a bearer token in every request (\"token\": \"...\");\n"
        "                      FILE has lines 'sha256:HEX USER' (`hub serve token add`).\n"
        "                      Needed for a --listen address that is not loopback\n"
        "  --client-max-sessions N     sessions one client may hold (per token, else per\n"
        "                      peer address; default: a quarter of --max-sessions with\n"
        "                      --tokens, else --max-sessions)\n"
        "  --client-max-connections N  connections one client may hold (the same way;\n"
        "                      default a quarter of --max-clients with --tokens)\n"
        "  --frame-timeout S   close a connection whose request is not whole this long\n"
        "                      after it began, or after the connection (default %g)\n" CLI_COMMON_HELP,
        REPL_DEFAULT_MAX_SESSIONS, REPL_DEFAULT_IDLE_TIMEOUT_S, REPL_DEFAULT_MAX_FRAME,
        REPL_KILL_GRACE_MS, REPL_DEFAULT_TIME_LIMIT_MS / 1000.0, REPL_DEFAULT_POOL,
        REPL_DEFAULT_MAX_CLIENTS, REPL_DEFAULT_DATA_MB, REPL_DEFAULT_FRAME_TIMEOUT_MS / 1000.0);
}

/* Seconds with an optional fraction ("2", "0.5") into milliseconds. */
static bool parse_seconds_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v) || v * 1000.0 < (double)min_ms ||
        v * 1000.0 > (double)max_ms)
        return false;
    *out = (uint64_t)(v * 1000.0 + 0.5);
    return true;
}

int cmd_repl_server(int argc, char **argv)
{
    static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
                                         {"max-sessions", required_argument, NULL, 'm'},
                                         {"idle-timeout", required_argument, NULL, 'i'},
                                         {"max-frame", required_argument, NULL, 'f'},
                                         {"time-limit", required_argument, NULL, 't'},
                                         {"pool", required_argument, NULL, 'p'},
                                         {"max-clients", required_argument, NULL, 'c'},
                                         {"data-mb", required_argument, NULL, 'd'},
                                         {"tokens", required_argument, NULL, 'T'},
                                         {"client-max-sessions", required_argument, NULL, 'S'},
                                         {"client-max-connections", required_argument, NULL, 'C'},
                                         {"frame-timeout", required_argument, NULL, 'F'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {
        .argc = argc, .argv = argv, .opts = opts, .usage = usage, .no_operands = true};
    struct repl_opts o = {
        .listen = REPL_DEFAULT_LISTEN,
        .app = "code",
        .max_sessions = REPL_DEFAULT_MAX_SESSIONS,
        .idle_timeout_s = REPL_DEFAULT_IDLE_TIMEOUT_S,
        .max_frame = REPL_DEFAULT_MAX_FRAME,
        .time_limit_ms = REPL_DEFAULT_TIME_LIMIT_MS,
        .pool = REPL_DEFAULT_POOL,
        .max_clients = REPL_DEFAULT_MAX_CLIENTS,
        .data_mb = REPL_DEFAULT_DATA_MB,
    };
    uint64_t v;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 'l':
            o.listen = optarg;
            break;
        case 'm':
            if (!cli_u64_option("max-sessions", optarg, 1, 4096, "", &v))
                return EXIT_USAGE;
            o.max_sessions = (size_t)v;
            break;
        case 'i':
            if (!cli_u64_option("idle-timeout", optarg, 1, 7 * 86400, " seconds",
                                &o.idle_timeout_s))
                return EXIT_USAGE;
            break;
        case 'f':
            if (!cli_u64_option("max-frame", optarg, 16, REPL_MAX_MAX_FRAME, " bytes", &v))
                return EXIT_USAGE;
            o.max_frame = (size_t)v;
            break;
        case 't':
            if (!parse_seconds_ms(optarg, 100, 3600 * 1000, &o.time_limit_ms)) {
                log_warnx("--time-limit must be 0.1 to 3600 seconds");
                return EXIT_USAGE;
            }
            break;
        case 'p':
            if (!cli_u64_option("pool", optarg, 0, 64, "", &v))
                return EXIT_USAGE;
            o.pool = (size_t)v;
            break;
        case 'c':
            if (!cli_u64_option("max-clients", optarg, 1, 65536, "", &v))
                return EXIT_USAGE;
            o.max_clients = (size_t)v;
            break;
        case 'd':
            if (!cli_u64_option("data-mb", optarg, 1, 65536, " (MiB)", &o.data_mb))
                return EXIT_USAGE;
            break;
        case 'T':
            o.tokens_file = optarg;
            break;
        case 'S':
            if (!cli_u64_option("client-max-sessions", optarg, 1, 4096, "", &v))
                return EXIT_USAGE;
            o.client_max_sessions = (size_t)v;
            break;
        case 'C':
            if (!cli_u64_option("client-max-connections", optarg, 1, 65536, "", &v))
                return EXIT_USAGE;
            o.client_max_connections = (size_t)v;
            break;
        case 'F':
            if (!parse_seconds_ms(optarg, 100, 3600 * 1000, &o.frame_timeout_ms)) {
                log_warnx("--frame-timeout must be 0.1 to 3600 seconds");
                return EXIT_USAGE;
            }
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    o.debug = a.common.debug;

    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    const struct manifest *m = rc == EXIT_OK ? manifest_find(&ms, o.app) : NULL;
    if (rc == EXIT_OK && (!m || !manifest_tool(m, "run"))) {
        log_warnx("the manifests in %s have no %s app with a run tool (config/spokes/code.json)",
                  cfg.spokes_dir, o.app);
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && o.max_sessions > cfg.max_spokes) {
        log_warnx("--max-sessions %zu is above the hub's max_spokes (%zu)", o.max_sessions,
                  cfg.max_spokes);
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && o.pool > o.max_sessions)
        o.pool = o.max_sessions;
    if (rc == EXIT_OK && cfg.isolation != ISO_NAMESPACE)
        log_warnx("isolation %s: sessions share the host's file system%s; use namespace "
                  "isolation for untrusted code",
                  isolation_name(cfg.isolation),
                  cfg.isolation == ISO_NONE ? ", network and processes, without seccomp" : "");
    /* The runner's interrupt must come before the hub's deadline for the manifest too. */
    char err[1024];
    struct event_base *base = NULL;
    struct hub *h = NULL;
    struct repl_server *srv = NULL;
    if (rc == EXIT_OK) {
        if (!(h = cli_hub_new(&a.common, &cfg, &ms, &base)))
            rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK) {
        hub_reopen_on_sighup(h);
        srv = repl_server_new(h, &cfg, base, &o, err, sizeof(err));
        if (!srv) {
            log_warnx("%s", err);
            rc = 1;
        }
    }
    if (rc == EXIT_OK) {
        /* The bound port, for --listen ADDR:0. */
        const char *colon = strrchr(o.listen, ':');
        printf("repl-server: listening on %.*s:%u (isolation %s, app %s, at most %zu sessions)\n",
               (int)(colon - o.listen), o.listen, (unsigned)repl_server_port(srv),
               isolation_name(cfg.isolation), o.app, o.max_sessions);
        fflush(stdout);
        char status[160];
        snprintf(status, sizeof(status), "listening on %.*s:%u", (int)(colon - o.listen), o.listen,
                 (unsigned)repl_server_port(srv));
        notify_ready(status);
        while (!hub_quit_requested(h))
            event_base_dispatch(base);
        notify_stopping();
        log_info("repl-server: ending %zu sessions", repl_server_sessions(srv));
        repl_server_shutdown(srv);
    }
    hub_free(h);
    repl_server_free(srv);
    if (base)
        event_base_free(base);
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
