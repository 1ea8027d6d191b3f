/* Reopening the audit file after the proxy has given up its privileges.
 *
 * The proxy's seccomp filter forbids open(2), and after the privilege drop it may not
 * be allowed to create files where the log lives. So before dropping, it forks a tiny
 * helper that keeps the privileges and does one thing: on request, open the one audit
 * path fixed at startup (O_APPEND|O_CREAT) and pass the descriptor back with
 * SCM_RIGHTS. The request carries no path, so a compromised proxy cannot make the
 * helper open anything else. The helper runs its own, tighter seccomp filter and dies
 * with its parent. */
#ifndef NETPROXY_LOGOPENER_H
#define NETPROXY_LOGOPENER_H

#include <stdbool.h>
#include <stddef.h>

struct logopener;

/* Forks the helper for path; NULL and a message on failure. Call before creating the
 * event loop and before dropping privileges. sandbox: install the helper's filter
 * (false only with --no-seccomp). */
struct logopener *logopener_start(const char *path, bool sandbox, char *err, size_t errlen);
/* Asks for a fresh descriptor (waits up to 2 s); -1 with errno on failure. */
int logopener_open(struct logopener *o);
/* Descriptor the helper listens on, to keep it open across fd-closing code. */
int logopener_fd(const struct logopener *o);
/* Ends the helper and reaps it. */
void logopener_stop(struct logopener *o);

#endif
