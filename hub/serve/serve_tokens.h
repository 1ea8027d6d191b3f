/* Bearer tokens for hub serve --http (serve_tokens.c). */
#ifndef HUB_SERVE_TOKENS_H
#define HUB_SERVE_TOKENS_H

#include <stddef.h>

struct serve_tokens;

/* NULL and "FILE:LINE: why" in err when the file is unreadable or a line is bad. */
struct serve_tokens *serve_tokens_load(const char *path, char *err, size_t errlen);
void serve_tokens_free(struct serve_tokens *t);
/* The user the token stands for and its line's index, or NULL. */
const char *serve_tokens_check(const struct serve_tokens *t, const char *token, size_t len,
                               size_t *index);

#endif
