#include "keylike.h"

#include <stddef.h>
#include <string.h>

/* A known prefix counts only with enough token characters after it, so that "sk-" in
 * a sentence or a flag does not. */
struct prefix {
    const char *prefix;
    size_t min_rest;
    const char *what;
    const char *header; /* the request header its API takes it in (NULL: Authorization) */
};

static const struct prefix prefixes[] = {
    {"github_pat_", 20, "a GitHub token (github_pat_)", NULL},
    {"ghp_", 20, "a GitHub token (ghp_)", NULL},
    {"gho_", 20, "a GitHub token (gho_)", NULL},
    {"ghu_", 20, "a GitHub token (ghu_)", NULL},
    {"ghs_", 20, "a GitHub token (ghs_)", NULL},
    {"ghr_", 20, "a GitHub token (ghr_)", NULL},
    {"sk-ant-api03-", 20, "an Anthropic key (sk-ant-api03-)", "x-api-key"},
    {"sk-ant-", 20, "an Anthropic key (sk-ant-)", "x-api-key"},
    {"sk-proj-", 20, "an OpenAI project key (sk-proj-)", NULL},
    {"sk-", 20, "an API key (sk-)", NULL},
    {"sk_live_", 16, "a Stripe key (sk_live_)", NULL},
    {"rk_live_", 16, "a Stripe key (rk_live_)", NULL},
    {"xoxb-", 16, "a Slack token (xoxb-)", NULL},
    {"xoxp-", 16, "a Slack token (xoxp-)", NULL},
    {"xoxa-", 16, "a Slack token (xoxa-)", NULL},
    {"xoxr-", 16, "a Slack token (xoxr-)", NULL},
    {"xoxs-", 16, "a Slack token (xoxs-)", NULL},
    {"xapp-", 16, "a Slack token (xapp-)", NULL},
    {"AKIA", 16, "an AWS access key id (AKIA)", NULL},
    {"ASIA", 16, "an AWS access key id (ASIA)", NULL},
    {"glpat-", 16, "a GitLab token (glpat-)", NULL},
    {"ntn_", 20, "a Notion token (ntn_)", NULL},
    {"secret_", 30, "a Notion token (secret_)", NULL},
    {"AIza", 30, "a Google API key (AIza)", "x-goog-api-key"},
    {"hf_", 20, "a Hugging Face token (hf_)", NULL},
    {"npm_", 20, "an npm token (npm_)", NULL},
};

static bool token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '+' || c == '/' || c == '=' || c == '.';
}

/* log2 of a count (1..2^31) without libm: the exponent, then ln(m) for the mantissa
 * in [1, 2) from the series 2 (y + y^3/3 + ...), y = (m - 1) / (m + 1) <= 1/3. */
static double log2_count(unsigned x)
{
    int e = 0;
    while ((x >> e) > 1)
        e++;
    double m = (double)x / (double)(1u << e);
    double y = (m - 1) / (m + 1), y2 = y * y, term = y, ln = 0;
    for (int k = 1; k < 24; k += 2) {
        ln += term / k;
        term *= y2;
    }
    return e + 2 * ln / 0.69314718055994530942;
}

/* Bits per character of s's own letter frequencies. Random base64 of 32 characters
 * scores about 4.6; English words, paths and hex (at most 4) score lower. */
static double entropy(const char *s, size_t n)
{
    unsigned counts[256] = {0};
    for (size_t i = 0; i < n; i++)
        counts[(unsigned char)s[i]]++;
    /* H = log2 n - (1/n) sum c log2 c */
    double sum = 0;
    for (size_t i = 0; i < 256; i++)
        if (counts[i])
            sum += counts[i] * log2_count(counts[i]);
    return log2_count((unsigned)n) - sum / (double)n;
}

/* The longest known prefix value begins with, or NULL. */
static const struct prefix *longest_prefix(const char *value)
{
    const struct prefix *best = NULL;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t pl = strlen(prefixes[i].prefix);
        if ((!best || pl > strlen(best->prefix)) && strncmp(value, prefixes[i].prefix, pl) == 0)
            best = &prefixes[i];
    }
    return best;
}

size_t keylike_prefix_len(const char *value)
{
    const struct prefix *p = longest_prefix(value);
    return p ? strlen(p->prefix) : 0;
}

const char *keylike_header(const char *value)
{
    const struct prefix *p = longest_prefix(value);
    return p && p->header ? p->header : "Authorization";
}

bool keylike(const char *value, const char **why)
{
    if (strstr(value, "-----BEGIN ") && strstr(value, "PRIVATE KEY-----")) {
        *why = "a private key (PEM)";
        return true;
    }
    /* A bearer header written out ("Bearer ghp_..."): judge the token. */
    if (strncmp(value, "Bearer ", 7) == 0)
        value += 7;
    size_t n = strlen(value), run = 0;
    while (run < n && token_char(value[run]))
        run++;
    if (run != n)
        return false; /* spaces, quotes, ...: a sentence or a list, not a key */
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t pl = strlen(prefixes[i].prefix);
        if (strncmp(value, prefixes[i].prefix, pl) == 0 && n - pl >= prefixes[i].min_rest) {
            *why = prefixes[i].what;
            return true;
        }
    }
    bool digit = false, alpha = false;
    for (size_t i = 0; i < n; i++) {
        digit |= value[i] >= '0' && value[i] <= '9';
        alpha |= (value[i] >= 'a' && value[i] <= 'z') || (value[i] >= 'A' && value[i] <= 'Z');
    }
    /* A path or a host name is made of words: its dots and slashes say so. */
    if (n >= 32 && digit && alpha && value[0] != '/' && !strstr(value, "://") &&
        entropy(value, n) >= 4.2) {
        *why = "a long random string (like a key)";
        return true;
    }
    return false;
}
