/* The credentials netproxy puts into a spoke's requests (hub mode; docs/secrets.md).
 *
 * The hub sends each spoke's bindings with "add" and again on rotation ("secret"): a
 * name, the stand-in the spoke holds in its environment, the real value, the hosts the
 * value is for, and optionally the one header and the query parameter it goes in. The
 * value lives in secret memory (lib/secret.h) and is registered for redaction, so no
 * record of the proxy can hold it.
 *
 * A spoke's bindings are an immutable set behind a pointer: a rotation publishes a new
 * set, and a request in flight keeps the set it started with (a reference), so workers
 * read them without a lock held for longer than taking the reference. */
#ifndef NETPROXY_CREDS_H
#define NETPROXY_CREDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CRED_NAME_MAX 64
#define CRED_MAX_PER_SPOKE 32
#define CRED_MAX_HOSTS 16
#define CRED_VALUE_MAX 4096

struct cred {
    char name[CRED_NAME_MAX + 1];
    char *standin;
    size_t standin_len;
    char *value; /* secret memory */
    size_t value_len;
    char **hosts; /* NULL-terminated: "api.example.com" or "*.example.com" */
    char *header; /* only in this header (NULL: any) */
    char *query;  /* also in this query parameter (NULL: none) */
};

struct cred_set {
    unsigned refs;
    struct cred *v;
    size_t n;
    size_t longest_standin;
};

/* One binding from its JSON object ({"name", "standin", "value", "hosts", "header",
 * "query"}); the value's bytes in msg are wiped once copied. false and why. */
bool cred_parse(json_t *obj, struct cred *out, char *err, size_t errlen);
void cred_clear(struct cred *c);

/* A set from a JSON array of bindings (NULL or empty: an empty set). NULL and why. */
struct cred_set *cred_set_parse(json_t *arr, char *err, size_t errlen);
/* A copy of s with cred replacing the binding of the same name (or added); takes
 * ownership of cred's contents. NULL when the set would be too large. */
struct cred_set *cred_set_with(const struct cred_set *s, struct cred *cred);
struct cred_set *cred_set_ref(struct cred_set *s);
void cred_set_unref(struct cred_set *s);

/* Whether the binding's value is for host (a canonical name). */
bool cred_for_host(const struct cred *c, const char *host);
/* Whether any binding of s is for host: its TLS is opened to put the value in. */
bool cred_set_for_host(const struct cred_set *s, const char *host);

/* The first stand-in of s in buf[0..len) for which want(cred, ud) holds: the binding,
 * or NULL; *at is where it begins. */
const struct cred *cred_set_find(const struct cred_set *s, const char *buf, size_t len,
                                 bool (*want)(const struct cred *, void *), void *ud, size_t *at);

#endif
