/* A cgroup of our own from systemd: a transient scope with Delegate=yes that holds the
 * calling process (what `systemd-run --scope -p Delegate=yes` makes), for a caller
 * whose cgroup is systemd's and not delegated: a login shell's session scope, a cron
 * job in cron.service. systemd owns those cgroups (its "single writer" rule): it may
 * rewrite their cgroup.subtree_control at any time, so jails made under them would
 * lose their controllers. Under a scope of our own, systemd leaves everything below
 * it to us, and removes it once its last process is gone.
 *
 * libsystemd is loaded with dlopen() here, when a scope is needed, not linked: it
 * pulls in six more libraries (libgcrypt, the compressors...), which would double the
 * start of every `nsjail-lite` for the few callers that need it. The hub links it
 * anyway (sd_notify), and then dlopen() finds it already loaded.
 *
 * As root we talk to systemd on its private socket, as systemctl does: no D-Bus
 * daemon is needed, which a minimal host may not run. Otherwise the system bus. */
#include "internal.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#define JOB_TIMEOUT_US (10ULL * 1000 * 1000)

/* The sd-bus and sd-login calls we make, looked up once. */
static struct {
    bool loaded;
    int (*bus_new)(sd_bus **);
    int (*bus_set_address)(sd_bus *, const char *);
    int (*bus_start)(sd_bus *);
    int (*bus_open_system)(sd_bus **);
    sd_bus *(*bus_flush_close_unref)(sd_bus *);
    int (*bus_match_signal)(sd_bus *, sd_bus_slot **, const char *, const char *, const char *,
                            const char *, sd_bus_message_handler_t, void *);
    sd_bus_slot *(*bus_slot_unref)(sd_bus_slot *);
    int (*message_new_method_call)(sd_bus *, sd_bus_message **, const char *, const char *,
                                   const char *, const char *);
    int (*message_append)(sd_bus_message *, const char *, ...);
    int (*message_open_container)(sd_bus_message *, char, const char *);
    int (*message_close_container)(sd_bus_message *);
    int (*message_read)(sd_bus_message *, const char *, ...);
    sd_bus_message *(*message_unref)(sd_bus_message *);
    int (*call)(sd_bus *, sd_bus_message *, uint64_t, sd_bus_error *, sd_bus_message **);
    int (*process)(sd_bus *, sd_bus_message **);
    int (*wait)(sd_bus *, uint64_t);
    void (*error_free)(sd_bus_error *);
    int (*pid_get_slice)(pid_t, char **);
} sd;

static bool load_libsystemd(char *err, size_t errlen)
{
    if (sd.loaded)
        return true;
    void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "cannot load libsystemd.so.0: %s", dlerror());
        return false;
    }
    struct {
        void **fn;
        const char *name;
    } syms[] = {
#define SYM(field, name) {(void **)&sd.field, name}
        SYM(bus_new, "sd_bus_new"),
        SYM(bus_set_address, "sd_bus_set_address"),
        SYM(bus_start, "sd_bus_start"),
        SYM(bus_open_system, "sd_bus_open_system"),
        SYM(bus_flush_close_unref, "sd_bus_flush_close_unref"),
        SYM(bus_match_signal, "sd_bus_match_signal"),
        SYM(bus_slot_unref, "sd_bus_slot_unref"),
        SYM(message_new_method_call, "sd_bus_message_new_method_call"),
        SYM(message_append, "sd_bus_message_append"),
        SYM(message_open_container, "sd_bus_message_open_container"),
        SYM(message_close_container, "sd_bus_message_close_container"),
        SYM(message_read, "sd_bus_message_read"),
        SYM(message_unref, "sd_bus_message_unref"),
        SYM(call, "sd_bus_call"),
        SYM(process, "sd_bus_process"),
        SYM(wait, "sd_bus_wait"),
        SYM(error_free, "sd_bus_error_free"),
        SYM(pid_get_slice, "sd_pid_get_slice"),
#undef SYM
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].fn = dlsym(h, syms[i].name);
        if (!*syms[i].fn) {
            snprintf(err, errlen, "libsystemd.so.0 lacks %s", syms[i].name);
            return false; /* the handle stays open: dlclose would buy nothing */
        }
    }
    sd.loaded = true;
    return true;
}

static int bus_connect(sd_bus **bus)
{
    if (geteuid() == 0 && access("/run/systemd/private", F_OK) == 0) {
        int r = sd.bus_new(bus);
        if (r < 0)
            return r;
        r = sd.bus_set_address(*bus, "unix:path=/run/systemd/private");
        if (r >= 0)
            r = sd.bus_start(*bus);
        if (r >= 0)
            return r;
        *bus = sd.bus_flush_close_unref(*bus);
    }
    return sd.bus_open_system(bus);
}

