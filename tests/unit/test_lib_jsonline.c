/* lib/jsonline: the hot-path record writer gives the bytes jansson gives (json_dumps,
 * JSON_COMPACT | JSON_PRESERVE_ORDER, strings through audit_string) for the same
 * fields, also for hostile strings, and never writes past its buffer. */
#include "audit.h"
#include "jsonline.h"
#include "test.h"
#include "util.h"

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

/* jl_json_line() of {"x": v} (v owned) against json_dumps(), with and without
 * JSON_PRESERVE_ORDER (the JSON-RPC lines and the audit records use one each): NULL
 * when all three agree, else what differs. */
static const char *json_differs(json_t *v, char *why, size_t whylen)
{
    static char buf[1 << 16];
    json_t *rec = json_object();
    json_object_set_new(rec, "x", v);
    size_t n = jl_json_line(rec, buf, sizeof(buf));
    char *want = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *unordered = json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    const char *differs = NULL;
    if (n == 0 || buf[n - 1] != '\n') {
        differs = "no whole line";
    } else {
        buf[n - 1] = '\0';
        if (!want || strcmp(buf, want) != 0 || !unordered || strcmp(buf, unordered) != 0) {
            snprintf(why, whylen, "got %.200s, jansson %.200s", buf, want ? want : "(refused)");
            differs = why;
        }
    }
    free(want);
    free(unordered);
    return differs;
}

static void same_json(const char *what, json_t *v)
{
    char why[512];
    const char *differs = json_differs(v, why, sizeof(why));
    CHECK(!differs, "%s: the bytes jansson writes%s%s", what, differs ? ": " : "",
          differs ? differs : "");
}

/* No line for {"x": v} (v owned) in a buffer of cap bytes. */
static void no_line(const char *what, json_t *v, size_t cap)
{
    static char buf[1 << 16];
    json_t *rec = json_pack("{so}", "x", v);
    CHECK(jl_json_line(rec, buf, cap) == 0, "%s gives no line", what);
    json_decref(rec);
}

/* Any byte a JSON string may hold once UTF-8: ASCII of every kind, escapes, NUL, and
 * characters of two, three and four bytes. */
static json_t *random_string(void)
{
    static const char *const pieces[] = {
        "a",  "Z",  "0",  " ",    "\"",   "\\",   "/",        "\b",           "\f",
        "\n", "\r", "\t", "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    char s[64];
    size_t len = 0, n = (size_t)(rand() % 12);
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[rand() % (int)ARRAY_LEN(pieces)];
        size_t pl = strlen(p);
        memcpy(s + len, p, pl);
        len += pl;
    }
    if (rand() % 8 == 0)
        s[len++] = '\0'; /* a NUL inside */
    return json_stringn(s, len);
}

static json_t *random_json(int depth)
{
    switch (rand() % (depth > 4 ? 5 : 7)) {
    case 0:
        return random_string();
    case 1:
        return json_integer((json_int_t)rand() * (rand() % 2 ? -1 : 1) * (rand() % 1000));
    case 2:
        return json_real((double)rand() / (double)(rand() + 1) * (rand() % 2 ? 1e-9 : 1e12));
    case 3:
        return rand() % 2 ? json_true() : json_false();
    case 4:
        return json_null();
    case 5: {
        json_t *a = json_array();
        for (int i = rand() % 5; i > 0; i--)
            json_array_append_new(a, random_json(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (int i = rand() % 5; i > 0; i--) {
            json_t *k = random_string();
            json_object_setn_new(o, json_string_value(k), json_string_length(k),
                                 random_json(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
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

    /* jl_json_line: whole jansson values, the bytes json_dumps writes. */
    same_json("scalars", json_pack("{s:i,s:I,s:b,s:b,s:n,s:s}", "i", -7, "big",
                                   (json_int_t)-9223372036854775807LL - 1, "t", 1, "f", 0, "z", "s",
                                   "a\"b\\c\x01\x7f\t"));
    same_json("reals", json_pack("{s:f,s:f,s:f,s:f,s:f}", "a", 0.1, "b", -0.0, "c", 1e300, "d", 5.0,
                                 "e", 1.5e-7));
    same_json("nested and empty",
              json_pack("{s:{s:[i,{},[]],s:{}},s:[]}", "o", "a", 1, "e", "arr"));
    json_t *odd = json_object();
    json_object_setn_new(odd, "k\0ey", 4, json_stringn("v\0al", 4));
    json_object_set_new(odd, "k\"\n\xc3\xa9", json_string("\xf0\x9f\x98\x80"));
    same_json("NUL and escapes in keys and values", odd);
    json_t *order = json_object();
    json_object_set_new(order, "z", json_integer(1));
    json_object_set_new(order, "a", json_integer(2));
    json_object_set_new(order, "m", json_integer(3));
    json_object_set_new(order, "a", json_integer(4)); /* replaced in place */
    json_object_del(order, "z");
    json_object_set_new(order, "z", json_integer(5)); /* back, at the end */
    same_json("keys in insertion order, after replace and delete", order);
    unsigned mismatches = 0, first = 0;
    char why[512] = "";
    for (unsigned seed = 1; seed <= 300; seed++) {
        srand(seed);
        if (json_differs(random_json(0), why, sizeof(why)) && !mismatches++)
            first = seed;
    }
    CHECK(mismatches == 0, "300 random values: the bytes jansson writes (%u differ; seed %u: %s)",
          mismatches, first, why);

    /* What jansson will not dump, or a nesting too deep, gives no line (the caller
     * then asks jansson, which refuses or writes it). */
    no_line("a string that is not UTF-8", json_pack("{so}", "v", json_stringn_nocheck("\xff", 1)),
            sizeof(buf));
    json_t *deep = json_array();
    for (int i = 0; i < JL_JSON_MAX_DEPTH + 2; i++)
        deep = json_pack("[o]", deep);
    no_line("nesting deeper than JL_JSON_MAX_DEPTH", deep, sizeof(buf));
    no_line("a value that does not fit", json_string("0123456789012345678901234567890123456789"),
            32);
    json_t *arr = json_array();
    CHECK(jl_json_line(arr, buf, sizeof(buf)) == 0, "an array is not a line of this kind");
    json_decref(arr);
    return test_done();
}
