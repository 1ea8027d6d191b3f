/* netproxy/core/'s interface: a connection's path that every tunnel takes, from accept
 * to splice, on either way in: the reasons a decision gives (reason.h), what the client
 * asks for (CONNECT's request head, connect.h; the transparent path's first bytes,
 * sniff.h), the host it names (host.h) and the policy for it (policy.h), the jail's
 * name resolution (resolve.h), the private-address guard (addrguard.h), the dial
 * (dial.h), the splice (tunnel.h), the answers a refusal gets (response.h), the
 * per-spoke budgets (refusalbudget.h) and the connection itself (conn.h). The accept
 * loop (listener.c) and the worker threads (worker.c) have no interface of their own. */
#ifndef NETPROXY_CORE_H
#define NETPROXY_CORE_H

#include "reason.h"

#include "addrguard.h"
#include "connect.h"
#include "dial.h"
#include "host.h"
#include "policy.h"
#include "refusalbudget.h"
#include "resolve.h"
#include "response.h"
#include "sniff.h"
#include "tunnel.h"

#include "conn.h"

#endif
