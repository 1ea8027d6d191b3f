#include "net_proxy.h"
#include "ctl.h"
#include "config/config.h"
#include "log.h"
#include "otlp.h"
#include "secret.h"
#include "pidfd.h"
#include "traceparent.h"
#include "util.h"

#ifdef HUB_HAVE_JAIL
#include "nsjail-lite/jail.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define RESTART_WINDOW_NS (60ULL * 1000000000ULL)
#define RESTART_MAX 10
#define BACKOFF_MAX_MS 2000
/* Synthetic addresses kept per spoke (netproxy's own limit) and sent per message. */
#define SYNTHETIC_MAX 4096
#define SYNTHETIC_CHUNK 128

/* A forward listener (a raw TCP grant to the host's loopback), resent with its spoke. */
struct forward {
    json_t *msg;
    int fd;
};

struct entry {
    char *key;
    json_t *add; /* the whole add message, resent after a restart */
    int fds[2];  /* the listener, and the resolver's socket or -1 */
    size_t nfds;
    /* The names netproxy gave synthetic addresses ({"name": "ip"}): sent back after a
     * restart, so that every address keeps its name for the spoke's life. */
    json_t *synthetic;
    struct forward *forwards;
    size_t n_forwards;
    /* The spoke's host-mode secrets (copies: values in secret memory), put into the add
     * message only when it is sent, and rotated by proxy_secret_rotate(). */
    struct secret_binding *secrets;
    size_t n_secrets;
};

/* An operation sent and waiting for its reply; replies come in order. */
struct op {
    char *key;        /* NULL for ping */
    bool is_add;      /* a refusal stops the spoke */
    const char *what; /* for the log: "the listener", ... */
};

struct proxy_sup {
    struct event_base *base;
    struct audit *audit;
    const struct hub_config *cfg;
    char *log_path;
    bool debug;
    proxy_error_fn on_error;
    void *ud;

    pid_t pid;
    int pidfd;
    int ctl;
    struct event *ev_exit, *ev_ctl, *ev_ping, *ev_restart;
    struct op *ops; /* FIFO of unanswered operations */
    size_t n_ops, cap_ops;
    bool ping_outstanding;

    struct entry *entries;
    size_t n_entries;
    /* The hub's CA (hubca.h), sent first to every netproxy started; NULL until a
     * spoke with a secret to inject needs it. */
    char *ca_cert, *ca_key;

    /* netproxy's own cgroup (hub.json netproxy.memory_mb; NULL: none), kept across
     * restarts, and the OOM kills it had seen by the last start. */
    char *cg_dir;
    uint64_t oom_seen;

    /* The hub's span exporter (otlp.h; NULL: none): netproxy then hands over each
     * traced tunnel's span when it ends (control op "trace" with "spans"). */
    struct otlp *otlp;

    unsigned restarts;
    uint64_t window_start;
    unsigned window_restarts;
    unsigned backoff_ms;
    bool given_up;
};

static void proxy_audit(struct proxy_sup *p, const char *action, const char *outcome,
                        const char *reason, int status)
{
    json_t *rec = json_object();
    audit_set_str(rec, "event.action", action);
    audit_set_str(rec, "event.outcome", outcome);
    audit_set_str(rec, "event.reason", reason);
    audit_set_int(rec, "process.pid", p->pid);
    if (status >= 0)
        audit_set_int(rec, "process.exit_code", status);
    audit_set_int(rec, "isolate.netproxy.restarts", p->restarts);
    audit_set_int(rec, "isolate.netproxy.workers", (int64_t)p->cfg->netproxy_workers);
    (void)audit_write(p->audit, rec); /* the hub's log: a loss is said once per outage */
}

