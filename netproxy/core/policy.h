/* A spoke's egress policy: the registrable domains (eTLD+1, from libpsl) it may reach,
 * the IP literals listed exactly, and the destination ports.
 *
 * A host is allowed when its registrable domain is in the list. Entries are
 * canonicalised like requests (host.h) and must themselves be registrable domains:
 * a public suffix ("co.uk", "github.io") is refused at load, and so is a subdomain
 * ("api.example.com"), whose registrable domain is what would be matched. */
#ifndef NETPROXY_POLICY_H
#define NETPROXY_POLICY_H

#include "host.h"
#include "reason.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POLICY_MAX_ENTRIES 1024
#define POLICY_MAX_PORTS 64
#define POLICY_MAX_TCP 64

/* Loads the public suffix list once: psl_file, or the newest list on the machine
 * (/usr/share/publicsuffix) falling back to libpsl's built-in one. */
bool policy_psl_init(const char *psl_file, char *err, size_t errlen);
void policy_psl_free(void);
/* Where the list came from, for the startup log line. */
const char *policy_psl_source(void);

/* The registrable domain of a canonical name: a pointer into name, or NULL when the
 * name is a public suffix (or otherwise not registrable). */
const char *policy_registrable_domain(const char *name);

struct policy;

struct policy *policy_new(const char *const *entries, size_t n, const uint16_t *ports,
                          size_t nports, char *err, size_t errlen);
void policy_free(struct policy *p);

/* R_ALLOWED, R_NOT_ALLOWED, R_PUBLIC_SUFFIX or R_IP_LITERAL. *rule is the entry that
 * matched (allowed) and *registered the host's registrable domain (or NULL); both
 * stay valid while the policy and host live. */
enum reason policy_check_host(const struct policy *p, const struct host *h, const char **rule,
                              const char **registered);
bool policy_port_allowed(const struct policy *p, uint16_t port);

/* Raw TCP grants ("HOST:PORT", HOST a name or an address in any spelling host.h
 * accepts, "[v6]:PORT"): a destination relayed as it is, without looking at its bytes,
 * matched exactly (the name itself, not its registrable domain). An address granted
 * here may be loopback or private: the operator listed it. */
bool policy_add_tcp(struct policy *p, const char *spec, char *err, size_t errlen);
/* The grant matching host:port ("host:port", canonical), or NULL. */
const char *policy_tcp_grant(const struct policy *p, const struct host *h, uint16_t port);
/* Whether a grant names this canonical name (on any port); *rule its first grant. */
bool policy_tcp_names(const struct policy *p, const char *name, const char **rule);
size_t policy_tcp_count(const struct policy *p);
size_t policy_entry_count(const struct policy *p);

#endif
