/* Bearer token files (tokens.c): lines "sha256:HEX USER", the tokens themselves never
 * stored, a presented token compared with every line in constant time. Used by
 * `hub serve --http --tokens` and `hub repl-server --tokens`. */
#ifndef LIB_TOKENS_H
#define LIB_TOKENS_H

#include <stddef.h>
#include <stdint.h>

struct tokens;

/* NULL and "FILE:LINE: why" in err when the file is unreadable or a line is bad. */
struct tokens *tokens_load(const char *path, char *err, size_t errlen);
void tokens_free(struct tokens *t);
/* The user the token stands for and its line's index, or NULL. */
const char *tokens_check(const struct tokens *t, const char *token, size_t len, size_t *index);
/* The line of t holding the same token for the same user as line i of old, or
 * SIZE_MAX (a reload: which sessions keep their token). */
size_t tokens_find_line(const struct tokens *t, const struct tokens *old, size_t i);
size_t tokens_count(const struct tokens *t);
/* The user of the i-th token line (users with several tokens come more than once), or
 * NULL past the last: who a service knows (hub serve's prestart "service"). */
const char *tokens_user(const struct tokens *t, size_t i);
/* Makes a token for user, appends its line to path and prints the token once on
 * stdout (`hub serve token add`): 0, or -1 with a message logged. */
int tokens_add(const char *path, const char *user);

#endif
