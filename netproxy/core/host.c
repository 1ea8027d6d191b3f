#include "host.h"

#include "util.h"

#include <arpa/inet.h>
#include <idn2.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static void set_v4(struct host *out, struct in_addr a)
{
    struct sockaddr_in *in = (struct sockaddr_in *)&out->addr;
    memset(&out->addr, 0, sizeof(out->addr));
    in->sin_family = AF_INET;
    in->sin_addr = a;
    out->kind = HOST_IP;
    inet_ntop(AF_INET, &a, out->name, sizeof(out->name));
}

static bool parse_v6(const char *s, struct host *out)
{
    struct in6_addr a6;
    if (inet_pton(AF_INET6, s, &a6) != 1)
        return false;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a6.s6_addr, mapped, sizeof(mapped)) == 0) {
        struct in_addr a4;
        memcpy(&a4, a6.s6_addr + 12, 4);
        set_v4(out, a4);
        return true;
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->addr;
    memset(&out->addr, 0, sizeof(out->addr));
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = a6;
    out->kind = HOST_IP;
    inet_ntop(AF_INET6, &a6, out->name, sizeof(out->name));
    return true;
}

/* A label a URL parser reads as a number: decimal digits, or 0x followed by hex. */
static bool label_is_numeric(const char *l, size_t n)
{
    if (n == 0)
        return false;
    size_t i = 0;
    bool hex = n >= 2 && l[0] == '0' && l[1] == 'x';
    if (hex)
        i = 2;
    for (; i < n; i++) {
        char c = l[i];
        bool ok = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f')));
        if (!ok)
            return false;
    }
    return true;
}

static bool check_labels(const char *name, const char **why)
{
    size_t len = strlen(name);
    if (len == 0) {
        *why = "empty host name";
        return false;
    }
    if (len > HOST_NAME_MAX_LEN) {
        *why = "host name longer than 253 bytes";
        return false;
    }
    const char *label = name;
    for (;;) {
        const char *dot = strchr(label, '.');
        size_t n = dot ? (size_t)(dot - label) : strlen(label);
        if (n == 0) {
            *why = "empty label in host name";
            return false;
        }
        if (n > 63) {
            *why = "label longer than 63 bytes in host name";
            return false;
        }
        if (label[0] == '-' || label[n - 1] == '-') {
            *why = "label starts or ends with a hyphen";
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            char c = label[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
                *why = "invalid character in host name";
                return false;
            }
        }
        if (!dot)
            return true;
        label = dot + 1;
    }
}

static bool needs_idna(const char *name)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p >= 0x80)
            return true;
    /* A-labels are validated too: "xn--" followed by anything is not a free-form name. */
    for (const char *p = name; (p = strstr(p, "xn--")) != NULL; p += 4)
        if (p == name || p[-1] == '.')
            return true;
    return false;
}

bool host_canonicalise(const char *raw, size_t len, bool bracketed, struct host *out,
                       const char **why)
{
    memset(out, 0, sizeof(out->name));
    out->kind = HOST_NAME;
    /* Room for the longest valid name before conversion; UTF-8 input may be longer
     * than its punycode, so allow four bytes per output byte. */
    if (len == 0 || len > 4 * HOST_NAME_MAX_LEN) {
        *why = len ? "host too long" : "empty host";
        return false;
    }
    char buf[4 * HOST_NAME_MAX_LEN + 1];
    memcpy(buf, raw, len);
    buf[len] = '\0';
    if (memchr(raw, '\0', len)) {
        *why = "NUL in host";
        return false;
    }
    if (bracketed) {
        if (!parse_v6(buf, out)) {
            *why = "brackets around something that is not an IPv6 address";
            return false;
        }
        return true;
    }
    for (char *p = buf; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    /* One trailing dot is the root; "example.com.." still has an empty label. */
    if (len > 1 && buf[len - 1] == '.')
        buf[--len] = '\0';

    /* inet_aton is the lenient BSD parser that resolvers and curl use: whatever it
     * accepts would reach that address, so it is an address here too. */
    struct in_addr a4;
    if (inet_aton(buf, &a4) == 1) {
        set_v4(out, a4);
        return true;
    }
    if (strchr(buf, ':')) {
        *why = "IPv6 address without brackets";
        return false;
    }
    const char *last = strrchr(buf, '.');
    last = last ? last + 1 : buf;
    if (label_is_numeric(last, strlen(last))) {
        *why = "numeric last label that is not an IPv4 address";
        return false;
    }

    const char *name = buf;
    char *converted = NULL;
    if (needs_idna(buf)) {
        int rc = idn2_to_ascii_8z(buf, &converted, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
        if (rc != IDN2_OK) {
            *why = "internationalised name that is not valid IDNA";
            return false;
        }
        for (char *p = converted; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        name = converted;
    }
    bool ok = check_labels(name, why) && str_copy(out->name, name, sizeof(out->name));
    if (ok && converted) {
        /* The conversion may itself produce a numeric-looking or IP-like name. */
        const char *l = strrchr(out->name, '.');
        l = l ? l + 1 : out->name;
        if (label_is_numeric(l, strlen(l)) || inet_aton(out->name, &a4) == 1) {
            *why = "internationalised name that reads as an address";
            ok = false;
        }
    }
    idn2_free(converted);
    return ok;
}

bool host_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
    return false;
}
