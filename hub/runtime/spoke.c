/* Spoke lifecycle: lazy start on the first call (or a prestart), the MCP connection's
 * bytes in and out, calls in flight up to the spoke's in-flight limit (inflight.h:
 * sized to its work, at most max_inflight) with each session's calls waiting in a
 * line of their own, kill on misbehaviour, restart on the next call after a crash,
 * stop after idle_s without a call.
 *
 * Fairness: a spoke's window (its limit now) is shared between the sessions whose calls
 * it serves (call_opts.session; nested calls count for the session of their chain).
 * A freed place goes to the next session in round-robin order that holds fewer than
 * its share: the window divided by the sessions with calls waiting or in flight
 * (rounded up), and never more than half the window, so one session cannot fill it
 * and a session that comes later finds room at once. With max_inflight 1 the calls go
 * one at a time, each session's in the order they came. */
#include "config/config.h"
#include "inflight.h"
#include "net/net.h"
#include "held.h"
#include "hostlock.h"
#include "internal.h"
#include "log.h"
#include "proc.h"
#include "spoke_env.h"
#include "util.h"
#include "oauth.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Frames handled per wake-up: a chatty spoke yields the loop to the others. */
#define FRAMES_PER_WAKEUP 64
/* Output the hub holds for a spoke that does not read: a few frames, no more. */
#define OUT_MAX_FRAMES 4
/* Between EOF on the socket and giving up on learning the exit status (a process the
 * cgroup's OOM killer ended frees its memory first: on a busy host that took more than
 * 200 ms, and the caller learnt "closed its connection" instead of the kill). */
#define EOF_GRACE_MS 1000
/* /30s tried per start before giving up (each try is a lock file and a bind). */
#define VETH_TRIES 1024

static bool same_opt(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

struct spoke *spoke_get(struct hub *h, const char *user, const char *app, const char *instance,
                        bool create)
{
    for (size_t i = 0; i < h->n_spokes; i++) {
        struct spoke *sp = h->spokes[i];
        if (strcmp(sp->m->name, app) == 0 && strcmp(sp->user, user) == 0 &&
            same_opt(sp->instance, instance))
            return sp;
    }
    if (!create || h->n_spokes >= h->cfg->max_spokes)
        return NULL;
    const struct manifest *m = manifest_find(h->ms, app);
    if (!m)
        return NULL;
    struct spoke *sp = xcalloc(1, sizeof(*sp));
    sp->hub = h;
    sp->m = m;
    sp->user = xstrdup(user);
    sp->instance = instance ? xstrdup(instance) : NULL;
    sp->sock = -1;
    sp->listen_fd = -1;
    sp->veth_slot = sp->veth_lock = -1;
    sp->host_id_lock = -1;
    TAILQ_INIT(&sp->groups);
    TAILQ_INIT(&sp->inflight);
    sp->window = m->max_inflight ? m->max_inflight : h->cfg->max_inflight;
    if (sp->window == 0)
        sp->window = 1;
    inflight_init(&sp->limit, &h->cfg->inflight, sp->window);
    h->spokes = xrealloc(h->spokes, (h->n_spokes + 1) * sizeof(*h->spokes));
    h->spokes[h->n_spokes++] = sp;
    return sp;
}

/* ---- output ---- */

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct spoke *sp = arg;
    if (evbuffer_write(sp->out, fd) < 0 && errno != EAGAIN && errno != EINTR) {
        /* The spoke closed its end; the read side reports the EOF. */
        evbuffer_drain(sp->out, evbuffer_get_length(sp->out));
    }
    if (evbuffer_get_length(sp->out) == 0)
        event_del(sp->ev_write);
}

int spoke_send(struct spoke *sp, json_t *msg)
{
    size_t len;
    char *line = jrpc_dump_line(msg, &len);
    if (!line || sp->sock < 0) {
        free(line);
        return -1;
    }
    size_t off = 0;
    if (evbuffer_get_length(sp->out) == 0) {
        ssize_t n = write(sp->sock, line, len);
        if (n > 0)
            off = (size_t)n;
    }
    if (off < len) {
        evbuffer_add(sp->out, line + off, len - off);
        event_add(sp->ev_write, NULL);
    }
    free(line);
    if (evbuffer_get_length(sp->out) > OUT_MAX_FRAMES * sp->hub->cfg->max_frame) {
        spoke_kill(sp, "not-reading", false, "spoke %s does not read its input", sp->m->name);
        return -1;
    }
    return 0;
}

/* ---- input ---- */