static void ops_push(struct proxy_sup *p, const char *key, bool is_add, const char *what)
{
    if (p->n_ops == p->cap_ops) {
        p->cap_ops = p->cap_ops ? p->cap_ops * 2 : 16;
        p->ops = xrealloc(p->ops, p->cap_ops * sizeof(*p->ops));
    }
    p->ops[p->n_ops].key = key ? xstrdup(key) : NULL;
    p->ops[p->n_ops].is_add = is_add;
    p->ops[p->n_ops++].what = what;
}

static void ops_clear(struct proxy_sup *p)
{
    for (size_t i = 0; i < p->n_ops; i++)
        free(p->ops[i].key);
    p->n_ops = 0;
    p->ping_outstanding = false;
}

static void kill_proxy(struct proxy_sup *p, const char *why)
{
    if (p->pid > 0) {
        log_warnx("netproxy (pid %d): %s; killing it", (int)p->pid, why);
        kill(p->pid, SIGKILL);
    }
}

/* What an operation is, for the log line of a refusal. */
static const char *op_what(const json_t *msg)
{
    const char *op = json_string_value(json_object_get(msg, "op"));
    return !op                            ? "the message"
           : strcmp(op, "add") == 0       ? "the listener"
           : strcmp(op, "remove") == 0    ? "the removal"
           : strcmp(op, "forward") == 0   ? "a loopback forward"
           : strcmp(op, "synthetic") == 0 ? "the synthetic addresses"
           : strcmp(op, "tls") == 0       ? "the hub's CA"
           : strcmp(op, "secret") == 0    ? "a secret's new value"
                                          : "the ping";
}

/* Sends on the control socket; a full socket means the proxy is not reading, which
 * the ping check turns into a restart. */
static int ctl_sendv_op(struct proxy_sup *p, json_t *msg, const int *fds, size_t nfds,
                        const char *key, bool is_add)
{
    if (p->ctl < 0)
        return -1; /* restarting: the entry table is resent after the restart */
    if (ctl_sendv(p->ctl, msg, fds, nfds) < 0) {
        kill_proxy(p, errno == EAGAIN ? "control socket full" : strerror(errno));
        return -1;
    }
    ops_push(p, key, is_add, op_what(msg));
    return 0;
}

static int ctl_send_op(struct proxy_sup *p, json_t *msg, int fd, const char *key, bool is_add)
{
    return ctl_sendv_op(p, msg, &fd, fd >= 0 ? 1 : 0, key, is_add);
}

/* Sends a message that may carry values, then wipes them from it. */
static int ctl_send_secret_op(struct proxy_sup *p, json_t *msg, int fd, const char *key,
                              bool is_add)
{
    int rc = ctl_send_op(p, msg, fd, key, is_add);
    secret_json_wipe(msg);
    return rc;
}

/* An entry's add message, with its secrets in (built at send time, wiped after). */
static void send_add(struct proxy_sup *p, const struct entry *e)
{
    if (!e->n_secrets) {
        ctl_sendv_op(p, e->add, e->fds, e->nfds, e->key, true);
        return;
    }
    json_t *msg = json_copy(e->add);
    json_t *arr = json_array();
    for (size_t i = 0; i < e->n_secrets; i++)
        json_array_append_new(arr, secret_binding_json(&e->secrets[i]));
    json_object_set_new(msg, "secrets", arr);
    ctl_sendv_op(p, msg, e->fds, e->nfds, e->key, true);
    secret_json_wipe(msg);
    json_decref(msg);
}

static void send_tls(struct proxy_sup *p)
{
    if (!p->ca_cert)
        return;
    json_t *msg =
        json_pack("{s:s,s:s,s:s}", "op", "tls", "ca_cert", p->ca_cert, "ca_key", p->ca_key);
    ctl_send_secret_op(p, msg, -1, "the proxy", false);
    json_decref(msg);
}

/* Everything netproxy must know of a spoke: its add (with its sockets and secrets), the
 * synthetic addresses it already handed out (in chunks: a message is at most 64 KiB),
 * its forward listeners. */
