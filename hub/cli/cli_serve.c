/* `hub serve`: the sandboxed apps for any MCP client, over stdio or Streamable HTTP
 * (serve.h). Also `hub serve token add USER --tokens FILE`. */
#include "audit.h"
#include "jsonfile.h"
#include "log.h"
#include "memory/memory.h"
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "serve/serve.h"
#include "tokens.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_serve(int argc, char **argv);

#define MAX_ORIGINS 16

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hub serve --stdio | --http ADDR:PORT | --background [OPTIONS]\n"
            "       hub serve token add USER --tokens FILE\n"
            "Serves the installed apps, each in its sandbox, to any MCP client. Every call\n"
            "runs through the hub's mediation; the hub's permission questions go to the\n"
            "client as elicitation/create when it offers elicitation (input_required for a\n"
            "2026-07-28 request), otherwise they wait for `hub approvals` (hub.json\n"
            "serve.approval_wait_s), then --answers decides (default deny). Without --app\n"
            "every app is served, tools named\n"
            "APP__TOOL; with it, that one app under its own tool names. Apps added,\n"
            "changed or removed in the spokes directory while it runs are offered at\n"
            "once, and clients are told (notifications/tools/list_changed).\n\n"
            "  --stdio            one client on stdin/stdout (the user from --user), served\n"
            "                     by the hub serve of this host (its control socket, hub.json\n"
            "                     serve.control_socket); when none runs, a --background one\n"
            "                     is started for it (its log: RUN_DIR/serve-background.log)\n"
            "  --standalone       serve alone: attach to no running hub serve, and listen on\n"
            "                     no control socket (no hub approvals for this one)\n"
            "  --background       serve only the clients that attach over the control socket;\n"
            "                     end after hub.json serve.idle_exit_s (300) without a client\n"
            "                     or a question waiting (0: never)\n"
            "  --ready-fd N       with --background: write \"ready\" on descriptor N once\n"
            "                     clients can attach (\"owned\" when another hub owns the\n"
            "                     socket, and end)\n"
            "  --http ADDR:PORT   MCP Streamable HTTP on /mcp (protocols 2025-03-26, 2025-06-18,\n"
            "                     2025-11-25 and the stateless 2026-07-28)\n"
            "  --app NAME         serve one app with its own tool names\n"
            "  --ask-exec         ask the user before every call, not only between apps\n"
            "  --allow-data-flows  without --app: a session that received one app's output\n"
            "                     calls another app unasked (by default the hub asks the\n"
            "                     data question, once per app, source and tool)\n"
            "  --tokens FILE      bearer tokens: lines 'sha256:HEX USER' (# comments)\n"
            "  --oauth ISSUER     take OAuth access tokens instead: JWTs (RS256, ES256) of this\n"
            "                     authorization server, scopes app:NAME or app:* (RFC 9728)\n"
            "  --oauth-audience URI   this resource, the tokens' aud (default\n"
            "                     http(s)://ADDR:PORT/mcp)\n"
            "  --oauth-jwks URL   the issuer's keys (default: from its metadata)\n"
            "  --oauth-user-claim C   the claim naming the hub user (default sub)\n"
            "  --tls-cert FILE    TLS certificate chain (PEM), with --tls-key\n"
            "  --tls-key FILE     TLS private key (PEM)\n"
            "  --insecure-http    allow plain HTTP beyond loopback\n"
            "  --allow-origin O   also accept this Origin (repeatable; default: loopback ones)\n"
            "  --max-sessions N   HTTP sessions at once (default 1000)\n"
            "  --max-sessions-per-token N   (default 100)\n"
            "  --max-inflight-per-token N   requests in flight per token (default 64)\n"
            "  --idle-timeout S   end HTTP sessions idle this long (default 1800)\n"
            "  --max-connections N  HTTP connections at once (default: half the open-files\n"
            "                     limit, at most 1024); at the cap the oldest anonymous or\n"
            "                     idle one is closed to make room\n"
            "  --max-connections-per-source N  from one address, an IPv6 /64 (default 64;\n"
            "                     behind a proxy, above the proxy's own connection limit)\n"
            "  --request-timeout S  each request must arrive whole within S (default 30)\n"
            "  --metrics ADDR:PORT  Prometheus text on GET /metrics\n"
            "  --prestart WHEN    start apps before their first call: none, session (when\n"
            "                     a session of their user opens) or service (when this\n"
            "                     starts, for every user it knows); default hub.json's,\n"
            "                     else none; a manifest's prestart wins for its app\n"
            "  --spoke-idle S     stop a spoke after S seconds without a call (0: never;\n"
            "                     default hub.json idle_s, else 0; a manifest's idle_s wins)\n"
            "  --llm SPEC         answer a spoke's sampling request with this LLM (a base\n"
            "                     URL, or replay:FILE) when the client samples no model\n"
            "                     itself, rate-limited per app (hub.json llm.sampling_*);\n"
            "                     without it such requests are declined\n"
            "  --model NAME       --llm's model (default: hub.json llm.model)\n"
            "  --api-key-env VAR  the variable holding --llm's API key (default:\n"
            "                     hub.json llm.api_key_env, else OPENAI_API_KEY)\n" CLI_COMMON_HELP);
}