static void on_eof_grace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct spoke *sp = arg;
    if (sp->proc && sp->proc->starting) {
        /* The jail closed the socket during its setup: it failed, and its report
         * (the message and code the caller gets) is on its way; the start timeout
         * bounds the wait. */
        struct timeval tv = {.tv_sec = 0, .tv_usec = EOF_GRACE_MS * 1000};
        evtimer_add(sp->ev_eof, &tv);
        return;
    }
    spoke_kill(sp, "closed", false, "spoke %s closed its connection", sp->m->name);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct spoke *sp = arg;
    uint64_t gen = sp->gen;
    ssize_t n = lr_fill(&sp->lr, fd);
    /* A reset is the peer going away with unread data: an end like EOF. */
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        /* The spoke is going: wait briefly for its exit status so the caller learns
         * why (exit code, seccomp, rlimit), then end it regardless. */
        event_del(sp->ev_read);
        struct timeval tv = {.tv_sec = 0, .tv_usec = EOF_GRACE_MS * 1000};
        evtimer_add(sp->ev_eof, &tv);
        return;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR && errno != ENOBUFS) {
        spoke_kill(sp, "closed", false, "reading from spoke %s: %s", sp->m->name, strerror(errno));
        return;
    }
    for (int i = 0; i < FRAMES_PER_WAKEUP; i++) {
        const char *line;
        size_t len;
        enum lr_status st = lr_next(&sp->lr, &line, &len);
        if (st == LR_NEED_MORE)
            return;
        if (st == LR_TOO_LONG) {
            spoke_kill(sp, "oversized-frame", false, "spoke %s sent a frame longer than %zu bytes",
                       sp->m->name, sp->hub->cfg->max_frame);
            return;
        }
        mcp_on_frame(sp, line, len);
        if (sp->gen != gen || sp->state == SP_STOPPED)
            return; /* killed while handling the frame */
    }
    /* More complete lines may be buffered with nothing left to read on the socket:
     * come back after the other spokes have had their turn. */
    event_active(sp->ev_read, EV_READ, 0);
}

/* hub.json's start_timeout_ms, or the manifest's limits.start_s when longer (a server
 * that loads much, or installs itself, on its first start). */
static uint64_t start_timeout_ms(const struct spoke *sp)
{
    uint64_t ms = sp->hub->cfg->start_timeout_ms;
    return sp->m->limits.start_s * 1000 > ms ? sp->m->limits.start_s * 1000 : ms;
}

static void on_start_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct spoke *sp = arg;
    spoke_kill(sp, "start-timeout", true, "spoke %s did not finish initializing within %llu ms",
               sp->m->name, (unsigned long long)start_timeout_ms(sp));
}

/* ---- start ---- */

/* The first call waiting in any session's line; NULL. */
static struct call *first_waiting(const struct spoke *sp)
{
    struct fair_group *g;
    TAILQ_FOREACH(g, &sp->groups, link)
    {
        if (!TAILQ_EMPTY(&g->waiting))
            return TAILQ_FIRST(&g->waiting);
    }
    return NULL;
}

static void fail_queue(struct spoke *sp, int code, const char *layer, const char *msg)
{
    struct call *c;
    while ((c = first_waiting(sp)) != NULL)
        call_fail(c, code, layer, "%s", msg); /* takes it out of its line */
}

static void release_network(struct spoke *sp)
{
    struct hub *h = sp->hub;
    if (sp->proxy_key[0] && h->proxy)
        proxy_remove(h->proxy, sp->proxy_key);
    sp->proxy_key[0] = '\0';
    if (sp->listen_fd >= 0)
        close(sp->listen_fd);
    sp->listen_fd = -1;
}

/* The data directory, its stable id's lock and the wait for it, when no jail took
 * them over. */
static void release_data(struct spoke *sp)
{
    if (sp->host_id_lock >= 0)
        close(sp->host_id_lock);
    sp->host_id_lock = -1;
    if (sp->ev_data_wait)
        event_free(sp->ev_data_wait);
    sp->ev_data_wait = NULL;
    sp->data_wait_deadline = 0;
    free(sp->data_dir);
    sp->data_dir = NULL;
}

static void start_failed(struct spoke *sp, int code, const char *msg)
{
    json_t *rec = haudit_new("spoke-start", "failure");
    haudit_spoke(rec, sp);
    audit_set_str(rec, "event.reason", msg);
    audit_set_int(rec, "process.exit_code", code);
    haudit_note(sp->hub, rec);
    log_warnx("%s", msg);
    release_network(sp);
    if (sp->veth_slot >= 0)
        slots_put(sp->hub->veth_slots, sp->veth_slot);
    if (sp->veth_lock >= 0)
        close(sp->veth_lock);
    sp->veth_slot = sp->veth_lock = -1;
    release_data(sp);
    sp->state = SP_STOPPED;
    fail_queue(sp, HUB_ERR_SPOKE, "spoke", msg);
}

/* Picks a /30 and makes its listener in the gateway. The /30s are a host-wide pool:
 * one that another hub holds (its lock, lib/hostlock.h) is skipped, so hubs of one
 * configuration never hand out the same addresses; so is one whose address is still
 * held here (the proxy has not closed an old listener yet). */