static void send_entry(struct proxy_sup *p, const struct entry *e)
{
    send_add(p, e);
    json_t *chunk = NULL;
    const char *name;
    json_t *ip;
    json_object_foreach(e->synthetic, name, ip)
    {
        if (!chunk)
            chunk = json_object();
        json_object_set(chunk, name, ip);
        if (json_object_size(chunk) == SYNTHETIC_CHUNK) {
            json_t *m =
                json_pack("{s:s,s:s,s:o}", "op", "synthetic", "spoke", e->key, "names", chunk);
            ctl_send_op(p, m, -1, e->key, false);
            json_decref(m);
            chunk = NULL;
        }
    }
    if (chunk) {
        json_t *m = json_pack("{s:s,s:s,s:o}", "op", "synthetic", "spoke", e->key, "names", chunk);
        ctl_send_op(p, m, -1, e->key, false);
        json_decref(m);
    }
    for (size_t i = 0; i < e->n_forwards; i++)
        ctl_send_op(p, e->forwards[i].msg, e->forwards[i].fd, e->key, true);
}

static struct entry *entry_find(struct proxy_sup *p, const char *key)
{
    for (size_t i = 0; i < p->n_entries; i++)
        if (strcmp(p->entries[i].key, key) == 0)
            return &p->entries[i];
    return NULL;
}

static void entry_clear(struct entry *e)
{
    free(e->key);
    json_decref(e->add);
    json_decref(e->synthetic);
    for (size_t i = 0; i < e->nfds; i++)
        close(e->fds[i]);
    for (size_t i = 0; i < e->n_forwards; i++) {
        json_decref(e->forwards[i].msg);
        close(e->forwards[i].fd);
    }
    free(e->forwards);
    for (size_t i = 0; i < e->n_secrets; i++)
        secret_binding_clear(&e->secrets[i]);
    free(e->secrets);
}

/* A note from netproxy, not a reply: a new synthetic address to keep. */
static bool is_span_id(const char *s)
{
    if (!s || strlen(s) != SPAN_ID_HEX)
        return false;
    for (const char *q = s; *q; q++)
        if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')))
            return false;
    return true;
}

/* A traced tunnel's span from netproxy (control_notify_span), checked as what it is:
 * a message of a process that handles hostile traffic. */
static void export_tunnel_span(struct proxy_sup *p, const json_t *msg)
{
    const char *tp = json_string_value(json_object_get(msg, "traceparent"));
    const char *span = json_string_value(json_object_get(msg, "span"));
    const char *name = json_string_value(json_object_get(msg, "name"));
    const char *spoke = json_string_value(json_object_get(msg, "spoke"));
    json_t *start = json_object_get(msg, "start"), *end = json_object_get(msg, "end");
    struct trace_ctx call;
    if (!p->otlp || !tp || !trace_begin(&call, tp) || !is_span_id(span) || !name ||
        strlen(name) > 300 || !spoke || strlen(spoke) > 130 || !json_is_integer(start) ||
        !json_is_integer(end) || json_integer_value(start) <= 0 ||
        json_integer_value(end) < json_integer_value(start))
        return;
    bool ok = json_is_true(json_object_get(msg, "ok"));
    /* trace_begin made call.parent_id the span the traceparent names: the call's. */
    struct otlp_span s = {.trace_id = call.trace_id,
                          .span_id = span,
                          .parent_id = call.parent_id,
                          .name = name,
                          .start_unix_ns = (uint64_t)json_integer_value(start),
                          .end_unix_ns = (uint64_t)json_integer_value(end),
                          .error = !ok,
                          .message = ok ? NULL : "refused, or ended by an error",
                          .app = spoke,
                          .caller = "netproxy"};
    otlp_span(p->otlp, &s);
}

