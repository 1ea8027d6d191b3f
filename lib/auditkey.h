/* The Ed25519 key that signs the audit's checkpoints (lib/auditchain.h), through
 * OpenSSL's EVP. The private key lives in the hub's state directory as a PEM file of
 * mode 0600, made on first use; the public half is what a SIEM or `hub audit verify`
 * checks the checkpoints with. A key is named by its id: the first 16 hex digits of
 * the SHA-256 of its 32 raw public bytes. */
#ifndef ISOLATE_AUDITKEY_H
#define ISOLATE_AUDITKEY_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>

#define AUDITKEY_SIG_LEN 64
#define AUDITKEY_ID_LEN 16

/* The private key at path; made (0600, atomically: two processes starting at once get
 * the same key) when there is none. A key file others may read is refused. */
EVP_PKEY *auditkey_load_or_create(const char *path, char *err, size_t errlen);
/* A private or public Ed25519 key from a PEM file (the verifier's side). */
EVP_PKEY *auditkey_load(const char *path, char *err, size_t errlen);
bool auditkey_id(EVP_PKEY *k, char out[AUDITKEY_ID_LEN + 1]);
/* The public key as PEM (SubjectPublicKeyInfo), to free; NULL on failure. */
char *auditkey_public_pem(EVP_PKEY *k);
bool auditkey_sign(EVP_PKEY *k, const void *msg, size_t len, unsigned char sig[AUDITKEY_SIG_LEN]);
bool auditkey_verify(EVP_PKEY *k, const void *msg, size_t len, const unsigned char *sig,
                     size_t siglen);

#endif
