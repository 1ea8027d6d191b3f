/* Why a request was refused (or a tunnel closed): one stable code per cause, used as
 * the audit record's event.reason, the X-Proxy-Error header and the metrics label, so
 * that an agent, an operator and a SIEM all see the same word. */
#ifndef NETPROXY_REASON_H
#define NETPROXY_REASON_H

enum reason {
    R_ALLOWED,
    R_BAD_REQUEST,       /* 400: request line or header syntax, authority form */
    R_BAD_HOST,          /* 400: the host cannot be canonicalised */
    R_METHOD,            /* 405: anything but CONNECT */
    R_LINE_TOO_LONG,     /* 414 */
    R_HEADERS_TOO_LARGE, /* 431: bytes or count */
    R_VERSION,           /* 505: a well-formed HTTP version other than 1.0/1.1 */
    R_HEADER_TIMEOUT,    /* 408: the client did not finish its request in time */
    R_INCOMPLETE,        /* no answer possible: the client left mid-request */
    R_NOT_ALLOWED,       /* 403: registrable domain not in the spoke's list */
    R_PUBLIC_SUFFIX,     /* 403: the host is itself a public suffix */
    R_IP_LITERAL,        /* 403: an IP literal that is not listed */
    R_PORT,              /* 403: destination port not allowed */
    R_ADDRESS,           /* 403: resolved to a non-public address */
    R_LOOP,              /* 403: the destination is one of the proxy's listeners */
    R_DNS_FAIL,          /* 502 */
    R_DNS_TIMEOUT,       /* 504 */
    R_CONNECT_FAIL,      /* 502 */
    R_CONNECT_TIMEOUT,   /* 504 */
    R_LIMIT_GLOBAL,      /* 503 + Retry-After */
    R_LIMIT_SPOKE,       /* 429 + Retry-After */
    R_LIMIT_PENDING,     /* 503 + Retry-After: too many requests still being read */
    R_AUDIT,             /* 503: the decision could not be logged, so no tunnel */
    R_SHUTDOWN,          /* 503: draining */
    R_INTERNAL,          /* 500: out of descriptors and the like */
    /* Transparent egress (no HTTP answer: the connection is reset) and the resolver. */
    R_PROTOCOL,            /* neither a TLS ClientHello nor an HTTP/1 request on a name */
    R_SNI_MISSING,         /* a ClientHello without server_name on a name-based grant */
    R_SNI_MISMATCH,        /* server_name (or Host) is not the name the address stands for */
    R_SYNTHETIC_UNKNOWN,   /* a synthetic address the spoke's resolver never handed out */
    R_SYNTHETIC_FULL,      /* the spoke has used up its synthetic addresses */
    R_DNS_MALFORMED,       /* a query that is not well-formed DNS (FORMERR) */
    R_DNS_NOT_IMPLEMENTED, /* another opcode or class (NOTIMP) */
    R_DNS_RATE,            /* over the spoke's query rate: dropped */
    R_UDP,                 /* a UDP datagram to anything but the resolver */
    /* Requests inside a tunnel whose TLS netproxy opened to put a secret in (inject.h). */
    R_CRED_WRONG_HOST, /* 403: a secret's stand-in sent to a host it is not for */
    R_HOST_MISMATCH,   /* 421: the request names another host than the tunnel's */
    R_UPSTREAM_TLS,    /* 502: the upstream's certificate or handshake failed */
    R_CLIENT_TLS,      /* the client's handshake failed (or named another host) */
    R_COUNT
};

/* Why an established tunnel ended (the close record's event.reason). */
enum close_reason {
    CLOSE_DONE,         /* both sides closed their halves */
    CLOSE_CLIENT_RESET, /* an error on the client side */
    CLOSE_UPSTREAM_RESET,
    CLOSE_IDLE,     /* no byte either way for --idle-timeout */
    CLOSE_LIFETIME, /* --max-lifetime reached */
    CLOSE_SHUTDOWN, /* drain timeout or a second SIGTERM */
    CLOSE_INTERNAL,
    CLOSE_REFUSED, /* a request in it was refused (its record says why) */
    CLOSE_TLS,     /* a TLS error on either side of a tunnel netproxy opened */
    CLOSE_COUNT
};

const char *reason_code(enum reason r);
int reason_status(enum reason r);
const char *close_reason_code(enum close_reason r);
/* "Forbidden", "Bad Request", ... for the status line. */
const char *http_status_text(int status);

#endif
