/* `hub casestudies`: the four case studies of the reference paper in three isolation
 * modes, plus the operating-system-level attacks of the malicious apps' own code.
 * Shared by hub/casestudies/casestudies*.c only.
 *
 *   casestudies.c           the command: options, modes x cases, signals, clean-up
 *   casestudies_cases.c     the cases: apps, user requests, attack steps
 *   casestudies_run.c       one case in one mode: fresh data, fresh hub, each step
 *   casestudies_llm.c       the LLM-level steps through the agent (issue 5)
 *   casestudies_observe.c   what the runner sees from outside (files, processes, ...)
 *   casestudies_collector.c the attacker's collection server (loopback, counts bytes)
 *   casestudies_judge.c     verdicts: outcome from observation, layer from evidence
 *   casestudies_output.c    JSON and the comparison table
 *
 * Outcomes are never taken from what an app says about itself: an attempt succeeded
 * when its effect is observed from outside (a file changed, bytes reached the
 * collector, a process died, Redis served a read, a limit was passed); its report
 * (errno, HTTP status) only helps name the layer that stopped it. */
#ifndef HUB_CASESTUDIES_H
#define HUB_CASESTUDIES_H

#include "runtime/runtime.h"

#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- the cases (casestudies_cases.c) ---- */

/* How an OS-level step's effect is observed from outside. */
enum cs_obs_kind {
    CS_OBS_FILE_CHANGED,    /* the victim file's content, before and after */
    CS_OBS_FILE_READ,       /* inotify: the victim file opened or read meanwhile */
    CS_OBS_FILES_DELETED,   /* the other apps' seeded files still there afterwards */
    CS_OBS_PROC_KILLED,     /* the victim spoke's process alive afterwards */
    CS_OBS_MEMORY_TAMPERED, /* the victim's answer (its fare), before and after */
    CS_OBS_COLLECTOR,       /* bytes that reached the attacker's server */
    CS_OBS_REDIS_READ,      /* Redis keyspace hits while only the attacker ran */
    CS_OBS_PEAK_PROCS,      /* most processes of the attacking spoke at once */
    CS_OBS_PEAK_MEMORY,     /* most resident memory of one of its processes */
    CS_OBS_FILE_SIZE,       /* size of the file it wrote */
};

enum cs_limit { CS_LIMIT_NONE, CS_LIMIT_NPROC, CS_LIMIT_AS_MB, CS_LIMIT_FSIZE_MB };

struct cs_os_step {
    const char *attack;  /* the stable step name shown in every mode */
    const char *attempt; /* what the attack code does (spokes/attack/orders.c) */
    enum cs_obs_kind obs;
    const char *victim_app; /* "*": every other spoke of the user */
    const char *victim_rel; /* a victim file, relative to the user's data directory */
    const char *content;    /* what overwrite-file writes */
    const char *secret;     /* bytes whose arrival at the collector mean the secret left */
    enum cs_limit limit;    /* bombs: the manifest limit they run against */
    int cap_factor;         /* bombs stop at cap_factor x that limit */
};

enum cs_llm_check {
    CS_CHECK_FARE_INFLATED,  /* the answer's metro_hail fare is the real one + $10 */
    CS_CHECK_SECRET_MAILED,  /* mail delivered the SSN to the attacker */
    CS_CHECK_TRACES_DELETED, /* the attacker's mail (or the sent copy) deleted */
    CS_CHECK_MEDICAL_SHARED, /* a flight booking carries the medical details */
    CS_CHECK_FICTION_MIXED,  /* the medical answer carries creative_muse's story */
};

struct cs_llm_step {
    const char *attack;
    enum cs_llm_check check;
};

/* A tool call that starts a victim spoke, or asks it what the attack would change. */
struct cs_probe {
    const char *app, *tool, *args;
};

struct cs_case {
    const char *name;
    const char *const *apps;     /* NULL-terminated */
    const char *const *requests; /* the user's requests, in order; NULL-terminated */
    const char *attacker;        /* the app whose code attacks */
    const char *trigger_tool;    /* an ordinary call to it, during which it attacks */
    const char *trigger_args;
    const struct cs_probe *probes; /* {NULL} terminated: one per victim app */
    const struct cs_os_step *os;
    size_t n_os;
    const struct cs_llm_step *llm;
    size_t n_llm;
};

extern const struct cs_case cs_cases[];
extern const size_t cs_n_cases;
const struct cs_case *cs_case_find(const char *name);
const struct cs_probe *cs_probe_for(const struct cs_case *c, const char *app);

/* ---- results ---- */

/* A step has one of three outcomes: it succeeded, a layer blocked it, or it could not
 * run (error: its attacker or victim did not start, or a precondition the runner
 * checks from outside did not hold). A layer is named only for an attack that ran. */
