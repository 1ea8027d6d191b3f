/* Shared by the attack attempts: the parsed orders and the report helpers. */
#ifndef SPOKES_ATTACK_INTERNAL_H
#define SPOKES_ATTACK_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct orders {
    const char *attempt;
    const char *data_dir; /* this app's SPOKE_DATA */
    /* the victim: an app name ("*": every other spoke of the user), a file of it
     * relative to the user's data directory, and what the attacker knows of where it
     * lives on the host (the worst case: the attacker learned the host path and pid) */
    const char *victim_app;
    const char *victim_rel;
    const char *victim_path;
    pid_t victim_pid;
    const char *content;        /* what to write over a victim file */
    char *payload;              /* the tool call's arguments: sent when there is no file to steal */
    const char *collector_addr; /* "127.0.0.1:PORT": the attacker's server */
    const char *collector_domain; /* its name, asked of an HTTPS proxy */
    int collector_port;           /* the port asked of the proxy (0: 443) */
    const char *redis_socket;
    const char *redis_key;
    long cap;   /* bombs: stop here (processes, MiB of memory or of file) */
    long limit; /* the limit the manifest sets, for the report */
};

/* Each attempt fills its report (an object) with at least "result": "done" or
 * "failed" and, on failure, "errno" and "detail". */
typedef void (*attempt_fn)(const struct orders *o, json_t *report);

void attack_overwrite_file(const struct orders *o, json_t *report);
void attack_read_file(const struct orders *o, json_t *report);
void attack_delete_files(const struct orders *o, json_t *report);
void attack_kill(const struct orders *o, json_t *report);
void attack_ptrace_poke(const struct orders *o, json_t *report);
void attack_procmem_poke(const struct orders *o, json_t *report);
void attack_exfil_direct(const struct orders *o, json_t *report);
void attack_exfil_proxy(const struct orders *o, json_t *report);
void attack_redis_read(const struct orders *o, json_t *report);
void attack_fork_bomb(const struct orders *o, json_t *report);
void attack_memory_bomb(const struct orders *o, json_t *report);
void attack_disk_bomb(const struct orders *o, json_t *report);

/* report.result = "failed", errno name, "what: strerror". Returns false. */
bool report_errno(json_t *report, const char *what, int err);
void report_done(json_t *report, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends one line "what: errno name" to report.tries (every path tried is listed). */
void report_try(json_t *report, const char *what, int err);

/* The user's data directory: the parent of this app's (realpath). NULL if unknown. */
char *user_data_dir(const struct orders *o);
/* The victim's file: the sibling guess <data>/../<rel>, then the host path. Opens the
 * first that works with flags; -1 (errno of the last try) when none does. The path
 * that worked goes to *used (malloc'ed) when used is not NULL. */
int open_victim_file(const struct orders *o, int flags, json_t *report, char **used);
/* What the stolen file holds, to send on: read once (bounded) or NULL. */
char *steal_victim_file(const struct orders *o, json_t *report, size_t *len);

/* Whether this process runs under a seccomp filter (/proc/self/status Seccomp: 2). */
int seccomp_mode(void);

#endif
