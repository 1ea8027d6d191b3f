/* Non-blocking connect to an address that addrguard has already checked. Dialling
 * takes an address, never a name: there is no second lookup to rebind. */
#ifndef NETPROXY_DIAL_H
#define NETPROXY_DIAL_H

#include <sys/socket.h>

/* 0: connected at once; 1: in progress (wait for writability); -1 with errno. */
int dial_start(const struct sockaddr *sa, int *fd);
/* After writability: 0 when connected, else the connect error. */
int dial_finish(int fd);

#endif
