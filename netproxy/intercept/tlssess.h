/* The TLS sessions netproxy keeps from its own handshakes with upstreams (intercept.h),
 * so that the next tunnel of the same spoke to the same host and port resumes instead
 * of making a full handshake: no certificate chain sent, parsed and verified again,
 * no signature. A session comes only from a handshake that verified the upstream's
 * chain and its name (the key names the host the name was checked against), and only
 * the server that issued it can complete a resumption, so the verification holds for
 * the resumed connection; whoever answers without it gets a full, verified handshake.
 *
 * Keyed by (host, port, spoke): a spoke never resumes a session another spoke's tunnel
 * made, and a host never gets another host's session. Up to 16 are kept per key (a
 * full TLS 1.3 handshake brings two tickets, a resumed one one or none: Node's server
 * sends none); each is taken once while others remain (RFC 8446 C.4 asks clients not
 * to reuse a ticket), and the last is offered again until a newer one comes or it
 * expires, as Go's and curl's caches do: a server that refuses a reused ticket gets a
 * full, verified handshake. A key whose handshake failed is emptied. Bounded: 64 keys
 * (1,024 sessions of a few KiB), the least recently used goes. No secret is in a
 * session: the value is put in per request. */
#ifndef NETPROXY_TLSSESS_H
#define NETPROXY_TLSSESS_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

struct tlssess;

struct tlssess *tlssess_new(void);
void tlssess_free(struct tlssess *t);
/* The key of (host, port, spoke) into buf; false when it does not fit. */
bool tlssess_key(char *buf, size_t len, const char *host, unsigned port, const char *spoke);
/* A session to resume for key (the caller's reference), or NULL. Expired ones are
 * dropped on the way; the last one is kept for the next caller too. */
SSL_SESSION *tlssess_take(struct tlssess *t, const char *key);
/* Keeps s (takes the caller's reference) for key; not resumable ones are freed. */
void tlssess_put(struct tlssess *t, const char *key, SSL_SESSION *s);
/* Drops every session of key (its upstream failed a handshake). */
void tlssess_forget(struct tlssess *t, const char *key);
/* Sessions held now (for tests and metrics). */
size_t tlssess_count(struct tlssess *t);

#endif
