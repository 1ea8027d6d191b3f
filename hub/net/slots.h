/* A pool of numbered slots (veth /30s, host uids), handed out fresh first and then in
 * the order they were returned: a slot released a moment ago is the last one reused,
 * which leaves the kernel time to finish tearing down what used it. */
#ifndef HUB_SLOTS_H
#define HUB_SLOTS_H

#include <stddef.h>

struct slots;

struct slots *slots_new(size_t count);
void slots_free(struct slots *s);
/* A free slot in [0, count), or -1 when all are taken. */
int slots_take(struct slots *s);
void slots_put(struct slots *s, int slot);
size_t slots_used(const struct slots *s);
size_t slots_free_count(const struct slots *s);

#endif
