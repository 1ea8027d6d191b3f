/* The answer written with references (agent option answer_refs, docs/assistant.md,
 * "Answers by reference"): the merge context sees the results' shape only (numbers,
 * true/false and null as they are, every text replaced by {"$ref": "ID.PATH"}) and
 * writes those references where a text belongs; the hub fills them in after the
 * model has answered, so text out of an app never reaches the context that writes. */
#ifndef HUB_ASSISTANT_AGENT_ANSWER_H
#define HUB_ASSISTANT_AGENT_ANSWER_H

#include <jansson.h>
#include <stddef.h>

/* value with every string replaced by {"$ref": "BASE.PATH"} (BASE alone for a string
 * at the top). Nesting deeper than a bound is cut to {"$ref": PATH} too. New value. */
json_t *answer_shape(const json_t *value, const char *base);

/* The value a reference names ("ID" or "ID.PATH"): a new reference, or NULL. */
typedef json_t *(*answer_lookup_fn)(void *arg, const char *ref);

/* text with each {"$ref": "..."} object in it replaced by the value it names (a string
 * as is, anything else as compact JSON), or by "[no value for REF]". At most max bytes
 * (cut, and said so). *filled and *unknown count the references. New string. */
char *answer_fill(const char *text, answer_lookup_fn lookup, void *arg, size_t max,
                  unsigned *filled, unsigned *unknown);

#endif
