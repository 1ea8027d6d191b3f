/* Memory for secrets (the LLM API key): pages that no child process inherits.
 *
 * The hub starts processes by forking without exec (nsjail-lite's monitor and the
 * jail's init are copies of the hub), and a copy of the hub's heap would carry every
 * secret in it. Memory from here is its own mapping, marked MADV_WIPEONFORK (a child
 * sees zeroes there), MADV_DONTDUMP (not in core dumps) and locked when the limits
 * allow (never swapped out), and is wiped when freed.
 *
 * Allocation is page-granular: meant for a handful of small values, not for data. */
#ifndef ISOLATE_SECRET_H
#define ISOLATE_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* n zeroed bytes in a secret mapping (aborts when out of memory, like xmalloc). */
void *secret_alloc(size_t n);
/* A copy of s in secret memory; NULL for NULL. */
char *secret_strdup(const char *s);
/* "prefix" followed by s, in secret memory (e.g. an Authorization header). */
char *secret_concat(const char *prefix, const char *s);
/* Wipes and unmaps; NULL is ignored. p must come from this file. */
void secret_free(void *p);

/* Whether the kernel honoured MADV_WIPEONFORK for the last allocation (false on
 * kernels before 4.14: the value is then inherited by forked children). */
bool secret_wipeonfork(void);

#endif