static int setup_network(struct spoke *sp, struct veth_addrs *va, const struct spoke_secrets *sec,
                         char *err, size_t errlen)
{
    struct hub *h = sp->hub;
    if (hub_network_up(h, err, errlen) < 0)
        return -1;
    size_t tries = slots_free_count(h->veth_slots);
    bool others = false;
    for (size_t attempt = 0; attempt < tries && attempt < VETH_TRIES; attempt++) {
        int slot = slots_take(h->veth_slots);
        if (slot < 0)
            break;
        veth_pool_addrs(&h->cfg->veth_pool, (size_t)slot, va);
        char name[48];
        snprintf(name, sizeof(name), "veth-%s.lock", va->host_ip);
        int lock = hostlock_try(h->lock_dir, HOSTLOCK_DIR, name, err, errlen);
        if (lock < 0) {
            slots_put(h->veth_slots, slot);
            if (lock == -2) {
                others = true;
                continue;
            }
            return -1;
        }
        int fd = gateway_listen(h->gw, va->host_ip, h->cfg->proxy_port, err, errlen);
        if (fd < 0) {
            close(lock);
            slots_put(h->veth_slots, slot);
            if (errno == EADDRINUSE)
                continue;
            return -1;
        }
        sp->veth_slot = slot;
        sp->veth_lock = lock;
        sp->listen_fd = fd;
        /* <prefix><hub pid>-<slot> in hex: unique per hub and at most 15 bytes. */
        snprintf(sp->veth_ifname, sizeof(sp->veth_ifname), "%s%x-%x", h->cfg->veth_prefix,
                 (unsigned)getpid(), (unsigned)slot);
        str_copy(sp->host_ip, va->host_ip, sizeof(sp->host_ip));
        snprintf(sp->proxy_key, sizeof(sp->proxy_key), "%s-%.8s", sp->m->name, sp->id);
        struct net_spoke ns = {.key = sp->proxy_key,
                               .user = sp->user,
                               .host_ip = sp->host_ip,
                               .m = sp->m,
                               .proxy_port = h->cfg->proxy_port};
        if (net_spoke_register(h->proxy, h->gw, &ns, fd, sec, err, errlen) < 0) {
            sp->proxy_key[0] = '\0';
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "no free veth address in the pool (all tried are in use%s)",
             others ? ", also by other hubs" : "");
    return -1;
}

static void spoke_spawn(struct spoke *sp);
static void begin_connection(struct spoke *sp);

static void on_data_wait(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    spoke_spawn(arg);
}

/* Namespace mode with a host /data: the (user, app)'s stable host id and its lock,
 * which a spoke of another hub holds while it runs: then the start waits, polling,
 * until the start timeout. 1 when taken (or not needed), 0 while waiting, -1 after
 * failing the start. */
static int take_data(struct spoke *sp)
{
    struct hub *h = sp->hub;
    if (h->cfg->isolation != ISO_NAMESPACE || sp->data_tmpfs_mb || !hostid_stable(h->cfg))
        return 1;
    char err[600];
    char *key = sp->instance ? xasprintf("%s/%s.%s", sp->user, sp->m->name, sp->instance)
                             : xasprintf("%s/%s", sp->user, sp->m->name);
    int rc = hostid_lookup(h->cfg, key, &sp->host_id, err, sizeof(err));
    free(key);
    if (rc < 0) {
        start_failed(sp, 125, err);
        return -1;
    }
    int fd = proc_host_id_lock(sp->host_id, err, sizeof(err));
    if (fd >= 0) {
        sp->host_id_lock = fd;
        if (sp->ev_data_wait)
            event_free(sp->ev_data_wait);
        sp->ev_data_wait = NULL;
        return 1;
    }
    if (fd == -1) {
        start_failed(sp, 125, err);
        return -1;
    }
    uint64_t now = now_mono_ns();
    if (!sp->data_wait_deadline) {
        sp->data_wait_deadline = now + h->cfg->start_timeout_ms * 1000000ULL;
        /* A hold comes right after the instance before it ended: its jail lets go of
         * the lock as it exits, a moment later. Not another hub's. */
        if (sp->state != SP_HELD)
            log_info("the data of %s for %s is in use by another hub's spoke (host id %u): waiting",
                     sp->m->name, sp->user, sp->host_id);
    } else if (now >= sp->data_wait_deadline) {
        char msg[700];
        snprintf(msg, sizeof(msg),
                 "spoke %s could not start: its data directory %s is in use by a spoke of "
                 "another hub (host id %u) for more than %llu ms; clients of one host should "
                 "share one hub (hub serve --stdio attaches to a running hub serve)",
                 sp->m->name, sp->data_dir, sp->host_id,
                 (unsigned long long)h->cfg->start_timeout_ms);
        start_failed(sp, 125, msg);
        return -1;
    }
    if (!sp->ev_data_wait)
        sp->ev_data_wait = evtimer_new(h->base, on_data_wait, sp);
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100 * 1000};
    evtimer_add(sp->ev_data_wait, &tv);
    return 0;
}

/* Makes the spoke's process: its host id, /data, veth and proxy listener, socket and
 * jail (whose setup goes on off the loop), then sends initialize. */
