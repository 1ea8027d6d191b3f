/* What netproxy does with one request to a host whose TLS it opened (or one it sees in
 * clear): the decision and the rewriting, the same for HTTP/1.1 and HTTP/2.
 *
 * - The request's authority (Host, :authority, or an absolute target; every one of them
 *   when it names several, as HTTP/2's `host` beside `:authority`) must be the host
 *   the tunnel goes to: a request that names another (domain fronting on a shared
 *   front) is refused with 421, so a value can only reach the host it is for.
 * - A stand-in of a binding that is not for this host, anywhere in the request (target,
 *   any header, a Basic credential, the body), is refused with 403
 *   credential-to-wrong-host: the tool is sending its key somewhere it does not belong.
 * - A stand-in of a binding for this host is replaced by the value in the request's
 *   headers (only in the binding's header when it names one; inside a Basic
 *   credential too) and in its query parameter when it names one; anywhere else (the
 *   body, another parameter) it passes unchanged: it is worthless there.
 * - Over clear HTTP nothing is injected: the value would cross the network in clear.
 * - A request without a stand-in passes unchanged. */
#ifndef NETPROXY_INJECT_H
#define NETPROXY_INJECT_H

#include "creds.h"
#include "netproxy/core/core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INJECT_MAX_INJECTED 8

struct inject_field {
    const char *name, *value;
    size_t name_len, value_len;
};

struct inject_req {
    const char *method, *target, *authority; /* authority NULL: none given */
    size_t method_len, target_len, authority_len;
    const struct inject_field *fields;
    size_t n_fields;
};

/* Where the tunnel goes. */
struct inject_dest {
    const char *host; /* canonical */
    uint16_t port;
    bool tls; /* netproxy opened TLS: values may be injected */
};

struct inject_result {
    enum reason verdict; /* R_ALLOWED, R_CRED_WRONG_HOST, R_HOST_MISMATCH, R_BAD_REQUEST */
    char detail[300];
    const struct cred *wrong; /* R_CRED_WRONG_HOST: whose stand-in */
    /* Rewritten parts (malloc'd, wiped when freed), NULL where unchanged. */
    char *target;
    size_t target_len;
    char **values; /* one per field */
    size_t *value_lens;
    size_t n_values;
    const struct cred *injected[INJECT_MAX_INJECTED];
    size_t n_injected;
};

/* Decides and rewrites; res is always to be freed. */
void inject_request(const struct cred_set *s, const struct inject_dest *d,
                    const struct inject_req *rq, struct inject_result *res);
void inject_result_free(struct inject_result *res);

/* A binding whose stand-in in buf[0..len) would go to the wrong host, or NULL. */
const struct cred *inject_wrong_host(const struct cred_set *s, const char *host, const char *buf,
                                     size_t len);

/* A byte stream (a body, an opaque tunnel) scanned for wrong-host stand-ins across
 * its chunks: the tail of the last chunk that could begin one is kept. */
struct scan_carry {
    char *tail;
    size_t len;
};
const struct cred *inject_scan_stream(struct scan_carry *sc, const struct cred_set *s,
                                      const char *host, const char *buf, size_t len);
void scan_carry_free(struct scan_carry *sc);

/* Whether an authority ("host", "host:port", "[v6]:port") names dest. */
bool inject_authority_is(const struct inject_dest *d, const char *a, size_t len);

#endif
