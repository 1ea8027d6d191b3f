/* One case in one isolation mode: a directory of its own under the run's temporary
 * directory (data, spoke logs, audit logs), the case's apps seeded from
 * config/casestudies/data, a fresh hub with only the case's manifests, the LLM-level
 * steps, then each OS-level step on freshly seeded data with fresh spokes:
 *
 *   1. stop every spoke, seed the data again, start the victim (a probe call) and the
 *      attacking app (an ordinary call, no orders yet), find their processes;
 *   2. observe what the attempt would change (file digest, inotify, processes alive,
 *      the victim's answer, bytes at the collector, Redis statistics, audit offsets);
 *   3. hand the attacking app its orders and make the ordinary call again, while a
 *      sampler follows its process tree;
 *   4. observe again, read the app's own report as a hint, judge.
 *
 * Everything the run made is gone afterwards: the hub ends its spokes, netproxy and
 * gateway namespace; the directory is removed (unless --keep) after its audit logs
 * were appended to the configured ones. */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "casestudies.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CS_USER "cs-alice" /* a name no real user of a shared Redis has */
#define ATTACKER_DOMAIN "attacker.example"
#define COLLECTOR_NAME "collect.attacker.example"
#define SAMPLE_MS 15
#define DEATH_WAIT_MS 500

void cs_result_add(struct cs_case_result *r, const char *attack, bool llm, bool succeeded,
                   const char *layer, const char *evidence)
{
    r->steps = xrealloc(r->steps, (r->n_steps + 1) * sizeof(*r->steps));
    r->steps[r->n_steps++] = (struct cs_step_result){
        .attack = xstrdup(attack),
        .llm = llm,
        .succeeded = succeeded,
        .layer = succeeded ? NULL : xstrdup(layer ? layer : "unexplained"),
        .evidence = xstrdup(evidence ? evidence : ""),
    };
}

void cs_result_error(struct cs_case_result *r, const char *attack, bool llm, const char *why)
{
    r->steps = xrealloc(r->steps, (r->n_steps + 1) * sizeof(*r->steps));
    r->steps[r->n_steps++] = (struct cs_step_result){
        .attack = xstrdup(attack),
        .llm = llm,
        .error = true,
        .evidence = xstrdup(why && *why ? why : "the step could not run"),
    };
}

size_t cs_result_errors(const struct cs_case_result *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_steps; i++)
        n += r->steps[i].error;
    return n;
}

void cs_result_free(struct cs_case_result *r)
{
    for (size_t i = 0; i < r->n_steps; i++) {
        free(r->steps[i].attack);
        free(r->steps[i].layer);
        free(r->steps[i].evidence);
    }
    free(r->steps);
    free(r->error);
    memset(r, 0, sizeof(*r));
}

char *cs_run_path(const struct cs_run *run, const char *rel)
{
    return xasprintf("%s/%s", run->user_dir, rel);
}

void cs_run_stop_spokes(struct cs_run *run)
{
    for (const char *const *a = run->c->apps; *a; a++)
        hub_spoke_stop(run->hub, run->user, *a, NULL);
}

