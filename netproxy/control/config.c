#include "config.h"

#include "netproxy/egress/egress.h"
#include "util.h"

#include <string.h>

void config_defaults(struct np_config *c)
{
    memset(c, 0, sizeof(*c));
    c->req.max_line = 8192;
    c->req.max_header_bytes = 32768;
    c->req.max_headers = 100;
    c->max_tunnels = 4096;
    c->max_tunnels_per_spoke = 256;
    c->max_pending = 1024;
    c->max_pending_per_spoke = 256;
    c->retry_after_s = 1;
    c->header_timeout_ms = 10000;
    c->dns_timeout_ms = 5000;
    c->connect_timeout_ms = 10000;
    c->idle_timeout_ms = 300000;
    c->max_lifetime_ms = 3600000;
    c->drain_timeout_ms = 30000;
    c->linger_ms = 2000;
    c->pipe_size = 256 * 1024;
    c->ports[0] = 443;
    c->nports = 1;
    cidr_parse(SYNTH_DEFAULT_RANGE, &c->synthetic);
    c->synthetic_max = SYNTH_MAX_NAMES;
    c->dns_rate = 500;
    c->dns_burst = 1000;
    /* Bursts well above what a working spoke refuses or opens at once (a build's
     * dependency fetch, the load tests' 1,000 refusals); sustained, 10 refusal records
     * a second is about 27 MB an hour, where one flooding spoke wrote 30 GB. */
    c->refusal_rate = 10;
    c->refusal_burst = 2000;
    c->conn_rate = 2000;
    c->conn_burst = 10000;
}

bool parse_duration_ms(const char *s, uint64_t max_ms, uint64_t *out)
{
    static const struct {
        const char *suffix;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}};
    size_t len = strlen(s);
    for (size_t i = 0; i < ARRAY_LEN(units); i++) {
        size_t sl = strlen(units[i].suffix);
        if (len <= sl || strcmp(s + len - sl, units[i].suffix) != 0)
            continue;
        char num[24];
        if (len - sl >= sizeof(num))
            return false;
        memcpy(num, s, len - sl);
        num[len - sl] = '\0';
        uint64_t v;
        if (!parse_u64(num, 0, max_ms / units[i].ms, &v))
            return false;
        *out = v * units[i].ms;
        return true;
    }
    return false;
}
