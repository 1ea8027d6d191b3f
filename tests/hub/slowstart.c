/* slowstart: the hub of tests/hub/test_hub_slowstart.sh (not a test by itself).
 *
 *   slowstart HUB_JSON BIN_DIR
 *
 * Through the public API (hub.h), on one event loop, in the configuration's isolation
 * mode. The script has filled the /data of alpha's instance "big" with many files,
 * which nsjail-lite hands to the jail's host id before the jail starts: a start that
 * is slow for a real reason.
 * 1. the default alpha instance is started and answers echo (the warm spoke);
 * 2. "big" alone: the time from the call to its answer (its start), then closed;
 * 3. "big" again, and meanwhile echo calls to the warm spoke one after another: the
 *    slowest of them;
 * 4. ghost (a program that does not exist), twice: each call's error;
 * 5. "big" closed as soon as its jail is being set up (a kill while starting), then
 *    called again and the hub freed while its jail is being set up.
 * Prints one JSON object; the script checks it, the audit log and what is left. */
#include "runtime/answers.h"
#include "runtime/hub.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pending {
    bool done, ok;
    uint64_t t0, ns;
    char message[512];
};

static struct hub *hub;
static struct event_base *base;
static json_t *echo_args, *empty;
static struct pending warm;
static bool echo_running;
static uint64_t echo_max_ns;
static unsigned echo_answered, echo_failed;

static void on_done(void *ud, const struct call_result *r)
{
    struct pending *p = ud;
    p->done = true;
    p->ok = r->result != NULL;
    p->ns = now_mono_ns() - p->t0;
    snprintf(p->message, sizeof(p->message), "%s", r->message ? r->message : "");
}

static void call(struct pending *p, const char *app, const char *tool, const char *instance,
                 json_t *args, hub_call_done cb)
{
    memset(p, 0, sizeof(*p));
    p->t0 = now_mono_ns();
    struct call_opts o = {.instance = instance, .timeout_ms = 30000};
    hub_call(hub, &o, app, tool, args, cb, p);
}

/* The warm spoke's calls, one after another while echo_running. */
static void on_echo(void *ud, const struct call_result *r)
{
    on_done(ud, r);
    if (r->result)
        echo_answered++;
    else
        echo_failed++;
    if (warm.ns > echo_max_ns)
        echo_max_ns = warm.ns;
    if (echo_running && r->result)
        call(&warm, "alpha", "echo", NULL, echo_args, on_echo);
}

static void wait_for(struct pending *p)
{
    while (!p->done && !hub_quit_requested(hub))
        event_base_loop(base, EVLOOP_ONCE);
}

/* Turns the loop until the hub has spawned its next process (its jail is then being
 * set up: the spawn is queued for a turn of the loop). */
static void wait_spawned(size_t procs_before)
{
    uint64_t until = now_mono_ns() + 10000000000ULL;
    size_t procs, slots;
    do {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        hub_resource_counts(hub, &procs, &slots);
    } while (procs <= procs_before && now_mono_ns() < until);
}

static void close_and_reap(const char *app, const char *instance, size_t keep)
{
    hub_spoke_close(hub, NULL, app, instance);
    uint64_t until = now_mono_ns() + 10000000000ULL;
    size_t procs, slots;
    do {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        hub_resource_counts(hub, &procs, &slots);
    } while (procs > keep && now_mono_ns() < until);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: slowstart HUB_JSON BIN_DIR\n");
        return 2;
    }
    char err[1024];
    struct hub_config cfg;
    config_defaults(&cfg, argv[2]);
    if (config_load(&cfg, argv[1], err, sizeof(err)) < 0) {
        fprintf(stderr, "slowstart: %s\n", err);
        return 1;
    }
    struct manifest_set ms;
    if (manifest_set_load(cfg.spokes_dir, &ms, err, sizeof(err)) < 0) {
        fprintf(stderr, "slowstart: %s\n", err);
        return 1;
    }
    base = event_base_new();
    hub = hub_new(&cfg, &ms, base, false, err, sizeof(err));
    if (!hub) {
        fprintf(stderr, "slowstart: %s\n", err);
        return 1;
    }
    echo_args = json_pack("{s:s}", "text", "ping");
    empty = json_object();
    json_t *out = json_object();

    /* 1. the warm spoke */
    call(&warm, "alpha", "echo", NULL, echo_args, on_done);
    wait_for(&warm);
    json_object_set_new(out, "warm_ok", json_boolean(warm.ok));

    /* 2. the slow start alone */
    struct pending big;
    call(&big, "alpha", "whoami", "big", empty, on_done);
    wait_for(&big);
    json_object_set_new(out, "big_alone_ok", json_boolean(big.ok));
    json_object_set_new(out, "big_alone_ms", json_real((double)big.ns / 1e6));
    if (!big.ok)
        json_object_set_new(out, "big_alone_error", json_string(big.message));
    close_and_reap("alpha", "big", 1);

    /* 3. the slow start beside the warm spoke's calls: the first echo is on its way
     * (written to the spoke) before "big" is called, so a start that held up the loop
     * would show in its latency */
    echo_running = true;
    call(&warm, "alpha", "echo", NULL, echo_args, on_echo);
    call(&big, "alpha", "whoami", "big", empty, on_done);
    wait_for(&big);
    echo_running = false;
    wait_for(&warm);
    json_object_set_new(out, "big_ok", json_boolean(big.ok));
    json_object_set_new(out, "big_ms", json_real((double)big.ns / 1e6));
    json_object_set_new(out, "echo_answered", json_integer(echo_answered));
    json_object_set_new(out, "echo_failed", json_integer(echo_failed));
    json_object_set_new(out, "echo_max_ms", json_real((double)echo_max_ns / 1e6));
    close_and_reap("alpha", "big", 1);

    /* 4. a program that does not exist, twice */
    struct pending ghost;
    for (int i = 1; i <= 2; i++) {
        call(&ghost, "ghost", "whoami", NULL, empty, on_done);
        wait_for(&ghost);
        char key[32];
        snprintf(key, sizeof(key), "ghost%d", i);
        json_object_set_new(out, key,
                            json_pack("{s:b,s:s}", "ok", ghost.ok, "message", ghost.message));
    }

    /* 5. closed while its jail is set up; then the hub freed while it is */
    call(&big, "alpha", "whoami", "big", empty, on_done);
    wait_spawned(1);
    close_and_reap("alpha", "big", 1);
    json_object_set_new(
        out, "closed_while_starting",
        json_pack("{s:b,s:b,s:s}", "answered", big.done, "ok", big.ok, "message", big.message));
    size_t procs, slots;
    hub_resource_counts(hub, &procs, &slots);
    json_object_set_new(out, "procs_after_close", json_integer((json_int_t)procs));
    call(&big, "alpha", "whoami", "big", empty, on_done);
    wait_spawned(1);
    hub_resource_counts(hub, &procs, &slots);
    json_object_set_new(out, "procs_before_free", json_integer((json_int_t)procs));
    hub_free(hub);
    hub = NULL;
    json_object_set_new(out, "freed_while_starting_answered", json_boolean(big.done));

    char *s = json_dumps(out, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(out);
    json_decref(echo_args);
    json_decref(empty);
    event_base_free(base);
    manifest_set_free(&ms);
    config_free(&cfg);
    return 0;
}
