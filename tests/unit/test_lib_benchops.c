/* lib/jsonpath and lib/benchops: the paths the benchmark's checks and its generic app
 * spoke read, and the spoke's declarative operations over an app's state. */
#include "benchops.h"
#include "jsonpath.h"
#include "test.h"

#include <stdlib.h>

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) {
        printf("# bad test JSON: %s\n", e.text);
        abort();
    }
    return v;
}

static void test_paths(void)
{
    json_t *v = J("{\"a\": {\"b\": [10, 20, {\"c\": \"x\"}]}, \"n\": 1}");
    CHECK(json_integer_value(jsonpath_get(v, "a.b.0")) == 10, "path: array index");
    CHECK(json_integer_value(jsonpath_get(v, "a.b.-3")) == 10, "path: negative index from the end");
    CHECK_STR(json_string_value(jsonpath_get(v, "a.b.2.c")), "x", "path: through array to member");
    CHECK(jsonpath_get(v, "") == v, "path: empty is the root");
    CHECK(!jsonpath_get(v, "a.b.3"), "path: index past the end is missing");
    CHECK(!jsonpath_get(v, "a.b.-4"), "path: negative index past the start is missing");
    CHECK(!jsonpath_get(v, "a..b"), "path: an empty segment is refused");
    CHECK(!jsonpath_get(v, "a.b."), "path: a trailing dot is refused");
    CHECK(!jsonpath_get(v, "a.b.+1"), "path: a signed index other than - is refused");
    char deep[200] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, i ? ".a" : "a");
    CHECK(!jsonpath_get(v, deep), "path: deeper than the bound is refused");
    CHECK(jsonpath_set(v, "x.y", json_integer(5)) &&
              json_integer_value(jsonpath_get(v, "x.y")) == 5,
          "set: creates missing objects");
    CHECK(!jsonpath_set(v, "a.b.9", json_integer(1)), "set: no element past an array's end");
    CHECK(jsonpath_del(v, "x.y") && !jsonpath_get(v, "x.y"), "del: removes a member");
    json_t *i1 = json_integer(1), *r1 = json_real(1.0);
    CHECK(jsonpath_equal(i1, r1), "equal: 1 and 1.0");
    json_t *a = J("{\"k\": [1, 2.5]}"), *b = J("{\"k\": [1.0, 2.5]}"), *c = J("{\"k\": [1, 2]}");
    CHECK(jsonpath_equal(a, b) && !jsonpath_equal(a, c), "equal: numbers inside containers");
    json_decref(i1);
    json_decref(r1);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(v);
}

static json_t *run(const char *tool, const char *args, json_t *state, bool *changed, char *err)
{
    json_t *t = J(tool), *a = J(args);
    char why[300];
    if (!suiteapp_tool_valid(t, why, sizeof(why))) {
        snprintf(err, 300, "invalid: %.280s", why);
        json_decref(t);
        json_decref(a);
        return NULL;
    }
    json_t *out = suiteapp_run(t, a, state, "2024-05-01", changed, err, 300);
    json_decref(t);
    json_decref(a);
    return out;
}

