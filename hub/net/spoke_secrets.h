/* A spoke's secrets, resolved from the store when it starts (manifest "env": {"VAR":
 * {"secret": "NAME"}}).
 *
 * A secret without hosts (env mode) is given to the spoke's environment as it is. A
 * secret with hosts (host mode) is given as a stand-in (standin.h), and the binding
 * (name, stand-in, value, hosts, header, query) goes to netproxy with the spoke's
 * listener, so that the value is put into the spoke's requests to those hosts and
 * nowhere else; the value never enters the jail. Host mode fails closed: a spoke that
 * cannot reach every host of the secret through netproxy (not in namespace mode, no
 * network, an allowlist that does not cover them) does not start, unless its manifest
 * asks for the value by name ("plain": true, `hub spokes add --secret-plain`), which
 * the hub audits at each start. Every value handed out is registered for redaction
 * (lib/redact.h) until the spoke's secrets are freed. */
#ifndef HUB_SPOKE_SECRETS_H
#define HUB_SPOKE_SECRETS_H

#include "secrets/secrets.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct manifest;
struct manifest_set;

/* One secret of a spoke. */
struct secret_binding {
    struct secret_meta meta;
    char *standin; /* NULL: the spoke holds the value itself */
    char *value;   /* secret memory */
    size_t len;
    bool plain; /* a host-mode secret handed out as it is, because the manifest asks */
};

struct spoke_secrets {
    char **env; /* NULL-terminated "VAR=value or stand-in"; wiped when freed */
    struct secret_binding *b;
    size_t n;
};

/* Resolves m's secret variables. netproxy: the isolation mode sends a spoke's traffic
 * through netproxy (namespace mode). 0, or -1 and err (a secret missing from the store
 * names the command that adds it; a host-mode secret the spoke cannot reach through
 * netproxy names the fixes). */
int spoke_secrets_resolve(struct secret_store *st, const struct manifest *m, bool netproxy,
                          struct spoke_secrets *out, char *err, size_t errlen);
void spoke_secrets_free(struct spoke_secrets *s);
/* Whether any of s's secrets is given as a stand-in (netproxy injects it). */
bool spoke_secrets_injected(const struct spoke_secrets *s);

/* Registers for redaction the value of every secret the manifests name (those that
 * can be read now), so that the hub never writes one, also before a spoke that uses
 * it has started (a user who pastes a key into a call's arguments). out keeps them
 * registered until spoke_secrets_free(). */
void spoke_secrets_known(struct secret_store *st, const struct manifest_set *ms,
                         struct spoke_secrets *out);

/* Copies of bindings (netproxy's supervisor keeps them to hand over again after a
 * restart, and to rotate). */
void secret_binding_copy(struct secret_binding *dst, const struct secret_binding *src);
void secret_binding_clear(struct secret_binding *b);
/* Replaces b's value and metadata with a newer version of the same secret (rotation);
 * the stand-in stays, since the spoke holds it. */
void secret_binding_rotate(struct secret_binding *b, const struct secret_meta *meta,
                           const char *value, size_t len);

/* A binding as netproxy's control channel carries it ({"name", "standin", "value",
 * "hosts", "header", "query"}); wipe the value with secret_json_wipe() once sent. */
json_t *secret_binding_json(const struct secret_binding *b);
/* Overwrites every "value" (and "ca_key") string in msg, nested objects and arrays
 * included, before it is freed. */
void secret_json_wipe(json_t *msg);

#endif
