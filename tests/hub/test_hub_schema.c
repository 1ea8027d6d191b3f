/* The JSON Schema subset: what it accepts, what it refuses, and that its errors say
 * where. */
#include "runtime/schema.h"
#include "tests/unit/test.h"

#include <string.h>

static struct schema *compile(const char *text, char *err, size_t errlen)
{
    json_t *j = json_loads(text, 0, NULL);
    struct schema *s = schema_compile(j, err, errlen);
    json_decref(j);
    return s;
}

static bool valid(struct schema *s, const char *inst, char *err, size_t errlen)
{
    json_t *j = json_loads(inst, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    bool ok = schema_validate(s, j, err, errlen);
    json_decref(j);
    return ok;
}

int main(void)
{
    char err[512];
    struct schema *s = compile(
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":2,"
        "\"maxLength\":5,\"pattern\":\"^[a-z]+$\"},\"n\":{\"type\":\"integer\",\"minimum\":1,"
        "\"maximum\":10},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},"
        "\"maxItems\":2},\"opt\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"name\"],"
        "\"additionalProperties\":false,\"description\":\"ignored annotation\"}",
        err, sizeof(err));
    CHECK(s != NULL, "a schema of every supported keyword compiles (%s)", s ? "" : err);
    CHECK(valid(s, "{\"name\":\"abc\",\"n\":3,\"tags\":[\"a\"],\"opt\":null}", err, sizeof(err)),
          "a conforming instance passes");
    CHECK(valid(s, "{\"name\":\"abc\",\"n\":3.0}", err, sizeof(err)), "3.0 is an integer");
    CHECK(!valid(s, "{\"n\":3}", err, sizeof(err)), "missing required property fails");
    CHECK_STR(err, "$: missing required property \"name\"", "... and says which");
    CHECK(!valid(s, "{\"name\":\"a\"}", err, sizeof(err)), "minLength");
    CHECK_STR(err, "$.name: must be at least 2 characters", "... says where");
    CHECK(!valid(s, "{\"name\":\"abcdef\"}", err, sizeof(err)), "maxLength");
    CHECK(valid(s, "{\"name\":\"\\u00e9\\u00e9\"}", err, sizeof(err)) == false,
          "pattern applies to non-ASCII (no match)");
    CHECK(!valid(s, "{\"name\":\"AB\"}", err, sizeof(err)), "pattern");
    CHECK(strstr(err, "$.name: does not match the pattern") != NULL, "... says where: %s", err);
    CHECK(!valid(s, "{\"name\":\"ab\",\"n\":11}", err, sizeof(err)), "maximum");
    CHECK_STR(err, "$.n: must be at most 10", "... says where");
    CHECK(!valid(s, "{\"name\":\"ab\",\"n\":2.5}", err, sizeof(err)), "2.5 is not an integer");
    CHECK_STR(err, "$.n: must be integer", "... says so");
    CHECK(!valid(s, "{\"name\":\"ab\",\"tags\":[\"a\",\"c\"]}", err, sizeof(err)), "enum in items");
    CHECK_STR(err, "$.tags[1]: must be one of the enumerated values", "... with the index");
    CHECK(!valid(s, "{\"name\":\"ab\",\"tags\":[\"a\",\"a\",\"b\"]}", err, sizeof(err)),
          "maxItems");
    CHECK(!valid(s, "{\"name\":\"ab\",\"x y\":1}", err, sizeof(err)), "additionalProperties false");
    CHECK_STR(err, "$[\"x y\"]: property not allowed here", "... quotes odd names");
    CHECK(!valid(s, "{\"name\":\"ab\",\"opt\":1}", err, sizeof(err)), "type list");
    CHECK_STR(err, "$.opt: must be null or string", "... names the types");
    CHECK(!valid(s, "[]", err, sizeof(err)), "an array is not an object");
    CHECK(!valid(s, "{\"name\":\"a\\u0000b\"}", err, sizeof(err)), "NUL never matches a pattern");
    schema_free(s);

    s = compile("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", err,
                sizeof(err));
    CHECK(s && valid(s, "{\"a\":1}", err, sizeof(err)) &&
              !valid(s, "{\"a\":\"x\"}", err, sizeof(err)),
          "additionalProperties as a schema");
    schema_free(s);
    s = compile("{\"const\":{\"a\":[1]}}", err, sizeof(err));
    CHECK(s && valid(s, "{\"a\":[1]}", err, sizeof(err)) &&
              !valid(s, "{\"a\":[2]}", err, sizeof(err)),
          "const");
    schema_free(s);

    CHECK(!compile("{\"oneOf\":[]}", err, sizeof(err)), "unsupported keywords are refused");
    CHECK_STR(err, "oneOf: unsupported JSON Schema keyword", "... by name");
    CHECK(!compile("{\"properties\":{\"a\":{\"type\":\"strin\"}}}", err, sizeof(err)),
          "a typo in a type is refused");
    CHECK_STR(err, "properties.a.type: unknown type name", "... with its path");
    CHECK(!compile("{\"pattern\":\"(\"}", err, sizeof(err)), "a broken pattern is refused");
    CHECK(!compile("{\"minLength\":-1}", err, sizeof(err)), "negative minLength is refused");
    /* Patterns regcomp() would expand exponentially (fuzz_schema found the first), refused
     * before it runs; each would take seconds to hours, so a regression shows as a hang. */
    static const char *const costly[] = {
        "^[a-z]+++++++++++++++++++++++++++++++++$", /* the finding */
        "((((((((((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+",
        "(a{100}){100}",
        "((a|b){30}){30}{30}",
        "x{1,20000}",
        "(a)\\1",
        "a*{2}",
    };
    for (size_t i = 0; i < sizeof(costly) / sizeof(costly[0]); i++) {
        json_t *j = json_pack("{s:s}", "pattern", costly[i]);
        struct schema *bad = schema_compile(j, err, sizeof(err));
        json_decref(j);
        CHECK(bad == NULL && strstr(err, "pattern: "), "pattern %s is refused: %s", costly[i],
              bad ? "compiled" : err);
        schema_free(bad);
    }
    static const char *const fine[] = {"^[0-9]{3}-[0-9]{2}-[0-9]{4}$", "^(ab|cd)+[]a-]{2,8}$",
                                       ".{0,1000}", "^[[:alpha:]_]+\\.[a-z]{2,}$"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        json_t *j = json_pack("{s:s}", "pattern", fine[i]);
        struct schema *ok = schema_compile(j, err, sizeof(err));
        json_decref(j);
        CHECK(ok != NULL, "pattern %s compiles (%s)", fine[i], ok ? "" : err);
        schema_free(ok);
    }
    char deep[2048] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "{\"items\":");
    strcat(deep, "true");
    for (int i = 0; i < 40; i++)
        strcat(deep, "}");
    CHECK(!compile(deep, err, sizeof(err)), "schemas nested past the limit are refused");
    return test_done();
}
