/* Stand-ins keep nothing of the value but a known prefix and the separators' positions
 * (issue 34, finding 5), the header a secret is bound to netproxy with (finding 3), and
 * which allowlists reach a secret's hosts (finding 4). From the attacker's side: a spoke
 * holds only the stand-in, so each character it shares with the value at the same
 * position is key material handed to it. */
#include "redact.h"
#include "secrets/secrets.h"
#include "net/net.h"
#include "secret.h"
#include "tests/unit/test.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* How many positions past keep hold the value's own letter or digit; and whether every
 * other character (a separator) is where it was. */
static size_t shared_chars(const char *value, const char *standin, size_t keep, bool *seps_same)
{
    size_t shared = 0;
    *seps_same = strlen(value) == strlen(standin);
    for (size_t i = 0; *seps_same && value[i]; i++) {
        if (!alnum(value[i]))
            *seps_same &= standin[i] == value[i];
        else if (i >= keep && standin[i] == value[i])
            shared++;
    }
    return shared;
}

static void check_value(const char *what, const char *value, size_t keep)
{
    char err[256];
    size_t worst = 0;
    bool seps = true, made = true;
    /* Many stand-ins: a class-preserving random character matches the value's by chance
     * one time in 10 to 26, so one try would pass by luck. */
    for (int i = 0; i < 200 && made; i++) {
        char *s = standin_make(value, strlen(value), err, sizeof(err));
        made = s != NULL;
        if (!s)
            break;
        bool same = false;
        size_t n = shared_chars(value, s, keep, &same);
        seps &= same && strncmp(s, value, keep) == 0;
        worst = n > worst ? n : worst;
        free(s);
    }
    CHECK(made, "%s: a stand-in is made (%s)", what, made ? "" : err);
    CHECK(seps, "%s: the known prefix (%zu characters) and the separators stay", what, keep);
    CHECK(worst == 0,
          "%s: 200 stand-ins share no letter or digit with the value beyond them (at most %zu "
          "did)",
          what, worst);
}

static void test_standins(void)
{
    check_value("a UUID", "550e8400-e29b-41d4-a716-446655440000", 0);
    check_value("a WORD-WORD key", "ACMECORP-PRODUCTION-a1b2c3d4e5f6g7h8", 0);
    check_value("a word_ key", "mycompany_Xk29sLq81mZpQ4rT7vW2", 0);
    check_value("a GitHub token", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", 4);
    check_value("an OpenAI project key", "sk-proj-abcDEF0123456789ghiJKL", 8);
    char err[256];
    const char *uuid = "550e8400-e29b-41d4-a716-446655440000";
    char *s = standin_make(uuid, strlen(uuid), err, sizeof(err));
    bool hex = s != NULL;
    for (size_t i = 0; s && s[i]; i++)
        hex &= uuid[i] == '-' ? s[i] == '-' : strchr("0123456789abcdef", s[i]) != NULL;
    CHECK(hex, "a UUID's stand-in is a UUID too (hex digits where it had them): %s", s ? s : "");
    free(s);
    const char *word = "ACMECORP-PRODUCTION-a1b2c3d4e5f6g7h8";
    s = standin_make(word, strlen(word), err, sizeof(err));
    CHECK(s && strncmp(s, "ACMECORP-", 9) != 0 && s[8] == '-' && s[19] == '-',
          "a word before a dash is not a known prefix: replaced (%s)", s ? s : "");
    free(s);
}

static struct secret_binding binding(const char *value, const char *header)
{
    struct secret_binding b = {0};
    str_copy(b.meta.name, "t", sizeof(b.meta.name));
    b.meta.hosts = xcalloc(2, sizeof(char *));
    b.meta.hosts[0] = xstrdup("api.service.example");
    b.meta.header = header ? xstrdup(header) : NULL;
    b.len = strlen(value);
    b.value = secret_alloc(b.len + 1);
    memcpy(b.value, value, b.len);
    b.standin = xstrdup("standin");
    redact_add(b.value, b.len, "t");
    return b;
}

static void test_binding_header(void)
{
    static const struct {
        const char *value, *header, *want, *what;
    } cases[] = {
        {"tok_0123456789abcdefghij", NULL, "Authorization",
         "a record without a header (set before the default): Authorization"},
        {"sk-ant-api03-0123456789abcdefghijklmn", NULL, "x-api-key",
         "... an Anthropic key's: x-api-key"},
        {"tok_0123456789abcdefghij", "Authorization", "Authorization", "a named header"},
        {"tok_0123456789abcdefghij", SECRET_HEADER_ANY, NULL,
         "--header any: no header for netproxy, which then swaps it in any"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct secret_binding b = binding(cases[i].value, cases[i].header);
        json_t *j = secret_binding_json(&b);
        const char *got = json_string_value(json_object_get(j, "header"));
        CHECK(cases[i].want ? got && strcmp(got, cases[i].want) == 0 : got == NULL,
              "netproxy's binding: %s (%s)", cases[i].what, got ? got : "none");
        secret_json_wipe(j);
        json_decref(j);
        secret_binding_clear(&b);
    }
}

static void test_reachable(void)
{
    char *hosts[] = {"api.service.example", "*.files.example", NULL};
    struct secret_meta m = {.name = "t", .hosts = hosts};
    char *covers[] = {"service.example", "files.example", NULL};
    char *partial[] = {"service.example", NULL};
    char *narrow[] = {"service.example", "cdn.files.example", NULL};
    char *none[] = {NULL};
    char why[200];
    CHECK(secret_hosts_reachable(&m, covers, true, why, sizeof(why)),
          "an allowlist with every host's domain, in namespace mode: reachable");
    CHECK(!secret_hosts_reachable(&m, covers, false, why, sizeof(why)) && strstr(why, "netproxy"),
          "... in a mode without netproxy: not (%s)", why);
    CHECK(!secret_hosts_reachable(&m, partial, true, why, sizeof(why)) &&
              strstr(why, "*.files.example"),
          "an allowlist missing one host: not (%s)", why);
    CHECK(!secret_hosts_reachable(&m, narrow, true, why, sizeof(why)),
          "a subdomain allowed does not cover *. of its parent (%s)", why);
    CHECK(!secret_hosts_reachable(&m, none, true, why, sizeof(why)) && strstr(why, "no network"),
          "no allowlist: not (%s)", why);
    CHECK(!secret_hosts_reachable(&m, NULL, true, why, sizeof(why)), "... nor a NULL one");
}

int main(void)
{
    test_standins();
    test_binding_header();
    test_reachable();
    return test_done();
}
