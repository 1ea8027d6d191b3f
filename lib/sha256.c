/* The digest is fetched from libcrypto's providers once: EVP_sha256() alone makes
 * OpenSSL 3 look it up again on every EVP_Digest(), which was a fifth of what hashing
 * a call's small arguments cost. Thread-safe (serve's LLM thread audits too). */
#include "sha256.h"
#include "util.h"

#include <openssl/evp.h>
#include <pthread.h>

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256_md; /* kept for the life of the process */

static void fetch_sha256(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

bool sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
    pthread_once(&fetch_once, fetch_sha256);
    unsigned n = 0;
    const EVP_MD *md = sha256_md ? sha256_md : EVP_sha256();
    return EVP_Digest(data, len, out, &n, md, NULL) == 1 && n == SHA256_LEN;
}

bool sha256_hex(const void *data, size_t len, char out[2 * SHA256_LEN + 1])
{
    unsigned char md[SHA256_LEN];
    if (!sha256(data, len, md))
        return false;
    hex_encode(md, SHA256_LEN, out);
    return true;
}
