/* Escape probes shared by the two hostile programs: tests/nsjail/hostile (run inside
 * nsjail-lite by test_escape.sh) and tests/matrix/escape_spoke (the hub's hostile spoke
 * that scripts/escape-matrix runs in every isolation mode).
 *
 * A probe runs in a child process of its own (probe_run) and ends by reporting one
 * machine-readable outcome, a string:
 *
 *   ok[:detail]        the attempt worked
 *   errno:ENAME[:...]  the operation failed with that errno
 *   signal:SIGNAME     the attempt's process was killed (SIGSYS: seccomp)
 *   blocked:detail     a check found nothing to exploit (no capability, no route...)
 *   unsafe:detail      a mutating attempt was not tried (tests/nsjail/hostile's guard)
 *   skip:detail        not applicable here */
#ifndef TESTS_NSJAIL_PROBES_H
#define TESTS_NSJAIL_PROBES_H

#include <stdbool.h>
#include <stddef.h>

#define PROBE_OUT_MAX 256

typedef void (*probe_fn)(void *ud);

/* Runs fn(ud) in a child process (killed by SIGALRM after timeout_s) and puts its
 * outcome in out: what it reported, or signal:SIGNAME, or error:... */
void probe_run(probe_fn fn, void *ud, unsigned timeout_s, char *out, size_t outlen);
/* The child's pipe to probe_run (a probe that lists descriptors skips it). */
int probe_pipe_fd(void);

/* In the probe's child: report an outcome and exit. */
_Noreturn void probe_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void probe_report_errno(void);
/* A syscall's result: >= 0 reports ok, < 0 the errno. */
_Noreturn void probe_outcome(long rc);

/* Connected sockets (-1 and errno otherwise). name "@NAME" is an abstract socket. */
int probe_connect_tcp(const char *addr, int port, int timeout_ms);
int probe_connect_unix(const char *name);
/* A field of /proc/self/status ("CapEff", "NoNewPrivs", ...). */
bool probe_status_field(const char *key, char *value, size_t size);

/* Opens path read-only, or for writing without writing anything; reports. */
_Noreturn void probe_open_ro(const char *path);
_Noreturn void probe_open_wr(const char *path);

/* Kernel interfaces. None of these changes anything outside its own process. */
_Noreturn void probe_unshare_user(void);
_Noreturn void probe_setns(void);
_Noreturn void probe_bpf(void);
_Noreturn void probe_perf_event_open(void);
/* The session keyring's id (keyrings are not namespaced: they hold other users' keys). */
_Noreturn void probe_keyctl(void);
_Noreturn void probe_dev_disk(void);
_Noreturn void probe_caps(void);
/* finit_module on a descriptor that is not open: the kernel checks CAP_SYS_MODULE
 * (and modules_disabled) before the descriptor, so EBADF means "would have loaded". */
_Noreturn void probe_finit_module(void);

#endif
