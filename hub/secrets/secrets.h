/* The secret store: the keys of the tools (API tokens), kept where only the hub can
 * read them and never written into a manifest.
 *
 * One file per secret, <secrets.dir>/NAME.json (the directory 0700 and each file 0600,
 * owned by the hub's user; anything looser is refused), holding the secret's metadata
 * in clear (hosts, header, query parameter, when it was set) and its value encrypted
 * with AES-256-GCM under the store key. The metadata is the cipher's associated data:
 * a file edited by someone without the key (another host added, so that the value
 * would be injected there) no longer decrypts.
 *
 * The store key is 32 random bytes (raw, or 64 hex digits) made by the first `hub
 * secrets set`, read from $CREDENTIALS_DIRECTORY/secrets.key when the hub runs as a
 * systemd unit with LoadCredential=secrets.key:... (or LoadCredentialEncrypted=), else
 * from secrets.key_file. Kept apart from the store (another disk, a credential sealed
 * to the TPM), a copy of the store alone reveals no value. docs/secrets.md says what
 * this protects against and what not. */
#ifndef HUB_SECRETS_H
#define HUB_SECRETS_H

#include "hubca.h"
#include "keylike.h"
#include "secretscan.h"
#include "standin.h"

#include <stdbool.h>
#include <stddef.h>

#define SECRET_NAME_MAX 64
#define SECRET_MAX_HOSTS 16
#define SECRET_HOST_MAX 253
#define SECRET_FIELD_MAX 64 /* header and query parameter names */
/* A value given to a spoke's environment (env mode): a page of environment. */
#define SECRET_VALUE_MAX 65536
/* A value injected into requests (host mode): it must fit a header line. */
#define SECRET_INJECT_MAX 4096
/* The credential netproxy's systemd unit would load, by its id. */
#define SECRET_CREDENTIAL_ID "secrets.key"

/* The header a secret set with `--header any` is recorded with. */
#define SECRET_HEADER_ANY "*"

/* What the store says about a secret, never its value. hosts is NULL-terminated and
 * empty for a secret given to the spoke's environment as it is (env mode); otherwise
 * the spoke gets a stand-in and netproxy puts the value into requests to these hosts
 * (exact names, or "*.example.com" for any name under example.com). */
struct secret_meta {
    char name[SECRET_NAME_MAX + 1];
    char **hosts;
    /* Only in this request header; SECRET_HEADER_ANY: in any header (`--header any`);
     * NULL (a record set before Authorization was the default): the header of the
     * value's shape (keylike_header), decided when the value is bound to a spoke. */
    char *header;
    char *query;  /* also in this query parameter (NULL: none) */
    char set_at[40];
};

struct secret_store;

/* The store in dir, its key in key_file (the configuration's secrets.dir and
 * secrets.key_file: the runtime's secret_store_new() passes them). Nothing is read or
 * created yet. */
struct secret_store *secret_store_open(const char *dir, const char *key_file);
void secret_store_free(struct secret_store *st);
const char *secret_store_dir(const struct secret_store *st);
/* Where the key comes from: the credential's path or key_file. */
const char *secret_store_key_path(const struct secret_store *st);

/* Stores value under meta->name (meta->set_at is filled in), replacing any secret of
 * that name atomically; makes the directory and the key when they are missing
 * (*created_key says so, for the command to tell the operator). 0, or -1 and err. */
int secret_store_set(struct secret_store *st, struct secret_meta *meta, const char *value,
                     size_t len, bool *created_key, char *err, size_t errlen);
/* The secret's metadata and, when value is not NULL, its value in secret memory
 * (lib/secret.h: free with secret_free) and its length. 1 found, 0 not in the store,
 * -1 and err (unreadable, tampered with, the key missing or wrong). */
int secret_store_get(struct secret_store *st, const char *name, struct secret_meta *meta,
                     char **value, size_t *len, char *err, size_t errlen);
/* Every secret's metadata, sorted by name (no value is decrypted). 0, or -1 and err. */
int secret_store_list(struct secret_store *st, struct secret_meta **out, size_t *n, char *err,
                      size_t errlen);
void secret_meta_list_free(struct secret_meta *v, size_t n);
/* 1 removed, 0 there was none, -1 and err. */
int secret_store_rm(struct secret_store *st, const char *name, char *err, size_t errlen);

void secret_meta_clear(struct secret_meta *m);
void secret_meta_copy(struct secret_meta *dst, const struct secret_meta *src);

/* Names: 1-64 of [A-Za-z0-9_.-], starting with a letter or digit. */
bool secret_name_valid(const char *s);
/* A host a secret is injected for: a lower-case DNS name with a dot, or "*." and one. */
bool secret_host_valid(const char *s);
/* An HTTP header name (RFC 9110 token) / a query parameter name (unreserved chars). */
bool secret_header_valid(const char *s);
bool secret_query_valid(const char *s);
/* Whether a spoke with this allowlist (NULL-terminated registrable domains, as the
 * manifest's network.allow) reaches every host of m through netproxy (netproxy: the
 * isolation mode has one): true, or false
 * with why in err (not the fix, which depends on who asks). */
bool secret_hosts_reachable(const struct secret_meta *m, char *const *allow, bool netproxy,
                            char *err, size_t errlen);
/* Whether host matches one of the secret's hosts. */
bool secret_host_matches(const struct secret_meta *m, const char *host);
/* A value that can be put into a request header: printable ASCII, no spaces at either
 * end (host mode); NULL or why not. */
const char *secret_injectable(const char *value, size_t len);

#endif
