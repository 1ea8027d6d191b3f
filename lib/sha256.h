/* SHA-256 through libcrypto: the audit's content hashes (one per argument and result
 * of every call) and the tokens of hub serve. */
#ifndef LIB_SHA256_H
#define LIB_SHA256_H

#include <stdbool.h>
#include <stddef.h>

#define SHA256_LEN 32

bool sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);
/* The digest as 64 lowercase hexadecimal digits and a NUL. */
bool sha256_hex(const void *data, size_t len, char out[2 * SHA256_LEN + 1]);

#endif