struct job_wait {
    const char *path; /* the job systemd queued for our scope */
    char result[32];  /* "done" on success; "" while it runs */
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
    (void)ret_error;
    struct job_wait *w = userdata;
    uint32_t id;
    const char *path, *unit, *result;
    if (sd.message_read(m, "uoss", &id, &path, &unit, &result) >= 0 && w->path &&
        strcmp(path, w->path) == 0)
        str_copy(w->result, result, sizeof(w->result));
    return 0;
}

/* StartTransientUnit(name, "fail", properties, no auxiliary units). */
static int append_scope_request(sd_bus_message *m, const char *name, const char *slice)
{
    char desc[96];
    snprintf(desc, sizeof(desc), "nsjail-lite: the jails of pid %d", (int)getpid());
    int r = sd.message_append(m, "ss", name, "fail");
    if (r >= 0)
        r = sd.message_open_container(m, 'a', "(sv)");
    if (r >= 0)
        r = sd.message_append(m, "(sv)(sv)(sv)(sv)", "Description", "s", desc, "PIDs", "au", 1,
                              (uint32_t)getpid(), "Delegate", "b", 1, "CollectMode", "s",
                              "inactive-or-failed");
    /* In the caller's own slice (a user's, for a login shell), so that its accounting
     * and limits still apply; without one, systemd picks system.slice. */
    if (r >= 0 && slice)
        r = sd.message_append(m, "(sv)", "Slice", "s", slice);
    if (r >= 0)
        r = sd.message_close_container(m);
    if (r >= 0)
        r = sd.message_append(m, "a(sa(sv))", 0);
    return r;
}

int cgroup_scope_delegate_self(char *name, size_t namelen, char *err, size_t errlen)
{
    if (!load_libsystemd(err, errlen))
        return -1;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = (uint32_t)now_mono_ns();
    snprintf(name, namelen, "nsjail-lite-%d-%08x.scope", (int)getpid(), (unsigned)rnd);
    char *slice = NULL;
    if (sd.pid_get_slice(0, &slice) < 0)
        slice = NULL;

    sd_bus *bus = NULL;
    sd_bus_slot *slot = NULL;
    sd_bus_message *req = NULL, *reply = NULL;
    sd_bus_error berr = SD_BUS_ERROR_NULL;
    struct job_wait w = {0};
    const char *step = "connecting to systemd";
    int r = bus_connect(&bus);
    if (r >= 0) {
        step = "watching for systemd's jobs";
        /* A private connection carries no sender: match on the rest only. */
        r = sd.bus_match_signal(bus, &slot, geteuid() == 0 ? NULL : "org.freedesktop.systemd1",
                                "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                "JobRemoved", on_job_removed, &w);
    }
    if (r >= 0) {
        step = "asking systemd for a scope";
        r = sd.message_new_method_call(bus, &req, "org.freedesktop.systemd1",
                                       "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "StartTransientUnit");
    }
    if (r >= 0)
        r = append_scope_request(req, name, slice);
    if (r >= 0)
        r = sd.call(bus, req, JOB_TIMEOUT_US, &berr, &reply);
    if (r >= 0)
        r = sd.message_read(reply, "o", &w.path);
    /* The scope holds us once its start job is done. */
    uint64_t deadline = now_mono_ns() + JOB_TIMEOUT_US * 1000;
    while (r >= 0 && !w.result[0]) {
        step = "waiting for systemd to start the scope";
        r = sd.process(bus, NULL);
        if (r == 0) {
            uint64_t now = now_mono_ns();
            if (now >= deadline) {
                r = -ETIMEDOUT;
                break;
            }
            r = sd.wait(bus, (deadline - now) / 1000);
        }
    }
    if (r < 0)
        snprintf(err, errlen, "%s: %s", step, berr.message ? berr.message : strerror(-r));
    else if (strcmp(w.result, "done") != 0)
        snprintf(err, errlen, "systemd's job to start %s ended '%s'", name, w.result);
    bool ok = r >= 0 && strcmp(w.result, "done") == 0;
    sd.error_free(&berr);
    if (reply)
        sd.message_unref(reply);
    if (req)
        sd.message_unref(req);
    if (slot)
        sd.bus_slot_unref(slot);
    if (bus)
        sd.bus_flush_close_unref(bus);
    free(slice);
    return ok ? 0 : -1;
}