/* ---- the background hub's command line ---- */

struct argv_buf {
    char **v;
    size_t n, cap;
};

static void argv_add(struct argv_buf *a, const char *s)
{
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->v = xrealloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = xstrdup(s);
    a->v[a->n] = NULL;
}

/* A path as the daemon (whose directory is /) finds it, prefix first: relative ones
 * below ours. */
static void argv_add_path(struct argv_buf *a, const char *opt, const char *prefix, const char *path)
{
    argv_add(a, opt);
    char cwd[4096];
    char *abs = path[0] == '/'
                    ? xasprintf("%s%s", prefix, path)
                    : xasprintf("%s%s/%s", prefix, getcwd(cwd, sizeof(cwd)) ? cwd : ".", path);
    argv_add(a, abs);
    free(abs);
}

static void argv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* hub serve --background with the options of this hub serve --stdio that the hub of
 * the host takes (not the client's own: --app, --ask-exec), the paths made absolute;
 * NULL when no control socket is configured. A new option of the hub's own belongs
 * here too. */
static char **background_argv(const struct cli_common *c, const struct hub_config *cfg,
                              const struct serve_opts *so, const char *llm_spec,
                              const char *prestart, const char *spoke_idle)
{
    char sock[16];
    if (!serve_control_path(cfg, sock, sizeof(sock))[0])
        return NULL;
    struct argv_buf a = {0};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = 0;
    argv_add(&a, exe);
    argv_add(&a, "serve");
    argv_add(&a, "--background");
    if (cfg->file)
        argv_add_path(&a, "--config", "", cfg->file);
    argv_add(&a, "--isolation");
    argv_add(&a, isolation_name(cfg->isolation));
    argv_add(&a, "--user");
    argv_add(&a, cfg->user);
    const struct {
        const char *opt, *value;
        bool path;
    } given[] = {
        {"--spokes", c->spokes, true},
        {"--audit", c->audit, true},
        {"--data-root", c->data_root, true},
        {"--run-dir", c->run_dir, true},
        {"--veth-pool", c->veth_pool, false},
        {"--model", c->llm_model, false},
        {"--api-key-env", c->llm_key_env, false},
        {"--metrics", so->metrics_addr, false},
        {"--prestart", prestart, false},
        {"--spoke-idle", spoke_idle, false},
    };
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
        if (!given[i].value)
            continue;
        if (given[i].path)
            argv_add_path(&a, given[i].opt, "", given[i].value);
        else {
            argv_add(&a, given[i].opt);
            argv_add(&a, given[i].value);
        }
    }
    if (c->answers && strcmp(c->answers, "allow") != 0 && strcmp(c->answers, "deny") != 0)
        argv_add_path(&a, "--answers", "", c->answers);
    else if (c->answers) {
        argv_add(&a, "--answers");
        argv_add(&a, c->answers);
    }
    if (llm_spec && strncmp(llm_spec, "replay:", 7) == 0)
        argv_add_path(&a, "--llm", "replay:", llm_spec + 7);
    else if (llm_spec) {
        argv_add(&a, "--llm");
        argv_add(&a, llm_spec);
    }
    if (so->data_flows_unasked)
        argv_add(&a, "--allow-data-flows");
    if (c->debug)
        argv_add(&a, "--debug");
    return a.v;
}