static void spoke_spawn(struct spoke *sp)
{
    struct hub *h = sp->hub;
    enum isolation mode = h->cfg->isolation;
    char err[512] = "";
    int code = 125;
    if (h->quit) {
        start_failed(sp, 125, "the hub is shutting down");
        return;
    }
    /* Said where this app is started, once: not by every command that loads manifests. */
    if (!sp->keylike_said) {
        sp->keylike_said = true;
        char *keys = manifest_keylike_env(sp->m);
        if (keys) {
            keys[strlen(keys) - 1] = '\0';
            log_warnx("%s", keys);
            free(keys);
        }
    }
    bool ns = mode == ISO_NAMESPACE;
    bool hold = sp->state == SP_HELD; /* a held node (held.h): no go yet, no initialize */
    const char *loader = NULL;
    if (hold && !(loader = held_loader_path(h, err, sizeof(err)))) {
        start_failed(sp, 125, err);
        return;
    }
    free(sp->data_dir);
    sp->data_dir = NULL;
    if (datadir_prepare(h->cfg->data_root, sp->user, sp->m->name, sp->instance, &sp->data_dir, err,
                        sizeof(err)) < 0) {
        start_failed(sp, 125, err);
        return;
    }
    if (take_data(sp) <= 0)
        return;
    struct veth_addrs va;
    bool net = ns && (sp->m->n_allow > 0 || sp->m->n_tcp > 0);
    char proxy_url[64] = "";
    struct spoke_secrets sec;
    oauth_before_start(h->cfg, h->secrets, sp->m); /* a remote's expired token refreshed */
    if (spoke_secrets_resolve(h->secrets, sp->m, ns, &sec, err, sizeof(err)) < 0) {
        start_failed(sp, 125, err);
        return;
    }
    /* A value handed out on purpose (--secret-plain) is on record at every start. */
    for (size_t i = 0; i < sec.n; i++)
        if (sec.b[i].plain) {
            json_t *rec = haudit_new("secret-plain", "success");
            haudit_spoke(rec, sp);
            audit_set_str(rec, "isolate.secret.name", sec.b[i].meta.name);
            audit_set_str(rec, "message",
                          "the manifest asks for the value itself (plain): the spoke holds it");
            haudit_note(h, rec);
        }
    /* Stand-ins: netproxy opens TLS for their hosts with the hub's CA, which the jail
     * trusts. The CA reaches netproxy before the spoke's listener does. */
    bool inject = net && spoke_secrets_injected(&sec);
    if (inject && hub_ca_up(h, err, sizeof(err)) < 0) {
        spoke_secrets_free(&sec);
        start_failed(sp, 125, err);
        return;
    }
    if (net) {
        if (setup_network(sp, &va, &sec, err, sizeof(err)) < 0) {
            spoke_secrets_free(&sec);
            start_failed(sp, 125, err);
            return;
        }
        snprintf(proxy_url, sizeof(proxy_url), "http://%s:%u", va.host_ip, h->cfg->proxy_port);
    }
    struct spoke_env_spec es = {
        .m = sp->m,
        .spoke_id = sp->id,
        .data_dir = ns ? "/data" : sp->data_dir,
        .https_proxy = net ? proxy_url : NULL,
        .secret_name = h->cfg->llm_key_env,
        .secret_env = sec.env,
        .trust = inject ? &h->ca : NULL,
    };
    char **env = spoke_env_build(&es);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        spoke_env_free(env);
        spoke_secrets_free(&sec);
        snprintf(err, sizeof(err), "socketpair: %s", strerror(errno));
        start_failed(sp, 125, err);
        return;
    }
    free(sp->log_path);
    sp->log_path = hub_spoke_log_path(h->cfg, sp->user, sp->m->name, sp->instance);
    const char *log_path = sp->log_path;
    struct spawn_spec ss = {
        .mode = mode,
        .m = sp->m,
        .spoke_id = sp->id,
        .user = sp->user,
        .envp = env,
        .sock = sv[1],
        .data_dir = sp->data_dir,
        .host_id = sp->host_id_lock >= 0 ? sp->host_id : 0,
        .host_id_lock = sp->host_id_lock,
        .data_tmpfs_mb = sp->data_tmpfs_mb,
        .log_path = log_path,
        .veth = net ? &va : NULL,
        .veth_ifname = net ? sp->veth_ifname : NULL,
        .gateway_fd = net ? gateway_netns_fd(h->gw) : -1,
        .trust = inject ? &h->ca : NULL,
        .held_loader = loader,
    };
    struct proc *p = proc_spawn(h, &ss, &code, err, sizeof(err));
    spoke_env_free(env);
    close(sv[1]);
    /* The jail holds its own copy of the id's lock from now on (or failed). */
    if (sp->host_id_lock >= 0)
        close(sp->host_id_lock);
    sp->host_id_lock = -1;
    sp->data_wait_deadline = 0;
    if (!p) {
        spoke_secrets_free(&sec);
        close(sv[0]);
        char msg[700];
        snprintf(msg, sizeof(msg), "spoke %s could not start: %s", sp->m->name, err);
        start_failed(sp, code, msg);
        return;
    }
    /* The slots now belong to the process: handed back when it is reaped. So do its
     * secrets, registered for redaction as long as it may still write. */
    p->secrets = sec;
    p->owner = sp;
    p->veth_slot = sp->veth_slot;
    p->veth_lock = sp->veth_lock;
    sp->veth_slot = sp->veth_lock = -1;
    sp->proc = p;
    sp->sock = sv[0];
    set_nonblock(sp->sock, true);
    lr_init(&sp->lr, h->cfg->max_frame);
    sp->out = evbuffer_new();
    sp->ev_read = event_new(h->base, sp->sock, EV_READ | EV_PERSIST, on_read, sp);
    sp->ev_write = event_new(h->base, sp->sock, EV_WRITE | EV_PERSIST, on_write, sp);
    sp->ev_start = evtimer_new(h->base, on_start_timeout, sp);
    sp->ev_eof = evtimer_new(h->base, on_eof_grace, sp);
    event_add(sp->ev_read, NULL);
    sp->next_id = 1;
    if (hold) {
        json_t *rec = haudit_new("spoke-hold", "success");
        haudit_spoke(rec, sp);
        audit_set_int(rec, "process.pid", p->pid);
        audit_set_str(rec, "message",
                      "held for the next call: jail made, node booting, no "
                      "code of the server loaded");
        haudit_note(h, rec);
        log_debug("spoke %s (%s) held, pid %d", sp->m->name, sp->id, (int)p->pid);
        return;
    }
    begin_connection(sp);
}

