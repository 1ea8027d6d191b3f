#include "reason.h"

#include "util.h"

static const struct {
    const char *code;
    int status;
} reasons[R_COUNT] = {
    [R_ALLOWED] = {"allowed", 200},
    [R_BAD_REQUEST] = {"bad-request", 400},
    [R_BAD_HOST] = {"invalid-host", 400},
    [R_METHOD] = {"method-not-allowed", 405},
    [R_LINE_TOO_LONG] = {"request-line-too-long", 414},
    [R_HEADERS_TOO_LARGE] = {"headers-too-large", 431},
    [R_VERSION] = {"http-version-not-supported", 505},
    [R_HEADER_TIMEOUT] = {"header-timeout", 408},
    [R_INCOMPLETE] = {"incomplete-request", 0},
    [R_NOT_ALLOWED] = {"domain-not-allowed", 403},
    [R_PUBLIC_SUFFIX] = {"public-suffix", 403},
    [R_IP_LITERAL] = {"ip-literal-not-allowed", 403},
    [R_PORT] = {"port-not-allowed", 403},
    [R_ADDRESS] = {"forbidden-address", 403},
    [R_LOOP] = {"proxy-loop", 403},
    [R_DNS_FAIL] = {"dns-failure", 502},
    [R_DNS_TIMEOUT] = {"dns-timeout", 504},
    [R_CONNECT_FAIL] = {"connect-failure", 502},
    [R_CONNECT_TIMEOUT] = {"connect-timeout", 504},
    [R_LIMIT_GLOBAL] = {"tunnel-limit", 503},
    [R_LIMIT_SPOKE] = {"spoke-tunnel-limit", 429},
    [R_LIMIT_PENDING] = {"pending-limit", 503},
    [R_AUDIT] = {"audit-unavailable", 503},
    [R_SHUTDOWN] = {"shutting-down", 503},
    [R_INTERNAL] = {"internal-error", 500},
    [R_PROTOCOL] = {"protocol-not-allowed", 0},
    [R_SNI_MISSING] = {"sni-missing", 0},
    [R_SNI_MISMATCH] = {"sni-mismatch", 0},
    [R_SYNTHETIC_UNKNOWN] = {"synthetic-address-unknown", 0},
    [R_SYNTHETIC_FULL] = {"synthetic-addresses-exhausted", 0},
    [R_DNS_MALFORMED] = {"dns-malformed", 0},
    [R_DNS_NOT_IMPLEMENTED] = {"dns-not-implemented", 0},
    [R_DNS_RATE] = {"dns-rate-limited", 0},
    [R_UDP] = {"udp-not-allowed", 0},
    [R_CRED_WRONG_HOST] = {"credential-to-wrong-host", 403},
    [R_HOST_MISMATCH] = {"host-mismatch", 421},
    [R_UPSTREAM_TLS] = {"upstream-tls-failure", 502},
    [R_CLIENT_TLS] = {"client-tls-failure", 0},
};

static const char *const close_codes[CLOSE_COUNT] = {
    [CLOSE_DONE] = "closed",
    [CLOSE_CLIENT_RESET] = "client-error",
    [CLOSE_UPSTREAM_RESET] = "upstream-error",
    [CLOSE_IDLE] = "idle-timeout",
    [CLOSE_LIFETIME] = "lifetime-exceeded",
    [CLOSE_SHUTDOWN] = "shutdown",
    [CLOSE_INTERNAL] = "internal-error",
    [CLOSE_REFUSED] = "request-refused",
    [CLOSE_TLS] = "tls-error",
};

const char *reason_code(enum reason r)
{
    return (unsigned)r < R_COUNT ? reasons[r].code : "unknown";
}

int reason_status(enum reason r)
{
    return (unsigned)r < R_COUNT ? reasons[r].status : 500;
}

const char *close_reason_code(enum close_reason r)
{
    return (unsigned)r < CLOSE_COUNT ? close_codes[r] : "unknown";
}

const char *http_status_text(int status)
{
    static const struct {
        int status;
        const char *text;
    } texts[] = {
        {200, "Connection established"},
        {400, "Bad Request"},
        {403, "Forbidden"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {414, "URI Too Long"},
        {421, "Misdirected Request"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {505, "HTTP Version Not Supported"},
    };
    for (size_t i = 0; i < ARRAY_LEN(texts); i++)
        if (texts[i].status == status)
            return texts[i].text;
    return "Error";
}