static void on_event(struct proxy_sup *p, const json_t *msg)
{
    const char *ev = json_string_value(json_object_get(msg, "event"));
    if (ev && strcmp(ev, "span") == 0) {
        export_tunnel_span(p, msg);
        return;
    }
    const char *spoke = json_string_value(json_object_get(msg, "spoke"));
    const char *name = json_string_value(json_object_get(msg, "name"));
    json_t *ip = json_object_get(msg, "ip");
    if (!ev || strcmp(ev, "synthetic") != 0 || !spoke || !name || !json_is_string(ip))
        return;
    struct entry *e = entry_find(p, spoke);
    if (e && json_object_size(e->synthetic) < SYNTHETIC_MAX && strlen(name) <= 253)
        json_object_set(e->synthetic, name, ip);
}

static void on_ctl(evutil_socket_t fd, short what, void *arg);
static void on_exit_ev(evutil_socket_t fd, short what, void *arg);

/* netproxy serves every spoke: in a cgroup of its own with a memory ceiling, one
 * spoke's flood ends netproxy (which the hub restarts) rather than the host's memory.
 * Without cgroups it runs without one, said in the log and the audit. */
static void limit_memory(struct proxy_sup *p, pid_t pid)
{
    uint64_t mb = p->cfg->netproxy_memory_mb;
    if (!mb)
        return;
#ifdef HUB_HAVE_JAIL
    char name[64], err[512];
    snprintf(name, sizeof(name), "isolategpt-netproxy.%d", (int)getpid());
    char *dir = jail_cgroup_process(name, pid, mb, err, sizeof(err));
    if (dir) {
        if (!p->cg_dir)
            p->oom_seen = jail_cgroup_oom_kills(dir);
        free(p->cg_dir);
        p->cg_dir = dir;
        log_debug("netproxy in cgroup %s, memory limited to %" PRIu64 " MiB", dir, mb);
        return;
    }
#else
    char err[128];
    snprintf(err, sizeof(err), "this build has no nsjail-lite to make cgroups with");
#endif
    log_warnx("netproxy runs without its memory ceiling of %" PRIu64 " MiB: %s", mb, err);
    proxy_audit(p, "netproxy-memory-limit", "failure", err, -1);
}

