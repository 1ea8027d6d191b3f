/* Giving up root: once the listening sockets are bound and the files it needs are
 * open, the proxy becomes an unprivileged user (default "nobody"), with no
 * supplementary groups, no capabilities, no way back (checked), and not dumpable. */
#ifndef NETPROXY_PRIVDROP_H
#define NETPROXY_PRIVDROP_H

#include <stddef.h>

/* Only when running as root; returns 0, or -1 with a message. */
int privdrop(const char *user, char *err, size_t errlen);

#endif
