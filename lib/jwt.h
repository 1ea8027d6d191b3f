/* JSON Web Tokens signed by a key of a JSON Web Key Set (RFC 7515, 7517, 7519), as an
 * OAuth resource server checks them (hub serve --oauth): compact JWS, RS256 (RSA of
 * 2048 bits or more, PKCS#1 v1.5) and ES256 (P-256) only; "none", the HMAC family and
 * every other algorithm are refused before any key is looked at, and a key is used only
 * for the algorithm its type fits (an RSA key never verifies an HMAC: the public key as
 * a shared secret is no secret). Bounded throughout: a token of at most JWT_MAX bytes,
 * a set of at most JWKS_MAX_KEYS keys. The claims are the caller's to check (jwt_verify
 * only vouches that the key signed them). OpenSSL's libcrypto does the mathematics. */
#ifndef ISOLATE_JWT_H
#define ISOLATE_JWT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JWT_MAX 8192
#define JWKS_MAX_KEYS 32

struct jwks;

/* A key set from its JSON ({"keys": [...]}): the RSA and EC P-256 signing keys in it
 * (others are skipped: an encryption key, an HMAC "oct" key, another curve). NULL with
 * err when it is not a key set or holds no usable key. */
struct jwks *jwks_parse(const char *text, size_t len, char *err, size_t errlen);
void jwks_free(struct jwks *ks);
size_t jwks_count(const struct jwks *ks);
/* Whether a key of this kid is in the set (so that an unknown one may fetch it anew). */
bool jwks_has_kid(const struct jwks *ks, const char *kid);

/* The token's claims (a new reference) when its signature is valid under a key of ks:
 * the key its header's kid names (or the set's only key of the algorithm's type when
 * there is no kid), whose type and "alg" (if any) fit the header's alg. NULL with err
 * (and *kid, a new string, the kid the header named, for a refresh) otherwise. */
json_t *jwt_verify(const struct jwks *ks, const char *token, size_t len, char **kid, char *err,
                   size_t errlen);

/* base64url without padding (RFC 4648 section 5): the bytes, *n their count, NUL-
 * terminated for convenience; NULL for anything else. */
unsigned char *b64url_decode(const char *s, size_t len, size_t *n);

#endif
