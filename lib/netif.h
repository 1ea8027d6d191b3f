/* Network interfaces of the calling thread's network namespace. */
#ifndef ISOLATE_NETIF_H
#define ISOLATE_NETIF_H

/* Brings the interface NAME up (SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP; nothing
 * to do if it is up already). 0, or -1 with errno set. */
int netif_up(const char *name);

#endif