static int token_cmd(int argc, char **argv)
{
    /* argv: token add USER [--tokens FILE] */
    const char *file = NULL, *user = NULL;
    if (argc < 2 || strcmp(argv[1], "add") != 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strncmp(argv[i], "--tokens=", 9) == 0)
            file = argv[i] + 9;
        else if (!user && argv[i][0] != '-')
            user = argv[i];
        else {
            /* The one thing wrong, not every option of serve. */
            if (argv[i][0] == '-')
                log_warnx("hub serve token add: %s is not one of its options (it takes USER and "
                          "--tokens FILE)",
                          argv[i]);
            else
                log_warnx("hub serve token add: one USER (%s, then %s)", user, argv[i]);
            log_warnx("usage: hub serve token add USER --tokens FILE");
            return EXIT_USAGE;
        }
    }
    if (!file || !user) {
        log_warnx("usage: hub serve token add USER --tokens FILE");
        return EXIT_USAGE;
    }
    if (!user_id_valid(user)) {
        log_warnx("USER must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -");
        return EXIT_USAGE;
    }
    return tokens_add(file, user) == 0 ? EXIT_OK : EXIT_USAGE;
}

int cmd_serve(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "token") == 0)
        return token_cmd(argc - 1, argv + 1);
    static const struct option opts[] = {
        {"stdio", no_argument, NULL, 's'},
        {"standalone", no_argument, NULL, 'A'},
        {"background", no_argument, NULL, 1104},
        {"ready-fd", required_argument, NULL, 1105},
        {"http", required_argument, NULL, 'H'},
        {"app", required_argument, NULL, 'a'},
        {"ask-exec", no_argument, NULL, 'e'},
        {"allow-data-flows", no_argument, NULL, 'D'},
        {"tokens", required_argument, NULL, 't'},
        {"tls-cert", required_argument, NULL, 'c'},
        {"oauth", required_argument, NULL, 1100},
        {"oauth-audience", required_argument, NULL, 1101},
        {"oauth-jwks", required_argument, NULL, 1102},
        {"oauth-user-claim", required_argument, NULL, 1103},
        {"tls-key", required_argument, NULL, 'k'},
        {"insecure-http", no_argument, NULL, 'I'},
        {"allow-origin", required_argument, NULL, 'o'},
        {"max-sessions", required_argument, NULL, 'S'},
        {"max-sessions-per-token", required_argument, NULL, 'T'},
        {"max-inflight-per-token", required_argument, NULL, 'F'},
        {"idle-timeout", required_argument, NULL, 'i'},
        {"max-connections", required_argument, NULL, 'C'},
        {"max-connections-per-source", required_argument, NULL, 'P'},
        {"request-timeout", required_argument, NULL, 'R'},
        {"metrics", required_argument, NULL, 'm'},
        {"llm", required_argument, NULL, 'L'},
        {"prestart", required_argument, NULL, 2900},
        {"spoke-idle", required_argument, NULL, 2901},
        CLI_LLM_OPTIONS,
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    struct serve_opts so = {0};
    const char *origins[MAX_ORIGINS + 1] = {0};
    size_t n_origins = 0;
    struct serve_http_opts ho = {.max_sessions = 1000,
                                 .max_sessions_per_token = 100,
                                 .max_inflight_per_token = 64,
                                 .idle_timeout_s = 1800,
                                 .request_timeout_s = 30,
                                 .allow_origins = origins};
    bool stdio = false, standalone = false, background = false;
    int ready_fd = -1;
    const char *llm_spec = NULL, *prestart = NULL, *spoke_idle = NULL;
    uint64_t v;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        switch (opt) {
        case 's':
            stdio = true;
            break;
        case 'A':
            standalone = true;
            break;
        case 1104:
            background = true;
            break;
        case 1105:
            if (!cli_u64_option("ready-fd", optarg, 3, 1023, "", &v))
                return EXIT_USAGE;
            if (fcntl((int)v, F_GETFD) < 0) {
                log_warnx("--ready-fd %s: not an open descriptor", optarg);
                return EXIT_USAGE;
            }
            ready_fd = (int)v;
            set_cloexec(ready_fd, true); /* for the starter only: no spoke inherits it */
            break;
        case 'H':
            ho.listen = optarg;
            break;
        case 'a':
            so.app = optarg;
            break;
        case 'e':
            so.ask_exec = true;
            break;
        case 'D':
            so.data_flows_unasked = true;
            break;
        case 't':
            ho.tokens_file = optarg;
            break;
        case 'c':
            ho.tls_cert = optarg;
            break;
        case 1100:
            ho.oauth_issuer = optarg;
            break;
        case 1101:
            ho.oauth_audience = optarg;
            break;
        case 1102:
            ho.oauth_jwks = optarg;
            break;
        case 1103:
            ho.oauth_user_claim = optarg;
            break;
        case 'k':
            ho.tls_key = optarg;
            break;
        case 'I':
            ho.insecure_http = true;
            break;
        case 'o':
            if (n_origins >= MAX_ORIGINS) {
                log_warnx("at most %d --allow-origin", MAX_ORIGINS);
                return EXIT_USAGE;
            }
            origins[n_origins++] = optarg;
            break;
        case 'S':
        case 'T':
        case 'F':
            if (!parse_u64(optarg, 1, 100000, &v)) {
                log_warnx("session and request limits must be 1 to 100000");
                return EXIT_USAGE;
            }
            if (opt == 'S')
                ho.max_sessions = v;
            else if (opt == 'T')
                ho.max_sessions_per_token = v;
            else
                ho.max_inflight_per_token = v;
            break;
        case 'i':
            if (!cli_u64_option("idle-timeout", optarg, 1, 86400 * 7, " seconds",
                                &ho.idle_timeout_s))
                return EXIT_USAGE;
            break;
        case 'C':
        case 'P':
            if (!cli_u64_option(opt == 'C' ? "max-connections" : "max-connections-per-source",
                                optarg, 1, 100000, "", &v))
                return EXIT_USAGE;
            if (opt == 'C')
                ho.max_connections = v;
            else
                ho.max_connections_per_source = v;
            break;
        case 'R':
            if (!cli_u64_option("request-timeout", optarg, 1, 3600, " seconds",
                                &ho.request_timeout_s))
                return EXIT_USAGE;
            break;
        case 'L':
            llm_spec = optarg;
            break;
        case 2900:
            prestart = optarg;
            break;
        case 2901:
            spoke_idle = optarg;
            break;
        case 'm':
            so.metrics_addr = optarg;
            break;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    if (optind != argc || (int)stdio + (ho.listen != NULL) + (int)background != 1) {
        log_warnx("give exactly one of --stdio, --http ADDR:PORT and --background");
        usage(stderr);
        return EXIT_USAGE;
    }
    if (background && (standalone || so.app || so.ask_exec)) {
        log_warnx("--background serves whoever attaches, in the shape each asks for: no "
                  "--standalone, --app or --ask-exec");
        return EXIT_USAGE;
    }
    if (ready_fd >= 0 && !background) {
        log_warnx("--ready-fd goes with --background");
        return EXIT_USAGE;
    }
    if (ho.oauth_issuer && ho.tokens_file) {
        log_warnx("--oauth and --tokens are two ways to authenticate: give one");
        return EXIT_USAGE;
    }
    if ((ho.oauth_audience || ho.oauth_jwks || ho.oauth_user_claim) && !ho.oauth_issuer) {
        log_warnx("--oauth-audience, --oauth-jwks and --oauth-user-claim go with --oauth");
        return EXIT_USAGE;
    }
    if (!!ho.tls_cert != !!ho.tls_key) {
        log_warnx("--tls-cert and --tls-key go together");
        return EXIT_USAGE;
    }
    if (!ho.listen && (ho.tokens_file || ho.tls_cert || ho.oauth_issuer)) {
        log_warnx("--tokens, --oauth and TLS are for --http; --stdio serves the one user of "
                  "--user, --background the users of this host's accounts");
        return EXIT_USAGE;
    }
    if (stdio && a.common.audit && strcmp(a.common.audit, "-") == 0) {
        log_warnx("--audit - would mix audit lines into the MCP stream on stdout");
        return EXIT_USAGE;
    }
    struct hub_config cfg;
    struct manifest_set ms;
    int rc = cli_load(&a.common, &cfg, &ms);
    char err[1024];
    if (rc == EXIT_OK && prestart && !prestart_parse(prestart, &cfg.prestart)) {
        log_warnx("--prestart must be none, session or service");
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && spoke_idle &&
        !cli_u64_option("spoke-idle", spoke_idle, 0, 86400 * 365, " seconds", &cfg.idle_s))
        rc = EXIT_USAGE;
    /* One hub per host owns the spokes: --stdio hands its client to the running hub
     * serve, or to a background one it starts, and serves on its own only when neither
     * can be had. (An app that is not installed is refused below, without a hub.) */
    if (rc == EXIT_OK && stdio && !standalone && (!so.app || manifest_find(&ms, so.app))) {
        char **start = background_argv(&a.common, &cfg, &so, llm_spec, prestart, spoke_idle);
        struct serve_attach_opts ao = {
            .user = cfg.user, .app = so.app, .ask_exec = so.ask_exec, .start_argv = start};
        bool started = false;
        int attached = serve_attach(&cfg, &ao, &started, err, sizeof(err));
        argv_free(start);
        if (attached >= 0) {
            if (!started && (llm_spec || a.common.answers || so.metrics_addr || prestart ||
                             spoke_idle || so.data_flows_unasked))
                log_warnx("--llm, --answers, --metrics, --prestart, --spoke-idle and "
                          "--allow-data-flows were the running hub's, not these");
            manifest_set_free(&ms);
            config_free(&cfg);
            return attached == 0 ? EXIT_OK : EXIT_TOOL_ERROR;
        }
        if (attached == -1)
            log_warnx("%s; serving on its own (--standalone)", err);
    }
    /* The background hub owns the control socket before anything else is started: a
     * second one started at the same moment ends at once. */
    int ctl_lock = -1;
    if (rc == EXIT_OK && background) {
        ctl_lock = serve_control_lock(&cfg, err, sizeof(err));
        if (ctl_lock == -2) {
            log_info("another hub serve owns %s: clients attach to that one",
                     serve_control_path(&cfg, err, sizeof(err)));
            serve_ready_say(ready_fd, "owned");
            manifest_set_free(&ms);
            config_free(&cfg);
            return EXIT_OK;
        }
        if (ctl_lock < 0) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        }
    }
    struct answers *answers = NULL;
    if (rc == EXIT_OK) {
        answers = answers_load(a.common.answers ? a.common.answers : "deny", err, sizeof(err));
        if (!answers) {
            log_warnx("--answers: %s", err);
            rc = EXIT_USAGE;
        }
    }
    /* The grant store: hub.json's memory.redis, shared with the user's other hubs. */
    struct memory *store = NULL;
    if (rc == EXIT_OK && cfg.memory) {
        struct memory_config mc;
        memory_config_defaults(&mc);
        struct jf_ctx c = {
            .file = cfg.file ? cfg.file : "hub.json", .err = err, .errlen = sizeof(err)};
        if (!memory_config_parse(&c, cfg.memory, "memory", &mc)) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        } else if (mc.redis && !(store = memory_open(NULL, &mc, err, sizeof(err)))) {
            log_warnx("memory: %s", err);
            rc = EXIT_USAGE;
        }
    }
    /* Without Redis, this host's store: DATA_ROOT/.serve-grants.json, which every hub
     * serve of the data root reads, so that "always" holds at the next stdio session. */
    if (rc == EXIT_OK && !store) {
        struct memory_config mc;
        memory_config_defaults(&mc);
        char *abs = mkdir_p(cfg.data_root, 0711) == 0 ? realpath(cfg.data_root, NULL) : NULL;
        char *spec = abs ? xasprintf("file:%s/.serve-grants.json", abs) : NULL;
        if (!spec || !(store = memory_open(spec, &mc, err, sizeof(err)))) {
            log_warnx("the grant store: %s", spec ? err : strerror(errno));
            rc = EXIT_USAGE;
        }
        free(spec);
        free(abs);
    }
    /* --llm: its calls are made on serve's LLM thread, audited through a handle of their
     * own on the hub's audit log (appends of whole lines, as every writer's). */
    struct audit *llm_audit = NULL;
    /* llm.sampling_max_tokens caps a spoke's request forwarded to the client too. */
    if (rc == EXIT_OK &&
        llm_sampling_limits_parse(&cfg, &so.sampling_limits, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && llm_spec) {
        /* The same file as the hub's own records: chained alike (lib/auditchain.h). */
        if (!(llm_audit = audit_open(cfg.audit_path, "hub", err, sizeof(err))) ||
            haudit_chain(&cfg, llm_audit, err, sizeof(err)) < 0 ||
            !(so.sampling_llm =
                  llm_open_hub(&cfg, llm_spec, llm_audit, a.common.debug, err, sizeof(err)))) {
            log_warnx("--llm: %s", err);
            rc = EXIT_USAGE;
        }
    }
    struct event_base *base = NULL;
    struct hub *h = NULL;
    struct serve *sv = NULL;
    if (rc == EXIT_OK) {
        if (!(h = cli_hub_new(&a.common, &cfg, &ms, &base)))
            rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && store) {
        memory_set_audit(store, hub_audit(h)); /* a Redis failover is on record */
        /* isolate.first_seen, remembered in the same Redis as the assistant's, so that
         * a SIEM sees a tool new for the user once across every hub of that user. */
        hub_set_first_seen(h, memory_first_seen_hook, store);
    }
    if (rc == EXIT_OK) {
        so.answers = answers;
        so.grant_store = store;
        sv = serve_new(h, &cfg, &ms, base, &so, err, sizeof(err));
        so.sampling_llm = NULL; /* serve_new() took it over, whatever it returned */
        if (!sv) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
        }
    }
    if (rc == EXIT_OK && !standalone) {
        int c = serve_control_listen(sv, ctl_lock, err, sizeof(err));
        ctl_lock = -1; /* the serve's now */
        if (c < 0)
            log_warnx("%s: clients of this host cannot attach to this hub", err);
        else if (c == 0 && serve_control_path(&cfg, err, sizeof(err))[0])
            log_warnx("another hub serve owns %s: clients of this host attach to that one", err);
        if (background && c != 1)
            rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK) {
        ho.user = cfg.user;
        if (!stdio)
            hub_reopen_on_sighup(h); /* logrotate; a terminal's SIGHUP means --stdio's end */
        serve_prestart_service(sv, stdio ? NULL : ho.tokens_file, cfg.user);
        int r = stdio        ? serve_stdio(sv, cfg.user)
                : background ? serve_background(sv, ready_fd)
                             : serve_http(sv, &ho);
        ready_fd = -1; /* serve_background() said ready and closed it */
        rc = r == 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (ctl_lock >= 0)
        close(ctl_lock);
    if (ready_fd >= 0)
        close(ready_fd); /* after a failed start: the starter reads the log */
    if (sv)
        serve_close_sessions(sv, "the hub is shutting down");
    if (h)
        hub_free(h);
    serve_free(sv);
    if (base)
        event_base_free(base);
    answers_free(answers);
    llm_close(so.sampling_llm); /* NULL once serve_new() took it over */
    audit_close(llm_audit);
    if (store)
        memory_close(store);
    manifest_set_free(&ms);
    config_free(&cfg);
    return rc;
}
