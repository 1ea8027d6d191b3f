#include "net_vethpool.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define METADATA_ADDR 0xa9fea9feu /* 169.254.169.254 */

static uint32_t pool_base(const struct cidr *pool)
{
    uint32_t be;
    memcpy(&be, pool->addr, 4);
    return ntohl(be);
}

static size_t pool_blocks(const struct cidr *pool)
{
    return (size_t)1 << (30 - pool->prefix);
}

/* Index of the /30 that holds the metadata address, or pool_blocks() when none does. */
static size_t metadata_block(const struct cidr *pool)
{
    uint32_t base = pool_base(pool);
    size_t blocks = pool_blocks(pool);
    if (METADATA_ADDR < base || (uint64_t)(METADATA_ADDR - base) >= (uint64_t)blocks * 4)
        return blocks;
    return (METADATA_ADDR - base) / 4;
}

size_t veth_pool_size(const struct cidr *pool)
{
    if (pool->family != AF_INET || pool->prefix > 30)
        return 0;
    size_t blocks = pool_blocks(pool);
    return metadata_block(pool) < blocks ? blocks - 1 : blocks;
}

static void fmt_ip(uint32_t host_order, char *buf, size_t size)
{
    struct in_addr a = {.s_addr = htonl(host_order)};
    inet_ntop(AF_INET, &a, buf, (socklen_t)size);
}

bool veth_pool_addrs(const struct cidr *pool, size_t slot, struct veth_addrs *out)
{
    if (slot >= veth_pool_size(pool))
        return false;
    size_t block = slot;
    if (block >= metadata_block(pool))
        block++;
    uint32_t net = pool_base(pool) + (uint32_t)block * 4;
    fmt_ip(net + 1, out->host_ip, sizeof(out->host_ip));
    fmt_ip(net + 2, out->spoke_ip, sizeof(out->spoke_ip));
    snprintf(out->host_cidr, sizeof(out->host_cidr), "%s/30", out->host_ip);
    snprintf(out->spoke_cidr, sizeof(out->spoke_cidr), "%s/30", out->spoke_ip);
    return true;
}