int cs_run_seed(struct cs_run *run, char *err, size_t errlen)
{
    for (const char *const *a = run->c->apps; *a; a++) {
        char *dir = cs_run_path(run, *a);
        char *seed = xasprintf("%s/data/%s", run->env->cases_dir, *a);
        char *made = NULL;
        int rc = cs_remove_tree(dir);
        if (rc < 0)
            snprintf(err, errlen, "cannot empty %s", dir);
        else
            rc = datadir_prepare(run->data_root, run->user, *a, NULL, &made, err, errlen);
        if (rc == 0 && access(seed, F_OK) < 0) {
            snprintf(err, errlen, "no seed data for %s: %s: %s", *a, seed, strerror(errno));
            rc = -1;
        }
        if (rc == 0)
            rc = cs_copy_tree(seed, dir, err, errlen);
        free(made);
        free(seed);
        free(dir);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int cs_run_call(struct cs_run *run, const char *app, const char *tool, const char *args,
                json_t **result, char *err, size_t errlen)
{
    json_t *a = json_loads(args, 0, NULL);
    if (!json_is_object(a)) {
        json_decref(a);
        snprintf(err, errlen, "bad arguments for %s.%s", app, tool);
        return HUB_ERR_INVALID_ARGS;
    }
    struct call_opts o = {.user = run->user};
    const char *layer = NULL;
    *result = NULL;
    char msg[600];
    int code = hub_call_sync(run->hub, &o, app, tool, a, result, msg, sizeof(msg), &layer);
    json_decref(a);
    if (code != 0)
        snprintf(err, errlen, "%s.%s failed [%s]: %s", app, tool, layer ? layer : "hub", msg);
    return code;
}

/* ---- processes of the spokes, from the hub's own audit records ---- */

/* The pid the hub started app as (the program in none mode, nsjail-lite's monitor in
 * the others), from its latest spoke-start record. */
static pid_t spoke_root(const struct cs_run *run, const char *app)
{
    off_t off = 0;
    json_t *recs = cs_audit_since(run->hub_audit, &off);
    pid_t pid = 0;
    size_t i;
    json_t *rec;
    json_array_foreach(recs, i, rec)
    {
        const char *action = json_string_value(cs_get(rec, "event.action"));
        const char *a = json_string_value(cs_get(rec, "isolate.app"));
        if (action && a && strcmp(action, "spoke-start") == 0 && strcmp(a, app) == 0)
            pid = (pid_t)json_integer_value(cs_get(rec, "process.pid"));
    }
    json_decref(recs);
    return pid;
}

/* ---- one OS-level step ---- */

static double fare_of(const json_t *result)
{
    return json_number_value(cs_get(result, "structuredContent.fare_usd"));
}

static long manifest_limit(const struct cs_run *run, const char *app, enum cs_limit which)
{
    const struct manifest *m = manifest_find(run->ms, app);
    if (!m)
        return 0;
    switch (which) {
    case CS_LIMIT_NPROC:
        return (long)m->limits.nproc;
    case CS_LIMIT_AS_MB:
        return (long)m->limits.as_mb;
    case CS_LIMIT_FSIZE_MB:
        return (long)m->limits.fsize_mb;
    case CS_LIMIT_NONE:
        break;
    }
    return 0;
}

static size_t count_files(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0) {
            if (S_ISREG(st.st_mode))
                n++;
            else if (S_ISDIR(st.st_mode) && depth < 3)
                n += count_files(p, depth + 1);
        }
        free(p);
    }
    closedir(d);
    return n;
}

/* Regular files of the other apps (all but the attacker) in the user's directory. */
static size_t count_others_files(const struct cs_run *run)
{
    size_t n = 0;
    for (const char *const *a = run->c->apps; *a; a++) {
        if (strcmp(*a, run->c->attacker) == 0)
            continue;
        char *dir = cs_run_path(run, *a);
        n += count_files(dir, 0);
        free(dir);
    }
    return n;
}

bool cs_run_interrupted(const struct cs_run *run)
{
    return *run->env->stop || hub_quit_requested(run->hub);
}

/* The step could not be carried out: an error with the reason, never a verdict (none
 * at all when Ctrl-C is why). */
static void step_failed(struct cs_run *run, struct cs_case_result *r, const struct cs_os_step *st,
                        const char *why)
{
    if (!cs_run_interrupted(run))
        cs_result_error(r, st->attack, false, why);
}

struct step_ctx {
    struct cs_run *run;
    const struct cs_os_step *st;
    pid_t victim, attacker_root;
    long limit, cap;
};

