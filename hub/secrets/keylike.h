/* Whether a literal value looks like a credential: a manifest (or `hub spokes add
 * --env`) that holds one is warned about, since the key then sits in a world-readable
 * file and in the spoke's environment. Known prefixes (GitHub, OpenAI, Anthropic,
 * Slack, AWS, GitLab, Notion, Google, Stripe, Hugging Face, npm, private keys), and long
 * strings of token characters whose letters look random (Shannon entropy). */
#ifndef HUB_KEYLIKE_H
#define HUB_KEYLIKE_H

#include <stdbool.h>
#include <stddef.h>

/* True with *why naming what it looks like ("a GitHub token (ghp_)"). */
bool keylike(const char *value, const char **why);
/* The length of the known prefix value begins with ("ghp_": 4), or 0. */
size_t keylike_prefix_len(const char *value);
/* The request header an API takes a key of value's shape in: "x-api-key" for an
 * Anthropic key, "x-goog-api-key" for a Google one, else "Authorization". */
const char *keylike_header(const char *value);

#endif
