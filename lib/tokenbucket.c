#include "tokenbucket.h"

void tb_init(struct token_bucket *b, double burst, double rate, uint64_t now_ns)
{
    b->tokens = b->burst = burst;
    b->rate = rate;
    b->last_ns = now_ns;
}

bool tb_take(struct token_bucket *b, double n, uint64_t now_ns)
{
    if (now_ns > b->last_ns) {
        b->tokens += (double)(now_ns - b->last_ns) / 1e9 * b->rate;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last_ns = now_ns;
    }
    if (b->tokens < n)
        return false;
    b->tokens -= n;
    return true;
}
