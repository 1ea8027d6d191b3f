#include "slots.h"
#include "util.h"

#include <stdlib.h>

struct slots {
    size_t count;
    size_t fresh; /* slots [fresh, count) were never handed out */
    int *ring;    /* returned slots, oldest first */
    size_t head, len;
    size_t used;
};

struct slots *slots_new(size_t count)
{
    struct slots *s = xcalloc(1, sizeof(*s));
    s->count = count;
    return s;
}

void slots_free(struct slots *s)
{
    if (!s)
        return;
    free(s->ring);
    free(s);
}

int slots_take(struct slots *s)
{
    int slot;
    if (s->fresh < s->count) {
        slot = (int)s->fresh++;
    } else if (s->len > 0) {
        slot = s->ring[s->head];
        s->head = (s->head + 1) % s->count;
        s->len--;
    } else {
        return -1;
    }
    s->used++;
    return slot;
}

void slots_put(struct slots *s, int slot)
{
    if (slot < 0 || (size_t)slot >= s->fresh || s->used == 0)
        return;
    /* The ring holds at most every slot ever handed out: allocate it for all once. */
    if (!s->ring)
        s->ring = xcalloc(s->count, sizeof(int));
    s->ring[(s->head + s->len) % s->count] = slot;
    s->len++;
    s->used--;
}

size_t slots_free_count(const struct slots *s)
{
    return s->count - s->used;
}

size_t slots_used(const struct slots *s)
{
    return s->used;
}