/* The start timer, then initialize: the spoke's MCP life begins. */
static void begin_connection(struct spoke *sp)
{
    uint64_t ms = start_timeout_ms(sp);
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(sp->ev_start, &tv);
    log_debug("spoke %s (%s) %s, pid %d", sp->m->name, sp->id,
              sp->warm_start ? "taken from its held node" : "started", (int)sp->proc->pid);
    mcp_begin(sp);
}

/* The start queue: one spawn per turn of the loop. A spawn prepares the jail and forks
 * its monitor on the loop (a few ms, more when many jails set up at once); a burst of
 * new spokes (sessions asked for at once) spawned back to back would hold every
 * running spoke's traffic until the last one. A zero timeout runs after the I/O that
 * is ready, so those callbacks get their turn between two spawns. */
static void arm_start_queue(struct hub *h);

static void on_start_queue(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hub *h = arg;
    struct spoke *sp = TAILQ_FIRST(&h->start_queue);
    if (!sp)
        return;
    TAILQ_REMOVE(&h->start_queue, sp, start_link);
    sp->start_queued = false;
    if (!TAILQ_EMPTY(&h->start_queue))
        arm_start_queue(h);
    spoke_spawn(sp);
}

static void arm_start_queue(struct hub *h)
{
    if (!h->ev_start_queue)
        h->ev_start_queue = evtimer_new(h->base, on_start_queue, h);
    struct timeval now = {0, 0};
    evtimer_add(h->ev_start_queue, &now);
}

static void queue_spawn(struct spoke *sp)
{
    TAILQ_INSERT_TAIL(&sp->hub->start_queue, sp, start_link);
    sp->start_queued = true;
    arm_start_queue(sp->hub);
}

/* A new instance learns its pace afresh (a restart after a crash, an idle stop), and
 * its start is timed from now. */
static void begin_instance(struct spoke *sp)
{
    sp->state = SP_STARTING;
    inflight_init(&sp->limit, &sp->hub->cfg->inflight, sp->window);
    sp->t_spawn = now_mono_ns();
    sp->t_init = sp->t_ready = 0;
}

/* The held node becomes the spoke: the go (a newline, held_node.cjs), then initialize
 * as for any start. One still in the start queue is spawned as a plain start. */
static void take_held(struct spoke *sp)
{
    begin_instance(sp);
    sp->warm_start = sp->proc != NULL;
    if (!sp->proc)
        return;
    evbuffer_add(sp->out, "\n", 1);
    begin_connection(sp); /* initialize's send also writes the go out */
}

static void spoke_start(struct spoke *sp)
{
    struct hub *h = sp->hub;
    if (sp->state == SP_HELD) {
        take_held(sp);
        return;
    }
    audit_new_id(sp->id);
    sp->gen++;
    sp->warm_start = false;
    begin_instance(sp);
    if (h->quit) {
        start_failed(sp, 125, "the hub is shutting down");
        return;
    }
    queue_spawn(sp);
}

/* The next instance made ahead and held (held.h): a new id, spawned from the queue. */
static void spoke_hold(struct spoke *sp)
{
    audit_new_id(sp->id);
    sp->gen++;
    sp->warm_start = false;
    sp->state = SP_HELD;
    queue_spawn(sp);
}

/* ---- calls: the window and its fair share ---- */

static unsigned share_of_window(const struct spoke *sp)
{
    unsigned window = inflight_window(&sp->limit);
    if (window <= 1 || sp->n_groups == 0)
        return 1;
    unsigned half = (window + 1) / 2;
    unsigned fair = (window + sp->n_groups - 1) / sp->n_groups;
    return fair < half ? fair : half;
}

static struct fair_group *group_get(struct spoke *sp, const void *session)
{
    struct fair_group *g;
    TAILQ_FOREACH(g, &sp->groups, link)
    {
        if (g->session == session)
            return g;
    }
    g = xcalloc(1, sizeof(*g));
    g->session = session;
    TAILQ_INIT(&g->waiting);
    TAILQ_INSERT_TAIL(&sp->groups, g, link);
    sp->n_groups++;
    return g;
}

static void group_drop_if_empty(struct spoke *sp, struct fair_group *g)
{
    if (g->inflight > 0 || !TAILQ_EMPTY(&g->waiting))
        return;
    TAILQ_REMOVE(&sp->groups, g, link);
    sp->n_groups--;
    free(g);
}

/* The session whose call goes next: the first in round-robin order with a call
 * waiting and fewer in flight than its share. */
static struct fair_group *next_group(const struct spoke *sp)
{
    unsigned share = share_of_window(sp);
    struct fair_group *g;
    TAILQ_FOREACH(g, &sp->groups, link)
    {
        if (!TAILQ_EMPTY(&g->waiting) && g->inflight < share)
            return g;
    }
    return NULL;
}

static void arm_idle(struct spoke *sp);

/* Sends waiting calls while the spoke is ready and its window has room. Sending can
 * end a call at once (a capability the spoke lacks) or the spoke itself (it does not
 * read): a call made meanwhile asks for another round instead of recursing. */