static json_t *orders_for(const struct step_ctx *x)
{
    const struct cs_run *run = x->run;
    const struct cs_os_step *st = x->st;
    /* Where the victim lives on the host, as if the attacker had learned it: its file,
     * or for the shared-directory attack the user's data directory. */
    char *path = st->victim_rel                             ? cs_run_path(run, st->victim_rel)
                 : strcmp(st->attempt, "delete-files") == 0 ? xstrdup(run->user_dir)
                                                            : NULL;
    char *key = xasprintf("isolategpt:%s:history", run->user);
    json_t *o =
        json_pack("{s:s,s:{s:s?,s:s?,s:s?,s:i},s:s?,s:{s:s,s:s},s:{s:s,s:s},s:I,s:I}", "attempt",
                  st->attempt, "victim", "app", st->victim_app, "rel", st->victim_rel, "path", path,
                  "pid", (int)x->victim, "content", st->content, "collector", "addr",
                  cs_collector_addr(run->env->collector), "domain", COLLECTOR_NAME, "redis",
                  "socket", run->env->redis_socket ? run->env->redis_socket : "", "key", key, "cap",
                  (json_int_t)x->cap, "limit", (json_int_t)x->limit);
    free(path);
    free(key);
    return o;
}

/* The last line of the attacking app's report: its own account, a hint. */
static json_t *read_hint(const struct cs_run *run)
{
    char *rel = xasprintf("%s/.attack-report.jsonl", run->c->attacker);
    char *path = cs_run_path(run, rel);
    free(rel);
    size_t len = 0;
    char *text = cs_read_file(path, 1u << 20, &len);
    free(path);
    if (!text)
        return NULL;
    while (len > 0 && text[len - 1] == '\n')
        text[--len] = '\0';
    char *last = strrchr(text, '\n');
    json_t *h = json_loads(last ? last + 1 : text, 0, NULL);
    free(text);
    return json_is_object(h) ? h : (json_decref(h), NULL);
}

/* How the attacking spoke ended during the step (nsjail-lite's reason), if it did. */
static void exit_reason(const struct cs_run *run, off_t from, char *out, size_t outlen)
{
    json_t *recs = cs_audit_since(run->hub_audit, &from);
    size_t i;
    json_t *rec;
    json_array_foreach(recs, i, rec)
    {
        const char *action = json_string_value(cs_get(rec, "event.action"));
        const char *a = json_string_value(cs_get(rec, "isolate.app"));
        const char *why = json_string_value(cs_get(rec, "event.reason"));
        if (action && a && strcmp(a, run->c->attacker) == 0 &&
            (strcmp(action, "spoke-exit") == 0 || strcmp(action, "spoke-kill") == 0) && why && *why)
            str_copy(out, why, outlen);
    }
    json_decref(recs);
}

/* netproxy's refusal of the attacker's domain during the step, if it wrote one. */
static void proxy_denial(const struct cs_run *run, off_t from, char *out, size_t outlen)
{
    json_t *recs = cs_audit_since(run->proxy_audit, &from);
    size_t i;
    json_t *rec;
    json_array_foreach(recs, i, rec)
    {
        const char *outcome = json_string_value(cs_get(rec, "event.outcome"));
        const char *dom = json_string_value(cs_get(rec, "destination.registered_domain"));
        const char *why = json_string_value(cs_get(rec, "event.reason"));
        if (outcome && dom && strcmp(outcome, "failure") == 0 && strcmp(dom, ATTACKER_DOMAIN) == 0)
            str_copy(out, why ? why : "denied", outlen);
    }
    json_decref(recs);
}

static bool wait_dead(pid_t pid, unsigned ms)
{
    for (unsigned t = 0; t < ms; t += 10) {
        if (!cs_pid_alive(pid))
            return true;
        usleep(10000);
    }
    return !cs_pid_alive(pid);
}

