#include "keylike.h"

#include <stddef.h>
#include <string.h>

/* A known prefix counts only with enough token characters after it, so that "sk-" in
 * a sentence or a flag does not. */
struct prefix {
    const char *prefix;
    size_t min_rest;
    const char *what;
};

static const struct prefix prefixes[] = {
    {"github_pat_", 20, "a GitHub token (github_pat_)"},
    {"ghp_", 20, "a GitHub token (ghp_)"},
    {"gho_", 20, "a GitHub token (gho_)"},
    {"ghu_", 20, "a GitHub token (ghu_)"},
    {"ghs_", 20, "a GitHub token (ghs_)"},
    {"ghr_", 20, "a GitHub token (ghr_)"},
    {"sk-ant-", 20, "an Anthropic key (sk-ant-)"},
    {"sk-", 20, "an API key (sk-)"},
    {"sk_live_", 16, "a Stripe key (sk_live_)"},
    {"rk_live_", 16, "a Stripe key (rk_live_)"},
    {"xoxb-", 16, "a Slack token (xoxb-)"},
    {"xoxp-", 16, "a Slack token (xoxp-)"},
    {"xoxa-", 16, "a Slack token (xoxa-)"},
    {"xoxr-", 16, "a Slack token (xoxr-)"},
    {"xoxs-", 16, "a Slack token (xoxs-)"},
    {"xapp-", 16, "a Slack token (xapp-)"},
    {"AKIA", 16, "an AWS access key id (AKIA)"},
    {"ASIA", 16, "an AWS access key id (ASIA)"},
    {"glpat-", 16, "a GitLab token (glpat-)"},
    {"ntn_", 20, "a Notion token (ntn_)"},
    {"secret_", 30, "a Notion token (secret_)"},
    {"AIza", 30, "a Google API key (AIza)"},
    {"hf_", 20, "a Hugging Face token (hf_)"},
    {"npm_", 20, "an npm token (npm_)"},
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

size_t keylike_prefix_len(const char *value)
{
    size_t best = 0;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t pl = strlen(prefixes[i].prefix);
        if (pl > best && strncmp(value, prefixes[i].prefix, pl) == 0)
            best = pl;
    }
    return best;
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
