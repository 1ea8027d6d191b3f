/* `hub spokes add --allow` of a public suffix ("googleapis.com", "github.io"): netproxy
 * would refuse it (it would allow every site under it), so add refuses it first and
 * says what to allow instead: the names under it that this server asked for and
 * netproxy refused, from netproxy's audit (its CONNECTs' destination.domain and its
 * resolver's dns.question.name, for the spoke's proxy keys "<app>-..."). */
#include "cli_spokes_allow.h"
#include "log.h"
#include "util.h"

#include <libpsl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_TAIL_BYTES (8u << 20) /* the recent part of the audit is enough */
#define MAX_NAMES 16

static const json_t *get(const json_t *rec, const char *a, const char *b, const char *c)
{
    const json_t *v = json_object_get(json_object_get(rec, a), b);
    return c ? json_object_get(v, c) : v;
}

/* Names under suffix that app's spokes asked netproxy for, into names (unique). */
static size_t asked_under(const char *audit_path, const char *app, const char *suffix,
                          char *names[], size_t max)
{
    FILE *f = audit_path ? fopen(audit_path, "r") : NULL;
    if (!f)
        return 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        fseek(f, size > (long)AUDIT_TAIL_BYTES ? size - (long)AUDIT_TAIL_BYTES : 0, SEEK_SET);
    }
    size_t n = 0, applen = strlen(app), slen = strlen(suffix);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_t *rec = json_loadb(line, (size_t)len, 0, NULL);
        const char *spoke = json_string_value(get(rec, "isolate", "spoke", NULL));
        const char *name = json_string_value(get(rec, "destination", "domain", NULL));
        if (!name)
            name = json_string_value(get(rec, "dns", "question", "name"));
        size_t nl = name ? strlen(name) : 0;
        if (spoke && name && strncmp(spoke, app, applen) == 0 && spoke[applen] == '-' &&
            nl > slen + 1 && name[nl - slen - 1] == '.' &&
            strcasecmp(name + nl - slen, suffix) == 0) {
            bool seen = false;
            for (size_t i = 0; i < n; i++)
                seen |= strcasecmp(names[i], name) == 0;
            if (!seen && n < max)
                names[n++] = xstrdup(name);
        }
        json_decref(rec);
    }
    free(line);
    fclose(f);
    return n;
}

int allow_check(const struct hub_config *cfg, const char *app, const char *csv)
{
    psl_ctx_t *latest = psl_latest(NULL);
    const psl_ctx_t *psl = latest ? latest : psl_builtin();
    if (!psl)
        return 0; /* netproxy says it then */
    int rc = 0;
    char *copy = xstrdup(csv), *save = NULL;
    for (char *d = strtok_r(copy, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
        if (!psl_is_public_suffix(psl, d))
            continue;
        rc = -1;
        char *names[MAX_NAMES];
        size_t n = asked_under(cfg->netproxy_audit, app, d, names, MAX_NAMES);
        log_warnx("--allow %s: a public suffix, which would allow every site under it; netproxy "
                  "refuses it",
                  d);
        if (n) {
            char list[1024] = "";
            for (size_t i = 0; i < n; i++) {
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "," : "",
                         names[i]);
                free(names[i]);
            }
            log_warnx("the server asked for these names under it (refused by netproxy, %s): "
                      "--allow %s",
                      cfg->netproxy_audit, list);
        } else {
            log_warnx("allow the names under it that the server needs (e.g. maps.%s); once it "
                      "has run, netproxy's refusals in %s name what it asked for",
                      d, cfg->netproxy_audit ? cfg->netproxy_audit : "its audit");
        }
    }
    free(copy);
    psl_free(latest);
    return rc;
}