static int spawn_proxy(struct proxy_sup *p, char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "netproxy control socketpair: %s", strerror(errno));
        return -1;
    }
    const struct hub_config *c = p->cfg;
    /* The refusal and connection budgets hub.json sets (the others: netproxy's own
     * defaults). */
    const struct {
        const char *flag;
        uint64_t value;
    } budgets[] = {{"--refusal-rate", c->netproxy_refusal_rate},
                   {"--refusal-burst", c->netproxy_refusal_burst},
                   {"--conn-rate", c->netproxy_conn_rate},
                   {"--conn-burst", c->netproxy_conn_burst}};
    enum { N_BUDGETS = sizeof(budgets) / sizeof(budgets[0]) };
    char budget_text[N_BUDGETS][24];
    size_t n = 0, cap = 16 + 2 * N_BUDGETS;
    for (char **r = c->netproxy_resolve; *r; r++)
        cap += 2;
    for (char **r = c->netproxy_allow_cidr; *r; r++)
        cap += 2;
    char **argv = xcalloc(cap + 1, sizeof(char *));
    argv[n++] = c->netproxy_bin;
    argv[n++] = "--control";
    argv[n++] = "3";
    argv[n++] = "--audit";
    argv[n++] = c->netproxy_audit;
    /* Its records chained and signed with a key of its own (lib/auditchain.h), which
     * it reads before dropping privileges: a netproxy taken over cannot sign as the hub. */
    char *audit_key = config_netproxy_key_path(c);
    argv[n++] = "--audit-key";
    argv[n++] = audit_key;
    /* isolate.first_seen on its connects, from a store of its own beside the key. */
    char *first_seen = config_netproxy_first_seen_path(c);
    argv[n++] = "--first-seen";
    argv[n++] = first_seen;
    char workers[24];
    snprintf(workers, sizeof(workers), "%" PRIu64, c->netproxy_workers);
    argv[n++] = "--workers";
    argv[n++] = workers;
    for (size_t b = 0; b < N_BUDGETS; b++) {
        if (budgets[b].value == HUB_NETPROXY_UNSET)
            continue;
        snprintf(budget_text[b], sizeof(budget_text[b]), "%" PRIu64, budgets[b].value);
        argv[n++] = (char *)budgets[b].flag;
        argv[n++] = budget_text[b];
    }
    for (char **r = c->netproxy_resolve; *r; r++) {
        argv[n++] = "--resolve";
        argv[n++] = *r;
    }
    for (char **r = c->netproxy_allow_cidr; *r; r++) {
        argv[n++] = "--upstream-allow-cidr";
        argv[n++] = *r;
    }
    if (c->netproxy_upstream_ca) {
        argv[n++] = "--upstream-ca";
        argv[n++] = c->netproxy_upstream_ca;
    }
    if (p->debug)
        argv[n++] = "--debug";
    argv[n] = NULL;
    /* netproxy needs no secret and none of ours: an environment of its own. */
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, p->log_path, O_WRONLY | O_CREAT | O_APPEND, 0640);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGHUP);
    posix_spawnattr_setsigdefault(&at, &dfl);
    /* Its own process group: a ^C at the terminal reaches the hub, which then ends
     * netproxy in order, instead of killing both at once. */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawn(&pid, c->netproxy_bin, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(argv);
    free(audit_key);
    free(first_seen);
    close(sv[1]);
    if (rc != 0) {
        snprintf(err, errlen, "starting %s: %s", c->netproxy_bin, strerror(rc));
        close(sv[0]);
        return -1;
    }
    p->pid = pid;
    limit_memory(p, pid);
    /* Without a pidfd (valgrind, old kernels) the closed control socket tells. */
    p->pidfd = hub_pidfd_open(pid);
    p->ctl = sv[0];
    set_nonblock(p->ctl, true);
    if (p->pidfd >= 0) {
        p->ev_exit = event_new(p->base, p->pidfd, EV_READ, on_exit_ev, p);
        event_add(p->ev_exit, NULL);
    }
    p->ev_ctl = event_new(p->base, p->ctl, EV_READ | EV_PERSIST, on_ctl, p);
    event_add(p->ev_ctl, NULL);
    proxy_audit(p, "netproxy-start", "success", NULL, -1);
    log_debug("netproxy started (pid %d)", (int)pid);
    /* The CA first, then every spoke's listener (again, after a restart). */
    send_tls(p);
    for (size_t i = 0; i < p->n_entries; i++)
        send_entry(p, &p->entries[i]);
    return 0;
}