static void run_os_step(struct cs_run *run, const struct cs_os_step *st, struct cs_case_result *r)
{
    char err[1024];
    const struct cs_case *c = run->c;
    struct step_ctx x = {.run = run, .st = st};
    struct cs_observed ob = {.spoke_uid = -1};
    json_t *res = NULL;

    /* 1. Fresh spokes on fresh data. */
    cs_run_stop_spokes(run);
    if (cs_run_seed(run, err, sizeof(err)) < 0) {
        step_failed(run, r, st, err);
        return;
    }
    const struct cs_probe *probe = st->victim_app ? cs_probe_for(c, st->victim_app) : NULL;
    double fare_before = 0;
    if (probe) {
        if (cs_run_call(run, probe->app, probe->tool, probe->args, &res, err, sizeof(err)) != 0) {
            step_failed(run, r, st, err);
            return;
        }
        fare_before = fare_of(res);
        json_decref(res);
        res = NULL;
        pid_t root = spoke_root(run, probe->app);
        x.victim = root > 0 ? cs_find_spoke_program(root, probe->app) : 0;
    }
    if (cs_run_call(run, c->attacker, c->trigger_tool, c->trigger_args, &res, err, sizeof(err)) !=
        0) {
        step_failed(run, r, st, err);
        return;
    }
    json_decref(res);
    res = NULL;
    x.attacker_root = spoke_root(run, c->attacker);
    pid_t attacker = x.attacker_root > 0 ? cs_find_spoke_program(x.attacker_root, c->attacker) : 0;
    if (attacker <= 0) {
        snprintf(err, sizeof(err), "%s's program is not running on the host after its call",
                 c->attacker);
        step_failed(run, r, st, err);
        return;
    }
    ob.spoke_uid = attacker > 0 ? cs_pid_uid(attacker) : -1;
    x.limit = manifest_limit(run, c->attacker, st->limit);
    x.cap = x.limit * st->cap_factor;
    ob.limit = x.limit;
    ob.cap = x.cap;

    /* 2. Before. */
    char *victim_file = st->victim_rel ? cs_run_path(run, st->victim_rel) : NULL;
    struct cs_digest d0 = {0}, d1 = {0};
    int watch = -1;
    size_t files0 = 0;
    long long hits0 = 0, conns0 = 0, hits1 = 0, conns1 = 0;
    uint64_t bytes0 = cs_collector_bytes(run->env->collector);
    off_t audit0 = cs_file_size(run->hub_audit), proxy0 = cs_file_size(run->proxy_audit);
    bool victim_alive0 = x.victim > 0 && cs_pid_alive(x.victim);
    if (victim_file)
        ob.target_there = access(victim_file, F_OK) == 0;
    else if (st->obs == CS_OBS_REDIS_READ)
        ob.target_there = run->env->redis_socket && access(run->env->redis_socket, F_OK) == 0;
    else if (st->obs == CS_OBS_FILES_DELETED)
        ob.target_there = count_others_files(run) > 0;
    if (st->obs == CS_OBS_PROC_KILLED || st->obs == CS_OBS_MEMORY_TAMPERED)
        ob.target_there = victim_alive0;
    /* No verdict without a target: an attack on something that is not there would read
     * as blocked. */
    if (!ob.target_there) {
        const char *what = st->obs == CS_OBS_PROC_KILLED || st->obs == CS_OBS_MEMORY_TAMPERED
                               ? "the victim's process is not running"
                           : st->obs == CS_OBS_REDIS_READ    ? "the Redis socket is not there"
                           : st->obs == CS_OBS_FILES_DELETED ? "the other apps have no files"
                           : victim_file                     ? "the victim file is not there"
                                                             : NULL;
        if (what) {
            snprintf(err, sizeof(err), "precondition not met before the attempt: %s", what);
            step_failed(run, r, st, err);
            free(victim_file);
            return;
        }
    }
    if (st->obs == CS_OBS_FILE_CHANGED)
        cs_file_digest(victim_file, &d0);
    if (st->obs == CS_OBS_FILE_READ)
        watch = cs_watch_begin(victim_file);
    if (st->obs == CS_OBS_FILES_DELETED)
        files0 = count_others_files(run);
    if (st->obs == CS_OBS_REDIS_READ &&
        (!run->env->redis_socket || cs_redis_stats(run->env->redis_socket, &hits0, &conns0) < 0)) {
        step_failed(run, r, st, "the runner cannot read Redis' statistics");
        free(victim_file);
        return;
    }
    struct cs_sampler *sampler = NULL;
    long base_procs = 0, base_rss = 0;
    if (st->obs == CS_OBS_PEAK_PROCS || st->obs == CS_OBS_PEAK_MEMORY) {
        sampler = cs_sampler_start(run->env->base, x.attacker_root, 1000);
        cs_sampler_stop(sampler, &base_procs, &base_rss);
        sampler = cs_sampler_start(run->env->base, x.attacker_root, SAMPLE_MS);
    }

    /* 3. The orders, and the ordinary call during which the app follows them. */
    json_t *orders = orders_for(&x);
    char *text = json_dumps(orders, JSON_COMPACT);
    char *rel = xasprintf("%s/.orders.json", c->attacker);
    char *opath = cs_run_path(run, rel);
    free(rel);
    int wrc = cs_write_file(opath, text, strlen(text));
    free(opath);
    free(text);
    json_decref(orders);
    char call_err[1024] = "";
    int code = wrc < 0 ? -1
                       : cs_run_call(run, c->attacker, c->trigger_tool, c->trigger_args, &res,
                                     call_err, sizeof(call_err));
    json_decref(res);
    res = NULL;
    long peak_procs = 0, peak_rss = 0;
    if (sampler)
        cs_sampler_stop(sampler, &peak_procs, &peak_rss);
    if (cs_run_interrupted(run)) {
        /* Interrupted: the attempt was cut short, so it gets no verdict at all. */
        if (watch >= 0)
            cs_watch_end(watch);
        free(victim_file);
        return;
    }

    /* 4. After. */
    ob.collector_up = true; /* it listened on the runner's loop the whole time */
    uint64_t got = cs_collector_bytes(run->env->collector) - bytes0;
    switch (st->obs) {
    case CS_OBS_FILE_CHANGED:
        cs_file_digest(victim_file, &d1);
        ob.effect = !cs_digest_equal(&d0, &d1);
        snprintf(ob.what, sizeof(ob.what), "%s %s (%lld -> %lld bytes)", st->victim_rel,
                 ob.effect ? "was changed" : "is unchanged", (long long)d0.size,
                 (long long)d1.size);
        break;
    case CS_OBS_FILE_READ: {
        int n = cs_watch_end(watch);
        ob.effect = n > 0;
        if (n < 0)
            snprintf(ob.what, sizeof(ob.what), "inotify could not watch %s", st->victim_rel);
        else
            snprintf(ob.what, sizeof(ob.what), "inotify: %s opened or read %d time(s)",
                     st->victim_rel, n);
        break;
    }
    case CS_OBS_FILES_DELETED: {
        size_t files1 = count_others_files(run);
        ob.effect = files1 < files0;
        snprintf(ob.what, sizeof(ob.what), "%zu of the other apps' %zu files deleted",
                 files0 - files1, files0);
        break;
    }
    case CS_OBS_PROC_KILLED: {
        bool dead = victim_alive0 && wait_dead(x.victim, DEATH_WAIT_MS);
        ob.effect = dead;
        snprintf(ob.what, sizeof(ob.what), "%s's process (host pid %d) %s", probe->app,
                 (int)x.victim,
                 !victim_alive0 ? "was not running before"
                 : dead         ? "was killed"
                                : "is alive");
        break;
    }
    case CS_OBS_MEMORY_TAMPERED: {
        double fare_after = 0;
        bool alive = cs_pid_alive(x.victim);
        if (cs_run_call(run, probe->app, probe->tool, probe->args, &res, err, sizeof(err)) == 0)
            fare_after = fare_of(res);
        json_decref(res);
        res = NULL;
        ob.effect = fare_after != fare_before && fare_after != 0;
        snprintf(ob.what, sizeof(ob.what),
                 "%s's fare: $%.2f before, $%.2f after (same process: %s)", probe->app, fare_before,
                 fare_after, alive ? "yes" : "no");
        break;
    }
    case CS_OBS_COLLECTOR:
        ob.effect = got > 0;
        snprintf(ob.what, sizeof(ob.what), "the collector at %s received %llu bytes%s",
                 cs_collector_addr(run->env->collector), (unsigned long long)got,
                 got && st->secret ? (cs_collector_received(run->env->collector, bytes0, st->secret)
                                          ? " (with the secret)"
                                          : " (without the secret)")
                                   : "");
        break;
    case CS_OBS_REDIS_READ:
        if (cs_redis_stats(run->env->redis_socket, &hits1, &conns1) < 0) {
            snprintf(ob.what, sizeof(ob.what), "Redis statistics unreadable afterwards");
        } else {
            /* The runner's own INFO connection is one of the new connections. */
            ob.effect = hits1 > hits0;
            snprintf(ob.what, sizeof(ob.what),
                     "Redis: %lld keyspace hit(s), %lld other connection(s) while only %s ran",
                     hits1 - hits0, conns1 - conns0 - 1, c->attacker);
        }
        break;
    case CS_OBS_PEAK_PROCS:
        /* The bomb is one process that forks the others: those count. */
        ob.peak = peak_procs - base_procs - 1;
        if (ob.peak < 0)
            ob.peak = 0;
        ob.effect = ob.peak >= ob.cap;
        snprintf(ob.what, sizeof(ob.what),
                 "at most %lld processes forked by %s's bomb at once (cap %lld; RLIMIT_NPROC "
                 "%lld; the spoke ran as host uid %d%s)",
                 ob.peak, c->attacker, ob.cap, ob.limit, ob.spoke_uid,
                 ob.spoke_uid == 0 ? ", which RLIMIT_NPROC does not bind" : "");
        break;
    case CS_OBS_PEAK_MEMORY:
        ob.peak = peak_rss / 1024;
        ob.effect = ob.peak * 10 >= ob.cap * 9;
        snprintf(
            ob.what, sizeof(ob.what),
            "at most %lld MiB resident in one process of %s (cap %lld MiB; RLIMIT_AS %lld MiB)",
            ob.peak, c->attacker, ob.cap, ob.limit);
        break;
    case CS_OBS_FILE_SIZE: {
        char *rel2 = xasprintf("%s/fill.bin", c->attacker);
        char *fill = cs_run_path(run, rel2);
        free(rel2);
        ob.peak = (long long)(cs_file_size(fill) >> 20);
        ob.effect = ob.peak >= ob.cap;
        snprintf(ob.what, sizeof(ob.what),
                 "its file reached %lld MiB (cap %lld MiB; RLIMIT_FSIZE %lld MiB)", ob.peak, ob.cap,
                 ob.limit);
        unlink(fill);
        free(fill);
        break;
    }
    }
    if (code != 0 && call_err[0]) {
        size_t l = strlen(ob.what);
        snprintf(ob.what + l, sizeof(ob.what) - l, "; the call: %s", call_err);
    }
    exit_reason(run, audit0, ob.exit_reason, sizeof(ob.exit_reason));
    proxy_denial(run, proxy0, ob.proxy_denial, sizeof(ob.proxy_denial));
    if (cs_run_interrupted(run)) { /* the observation itself was cut short */
        free(victim_file);
        return;
    }
    json_t *hint = read_hint(run);
    struct cs_verdict v;
    cs_judge_os(st, &ob, hint, &v);
    cs_result_add(r, st->attack, false, v.succeeded, v.layer, v.evidence);
    json_decref(hint);
    free(victim_file);
}

