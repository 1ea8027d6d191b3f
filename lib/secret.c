/* Secret memory: one private anonymous mapping per value, wiped on fork and on free. */
#include "secret.h"
#include "log.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Stored in front of each value: the mapping's size, and a mark that catches a
 * pointer that did not come from here before it is unmapped. */
struct secret_hdr {
    size_t map_size;
    unsigned long magic;
    unsigned long pad;
};
#define SECRET_MAGIC 0x5ec7e75ec7e7UL

static bool wipeonfork_ok = true;

void *secret_alloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n > ((size_t)1 << 30))
        fatalx("secret_alloc: %zu bytes is not a secret", n);
    size_t size = (sizeof(struct secret_hdr) + n + page - 1) / page * page;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        fatal("secret_alloc: mmap %zu bytes", size);
#ifdef MADV_WIPEONFORK
    wipeonfork_ok = madvise(p, size, MADV_WIPEONFORK) == 0;
#else
    wipeonfork_ok = false;
#endif
    static bool warned;
    if (!wipeonfork_ok && !warned && (warned = true))
        log_warnx("this kernel does not support MADV_WIPEONFORK: secrets are inherited by "
                  "forked children");
    (void)madvise(p, size, MADV_DONTDUMP);
    (void)mlock(p, size); /* best effort: RLIMIT_MEMLOCK may be small */
    struct secret_hdr *h = p;
    h->map_size = size;
    h->magic = SECRET_MAGIC;
    return h + 1;
}

char *secret_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *p = secret_alloc(n + 1);
    memcpy(p, s, n);
    return p;
}

char *secret_concat(const char *prefix, const char *s)
{
    size_t a = strlen(prefix), b = strlen(s);
    char *p = secret_alloc(a + b + 1);
    memcpy(p, prefix, a);
    memcpy(p + a, s, b);
    return p;
}

void secret_free(void *p)
{
    if (!p)
        return;
    struct secret_hdr *h = (struct secret_hdr *)p - 1;
    if (h->magic != SECRET_MAGIC)
        fatalx("secret_free: %p was not allocated by secret_alloc", p);
    size_t size = h->map_size;
    explicit_bzero(h, size);
    munlock(h, size);
    munmap(h, size);
}

bool secret_wipeonfork(void)
{
    return wipeonfork_ok;
}