static void teardown_child(struct proxy_sup *p, int *status_out)
{
    if (p->ev_exit)
        event_free(p->ev_exit);
    if (p->ev_ctl)
        event_free(p->ev_ctl);
    p->ev_exit = p->ev_ctl = NULL;
    int status = -1;
    if (p->pid > 0) {
        int st;
        if (waitpid(p->pid, &st, 0) == p->pid)
            status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (p->pidfd >= 0)
        close(p->pidfd);
    if (p->ctl >= 0)
        close(p->ctl);
    p->pidfd = p->ctl = -1;
    p->pid = -1;
    ops_clear(p);
    if (status_out)
        *status_out = status;
}

static void on_restart(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy_sup *p = arg;
    char err[256];
    if (spawn_proxy(p, err, sizeof(err)) < 0) {
        log_warnx("%s", err);
        proxy_audit(p, "netproxy-start", "failure", err, -1);
        p->given_up = true;
        p->on_error(p->ud, NULL, err);
    }
}

static void on_exit_ev(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy_sup *p = arg;
    pid_t pid = p->pid;
    int status;
    teardown_child(p, &status);
    p->pid = pid; /* for the audit record */
    char why[200];
    snprintf(why, sizeof(why), "netproxy exited unexpectedly");
#ifdef HUB_HAVE_JAIL
    uint64_t ooms = p->cg_dir ? jail_cgroup_oom_kills(p->cg_dir) : 0;
    if (ooms > p->oom_seen)
        snprintf(why, sizeof(why),
                 "netproxy reached its memory ceiling of %" PRIu64
                 " MiB (hub.json netproxy.memory_mb) and the OOM killer ended it",
                 p->cfg->netproxy_memory_mb);
    p->oom_seen = ooms;
#endif
    proxy_audit(p, "netproxy-exit", "failure", why, status);
    p->pid = -1;
    uint64_t now = now_mono_ns();
    if (now - p->window_start > RESTART_WINDOW_NS) {
        p->window_start = now;
        p->window_restarts = 0;
    }
    if (++p->window_restarts > RESTART_MAX) {
        char msg[128];
        snprintf(msg, sizeof(msg), "netproxy died %d times within a minute; not restarting",
                 RESTART_MAX);
        log_warnx("%s", msg);
        proxy_audit(p, "netproxy-restart", "failure", msg, -1);
        p->given_up = true;
        p->on_error(p->ud, NULL, msg);
        return;
    }
    p->restarts++;
    unsigned delay = p->backoff_ms;
    p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : 50;
    if (p->backoff_ms > BACKOFF_MAX_MS)
        p->backoff_ms = BACKOFF_MAX_MS;
    log_warnx("netproxy exited (status %d); restarting in %u ms", status, delay);
    proxy_audit(p, "netproxy-restart", "success", NULL, -1);
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    evtimer_add(p->ev_restart, &tv);
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy_sup *p = arg;
    for (;;) {
        json_t *msg = NULL;
        int pfd = -1;
        int rc = ctl_recv(p->ctl, &msg, &pfd);
        if (rc < 0 && errno == EAGAIN)
            return;
        if (pfd >= 0)
            close(pfd); /* the proxy never sends descriptors */
        if (rc <= 0) {
            /* Closed or garbled: the exit event (or the kill) restarts it. */
            if (p->ev_ctl)
                event_del(p->ev_ctl);
            kill_proxy(p, rc == 0 ? "closed its control socket" : "sent a bad control message");
            if (p->pidfd < 0)
                on_exit_ev(-1, 0, p); /* killed above: the blocking reap is short */
            return;
        }
        if (json_object_get(msg, "event")) {
            on_event(p, msg);
            json_decref(msg);
            continue;
        }
        if (p->n_ops == 0) {
            json_decref(msg);
            kill_proxy(p, "sent an unsolicited control message");
            return;
        }
        struct op op = p->ops[0];
        memmove(p->ops, p->ops + 1, (p->n_ops - 1) * sizeof(*p->ops));
        p->n_ops--;
        bool ok = json_is_true(json_object_get(msg, "ok"));
        if (!op.key) {
            p->ping_outstanding = false;
            /* Healthy again: a later death starts the back-off from the bottom. */
            p->backoff_ms = 0;
        } else if (!ok) {
            const char *why = json_string_value(json_object_get(msg, "error"));
            char text[300];
            snprintf(text, sizeof(text), "netproxy refused %s for %s: %s", op.what, op.key,
                     why ? why : "no reason");
            log_warnx("%s", text);
            if (op.is_add)
                p->on_error(p->ud, op.key, text);
        }
        free(op.key);
        json_decref(msg);
    }
}

static void on_ping(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy_sup *p = arg;
    if (p->pid <= 0)
        return;
    if (p->ping_outstanding) {
        kill_proxy(p, "did not answer a ping");
        return;
    }
    json_t *ping = json_pack("{s:s}", "op", "ping");
    if (ctl_send_op(p, ping, -1, NULL, false) == 0)
        p->ping_outstanding = true;
    json_decref(ping);
}

struct proxy_sup *proxy_sup_new(struct event_base *base, struct audit *audit,
                                const struct hub_config *cfg, const char *log_path, bool debug,
                                proxy_error_fn on_error, void *ud, char *err, size_t errlen)
{
    struct proxy_sup *p = xcalloc(1, sizeof(*p));
    p->base = base;
    p->audit = audit;
    p->cfg = cfg;
    p->log_path = xstrdup(log_path);
    p->debug = debug;
    p->on_error = on_error;
    p->ud = ud;
    p->pid = p->pidfd = p->ctl = -1;
    p->window_start = now_mono_ns();
    p->ev_restart = evtimer_new(base, on_restart, p);
    p->ev_ping = event_new(base, -1, EV_PERSIST, on_ping, p);
    if (spawn_proxy(p, err, errlen) < 0) {
        proxy_sup_free(p);
        return NULL;
    }
    uint64_t ms = cfg->netproxy_ping_ms;
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    event_add(p->ev_ping, &tv);
    return p;
}

void proxy_sup_free(struct proxy_sup *p)
{
    if (!p)
        return;
    if (p->pid > 0) {
        kill(p->pid, SIGTERM);
        /* A short grace period for it to write its close records, then no more. */
        for (int i = 0; i < 100; i++) {
            if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
                p->pid = -1;
                break;
            }
            usleep(10000);
        }
        if (p->pid > 0)
            kill(p->pid, SIGKILL);
    }
    teardown_child(p, NULL);
#ifdef HUB_HAVE_JAIL
    if (p->cg_dir && jail_cgroup_remove(p->cg_dir) < 0)
        log_warnx("removing netproxy's cgroup %s: %s", p->cg_dir, strerror(errno));
#endif
    free(p->cg_dir);
    for (size_t i = 0; i < p->n_entries; i++)
        entry_clear(&p->entries[i]);
    free(p->entries);
    free(p->ca_cert);
    secret_free(p->ca_key);
    free(p->ops);
    if (p->ev_restart)
        event_free(p->ev_restart);
    if (p->ev_ping)
        event_free(p->ev_ping);
    free(p->log_path);
    free(p);
}

