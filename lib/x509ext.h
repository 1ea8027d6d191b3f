/* One X.509v3 extension added to a certificate being made, as OpenSSL's config syntax
 * writes it ("critical,CA:TRUE", "hash", "keyid:always", "DNS:example.com"): the hub's
 * CA and netproxy's leaf certificates are made with it. */
#ifndef ISOLATE_X509EXT_H
#define ISOLATE_X509EXT_H

#include <openssl/x509.h>
#include <stdbool.h>

/* issuer: the certificate that signs cert (cert itself for a self-signed one). */
bool x509_add_ext(X509 *cert, X509 *issuer, int nid, const char *value);

#endif
