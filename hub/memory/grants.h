/* Permission grants: what the user allowed or denied, and for how long.
 *
 * A grant is keyed by (category, app, tool, peer):
 *   category  exec    run app's tool for this user
 *             data    send the user's data (memory, another step's result) to app's tool
 *             collab  let peer (the calling app) call app's tool, relaying the result
 *   app       the app that acts or receives ([A-Za-z0-9_-], 1..64)
 *   tool      one of its tools, or "*" for all of them ([A-Za-z0-9_.-], 1..64)
 *   peer      the other app for data/collab (the data's source or the caller), or "*";
 *             always "*" for exec. The user's own data (memory, history) has no app:
 *             use a name no manifest may take for it, e.g. "memory" if the hub reserves it
 * and has a scope: once (the next matching check uses it up), session (until the hub
 * exits), always (persistent), deny (persistent refusal). once and session grants live
 * only in the hub process; always and deny live in the store (memory.h).
 *
 * A check looks for the most specific grant: (tool, peer), then (tool, *), then
 * (*, peer), then (*, *); the first key that has a grant decides. So "deny mail *"
 * with "always mail read" allows mail.read and refuses every other mail tool. When
 * one key has both a hub-process grant and a stored one, deny wins. For a tool marked
 * irreversible, "always" grants are ignored (the user is asked) and cannot be set. */
#ifndef HUB_GRANTS_H
#define HUB_GRANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRANT_NAME_MAX 64

enum grant_category { GRANT_EXEC, GRANT_DATA, GRANT_COLLAB };
enum grant_scope { GRANT_ONCE, GRANT_SESSION, GRANT_ALWAYS, GRANT_DENY };
/* The result of a check. */
enum grant_decision { GRANT_ASK = 0, GRANT_ALLOW = 1, GRANT_REFUSE = 2 };

struct grant {
    enum grant_category category;
    char app[GRANT_NAME_MAX + 1];
    char tool[GRANT_NAME_MAX + 1];
    char peer[GRANT_NAME_MAX + 1];
    enum grant_scope scope;
    int64_t created_ms; /* wall clock, ms since the epoch */
};

const char *grant_category_name(enum grant_category c);
bool grant_category_parse(const char *s, enum grant_category *out);
const char *grant_scope_name(enum grant_scope s);
bool grant_scope_parse(const char *s, enum grant_scope *out);
bool grant_scope_persistent(enum grant_scope s); /* always, deny */

/* app names: [A-Za-z0-9_-]{1,64}; tool names also allow '.' (not first); "*" when
 * wildcard is true. */
bool grant_app_valid(const char *s, bool wildcard);
bool grant_tool_valid(const char *s, bool wildcard);

/* Fills g (created now) after validating every field; NULL tool or peer means "*";
 * exec grants always get peer "*". false and a message when a field is invalid. */
bool grant_init(struct grant *g, enum grant_category category, const char *app, const char *tool,
                const char *peer, enum grant_scope scope, char *err, size_t errlen);

/* The store's field name for g's key: "category|app|tool|peer". */
void grant_key(const struct grant *g, char *buf, size_t size);
/* The stored value: {"scope":"always","created":ms}; caller frees. */
char *grant_value(const struct grant *g);
/* Parses a stored field and value back (they may have been tampered with). */
bool grant_parse(const char *key, const char *value, struct grant *out);

#endif