static json_t *string_array(char *const *v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

void proxy_set_ca(struct proxy_sup *p, const char *cert_pem, const char *key_pem)
{
    if (p->ca_cert)
        return;
    p->ca_cert = xstrdup(cert_pem);
    p->ca_key = secret_strdup(key_pem);
    send_tls(p);
}

void proxy_secret_rotate(struct proxy_sup *p, const struct secret_meta *meta, const char *value,
                         size_t len)
{
    for (size_t i = 0; i < p->n_entries; i++) {
        struct entry *e = &p->entries[i];
        for (size_t k = 0; k < e->n_secrets; k++) {
            if (strcmp(e->secrets[k].meta.name, meta->name) != 0)
                continue;
            secret_binding_rotate(&e->secrets[k], meta, value, len);
            json_t *msg = json_pack("{s:s,s:s,s:o}", "op", "secret", "spoke", e->key, "secret",
                                    secret_binding_json(&e->secrets[k]));
            ctl_send_secret_op(p, msg, -1, e->key, false);
            json_decref(msg);
        }
    }
}

int proxy_add_spoke(struct proxy_sup *p, const struct proxy_spoke *ps)
{
    if (p->given_up) {
        errno = ECONNREFUSED;
        return -1;
    }
    struct entry e = {.key = NULL, .fds = {-1, -1}};
    e.fds[e.nfds++] = fcntl(ps->fd, F_DUPFD_CLOEXEC, 3);
    if (ps->dns_fd >= 0)
        e.fds[e.nfds++] = fcntl(ps->dns_fd, F_DUPFD_CLOEXEC, 3);
    if (e.fds[0] < 0 || (e.nfds > 1 && e.fds[1] < 0)) {
        int saved = errno;
        for (size_t i = 0; i < e.nfds; i++)
            if (e.fds[i] >= 0)
                close(e.fds[i]);
        errno = saved;
        return -1;
    }
    json_t *jports = json_array();
    for (size_t i = 0; i < ps->n_ports; i++)
        json_array_append_new(jports, json_integer(ps->ports[i]));
    e.add = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s}", "op", "add", "spoke", ps->key, "user", ps->user,
                      "allow", string_array(ps->allow), "ports", jports, "listen", ps->listen);
    if (ps->tcp && *ps->tcp)
        json_object_set_new(e.add, "tcp", string_array(ps->tcp));
    if (ps->dns_listen)
        json_object_set_new(e.add, "dns_listen", json_string(ps->dns_listen));
    e.key = xstrdup(ps->key);
    e.synthetic = json_object();
    for (size_t i = 0; ps->sec && i < ps->sec->n; i++) {
        if (!ps->sec->b[i].standin)
            continue; /* env mode: nothing for netproxy */
        e.secrets = xrealloc(e.secrets, (e.n_secrets + 1) * sizeof(*e.secrets));
        secret_binding_copy(&e.secrets[e.n_secrets++], &ps->sec->b[i]);
    }
    p->entries = xrealloc(p->entries, (p->n_entries + 1) * sizeof(*p->entries));
    p->entries[p->n_entries++] = e;
    send_add(p, &p->entries[p->n_entries - 1]);
    return 0;
}