static void dispatch(struct spoke *sp)
{
    if (sp->dispatching) {
        sp->redispatch = true;
        return;
    }
    sp->dispatching = true;
    uint64_t gen = sp->gen;
    do {
        sp->redispatch = false;
        while (sp->gen == gen && sp->state == SP_READY) {
            struct fair_group *g = next_group(sp);
            if (!g)
                break;
            if (sp->n_inflight >= inflight_window(&sp->limit)) {
                /* A call waits for the window, not for its session's share: the
                 * limit may be what holds the sessions back. */
                inflight_note_bound(&sp->limit);
                break;
            }
            struct call *c = TAILQ_FIRST(&g->waiting);
            TAILQ_REMOVE(&g->waiting, c, qlink);
            /* Round robin: the session served goes to the back of the line. */
            TAILQ_REMOVE(&sp->groups, g, link);
            TAILQ_INSERT_TAIL(&sp->groups, g, link);
            TAILQ_INSERT_TAIL(&sp->inflight, c, qlink);
            c->onq = &sp->inflight;
            g->inflight++;
            sp->n_inflight++;
            c->inflight_at_send = sp->n_inflight;
            haudit_trace_spoke(sp); /* netproxy first: the call's tunnels join its trace */
            mcp_send_call(sp, c);
        }
    } while (sp->redispatch && sp->gen == gen);
    sp->dispatching = false;
    if (sp->gen == gen)
        arm_idle(sp);
}

/* Called by mcp.c when tools/list matched the manifest. */
void spoke_ready(struct spoke *sp);
void spoke_ready(struct spoke *sp)
{
    sp->state = SP_READY;
    sp->t_ready = now_mono_ns();
    sp->t_last_answer = sp->t_ready;
    sp->last_init_ns = sp->t_init ? sp->t_init - sp->t_spawn : 0;
    sp->last_ready_ns = sp->t_ready - sp->t_spawn;
    evtimer_del(sp->ev_start);
    json_t *rec = haudit_new("spoke-start", "success");
    haudit_spoke(rec, sp);
    audit_set_int(rec, "process.pid", sp->proc ? sp->proc->pid : -1);
    audit_set_int(rec, "event.duration", (int64_t)sp->last_ready_ns);
    audit_set_int(rec, "isolate.initialize_ns", (int64_t)sp->last_init_ns);
    if (sp->warm_start)
        audit_set(rec, "isolate.spoke.warm", json_true());
    if (sp->host_ip[0] && sp->listen_fd >= 0)
        audit_set_str(rec, "isolate.proxy.address", sp->host_ip);
    /* A span under the call the start was for (the first waiting), when there is one. */
    struct call *first = first_waiting(sp);
    if (first) {
        char name[120];
        snprintf(name, sizeof(name), "spoke-start %s", sp->m->name);
        haudit_child_span(first, name, sp->t_spawn, true, NULL, rec);
    }
    haudit_note(sp->hub, rec);
    dispatch(sp);
}

void spoke_submit(struct spoke *sp, struct call *c)
{
    c->state = CALL_QUEUED;
    c->group = group_get(sp, c->session);
    TAILQ_INSERT_TAIL(&c->group->waiting, c, qlink);
    c->onq = &c->group->waiting;
    if (sp->ev_idle)
        evtimer_del(sp->ev_idle);
    if (sp->state == SP_STOPPED || sp->state == SP_HELD)
        spoke_start(sp);
    else
        dispatch(sp); /* not spoke_ready(): that is the start, audited once */
}

void spoke_call_off(struct spoke *sp, struct call *c)
{
    if (!c->onq)
        return;
    bool sent = c->onq == &sp->inflight;
    TAILQ_REMOVE(c->onq, c, qlink);
    c->onq = NULL;
    struct fair_group *g = c->group;
    c->group = NULL;
    if (sent) {
        g->inflight--;
        sp->n_inflight--;
        /* The budget for frames that name no call starts again with each call's end. */
        sp->busy_frames = 0;
    }
    if (g)
        group_drop_if_empty(sp, g);
    if (sent)
        dispatch(sp);
}

void spoke_call_answered(struct spoke *sp, const struct call *c)
{
    unsigned before = inflight_window(&sp->limit);
    inflight_sample(&sp->limit, c->method ? c->method : c->tool->name, now_mono_ns() - c->t_sent,
                    c->inflight_at_send);
    unsigned after = inflight_window(&sp->limit);
    if (after != before)
        log_debug("spoke %s: in-flight limit %u -> %u (max_inflight %u)", sp->m->name, before,
                  after, sp->window);
}

struct call *spoke_inflight_by_rpc(const struct spoke *sp, int64_t rpc_id)
{
    struct call *c;
    TAILQ_FOREACH(c, &sp->inflight, qlink)
    {
        if (c->state == CALL_SENT && c->rpc_id == rpc_id)
            return c;
    }
    return NULL;
}

struct call *spoke_inflight_by_token(const struct spoke *sp, const char *token)
{
    struct call *c;
    TAILQ_FOREACH(c, &sp->inflight, qlink)
    {
        if (c->state == CALL_SENT && !c->method && strcmp(c->id, token) == 0)
            return c;
    }
    return NULL;
}