static void test_ops(void)
{
    json_t *st = J("{\"account\": {\"iban\": \"DE1\", \"balance\": 10},"
                   " \"tx\": [{\"id\": 1, \"to\": \"A\", \"subject\": \"Rent March\"},"
                   "        {\"id\": 2, \"to\": \"B\", \"subject\": \"pizza\"}]}");
    char err[300] = "";
    bool ch;
    json_t *r = run("{\"op\": \"list\", \"collection\": \"tx\", \"last\": {\"arg\": \"n\"}}",
                    "{\"n\": 1}", st, &ch, err);
    CHECK(r && json_integer_value(json_object_get(r, "count")) == 1 &&
              json_integer_value(jsonpath_get(r, "items.0.id")) == 2 && !ch,
          "list: the last N items, nothing changed");
    json_decref(r);
    r = run("{\"op\": \"search\", \"collection\": \"tx\", \"query\": {\"arg\": \"q\"}, \"in\": "
            "[\"subject\"]}",
            "{\"q\": \"RENT\"}", st, &ch, err);
    CHECK(r && json_integer_value(json_object_get(r, "count")) == 1,
          "search: case-insensitive substring");
    json_decref(r);
    r = run("{\"op\": \"get\", \"collection\": \"tx\", \"match\": {\"id\": {\"arg\": \"id\"}}, "
            "\"field\": \"to\"}",
            "{\"id\": 9}", st, &ch, err);
    CHECK(!r && strstr(err, "no item in tx has id 9"),
          "get: nothing matches is a tool error naming it");
    r = run("{\"op\": \"append\", \"collection\": \"tx\", \"values\": {\"id\": {\"auto\": true},"
            " \"from\": {\"state\": \"account.iban\"}, \"to\": {\"arg\": \"to\"}, \"date\": "
            "{\"now\": true}}}",
            "{\"to\": \"C\"}", st, &ch, err);
    CHECK(r && ch && json_integer_value(jsonpath_get(r, "item.id")) == 3 &&
              !strcmp(json_string_value(jsonpath_get(st, "tx.-1.from")), "DE1") &&
              !strcmp(json_string_value(jsonpath_get(st, "tx.-1.date")), "2024-05-01"),
          "append: auto id, a value from the state, the suite's date");
    json_decref(r);
    r = run("{\"op\": \"update\", \"collection\": \"account\", \"values\": {\"balance\": {\"add\": "
            "\"d\"}}}",
            "{\"d\": -2.5}", st, &ch, err);
    CHECK(r && json_number_value(jsonpath_get(st, "account.balance")) == 7.5,
          "update: add to a record's number");
    json_decref(r);
    r = run("{\"op\": \"update\", \"collection\": \"tx\", \"match\": {\"id\": {\"arg\": \"id\"}},"
            " \"values\": {\"subject\": {\"concat\": \"more\"}, \"to\": {\"arg\": \"to\"}}}",
            "{\"id\": 2, \"more\": \"!\"}", st, &ch, err);
    CHECK(r && !strcmp(json_string_value(jsonpath_get(st, "tx.1.subject")), "pizza!") &&
              !strcmp(json_string_value(jsonpath_get(st, "tx.1.to")), "B"),
          "update: concat; an argument not given leaves its field alone");
    json_decref(r);
    r = run("{\"op\": \"delete\", \"collection\": \"tx\", \"match\": {\"to\": {\"arg\": \"to\"}}}",
            "{\"to\": \"nobody\"}", st, &ch, err);
    CHECK(!r && json_array_size(json_object_get(st, "tx")) == 3,
          "delete: nothing matched is an error, nothing removed");
    r = run("{\"op\": \"delete\", \"collection\": \"tx\", \"match\": {\"to\": {\"arg\": \"to\"}}}",
            "{\"to\": \"A\"}", st, &ch, err);
    CHECK(r && json_array_size(json_object_get(st, "tx")) == 2 && ch,
          "delete: removes what matches");
    json_decref(r);
    r = run("{\"op\": \"exec\", \"collection\": \"tx\"}", "{}", st, &ch, err);
    CHECK(!r && strstr(err, "op: one of"), "an unknown operation is refused");
    r = run("{\"op\": \"append\", \"collection\": \"tx\", \"values\": {\"x\": \"raw\"}}", "{}", st,
            &ch, err);
    CHECK(!r && strstr(err, "an expression is an object"),
          "a value that is not an expression is refused");
    r = run("{\"op\": \"list\", \"collection\": \"vault\"}", "{}", st, &ch, err);
    CHECK(!r && strstr(err, "no collection vault"), "a collection the state lacks is a tool error");
    json_decref(st);
}

int main(void)
{
    test_paths();
    test_ops();
    return test_done();
}