int proxy_add(struct proxy_sup *p, const char *key, const char *user, char *const *allow,
              const uint16_t *ports, size_t n_ports, const char *listen, int fd,
              const struct spoke_secrets *sec)
{
    struct proxy_spoke ps = {.sec = sec,
                             .key = key,
                             .user = user,
                             .allow = allow,
                             .ports = ports,
                             .n_ports = n_ports,
                             .listen = listen,
                             .fd = fd,
                             .dns_fd = -1};
    return proxy_add_spoke(p, &ps);
}

int proxy_forward(struct proxy_sup *p, const char *key, const char *to, int fd)
{
    struct entry *e = entry_find(p, key);
    if (!e) {
        close(fd);
        errno = ENOENT;
        return -1;
    }
    json_t *msg = json_pack("{s:s,s:s,s:s}", "op", "forward", "spoke", key, "to", to);
    e->forwards = xrealloc(e->forwards, (e->n_forwards + 1) * sizeof(*e->forwards));
    e->forwards[e->n_forwards++] = (struct forward){.msg = msg, .fd = fd};
    ctl_send_op(p, msg, fd, key, true);
    return 0;
}

void proxy_remove(struct proxy_sup *p, const char *key)
{
    struct entry *e = entry_find(p, key);
    if (!e)
        return;
    json_t *rm = json_pack("{s:s,s:s}", "op", "remove", "spoke", key);
    ctl_send_op(p, rm, -1, key, false);
    json_decref(rm);
    entry_clear(e);
    *e = p->entries[--p->n_entries];
}

void proxy_trace(struct proxy_sup *p, const char *key, const char *traceparent)
{
    if (!entry_find(p, key))
        return;
    json_t *m = traceparent ? json_pack("{s:s,s:s,s:s,s:b}", "op", "trace", "spoke", key,
                                        "traceparent", traceparent, "spans", p->otlp != NULL)
                            : json_pack("{s:s,s:s}", "op", "trace", "spoke", key);
    ctl_send_op(p, m, -1, key, false);
    json_decref(m);
}

void proxy_set_otlp(struct proxy_sup *p, struct otlp *o)
{
    p->otlp = o;
}

bool proxy_alive(const struct proxy_sup *p)
{
    return p->pid > 0;
}

pid_t proxy_pid(const struct proxy_sup *p)
{
    return p->pid;
}

unsigned proxy_restarts(const struct proxy_sup *p)
{
    return p->restarts;
}

size_t proxy_entries(const struct proxy_sup *p)
{
    return p->n_entries;
}

size_t proxy_pending(const struct proxy_sup *p)
{
    return p->n_ops;
}
