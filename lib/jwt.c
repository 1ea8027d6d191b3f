#include "jwt.h"
#include "util.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum jwk_type { JWK_RSA, JWK_EC };

struct jwk {
    char kid[129];
    char alg[16]; /* "" when the key names none */
    enum jwk_type type;
    EVP_PKEY *pkey;
};

struct jwks {
    struct jwk keys[JWKS_MAX_KEYS];
    size_t n;
};

unsigned char *b64url_decode(const char *s, size_t len, size_t *n)
{
    if (len % 4 == 1)
        return NULL;
    unsigned char *out = xmalloc(len * 3 / 4 + 2);
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i], v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '-')
            v = 62;
        else if (c == '_')
            v = 63;
        else {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    out[o] = '\0';
    *n = o;
    return out;
}

/* ---- keys ---- */

static BIGNUM *jwk_bn(const json_t *k, const char *name, size_t max)
{
    const char *s = json_string_value(json_object_get(k, name));
    size_t n;
    unsigned char *raw = s && strlen(s) <= max * 2 ? b64url_decode(s, strlen(s), &n) : NULL;
    BIGNUM *bn = raw && n > 0 && n <= max ? BN_bin2bn(raw, (int)n, NULL) : NULL;
    free(raw);
    return bn;
}

static EVP_PKEY *rsa_key(const json_t *k)
{
    BIGNUM *n = jwk_bn(k, "n", 1024), *e = jwk_bn(k, "e", 8);
    EVP_PKEY *pkey = NULL;
    /* Below 2048 bits a key is refused: it signs nothing this hub believes. */
    if (n && e && BN_num_bits(n) >= 2048) {
        OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
        OSSL_PARAM *p = NULL;
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
        if (b && ctx && OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, n) &&
            OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, e) &&
            (p = OSSL_PARAM_BLD_to_param(b)) && EVP_PKEY_fromdata_init(ctx) > 0 &&
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, p) <= 0)
            pkey = NULL;
        OSSL_PARAM_free(p);
        OSSL_PARAM_BLD_free(b);
        EVP_PKEY_CTX_free(ctx);
    }
    BN_free(n);
    BN_free(e);
    return pkey;
}

static EVP_PKEY *ec_key(const json_t *k)
{
    const char *crv = json_string_value(json_object_get(k, "crv"));
    const char *xs = json_string_value(json_object_get(k, "x"));
    const char *ys = json_string_value(json_object_get(k, "y"));
    if (!crv || strcmp(crv, "P-256") != 0 || !xs || !ys)
        return NULL;
    size_t xn, yn;
    unsigned char *x = b64url_decode(xs, strlen(xs), &xn), *y = b64url_decode(ys, strlen(ys), &yn);
    EVP_PKEY *pkey = NULL;
    if (x && y && xn == 32 && yn == 32) {
        unsigned char point[65] = {0x04};
        memcpy(point + 1, x, 32);
        memcpy(point + 33, y, 32);
        char group[] = "prime256v1";
        OSSL_PARAM p[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point)),
            OSSL_PARAM_construct_end()};
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
        /* fromdata checks that the point is on the curve. */
        if (!ctx || EVP_PKEY_fromdata_init(ctx) <= 0 ||
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, p) <= 0)
            pkey = NULL;
        EVP_PKEY_CTX_free(ctx);
    }
    free(x);
    free(y);
    return pkey;
}

struct jwks *jwks_parse(const char *text, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    json_t *keys = json_object_get(root, "keys");
    if (!json_is_array(keys)) {
        snprintf(err, errlen, "not a JSON Web Key Set (%s)", root ? "no \"keys\" array" : je.text);
        json_decref(root);
        return NULL;
    }
    struct jwks *ks = xcalloc(1, sizeof(*ks));
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        if (ks->n >= JWKS_MAX_KEYS)
            break;
        const char *kty = json_string_value(json_object_get(k, "kty"));
        const char *use = json_string_value(json_object_get(k, "use"));
        const char *kid = json_string_value(json_object_get(k, "kid"));
        const char *alg = json_string_value(json_object_get(k, "alg"));
        if (!kty || (use && strcmp(use, "sig") != 0) || (kid && strlen(kid) > 128) ||
            (alg && strlen(alg) > 15))
            continue;
        struct jwk *w = &ks->keys[ks->n];
        if (strcmp(kty, "RSA") == 0) {
            w->type = JWK_RSA;
            w->pkey = rsa_key(k);
        } else if (strcmp(kty, "EC") == 0) {
            w->type = JWK_EC;
            w->pkey = ec_key(k);
        }
        if (!w->pkey)
            continue;
        str_copy(w->kid, kid ? kid : "", sizeof(w->kid));
        str_copy(w->alg, alg ? alg : "", sizeof(w->alg));
        ks->n++;
    }
    json_decref(root);
    if (ks->n == 0) {
        snprintf(err, errlen, "the key set holds no RSA (2048 bits or more) or P-256 signing key");
        jwks_free(ks);
        return NULL;
    }
    return ks;
}