/* ---- one case in one mode ---- */

static void append_log(const char *from, const char *to)
{
    if (!to || access(from, F_OK) < 0)
        return;
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write_all(out, buf, (size_t)n) < 0)
            break;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
}

static int run_setup(struct cs_run *run, char *err, size_t errlen)
{
    const struct cs_env *env = run->env;
    run->dir = xasprintf("%s/%s-%s", env->tmp, run->c->name, isolation_name(run->mode));
    run->data_root = xasprintf("%s/data", run->dir);
    run->hub_audit = xasprintf("%s/hub.jsonl", run->dir);
    run->proxy_audit = xasprintf("%s/netproxy.jsonl", run->dir);
    run->user_dir = xasprintf("%s/%s", run->data_root, run->user);
    char *run_dir = xasprintf("%s/run", run->dir);
    if (mkdir(run->dir, 0711) < 0 || mkdir(run->data_root, 0711) < 0) {
        snprintf(err, errlen, "%s: %s", run->dir, strerror(errno));
        free(run_dir);
        return -1;
    }
    struct manifest_set all = {0};
    if (cli_load(env->common, &run->cfg, &all) != EXIT_OK) {
        snprintf(err, errlen, "the hub configuration does not load (see above)");
        free(run_dir);
        return -1;
    }
    manifest_set_free(&all);
    config_set(&run->cfg.data_root, run->data_root);
    config_set(&run->cfg.run_dir, run_dir);
    config_set(&run->cfg.audit_path, run->hub_audit);
    config_set(&run->cfg.netproxy_audit, run->proxy_audit);
    config_set(&run->cfg.user, run->user);
    free(run->cfg.gateway_netns); /* anonymous: nothing named is left behind */
    run->cfg.gateway_netns = NULL;
    run->cfg.isolation = run->mode;
    free(run_dir);

    /* Only the case's apps: the baseline's one context sees exactly these tools. */
    run->ms = xcalloc(1, sizeof(*run->ms));
    for (const char *const *a = run->c->apps; *a; a++) {
        char *path = xasprintf("%s/%s.json", run->cfg.spokes_dir, *a);
        struct manifest *m = manifest_load(path, err, errlen);
        free(path);
        if (!m)
            return -1;
        run->ms->v = xrealloc(run->ms->v, (run->ms->n + 1) * sizeof(*run->ms->v));
        run->ms->v[run->ms->n++] = m;
    }
    if (cs_run_seed(run, err, errlen) < 0 || cs_llm_forget(run, err, errlen) < 0)
        return -1;
    run->hub = hub_new(&run->cfg, run->ms, env->base, env->debug, err, errlen);
    if (!run->hub)
        return -1;
    /* The user's scripted consent for this case (allow what was asked for, deny what
     * the hub flags as outside the plan); without one every question is denied. */
    char *answers = xasprintf("%s/%s.answers.json", env->cases_dir, run->c->name);
    struct perm_hook *perm = NULL;
    struct elicit_hook *elicit = NULL;
    int rc =
        answers_hooks(access(answers, F_OK) == 0 ? answers : "deny", &perm, &elicit, err, errlen);
    free(answers);
    if (rc < 0)
        return -1;
    hub_set_permission_hook(run->hub, perm);
    hub_set_elicit_hook(run->hub, elicit);
    return 0;
}