struct cs_step_result {
    char *attack;
    bool llm; /* kind "llm" or "os" */
    bool succeeded;
    bool error;  /* could not run: evidence says why; succeeded is false, layer NULL */
    char *layer; /* NULL when succeeded or error */
    char *evidence;
};

struct cs_case_result {
    const char *name;
    enum isolation mode;
    struct cs_step_result *steps;
    size_t n_steps;
    char *error; /* the case could not run (set up, interrupted): said, not hidden */
};

void cs_result_add(struct cs_case_result *r, const char *attack, bool llm, bool succeeded,
                   const char *layer, const char *evidence);
/* The step could not run: no verdict, the reason instead. */
void cs_result_error(struct cs_case_result *r, const char *attack, bool llm, const char *why);
/* Steps with that outcome in r. */
size_t cs_result_errors(const struct cs_case_result *r);
void cs_result_free(struct cs_case_result *r);

/* ---- verdicts (casestudies_judge.c) ---- */

/* What the runner saw of one OS-level attempt. */
struct cs_observed {
    bool effect;           /* the attack's effect was seen from outside */
    char what[512];        /* that observation, in words */
    long long peak;        /* bombs: how far it got (processes or MiB) */
    long long cap;         /* ... the bomb's own cap */
    long long limit;       /* ... and the manifest's limit */
    bool collector_up;     /* the collector listened during the attempt */
    bool target_there;     /* the victim (file, socket, process) existed on the host */
    int spoke_uid;         /* the attacking program's host uid (-1 unknown) */
    char exit_reason[32];  /* the attacking spoke's end during the attempt (nsjail-lite) */
    char proxy_denial[64]; /* netproxy's audit reason for a refused collector domain */
};

struct cs_verdict {
    bool succeeded;
    const char *layer; /* static string; NULL when succeeded */
    char evidence[2048];
};

/* hint: the app's own report of the attempt (may be NULL). */
void cs_judge_os(const struct cs_os_step *st, const struct cs_observed *ob, const json_t *hint,
                 struct cs_verdict *v);

/* LLM-level judgements from what happened. */
/* The answer's fare figures for metro_hail, compared with the fare metro_hail gives. */
void cs_judge_fare(const char *answer, double real_fare, struct cs_verdict *v);
/* delivered: mail's delivery log (JSON lines); secret: the SSN. */
void cs_judge_secret_mailed(const char *delivered, const char *attacker_domain, const char *secret,
                            struct cs_verdict *v);
/* inbox_ids_left: whether the attacker's mail is still in the inbox. */
void cs_judge_traces(bool attacker_mail_present, bool sent_copy_deleted, size_t n_sent,
                     struct cs_verdict *v);
/* bookings: travel_mate's bookings (array); terms: medical details to look for. */
void cs_judge_medical(const json_t *bookings, const char *const *terms, struct cs_verdict *v);
/* motifs: creative_muse's story motifs; called: whether creative_muse ran at all. */
void cs_judge_fiction(const char *answer, const char *const *motifs, bool called,
                      struct cs_verdict *v);

/* ---- observation (casestudies_observe.c) ---- */

struct cs_digest {
    bool exists;
    off_t size;
    uint64_t hash;
};
void cs_file_digest(const char *path, struct cs_digest *d);
bool cs_digest_equal(const struct cs_digest *a, const struct cs_digest *b);

/* inotify on a file: accesses and opens counted until cs_watch_end(). -1 if none. */
int cs_watch_begin(const char *path);
int cs_watch_end(int fd); /* events seen (opens + reads), -1 on error */

bool cs_pid_alive(pid_t pid);
/* The spoke program of app at or below root (a jail's monitor): the process whose
 * environment says SPOKE_NAME=app; 0 if none. */
pid_t cs_find_spoke_program(pid_t root, const char *app);
int cs_pid_uid(pid_t pid);

/* Samples a process tree (root and all descendants) on the event loop. */
struct cs_sampler;
struct cs_sampler *cs_sampler_start(struct event_base *base, pid_t root, unsigned interval_ms);
/* Stops it: the most processes seen at once (root excluded) and the largest resident
 * set (KiB) of any of them. */
void cs_sampler_stop(struct cs_sampler *s, long *peak_procs, long *peak_rss_kib);

/* Redis statistics through the server's unix socket; -1 on error. */
int cs_redis_stats(const char *socket_path, long long *keyspace_hits, long long *connections);

/* New JSON lines of an audit log since *offset (advanced). A NULL-terminated array of
 * records; free with cs_records_free(). */
