#include "traceparent.h"
#include "audit.h"

#include <stdio.h>
#include <string.h>

static bool lower_hex(const char *s, size_t n)
{
    bool nonzero = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        nonzero |= c != '0';
    }
    return nonzero;
}

/* Fresh random hex ids from lib/audit's pool. */
static void random_hex(char *out, size_t n)
{
    char id[33];
    audit_new_id(id);
    memcpy(out, id, n);
    out[n] = '\0';
}

bool trace_begin(struct trace_ctx *t, const char *s)
{
    memset(t, 0, sizeof(*t));
    random_hex(t->span_id, SPAN_ID_HEX);
    if (s && strlen(s) == 55 && strncmp(s, "00-", 3) == 0 && s[35] == '-' && s[52] == '-' &&
        lower_hex(s + 3, TRACE_ID_HEX) && lower_hex(s + 36, SPAN_ID_HEX) &&
        (lower_hex(s + 53, 2) || strncmp(s + 53, "00", 2) == 0)) {
        memcpy(t->trace_id, s + 3, TRACE_ID_HEX);
        memcpy(t->parent_id, s + 36, SPAN_ID_HEX);
        t->sampled = (s[54] == '1' || s[54] == '3' || s[54] == '5' || s[54] == '7' ||
                      s[54] == '9' || s[54] == 'b' || s[54] == 'd' || s[54] == 'f');
        return true;
    }
    random_hex(t->trace_id, TRACE_ID_HEX);
    t->sampled = true;
    return false;
}

void trace_child(struct trace_ctx *t, const struct trace_ctx *parent)
{
    memset(t, 0, sizeof(*t));
    memcpy(t->trace_id, parent->trace_id, sizeof(t->trace_id));
    memcpy(t->parent_id, parent->span_id, sizeof(t->parent_id));
    t->sampled = parent->sampled;
    random_hex(t->span_id, SPAN_ID_HEX);
}

void trace_format(const struct trace_ctx *t, char out[56])
{
    snprintf(out, 56, "00-%s-%s-%s", t->trace_id, t->span_id, t->sampled ? "01" : "00");
}
