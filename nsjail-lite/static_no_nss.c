/* Linked into the static launcher only (nsjail-lite/module.mk). libnl's address and
 * protocol helpers that nsjail-lite links in (nl_addr_info, nl_ip_proto2str, ...) name
 * glibc's name-service calls, which a static binary can only serve by loading NSS
 * modules built for the shared libc. nsjail-lite resolves no names: these answers
 * keep libc's versions, and any module loading, out of it. */
#include <errno.h>
#include <netdb.h>
#include <stddef.h>

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    (void)node;
    (void)service;
    (void)hints;
    *res = NULL;
    return EAI_FAIL;
}

struct protoent *getprotobyname(const char *name)
{
    (void)name;
    errno = ENOENT;
    return NULL;
}

struct protoent *getprotobynumber(int proto)
{
    (void)proto;
    errno = ENOENT;
    return NULL;
}