void jwks_free(struct jwks *ks)
{
    if (!ks)
        return;
    for (size_t i = 0; i < ks->n; i++)
        EVP_PKEY_free(ks->keys[i].pkey);
    free(ks);
}

size_t jwks_count(const struct jwks *ks)
{
    return ks ? ks->n : 0;
}

bool jwks_has_kid(const struct jwks *ks, const char *kid)
{
    for (size_t i = 0; ks && kid && i < ks->n; i++)
        if (strcmp(ks->keys[i].kid, kid) == 0)
            return true;
    return false;
}

/* ---- tokens ---- */

static json_t *b64_json(const char *s, size_t len)
{
    size_t n;
    unsigned char *raw = b64url_decode(s, len, &n);
    json_t *v = raw ? json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL) : NULL;
    free(raw);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

/* ES256's signature is r || s (32 bytes each); OpenSSL verifies DER. */
static unsigned char *es256_der(const unsigned char *sig, size_t n, size_t *der_len)
{
    if (n != 64)
        return NULL;
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
    if (!es || !r || !s || !ECDSA_SIG_set0(es, r, s)) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(es);
        return NULL;
    }
    unsigned char *der = NULL;
    int len = i2d_ECDSA_SIG(es, &der);
    ECDSA_SIG_free(es);
    if (len <= 0)
        return NULL;
    *der_len = (size_t)len;
    return der;
}

static bool verify(const struct jwk *w, const char *input, size_t input_len,
                   const unsigned char *sig, size_t sig_len)
{
    unsigned char *der = NULL;
    size_t der_len = 0;
    if (w->type == JWK_EC) {
        if (!(der = es256_der(sig, sig_len, &der_len)))
            return false;
        sig = der;
        sig_len = der_len;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, w->pkey) == 1 &&
              EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)input, input_len) == 1;
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    return ok;
}

json_t *jwt_verify(const struct jwks *ks, const char *token, size_t len, char **kid_out, char *err,
                   size_t errlen)
{
    *kid_out = NULL;
    if (len == 0 || len > JWT_MAX) {
        snprintf(err, errlen, "the token is %s", len ? "too long" : "empty");
        return NULL;
    }
    const char *d1 = memchr(token, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
    if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token))) {
        snprintf(err, errlen, "not a compact JWS (three parts)");
        return NULL;
    }
    json_t *header = b64_json(token, (size_t)(d1 - token));
    const char *alg = json_string_value(json_object_get(header, "alg"));
    const char *kid = json_string_value(json_object_get(header, "kid"));
    json_t *claims = NULL;
    if (!header || !alg) {
        snprintf(err, errlen, "the token's header is not a JSON object with an alg");
        goto out;
    }
    if (kid)
        *kid_out = strndup(kid, 128);
    /* Only the two asymmetric algorithms: "none" and HS256 (with the public key as its
     * "secret") are the classic forgeries. */
    enum jwk_type want;
    if (strcmp(alg, "RS256") == 0)
        want = JWK_RSA;
    else if (strcmp(alg, "ES256") == 0)
        want = JWK_EC;
    else {
        snprintf(err, errlen, "algorithm %.20s is not accepted (RS256 and ES256 are)", alg);
        goto out;
    }
    if (json_object_get(header, "crit")) {
        snprintf(err, errlen, "the token names critical header parameters this hub does not know");
        goto out;
    }
    const struct jwk *w = NULL;
    size_t fits = 0;
    for (size_t i = 0; i < ks->n; i++) {
        const struct jwk *k = &ks->keys[i];
        if (k->type != want || (k->alg[0] && strcmp(k->alg, alg) != 0))
            continue;
        if (kid ? strcmp(k->kid, kid) == 0 : ++fits == 1)
            w = k;
        if (kid && w)
            break;
    }
    if (!w || (!kid && fits != 1)) {
        if (kid)
            snprintf(err, errlen, "no %s key of kid %.64s in the issuer's key set", alg, kid);
        else
            snprintf(err, errlen, "the token names no kid and the key set has %s %s key",
                     fits ? "more than one" : "no", alg);
        goto out;
    }
    size_t sig_len;
    unsigned char *sig = b64url_decode(d2 + 1, len - (size_t)(d2 + 1 - token), &sig_len);
    bool good = sig && verify(w, token, (size_t)(d2 - token), sig, sig_len);
    free(sig);
    if (!good) {
        snprintf(err, errlen, "the signature does not verify");
        goto out;
    }
    claims = b64_json(d1 + 1, (size_t)(d2 - d1 - 1));
    if (!claims)
        snprintf(err, errlen, "the token's claims are not a JSON object");
out:
    json_decref(header);
    return claims;
}