/* ---- idle ---- */

static uint64_t idle_seconds(const struct spoke *sp)
{
    return sp->m->idle_s >= 0 ? (uint64_t)sp->m->idle_s : sp->hub->cfg->idle_s;
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct spoke *sp = arg;
    if (sp->state != SP_READY || sp->n_inflight > 0 || first_waiting(sp))
        return;
    spoke_kill(sp, "idle", false, "spoke %s stopped after %llu s without a call", sp->m->name,
               (unsigned long long)idle_seconds(sp));
}

/* A ready spoke with nothing to do is stopped after idle_s (0: never). A session's own
 * instance (call_opts.instance) is not: its state is the session's, and a session
 * whose spoke ended ends too. */
static void arm_idle(struct spoke *sp)
{
    uint64_t s = idle_seconds(sp);
    if (s == 0 || sp->instance || sp->state != SP_READY || sp->n_inflight > 0 || first_waiting(sp))
        return;
    if (!sp->ev_idle)
        sp->ev_idle = evtimer_new(sp->hub->base, on_idle, sp);
    struct timeval tv = {.tv_sec = (time_t)s, .tv_usec = 0};
    evtimer_add(sp->ev_idle, &tv);
}

/* ---- is it still answering? ---- */

static void on_probe(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct spoke *sp = arg;
    if (sp->t_last_answer >= sp->t_probe)
        return;
    spoke_kill(sp, "unresponsive", false,
               "spoke %s answered nothing, not even a ping, within %d ms after %s missed its "
               "deadline",
               sp->m->name, PROBE_GRACE_MS, sp->probe_for);
}

void spoke_probe(struct spoke *sp, const char *why)
{
    if (sp->state == SP_STOPPED || sp->state == SP_HELD ||
        (sp->ev_probe && evtimer_pending(sp->ev_probe, NULL)))
        return;
    if (!sp->ev_probe)
        sp->ev_probe = evtimer_new(sp->hub->base, on_probe, sp);
    sp->t_probe = now_mono_ns();
    str_copy(sp->probe_for, why, sizeof(sp->probe_for));
    struct timeval tv = {.tv_sec = PROBE_GRACE_MS / 1000,
                         .tv_usec = (PROBE_GRACE_MS % 1000) * 1000};
    evtimer_add(sp->ev_probe, &tv);
    mcp_send_ping(sp); /* last: the send may end the spoke */
}

void spoke_hold_ahead(struct spoke *sp)
{
    if (sp->state == SP_STOPPED && held_allowed(sp->hub, sp->m))
        spoke_hold(sp);
}

void spoke_prestart(struct spoke *sp)
{
    if ((sp->state == SP_STOPPED || sp->state == SP_HELD) && !sp->hub->quit)
        spoke_start(sp);
}

/* ---- end ---- */

static const char *layer_for(const char *reason)
{
    if (strcmp(reason, "deadline") == 0 || strcmp(reason, "unresponsive") == 0)
        return "deadline";
    if (strncmp(reason, "rlimit", 6) == 0)
        return "rlimit";
    if (strcmp(reason, "seccomp") == 0)
        return "seccomp";
    if (strcmp(reason, "wall-time") == 0)
        return "rlimit";
    if (strcmp(reason, "memory") == 0 || strcmp(reason, "pids") == 0)
        return "cgroup";
    if (strcmp(reason, "oversized-frame") == 0 || strcmp(reason, "malformed-frame") == 0 ||
        strcmp(reason, "protocol") == 0 || strcmp(reason, "flood") == 0 ||
        strcmp(reason, "not-reading") == 0 || strcmp(reason, "start-failed") == 0 ||
        strcmp(reason, "pin") == 0)
        return "hub-validation";
    return "spoke";
}

static void close_connection(struct spoke *sp)
{
    if (sp->ev_read)
        event_free(sp->ev_read);
    if (sp->ev_write)
        event_free(sp->ev_write);
    if (sp->ev_start)
        event_free(sp->ev_start);
    if (sp->ev_eof)
        event_free(sp->ev_eof);
    sp->ev_read = sp->ev_write = sp->ev_start = sp->ev_eof = NULL;
    if (sp->out)
        evbuffer_free(sp->out);
    sp->out = NULL;
    if (sp->sock >= 0)
        close(sp->sock);
    sp->sock = -1;
    lr_free(&sp->lr);
    json_decref(sp->tools_seen);
    sp->tools_seen = NULL;
    sp->list_pages = 0;
    sp->relisting = sp->relist_again = false;
    json_decref(sp->init_result);
    sp->init_result = NULL;
    sp->n_cancelled = 0;
    memset(sp->pending, 0, sizeof(sp->pending));
    if (sp->ev_idle)
        evtimer_del(sp->ev_idle);
    if (sp->ev_probe)
        event_free(sp->ev_probe);
    sp->ev_probe = NULL;
    release_data(sp);
}

/* The calls the ended instance held fail with msg. They leave the window first, all
 * of them: a caller told of its call's end may cancel or start others meanwhile. */
