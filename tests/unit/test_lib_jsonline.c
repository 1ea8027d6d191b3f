/* lib/jsonline: the hot-path record writer gives the bytes jansson gives (json_dumps,
 * JSON_COMPACT | JSON_PRESERVE_ORDER, strings through audit_string) for the same
 * fields, also for hostile strings, and never writes past its buffer. */
#include "audit.h"
#include "jsonline.h"
#include "test.h"

#include <stdlib.h>

/* The same string both ways: one field, capped at cap. */
static void same_string(const char *what, const char *s, size_t len, size_t cap)
{
    char buf[8192];
    struct jline j;
    jl_begin(&j, buf, sizeof(buf));
    jl_strn(&j, "v", s, len, cap);
    size_t n = jl_end(&j);
    CHECK(n > 0 && buf[n - 1] == '\n', "%s: a whole line", what);
    if (n)
        buf[n - 1] = '\0';
    json_t *rec = json_object();
    json_object_set_new(rec, "v", audit_string(s, len, cap));
    char *want = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    CHECK_STR(buf, want, "%s: the bytes jansson writes", what);
    free(want);
}

int main(void)
{
    same_string("plain", "example.com", 11, 1024);
    same_string("quotes and backslashes", "a\"b\\c/d", 7, 1024);
    same_string("control characters", "\x01\b\f\n\r\t\x1f\x7f", 8, 1024);
    same_string("NUL inside", "a\0b", 3, 1024);
    same_string("invalid UTF-8", "\xff\xfe\xc3(\xe2\x82", 6, 1024);
    same_string("overlong and surrogate", "\xc0\xaf\xed\xa0\x80", 5, 1024);
    same_string("valid UTF-8", "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80", 16, 1024);
    char longs[2000];
    memset(longs, 'x', sizeof(longs));
    same_string("past the cap", longs, sizeof(longs), 256);
    same_string("cap below 32 counts as 32", longs, 100, 5);
    char mixed[600];
    for (size_t i = 0; i < sizeof(mixed); i++)
        mixed[i] = (char)(i % 3 == 0 ? 0x01 : i % 3 == 1 ? (char)0xe9 : 'a');
    same_string("escapes and replacements up to the cap", mixed, sizeof(mixed), 512);
    same_string("a multi-byte character at the cap", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\xc3\xa9", 32,
                31);

    /* Nesting, integers, booleans, arrays: the same as audit_set() builds. */
    char buf[512];
    struct jline j;
    jl_begin(&j, buf, sizeof(buf));
    jl_open(&j, "event");
    jl_str(&j, "action", "connect");
    jl_strs(&j, "type", "connection", "allowed");
    jl_int(&j, "duration", -9223372036854775807LL - 1);
    jl_close(&j);
    jl_open(&j, "isolate");
    jl_bool(&j, "report_only", true);
    jl_open(&j, "dns");
    jl_int(&j, "duration", 0);
    jl_close(&j);
    jl_close(&j);
    jl_int(&j, "n", 18446744073709551LL);
    size_t n = jl_end(&j);
    CHECK(n > 0, "nested record: a whole line");
    buf[n ? n - 1 : 0] = '\0';
    json_t *rec = json_object();
    audit_set_str(rec, "event.action", "connect");
    audit_set(rec, "event.type", json_pack("[s,s]", "connection", "allowed"));
    audit_set_int(rec, "event.duration", -9223372036854775807LL - 1);
    audit_set(rec, "isolate.report_only", json_true());
    audit_set_int(rec, "isolate.dns.duration", 0);
    audit_set_int(rec, "n", 18446744073709551LL);
    char *want = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    CHECK_STR(buf, want, "nested record: the bytes jansson writes");
    free(want);

    /* A buffer too small: no line, and nothing written past its end. */
    char small[40];
    memset(small, 'Z', sizeof(small));
    jl_begin(&j, small, 32);
    jl_strn(&j, "message", longs, 200, 512);
    CHECK(jl_end(&j) == 0, "a record that does not fit gives no line");
    bool untouched = true;
    for (size_t i = 32; i < sizeof(small); i++)
        untouched = untouched && small[i] == 'Z';
    CHECK(untouched, "nothing is written past the buffer");

    jl_begin(&j, buf, sizeof(buf));
    jl_open(&j, "event");
    CHECK(jl_end(&j) == 0, "an object left open gives no line");
    return test_done();
}
