/* The proxy's own seccomp filter, installed after setup (and after the privilege
 * drop): from then on it only needs sockets, pipes, memory and the clock. It parses
 * hostile input, so code execution in it must not turn into more than that.
 *
 * Allowed: network I/O on inet sockets (socket() for AF_INET/AF_INET6 only: no unix,
 * netlink or packet sockets), splice and pipes, epoll, non-executable memory, time,
 * getrandom, exit. Denied with EPERM: everything else, notably open/openat (no file
 * can be read or created), bind/listen, and making memory executable. Killed on
 * sight: execve/execveat, ptrace, process_vm_*, and the module, mount and namespace
 * calls. */
#ifndef NETPROXY_SANDBOX_H
#define NETPROXY_SANDBOX_H

#include <stddef.h>

/* Sets no_new_privs and loads the filter; -1 with a message on failure. */
int sandbox_apply(char *err, size_t errlen);

#endif