static void fail_inflight(struct spoke *sp, const char *layer, const char *msg)
{
    struct call_queue off;
    TAILQ_INIT(&off);
    struct call *c;
    while ((c = TAILQ_FIRST(&sp->inflight)) != NULL) {
        TAILQ_REMOVE(&sp->inflight, c, qlink);
        struct fair_group *g = c->group;
        c->group = NULL;
        g->inflight--;
        sp->n_inflight--;
        group_drop_if_empty(sp, g);
        c->state = CALL_OFF;
        TAILQ_INSERT_TAIL(&off, c, qlink);
        c->onq = &off;
    }
    while ((c = TAILQ_FIRST(&off)) != NULL) {
        TAILQ_REMOVE(&off, c, qlink);
        c->onq = NULL;
        call_fail(c, HUB_ERR_SPOKE, layer, "%s", msg);
    }
}

/* Ends the instance. kill_record: the hub decided (an audit "spoke-kill"); otherwise
 * the spoke ended by itself and its exit record says how. */
static void spoke_end(struct spoke *sp, const char *reason, const char *layer, bool kill_record,
                      bool fail_q, const char *why)
{
    if (sp->state == SP_STOPPED)
        return;
    /* A spoke that failed to start, or exited, says where its own words are. */
    char msg[768];
    bool starting = sp->state == SP_STARTING || sp->state == SP_LISTING;
    if (sp->log_path && (starting || strcmp(reason, "exited") == 0))
        snprintf(msg, sizeof(msg), "%s (its log: %s)", why, sp->log_path);
    else
        snprintf(msg, sizeof(msg), "%s", why);
    if (sp->start_queued) {
        TAILQ_REMOVE(&sp->hub->start_queue, sp, start_link);
        sp->start_queued = false;
    }
    bool was_starting = sp->state == SP_STARTING || sp->state == SP_LISTING;
    bool was_ready = sp->state == SP_READY;
    if (kill_record) {
        json_t *rec = haudit_new("spoke-kill", "success");
        haudit_spoke(rec, sp);
        audit_set_str(rec, "event.reason", reason);
        audit_set_str(rec, "message", msg);
        if (sp->proc)
            audit_set_int(rec, "process.pid", sp->proc->pid);
        haudit_note(sp->hub, rec);
        if (strcmp(reason, "stop") != 0 && strcmp(reason, "shutdown") != 0 &&
            strcmp(reason, "idle") != 0)
            log_warnx("%s; killed", msg);
    }
    if (sp->proc) {
        /* At shutdown closing the connection asks the spoke to end; the hub kills
         * whatever is left after a grace period (proc_reap_all). */
        if (strcmp(reason, "shutdown") != 0)
            proc_kill(sp->proc, reason);
        proc_disown(sp->proc);
        sp->proc = NULL;
    }
    release_network(sp);
    close_connection(sp);
    sp->state = SP_STOPPED;
    sp->gen++;
    sp->sreqs = 0;
    fail_inflight(sp, layer, msg);
    if (was_starting) {
        json_t *rec = haudit_new("spoke-start", "failure");
        haudit_spoke(rec, sp);
        audit_set_str(rec, "event.reason", msg);
        haudit_note(sp->hub, rec);
    }
    /* A spoke that fails while starting would fail again for the next call in line:
     * those calls fail now rather than loop. Otherwise the next call restarts it. */
    if (fail_q || was_starting)
        fail_queue(sp, HUB_ERR_SPOKE, layer, msg);
    else if (first_waiting(sp) && sp->state == SP_STOPPED)
        spoke_start(sp);
    else if (was_ready && sp->state == SP_STOPPED && held_wanted(sp->hub, sp->m, reason))
        spoke_hold(sp);
}

void spoke_kill(struct spoke *sp, const char *reason, bool fail_q, const char *fmt, ...)
{
    if (sp->state == SP_STOPPED)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    spoke_end(sp, reason, layer_for(reason), true, fail_q, msg);
}

void spoke_proc_exited(struct spoke *sp, int exit_code, const char *reason)
{
    sp->proc = NULL;
    if (sp->state == SP_STOPPED)
        return;
    char msg[256];
    if (reason && reason[0])
        snprintf(msg, sizeof(msg), "spoke %s ended (%s, status %d)", sp->m->name, reason,
                 exit_code);
    else
        snprintf(msg, sizeof(msg), "spoke %s exited with status %d", sp->m->name, exit_code);
    /* The jail's reason (seccomp, rlimit-cpu, wall-time) names the layer that acted. */
    spoke_end(sp, "exited", reason && reason[0] ? layer_for(reason) : "spoke", false, false, msg);
}

void spoke_proc_start_failed(struct spoke *sp, int code, const char *why)
{
    sp->proc = NULL;
    if (sp->state == SP_STOPPED)
        return;
    /* As when proc_spawn() itself failed: the program never ran, so no call was sent
     * and no request came from it; every queued call gets this message. */
    char msg[700];
    snprintf(msg, sizeof(msg), "spoke %s could not start: %s", sp->m->name, why);
    close_connection(sp);
    sp->gen++;
    sp->sreqs = 0;
    start_failed(sp, code, msg);
}

void spoke_free(struct spoke *sp)
{
    spoke_end(sp, "shutdown", "hub", false, true, "the hub is shutting down");
    fail_queue(sp, HUB_ERR_SHUTDOWN, "hub", "the spoke was closed");
    if (sp->ev_idle)
        event_free(sp->ev_idle);
    free(sp->user);
    free(sp->instance);
    free(sp->log_path);
    free(sp);
}