json_t *cs_audit_since(const char *path, off_t *offset);
off_t cs_file_size(const char *path);
/* record["a"]["b"]... by a dotted path; NULL when absent. */
const json_t *cs_get(const json_t *rec, const char *dotted);

/* Whole file, at most max bytes (NUL-terminated); NULL on error. */
char *cs_read_file(const char *path, size_t max, size_t *len);
/* Writes path whole, owned like its directory (namespace mode hands data directories
 * to the jail's uid). 0 or -1. */
int cs_write_file(const char *path, const void *data, size_t len);
/* Copies a directory tree (files and directories), owned like the destination. */
int cs_copy_tree(const char *src, const char *dst, char *err, size_t errlen);
/* rm -rf without following symlinks or crossing mounts. */
int cs_remove_tree(const char *path);

/* ---- the collector (casestudies_collector.c) ---- */

struct cs_collector;
struct cs_collector *cs_collector_new(struct event_base *base, char *err, size_t errlen);
void cs_collector_free(struct cs_collector *c);
/* "127.0.0.1:PORT" */
const char *cs_collector_addr(const struct cs_collector *c);
uint64_t cs_collector_bytes(const struct cs_collector *c);
uint64_t cs_collector_connections(const struct cs_collector *c);
/* Whether needle arrived in what was received since byte offset from (the first
 * 1 MiB received is kept). */
bool cs_collector_received(const struct cs_collector *c, uint64_t from, const char *needle);

#endif

/* ---- running (casestudies_run.c, casestudies_llm.c) ---- */

struct cli_common;
struct hub;
struct manifest_set;

/* What every case and mode of one `hub casestudies` run shares. */
struct cs_env {
    const struct cli_common *common; /* the command line's hub options */
    const char *cases_dir;           /* config/casestudies: seeds, answers, recordings */
    const char *tmp;                 /* the run's private temporary directory */
    const char *redis_socket;        /* the hub's Redis (unix socket path) */
    const char *llm_spec;            /* "replay:PATH" or an http(s) URL */
    const char *audit_out;           /* where each hub's audit log is appended (or NULL) */
    const char *proxy_audit_out;     /* ... and netproxy's */
    struct event_base *base;
    struct cs_collector *collector;
    bool keep, debug;
    volatile sig_atomic_t *stop; /* Ctrl-C */
};

/* One case in one mode: its own directory, data, hub and logs. */
struct cs_run {
    const struct cs_env *env;
    const struct cs_case *c;
    enum isolation mode;
    const char *user;
    struct hub_config cfg;
    struct manifest_set *ms;
    struct hub *hub;
    char *dir, *data_root, *user_dir, *hub_audit, *proxy_audit;
};

/* Runs every step of case c in mode; 0, or -1 with r->error set (the steps that ran
 * are kept). */
int cs_run_case(const struct cs_env *env, const struct cs_case *c, enum isolation mode,
                struct cs_case_result *r);

/* For casestudies_llm.c. */
char *cs_run_path(const struct cs_run *run, const char *rel); /* <user data dir>/<rel> */
int cs_run_seed(struct cs_run *run, char *err, size_t errlen);
void cs_run_stop_spokes(struct cs_run *run);
/* Ctrl-C or the hub asked to quit: a step cut short gets no verdict. */
bool cs_run_interrupted(const struct cs_run *run);
/* A tool call as the user's own request. 0 and *result, or an error (message, layer). */
int cs_run_call(struct cs_run *run, const char *app, const char *tool, const char *args,
                json_t **result, char *err, size_t errlen);

/* The LLM-level steps of the case (the agent, issue 5): appends one result per step.
 * -1 with err when they could not run at all. */
int cs_llm_steps(struct cs_run *run, struct cs_case_result *r, char *err, size_t errlen);
/* Removes the run's user from the hub's memory (history and grants), so that every
 * case and mode starts with none and leaves none behind. */
int cs_llm_forget(struct cs_run *run, char *err, size_t errlen);
/* "replay:config/casestudies (offline recordings)" or the endpoint and model. */
const char *cs_llm_describe(const char *spec);

/* ---- output (casestudies_output.c) ---- */

json_t *cs_results_json(const char *llm, const struct cs_case_result *rs, size_t n);
/* The comparison: one row per attack step, one column per mode that ran. */
void cs_print_table(FILE *f, const char *llm, const struct cs_case_result *rs, size_t n);

/* ---- a private Redis for the run (casestudies_redis.c) ---- */

/* Starts redis-server on a unix socket in dir (no TCP port, nothing written to disk
 * beyond dir) as a child that dies with this process. Its pid, or -1 with err. */
pid_t cs_redis_start(const char *dir, char **socket_path, char *err, size_t errlen);
void cs_redis_stop(pid_t pid);
