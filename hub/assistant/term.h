/* The assistant's terminal: how the hub speaks (its own lines start at column 0),
 * how untrusted text is shown (quoted, neutralised: lib/termtext.h), and the questions
 * only the hub asks - permissions, re-planning, an app's elicitation - framed so
 * that no app or LLM text can imitate them. */
#ifndef HUB_TERM_H
#define HUB_TERM_H

#include "runtime/runtime.h"
#include "lineedit.h"
#include "perms.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

/* Prefix of every line of untrusted text (answers, app output, bodies). */
#define TERM_QUOTE "  \u250a "

struct term {
    FILE *out;
    struct lineedit *le; /* where answers to questions are read */
    bool color;
    bool verbose; /* /debug: show each step's result */
    /* Set by Ctrl-C at a question: the whole request is cancelled, not only this
     * question answered "no" (NULL: Ctrl-C is a "no"). */
    volatile sig_atomic_t *cancel;
};

void term_init(struct term *t, FILE *out, struct lineedit *le);

/* A line of the hub's own (printf-style; the caller neutralises untrusted parts with
 * tt_inline_str). */
void term_hub(struct term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Untrusted JSON, pretty-printed and quoted under prefix, at most max_bytes. */
void term_quote_json(struct term *t, const char *prefix, const json_t *v, size_t max_bytes);
/* Bold (when colour is on) for the hub's labels. */
const char *term_bold(const struct term *t);
const char *term_dim(const struct term *t);
const char *term_warn(const struct term *t);
const char *term_reset(const struct term *t);

/* The prompt for permissions (perms.h) and the hub's yes/no questions. */
struct perm_asker *term_asker(struct term *t);
/* Elicitations from apps, shown as the app's words inside the hub's frame. */
struct elicit_hook *term_elicit_hook(struct term *t);

#endif
