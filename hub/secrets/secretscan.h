/* Secrets in tool traffic: a tool call's arguments (before they reach the spoke) and
 * its result (before anyone sees it) are scanned, every string of them, for
 *   - the value of one of the hub's secrets (every value registered with lib/redact.h:
 *     the secrets the manifests name, and those handed out),
 *   - a stand-in of one (standin.h) that a running spoke holds,
 *   - a private key block (PEM "-----BEGIN ... PRIVATE KEY-----"),
 *   - a token of a known key shape (keylike.h's prefixes: ghp_, sk-, AKIA, xoxb-, ...).
 * What the hub does is the app's manifest "secret_scan": block (the call fails), redact
 * (the match is replaced, "[secret NAME]", "[stand-in NAME]", "[redacted: WHAT]", and
 * the call goes on), ask (as block: the question is not asked yet), or log (it goes on
 * unchanged). Without it: block for secrets' values, log for stand-ins (worth nothing
 * but through netproxy to their own spoke's hosts), redact for private keys and key
 * shapes (a stand-in is not taken for a key shape). Every scan that finds something writes one
 * audit record (event.action "secret-detected") with the kinds, counts and the secret's name, never
 * a value. */
#ifndef HUB_SECRETSCAN_H
#define HUB_SECRETSCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum scan_policy { SCAN_DEFAULT = 0, SCAN_BLOCK, SCAN_REDACT, SCAN_ASK, SCAN_LOG };
enum scan_kind { SCAN_SECRET_VALUE, SCAN_STANDIN, SCAN_PRIVATE_KEY, SCAN_KEY_SHAPE, SCAN_NKINDS };

/* "block" ... "log" -> the policy; 0 for anything else. */
int secretscan_policy_parse(const char *s);
const char *secretscan_policy_name(int policy);
const char *secretscan_kind_name(enum scan_kind k);

struct scan_standin {
    const char *standin, *name;
};

struct scan_report {
    size_t hits[SCAN_NKINDS];
    char name[65];     /* the first secret found (a value or a stand-in), or "" */
    const char *shape; /* what the first key shape looks like (keylike.h), or NULL */
};

/* Scans every string in v (not object keys); each match of a kind whose redact[] is
 * set is replaced in place. Adds to r. */
void secretscan_json(json_t *v, const struct scan_standin *standins, size_t n_standins,
                     const bool redact[SCAN_NKINDS], struct scan_report *r);

#endif
