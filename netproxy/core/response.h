/* The proxy's own HTTP answers. A refusal is one short response that an agent can act
 * on: the status, an X-Proxy-Error header with the stable reason code, Retry-After for
 * limits, and a one-line body saying why. Nothing from the request is echoed except
 * the canonical host, which is plain ASCII by then. */
#ifndef NETPROXY_RESPONSE_H
#define NETPROXY_RESPONSE_H

#include "reason.h"

#include <stddef.h>

#define RESPONSE_ESTABLISHED "HTTP/1.1 200 Connection established\r\n\r\n"

/* Returns a malloc'd response and its length. detail must be printable ASCII. */
char *response_build(enum reason r, const char *detail, unsigned retry_after_s, size_t *len);

#endif
