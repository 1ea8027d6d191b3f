/* The hub's JSON Schema validator: what it accepts and refuses at load, that its errors
 * say where, and that it stays bounded against schemas and instances built to make it
 * slow (nested anyOf, $ref loops, catastrophic patterns, huge arrays). The official
 * suite runs in test_jsonschema_suite. */
#include "jsonschema/jsonschema.h"
#include "tests/unit/test.h"

#include <string.h>
#include <time.h>

static struct schema *compile(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j) {
        snprintf(err, errlen, "test schema does not parse: %s", je.text);
        return NULL;
    }
    struct schema *s = schema_compile(j, err, errlen);
    json_decref(j);
    return s;
}

static bool valid(struct schema *s, const char *inst, char *err, size_t errlen)
{
    json_t *j = json_loads(inst, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!j) {
        snprintf(err, errlen, "test instance does not parse");
        return false;
    }
    bool ok = schema_validate(s, j, err, errlen);
    json_decref(j);
    return ok;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The bounds of the time checks: memcheck (make valgrind, ISOLATE_VALGRIND) runs code
 * some 20 times slower; the budget, not the machine, is what they check. */
static double time_bound(double secs)
{
    return getenv("ISOLATE_VALGRIND") ? secs * 20 : secs;
}

/* One schema, a list of instances and whether each is valid. */
static void cases(const char *what, const char *schema, const char *const *insts, const bool *want,
                  size_t n)
{
    char err[512];
    struct schema *s = compile(schema, err, sizeof(err));
    CHECK(s != NULL, "%s: compiles (%s)", what, s ? "" : err);
    for (size_t i = 0; s && i < n; i++) {
        bool got = valid(s, insts[i], err, sizeof(err));
        CHECK(got == want[i], "%s: %s is %s%s%s", what, insts[i], want[i] ? "valid" : "invalid",
              got ? "" : ": ", got ? "" : err);
    }
    schema_free(s);
}
#define CASES(what, schema, ...)                                                                   \
    do {                                                                                           \
        static const char *const i_[] = {__VA_ARGS__};                                             \
        cases(what, schema, i_, want_, sizeof(i_) / sizeof(i_[0]));                                \
    } while (0)

static void basics(void)
{
    char err[512];
    struct schema *s = compile(
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":2,"
        "\"maxLength\":5,\"pattern\":\"^[a-z]+$\"},\"n\":{\"type\":\"integer\",\"minimum\":1,"
        "\"maximum\":10},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},"
        "\"maxItems\":2},\"opt\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"name\"],"
        "\"additionalProperties\":false,\"description\":\"ignored annotation\"}",
        err, sizeof(err));
    CHECK(s != NULL, "a schema of common keywords compiles (%s)", s ? "" : err);
    CHECK(valid(s, "{\"name\":\"abc\",\"n\":3,\"tags\":[\"a\"],\"opt\":null}", err, sizeof(err)),
          "a conforming instance passes");
    CHECK(valid(s, "{\"name\":\"abc\",\"n\":3.0}", err, sizeof(err)), "3.0 is an integer");
    CHECK(!valid(s, "{\"n\":3}", err, sizeof(err)), "missing required property fails");
    CHECK_STR(err, "$: missing required property \"name\"", "... and says which");
    CHECK(!valid(s, "{\"name\":\"a\"}", err, sizeof(err)), "minLength");
    CHECK_STR(err, "$.name: must be at least 2 characters", "... says where");
    CHECK(!valid(s, "{\"name\":\"abcdef\"}", err, sizeof(err)), "maxLength");
    CHECK(!valid(s, "{\"name\":\"\\u00e9\\u00e9\"}", err, sizeof(err)),
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
    CHECK(!valid(s, "{\"name\":\"ab\",\"x\\ny\":1}", err, sizeof(err)) && !strchr(err, '\n'),
          "a newline in a key does not reach the message: %s", err);
    CHECK(!valid(s, "{\"name\":\"ab\",\"opt\":1}", err, sizeof(err)), "type list");
    CHECK_STR(err, "$.opt: must be null or string", "... names the types");
    CHECK(!valid(s, "[]", err, sizeof(err)), "an array is not an object");
    CHECK(!valid(s, "{\"name\":\"a\\u0000b\"}", err, sizeof(err)), "NUL is not in [a-z]");
    schema_free(s);

    /* A value the hub built itself (not parsed) may hold bytes that are not UTF-8. */
    s = compile("{\"pattern\":\"a\"}", err, sizeof(err));
    json_t *raw = json_stringn_nocheck("a\xff", 2);
    CHECK(s && !schema_validate(s, raw, err, sizeof(err)) && strstr(err, "not valid UTF-8"),
          "a string that is not UTF-8 is refused, not handed to PCRE2 unchecked: %s", err);
    json_decref(raw);
    schema_free(s);

    static const bool want_[] = {true, false, true, false};
    CASES("NUL bytes are matched, not cut off", "{\"pattern\":\"^a.b$\"}", "\"a\\u0000b\"",
          "\"a\\u0000\"", "1", "\"a\\u0000bc\"");
}

static void load_errors(void)
{
    char err[512];
    static const struct {
        const char *schema, *want;
    } refused[] = {
        {"{\"oneOf\":[]}", "oneOf: must be a non-empty array of schemas"},
        {"{\"properties\":{\"a\":{\"type\":\"strin\"}}}",
         "properties.a.type: unknown type name \"strin\""},
        {"{\"minLength\":-1}", "minLength: must be a non-negative integer"},
        {"{\"multipleOf\":0}", "multipleOf: must be greater than 0"},
        {"{\"required\":\"a\"}", "required: must be an array of property names"},
        {"{\"items\":{\"anyOf\":[{\"type\":\"string\"},3]}}",
         "items.anyOf[1]: a schema must be an object or a boolean"},
        {"{\"$ref\":\"https://example.com/s.json\"}",
         "$ref: cannot resolve \"https://example.com/s.json\": \"https://example.com/s.json\" is "
         "not in this schema (remote references are not fetched)"},
        {"{\"$ref\":\"other.json#/a\"}",
         "$ref: cannot resolve \"other.json#/a\": \"urn:other.json\" is not in this schema "
         "(remote references are not fetched)"},
        {"{\"$defs\":{\"a\":{}},\"$ref\":\"#/$defs/b\"}",
         "$ref: cannot resolve \"#/$defs/b\": no such location"},
        {"{\"$ref\":\"#nowhere\"}",
         "$ref: cannot resolve \"#nowhere\": no anchor \"nowhere\" in \"urn:hub:schema\""},
        {"{\"items\":{\"$dynamicRef\":\"#x\"}}",
         "items.$dynamicRef: cannot resolve \"#x\": no anchor \"x\" in \"urn:hub:schema\""},
        {"{\"$schema\":\"https://json-schema.org/draft/2019-09/schema\",\"$recursiveRef\":"
         "\"#/x\"}",
         "$recursiveRef: must be \"#\""},
        {"{\"$schema\":\"http://example.com/my-meta\"}",
         "$schema: unknown dialect (known: the draft-04, -06, -07, 2019-09 and 2020-12 "
         "meta-schemas)"},
        {"{\"pattern\":\"(\"}", "pattern: missing closing parenthesis at byte 1"},
        {"{\"patternProperties\":{\"[\":{}}}",
         "patternProperties: \"[\": missing terminating ] for character class at byte 1"},
        {"{\"$defs\":{\"a\":{\"$anchor\":\"x\"},\"b\":{\"$anchor\":\"x\"}}}",
         "$defs.b.$anchor: anchor \"x\" is defined twice"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        struct schema *s = compile(refused[i].schema, err, sizeof(err));
        CHECK(s == NULL, "refused at load: %s", refused[i].schema);
        if (s)
            schema_free(s);
        else
            CHECK_STR(err, refused[i].want, "... saying %s", refused[i].want);
    }
    /* The spec says to ignore what it does not define: servers write extensions. */
    struct schema *s = compile("{\"type\":\"object\",\"x-vendor\":{\"a\":1},\"nullable\":true,"
                               "\"format\":\"uuid\",\"contentMediaType\":\"text/plain\","
                               "\"properties\":{\"id\":{\"format\":\"uuid\"}}}",
                               err, sizeof(err));
    CHECK(s && valid(s, "{\"id\":\"not a uuid\"}", err, sizeof(err)),
          "unknown keywords are ignored, format is an annotation");
    schema_free(s);
    char deep[4096] = "";
    for (int i = 0; i < SCHEMA_MAX_DEPTH + 2; i++)
        strcat(deep, "{\"items\":");
    strcat(deep, "true");
    for (int i = 0; i < SCHEMA_MAX_DEPTH + 2; i++)
        strcat(deep, "}");
    CHECK(!compile(deep, err, sizeof(err)) && strstr(err, "nested more than"),
          "schemas nested past the limit are refused: %.80s", err);
}

static void keywords(void)
{
    {
        static const bool want_[] = {true, true, false, false, false};
        CASES("anyOf/oneOf/not",
              "{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":5}],"
              "\"oneOf\":[{\"type\":\"string\",\"maxLength\":3},{\"type\":\"number\"}],"
              "\"not\":{\"const\":7}}",
              "\"ab\"", "6", "\"abcd\"", "7", "{}");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("if/then/else",
              "{\"if\":{\"properties\":{\"kind\":{\"const\":\"a\"}}},"
              "\"then\":{\"required\":[\"x\"]},\"else\":{\"required\":[\"y\"]}}",
              "{\"kind\":\"a\",\"x\":1}", "{\"kind\":\"a\",\"y\":1}", "{\"kind\":\"b\",\"y\":1}",
              "{\"kind\":\"b\"}");
    }
    {
        static const bool want_[] = {true, false, false, true, false};
        CASES("uniqueItems by JSON equality", "{\"uniqueItems\":true}", "[1,2,{\"a\":1}]",
              "[1,1.0]", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]", "[0,false,null,\"0\",[0]]",
              "[[1,[2]],[1,[2.0]]]");
    }
    {
        static const bool want_[] = {true, true, false, true, false};
        CASES("multipleOf on decimals", "{\"multipleOf\":0.01}", "19.99", "0.07", "0.075", "-4",
              "1e308");
    }
    {
        static const bool want_[] = {true, false, true, false, false};
        CASES("$ref with ~0, ~1 and percent-escapes",
              "{\"$defs\":{\"a/b\":{\"type\":\"integer\"},"
              "\"t~l\":{\"minimum\":3},\"p%c\":{\"maximum\":5}},\"properties\":{"
              "\"x\":{\"$ref\":\"#/$defs/a~1b\"},\"y\":{\"$ref\":\"#/$defs/t~0l\"},"
              "\"z\":{\"$ref\":\"#/$defs/p%25c\"}}}",
              "{\"x\":1,\"y\":4,\"z\":5}", "{\"x\":1.5}", "{\"y\":3}", "{\"y\":2}", "{\"z\":6}");
    }
    {
        static const bool want_[] = {true, true, false, false};
        CASES("recursion through $anchor and $id",
              "{\"$id\":\"https://example.com/tree\",\"$defs\":{\"node\":{\"$anchor\":\"node\","
              "\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{"
              "\"type\":\"array\",\"items\":{\"$ref\":\"tree#node\"}}},\"required\":[\"v\"]}},"
              "\"$ref\":\"#node\"}",
              "{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]}]}",
              "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":\"x\"}]}]}", "{\"kids\":[]}");
    }
    {
        /* draft-07: "$ref" makes its siblings be ignored; 2020-12 applies both. */
        static const bool want_[] = {true};
        CASES("draft-07 $ref overrides its siblings",
              "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{"
              "\"i\":{\"type\":\"integer\"}},\"properties\":{\"a\":{\"$ref\":\"#/definitions/i\","
              "\"maximum\":1}}}",
              "{\"a\":5}");
    }
    {
        static const bool want_[] = {false};
        CASES("2020-12 $ref applies next to its siblings",
              "{\"$defs\":{\"i\":{\"type\":\"integer\"}},\"properties\":{\"a\":{\"$ref\":"
              "\"#/$defs/i\",\"maximum\":1}}}",
              "{\"a\":5}");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("unevaluatedProperties sees through allOf",
              "{\"allOf\":[{\"properties\":{\"a\":true}}],\"properties\":{\"b\":true},"
              "\"unevaluatedProperties\":false}",
              "{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":3}", "{}", "{\"c\":1}");
    }
    {
        static const bool want_[] = {true, true, false, false};
        CASES("prefixItems, items and contains/maxContains",
              "{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"integer\"},"
              "\"contains\":{\"const\":1},\"maxContains\":2}",
              "[\"a\",1]", "[\"a\",1,1,2]", "[\"a\",1,1,1]", "[\"a\",2]");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("draft-07 tuple items and additionalItems",
              "{\"$schema\":\"http://json-schema.org/draft-07/schema\",\"items\":[{\"type\":"
              "\"string\"}],\"additionalItems\":{\"type\":\"integer\"}}",
              "[\"a\",1]", "[\"a\",\"b\"]", "[]", "[1]");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("dependentRequired, dependentSchemas, dependencies",
              "{\"dependentRequired\":{\"a\":[\"b\"]},\"dependentSchemas\":{\"c\":{\"required\":"
              "[\"d\"]}},\"dependencies\":{\"e\":[\"f\"]}}",
              "{\"a\":1,\"b\":2,\"c\":3,\"d\":4}", "{\"a\":1}", "{\"e\":1,\"f\":2}", "{\"e\":1}");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("propertyNames, patternProperties and min/maxProperties",
              "{\"propertyNames\":{\"maxLength\":3},\"patternProperties\":{\"^x\":{\"type\":"
              "\"integer\"}},\"minProperties\":1,\"maxProperties\":2}",
              "{\"xa\":1}", "{\"long\":1}", "{\"ab\":\"s\"}", "{\"xa\":\"s\"}");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("exclusive bounds, both drafts' forms",
              "{\"properties\":{\"a\":{\"exclusiveMaximum\":3},\"b\":{\"$schema\":"
              "\"http://json-schema.org/draft-04/schema#\",\"maximum\":3,\"exclusiveMaximum\":"
              "true}}}",
              "{\"a\":2.9,\"b\":2}", "{\"a\":3}", "{\"b\":-1}", "{\"b\":3}");
    }
    {
        static const bool want_[] = {true, false, true};
        CASES("lengths count code points", "{\"maxLength\":2,\"minLength\":2}",
              "\"\\u00e9\\u00e9\"", "\"\\u00e9\\u00e9\\u00e9\"", "\"\\ud83d\\ude00\\u00e9\"");
    }
    {
        static const bool want_[] = {true, false, true, false};
        CASES("ECMA-262 pattern forms", "{\"pattern\":\"^\\\\u00e9\\\\d{2}$|^[^]x$\"}",
              "\"\\u00e912\"", "\"\\u00e912\\n\"", "\"\\nx\"", "\"\\u00e9\\u0661\\u0662\"");
    }
}

static void unicode_properties(void)
{
    static const bool want_[] = {true, false, true, false, true};
    CASES("ECMA-262's long Unicode property names",
          "{\"pattern\":\"^(\\\\p{Letter}+|\\\\p{Script=Greek}\\\\p{gc=Decimal_Number})$\"}",
          "\"\\u00e9t\\u00e9\"", "\"a1\"", "\"\\u03b11\"", "\"a\\\\p\"", "\"Z\"");
}

static void messages(void)
{
    char err[512];
    struct schema *s = compile(
        "{\"type\":\"object\",\"properties\":{\"content\":{\"type\":\"array\",\"items\":{"
        "\"anyOf\":[{\"type\":\"object\",\"properties\":{\"type\":{\"const\":\"text\"},"
        "\"text\":{\"type\":\"string\"}},\"required\":[\"type\",\"text\"]},{\"type\":\"object\","
        "\"properties\":{\"type\":{\"const\":\"image\"},\"data\":{\"type\":\"string\"}},"
        "\"required\":[\"type\",\"data\"]}]}}},\"required\":[\"content\"],"
        "\"$schema\":\"http://json-schema.org/draft-07/schema#\"}",
        err, sizeof(err));
    CHECK(s != NULL, "an MCP outputSchema with anyOf and $schema compiles (%s)", s ? "" : err);
    CHECK(s && valid(s,
                     "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"image\","
                     "\"data\":\"AA==\"}]}",
                     err, sizeof(err)),
          "... and accepts a conforming result");
    CHECK(s && !valid(s, "{\"content\":[{\"type\":\"text\",\"text\":3}]}", err, sizeof(err)),
          "... refuses a wrong one");
    CHECK_STR(err,
              "$.content[0]: matches none of the anyOf schemas (closest, anyOf[0]: "
              "$.content[0].text: must be string)",
              "... naming the closest branch");
    schema_free(s);
    s = compile("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", err, sizeof(err));
    CHECK(s && !valid(s, "3", err, sizeof(err)), "oneOf with two matches fails");
    CHECK_STR(err, "$: matches both oneOf[0] and oneOf[1], not exactly one", "... saying which");
    schema_free(s);
}

static void bounds(void)
{
    char err[512];
    /* 40 levels of anyOf, two branches each, that all fail at the leaf: 2^40 paths. */
    char *big = malloc(65536);
    strcpy(big, "{\"$defs\":{");
    for (int i = 0; i < 40; i++)
        sprintf(big + strlen(big),
                "\"l%d\":{\"anyOf\":[{\"$ref\":\"#/$defs/l%d\"},{\"$ref\":"
                "\"#/$defs/l%d\"}]},",
                i, i + 1, i + 1);
    strcat(big, "\"l40\":false},\"$ref\":\"#/$defs/l0\"}");
    struct schema *s = compile(big, err, sizeof(err));
    free(big);
    CHECK(s != NULL, "an exponential anyOf tree compiles (%s)", s ? "" : err);
    double t0 = now_s();
    bool ok = s && valid(s, "1", err, sizeof(err));
    double secs = now_s() - t0;
    CHECK(!ok && strstr(err, "validation stopped: more than"),
          "... its evaluation is stopped by the step budget: %s", err);
    CHECK(secs < time_bound(2.0), "... within bounded time (%.3f s)", secs);
    schema_free(s);

    s = compile("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
                "\"$ref\":\"#/$defs/a\"}",
                err, sizeof(err));
    CHECK(s && !valid(s, "{}", err, sizeof(err)) && strstr(err, "validation stopped: schemas "),
          "a $ref loop is stopped, not followed forever: %s", err);
    schema_free(s);

    s = compile("{\"pattern\":\"^(a|aa)+$\"}", err, sizeof(err));
    char *str = malloc(20000);
    str[0] = '"';
    memset(str + 1, 'a', 10000);
    strcpy(str + 10001, "!\"");
    t0 = now_s();
    ok = s && valid(s, str, err, sizeof(err));
    secs = now_s() - t0;
    CHECK(!ok && strstr(err, "too costly to match"),
          "a catastrophically backtracking pattern stops: %s", err);
    CHECK(secs < time_bound(1.0), "... within bounded time (%.3f s)", secs);
    schema_free(s);
    s = compile("{\"pattern\":\"^[a-z]+!$\"}", err, sizeof(err));
    CHECK(s && valid(s, str, err, sizeof(err)), "a linear pattern matches a long string (%s)", err);
    schema_free(s);
    free(str);

    /* Many matches, each just under PCRE2's own limit, add up in the step budget. */
    s = compile("{\"items\":{\"pattern\":\"^((a|aa)+c|a+b)$\"}}", err, sizeof(err));
    char *many = malloc(3000 * 25 + 8);
    size_t o = 0;
    many[o++] = '[';
    for (int i = 0; i < 3000; i++)
        o += (size_t)sprintf(many + o, "%s\"aaaaaaaaaaaaaaaaaaaab\"", i ? "," : "");
    strcpy(many + o, "]");
    CHECK(s && valid(s, "[\"aaaaaaaaaaaaaaaaaaaab\"]", err, sizeof(err)),
          "one costly but matching string is valid (%s)", err);
    t0 = now_s();
    ok = s && valid(s, many, err, sizeof(err));
    secs = now_s() - t0;
    CHECK(!ok && strstr(err, "evaluation steps (in the pattern"),
          "3,000 of them exhaust the step budget: %s", err);
    CHECK(secs < time_bound(1.0), "... within bounded time (%.3f s)", secs);
    free(many);
    schema_free(s);

    /* A large array of distinct values: uniqueItems is not quadratic. */
    size_t n = 50000;
    char *arr = malloc(n * 12 + 4);
    o = 0;
    arr[o++] = '[';
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(arr + o, "%s%zu", i ? "," : "", i * 7);
    strcpy(arr + o, "]");
    s = compile("{\"uniqueItems\":true,\"items\":{\"type\":\"integer\"}}", err, sizeof(err));
    t0 = now_s();
    ok = s && valid(s, arr, err, sizeof(err));
    secs = now_s() - t0;
    CHECK(ok, "50,000 distinct items are unique (%s)", ok ? "" : err);
    CHECK(secs < time_bound(0.5), "... checked in %.3f s", secs);
    schema_free(s);
    free(arr);
}

int main(void)
{
    basics();
    load_errors();
    keywords();
    unicode_properties();
    messages();
    bounds();
    return test_done();
}
