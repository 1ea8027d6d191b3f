#include "response.h"

#include "util.h"

#include <stdio.h>
#include <string.h>

char *response_build(enum reason r, const char *detail, unsigned retry_after_s, size_t *len)
{
    int status = reason_status(r);
    char body[512];
    int blen = snprintf(body, sizeof(body), "netproxy: %s\n", detail);
    if (blen < 0 || (size_t)blen >= sizeof(body))
        blen = (int)sizeof(body) - 1;
    /* Never let a byte that could end a header line into the body either. */
    for (int i = 0; i < blen - 1; i++)
        if ((unsigned char)body[i] < 0x20 || (unsigned char)body[i] == 0x7f)
            body[i] = '?';
    char extra[64] = "";
    if (status == 429 || status == 503)
        snprintf(extra, sizeof(extra), "Retry-After: %u\r\n", retry_after_s);
    else if (status == 405)
        snprintf(extra, sizeof(extra), "Allow: CONNECT\r\n");
    char *out =
        xasprintf("HTTP/1.1 %d %s\r\n"
                  "Content-Type: text/plain; charset=utf-8\r\n"
                  "Content-Length: %d\r\n"
                  "X-Proxy-Error: %s\r\n"
                  "%s"
                  "Connection: close\r\n"
                  "\r\n"
                  "%.*s",
                  status, http_status_text(status), blen, reason_code(r), extra, blen, body);
    *len = strlen(out);
    return out;
}
