/* pidfd_open(2) without <sys/pidfd.h> (Debian 12's glibc has no wrapper): a descriptor
 * that becomes readable when the process ends, so child exits arrive on the event loop
 * like any other event, with no SIGCHLD handler to race. */
#ifndef HUB_PIDFD_H
#define HUB_PIDFD_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static inline int hub_pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

#endif