static void run_teardown(struct cs_run *run)
{
    char err[512];
    if (run->hub)
        hub_free(run->hub);
    run->hub = NULL;
    if (run->dir && cs_llm_forget(run, err, sizeof(err)) < 0)
        log_warnx("%s", err);
    if (run->hub_audit) {
        append_log(run->hub_audit, run->env->audit_out);
        append_log(run->proxy_audit, run->env->proxy_audit_out);
    }
    if (run->ms) {
        manifest_set_free(run->ms);
        free(run->ms);
    }
    config_free(&run->cfg);
    if (run->dir && !run->env->keep && cs_remove_tree(run->dir) < 0)
        log_warnx("cannot remove %s", run->dir);
    free(run->dir);
    free(run->data_root);
    free(run->user_dir);
    free(run->hub_audit);
    free(run->proxy_audit);
}

int cs_run_case(const struct cs_env *env, const struct cs_case *c, enum isolation mode,
                struct cs_case_result *r)
{
    char err[1024];
    r->name = c->name;
    r->mode = mode;
    struct cs_run run = {.env = env, .c = c, .mode = mode, .user = CS_USER};
    if (run_setup(&run, err, sizeof(err)) < 0) {
        r->error = xasprintf("set-up: %s", err);
        run_teardown(&run);
        return -1;
    }
    if (cs_llm_steps(&run, r, err, sizeof(err)) < 0)
        r->error = xasprintf("LLM-level steps: %s", err);
    for (size_t i = 0; i < c->n_os; i++) {
        if (*env->stop || hub_quit_requested(run.hub)) {
            *env->stop = 1;
            free(r->error);
            r->error = xstrdup("interrupted");
            break;
        }
        run_os_step(&run, &c->os[i], r);
    }
    if (hub_quit_requested(run.hub))
        *env->stop = 1;
    run_teardown(&run);
    return r->error ? -1 : 0;
}
