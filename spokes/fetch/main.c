/* fetch: a spoke that fetches one HTTPS URL with libcurl. In namespace mode its only
 * way out is HTTPS_PROXY (the hub's netproxy on its veth), which lets it reach only
 * the domains in its manifest; libcurl reads the proxy from the environment itself.
 * Extra trusted CAs may be placed in its data directory as ca.pem (tests use a CA
 * made at test time). */
#include "spokes/sdk/mcp_server.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BODY_MAX (256 * 1024)

static const char get_in[] = "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\","
                             "\"maxLength\":2048,\"pattern\":\"^https://\"}},\"required\":["
                             "\"url\"],\"additionalProperties\":false}";
static const char get_out[] =
    "{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"integer\"},\"content_type\":{"
    "\"type\":\"string\"},\"body\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}},"
    "\"required\":[\"status\",\"body\"]}";

struct body {
    char *buf;
    size_t len;
    bool truncated;
};

static size_t on_data(char *ptr, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    size_t len = size * n;
    size_t take = len;
    if (b->len + take > BODY_MAX) {
        take = BODY_MAX - b->len;
        b->truncated = true;
    }
    memcpy(b->buf + b->len, ptr, take);
    b->len += take;
    return b->truncated ? 0 : len; /* 0 ends the transfer once the cap is reached */
}

static int tool_get(struct mcp_server *s, const json_t *args, json_t **result, void *ud)
{
    (void)ud;
    const char *url = json_string_value(json_object_get(args, "url"));
    if (!url || strncmp(url, "https://", 8) != 0) {
        *result = mcp_error_result("only https:// URLs");
        return 0;
    }
    CURL *c = curl_easy_init();
    struct body b = {.buf = xmalloc(BODY_MAX + 1)};
    char errbuf[CURL_ERROR_SIZE] = "";
    char *ca = xasprintf("%s/ca.pem", mcp_data_dir(s));
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "isolategpt-fetch/1.0");
    if (access(ca, R_OK) == 0)
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    char *ctype = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && b.truncated)) {
        long connect_code = 0;
        curl_easy_getinfo(c, CURLINFO_HTTP_CONNECTCODE, &connect_code);
        *result = mcp_error_result("fetching %s failed: %s (proxy answered %ld)", url,
                                   errbuf[0] ? errbuf : curl_easy_strerror(rc), connect_code);
    } else {
        json_t *sc = json_pack("{s:I,s:s%,s:b}", "status", (json_int_t)status, "body", b.buf, b.len,
                               "truncated", b.truncated);
        if (ctype)
            json_object_set_new(sc, "content_type", json_string(ctype));
        if (!json_object_get(sc, "body")) /* not UTF-8: say so instead of failing */
            json_object_set_new(sc, "body", json_string("[binary content]"));
        *result = mcp_structured_result(sc);
    }
    curl_easy_cleanup(c);
    free(ca);
    free(b.buf);
    return 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct mcp_server *s = mcp_server_new("fetch", "1.0");
    mcp_server_add_tool(s, "get", "Fetches an HTTPS URL and returns its status and body.", get_in,
                        get_out, tool_get, NULL);
    int rc = mcp_server_run(s);
    mcp_server_free(s);
    curl_global_cleanup();
    return rc;
}
