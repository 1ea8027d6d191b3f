/* The hub's CA as netproxy uses it: certificates for the hosts whose TLS it opens, made
 * when first needed and kept (one key for every leaf, made at start; a leaf per host,
 * valid for 30 days from an hour ago, reused for a day). The CA's certificate and key
 * arrive from the hub over the control channel ("tls"); netproxy never reads a file
 * for them and holds the key in memory only. Shared by the workers (a lock around the
 * cache). */
#ifndef NETPROXY_TLSCA_H
#define NETPROXY_TLSCA_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

struct tlsca;

/* PEM text of the CA's certificate and key. NULL and why. */
struct tlsca *tlsca_new(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                        char *err, size_t errlen);
void tlsca_free(struct tlsca *ca);
/* Puts the certificate for host (and the CA's, as its chain) and the leaf key on ssl.
 * false and why. */
bool tlsca_use_for(struct tlsca *ca, SSL *ssl, const char *host, char *err, size_t errlen);
/* The SHA-256 fingerprint of the CA's certificate (hex), to say which CA is in use. */
const char *tlsca_fingerprint(const struct tlsca *ca);

#endif
