/* The hub's own CA, for the hosts whose TLS netproxy opens to put a secret in
 * (docs/secrets.md). Made the first time a spoke needs it, in <secrets.dir>/ca/: its key
 * (0600, in the store's 0700 directory: readable by the hub only; netproxy gets it over
 * the control channel and never reads a file), its certificate, and a bundle of the
 * system's trusted CAs with this one added, which jails with such a spoke see in place
 * of /etc/ssl/certs/ca-certificates.crt. The CA is trusted nowhere else: not by the
 * host, not by spokes without a secret to inject. An ECDSA P-256 key, ten years,
 * basicConstraints CA:TRUE with pathlen 0 (it signs leaf certificates only). */
#ifndef HUB_HUBCA_H
#define HUB_HUBCA_H

#include <stddef.h>

#define HUBCA_SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* Where a jail sees them. */
#define HUBCA_JAIL_CERT "/etc/isolategpt/ca.crt"
#define HUBCA_JAIL_BUNDLE "/etc/isolategpt/ca-bundle.crt"

struct hub_ca {
    char *cert_path, *bundle_path; /* host paths */
    char *cert_pem;
    char *key_pem; /* secret memory */
};

/* Loads the CA of the store in secrets_dir, making it (and the bundle) when missing; the
 * bundle is made again when the system's is newer. 0, or -1 and err. */
int hubca_load(const char *secrets_dir, struct hub_ca *ca, char *err, size_t errlen);
void hubca_clear(struct hub_ca *ca);

#endif
