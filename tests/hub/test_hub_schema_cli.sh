#!/usr/bin/env bash
# `hub schema SCHEMA.json`: one line out per JSON value in, "valid" or "invalid: PATH:
# REASON"; exit 0 when all were valid, 1 when one was not, 2 when the schema is refused
# (remote references, broken keywords) with the reason on stderr. A schema an MCP server
# sends (anyOf in items, $schema, $defs) is taken as it is.
. "$(dirname "$0")/../lib.sh"

cat >"$TMP/out.json" <<'JSON'
{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "content": {
      "type": "array",
      "items": {
        "anyOf": [
          {"type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
           "required": ["type", "text"], "additionalProperties": false},
          {"$ref": "#/definitions/image"}
        ]
      }
    },
    "total": {"type": "integer", "minimum": 0}
  },
  "required": ["content"],
  "definitions": {
    "image": {"type": "object", "properties": {"type": {"const": "image"},
              "data": {"type": "string", "pattern": "^[A-Za-z0-9+/=]*$"}},
              "required": ["type", "data"]}
  }
}
JSON
printf '%s\n' '{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AA=="}],"total":2}' \
    '' '{"content":[{"type":"text","text":"hi","extra":1}]}' '{"content":[{"type":"image","data":"a b"}]}' \
    '{"total":-1}' 'not json' '{"content":[]}' >"$TMP/in"
"$BIN/hub" schema "$TMP/out.json" <"$TMP/in" >"$TMP/got" 2>"$TMP/err"
is "an invalid value makes the exit status 1" "$?" 1
is "one line per value, blank lines skipped" "$(wc -l <"$TMP/got" | tr -d ' ')" 6
is "a conforming result is valid" "$(sed -n 1p "$TMP/got")" "valid"
like "an extra key fails the anyOf, naming the closest branch" "$(sed -n 2p "$TMP/got")" \
    '^invalid: \$\.content\[0\]: matches none of the anyOf schemas \(closest, anyOf\[0\]: \$\.content\[0\]\.extra: property not allowed here\)$'
like "a \$ref'd definition's pattern applies" "$(sed -n 3p "$TMP/got")" \
    '^invalid: \$\.content\[0\]: .*\$\.content\[0\]\.data: does not match the pattern'
is "a missing required property names it" "$(sed -n 4p "$TMP/got")" \
    'invalid: $: missing required property "content"'
like "a line that is not JSON is invalid, not fatal" "$(sed -n 5p "$TMP/got")" '^invalid: \$: not a JSON value'
is "... and the next line is still read" "$(sed -n 6p "$TMP/got")" "valid"
is "nothing on stderr" "$(cat "$TMP/err")" ""

echo '{"type":"integer"}' >"$TMP/int.json"
printf '1\n2.0\n' | "$BIN/hub" schema "$TMP/int.json" >"$TMP/got"
is "all valid exits 0" "$?" 0
is "... 2.0 is an integer" "$(paste -sd, "$TMP/got")" "valid,valid"

echo '{"properties":{"a":{"$ref":"https://example.com/evil.json"}}}' >"$TMP/remote.json"
"$BIN/hub" schema "$TMP/remote.json" </dev/null >"$TMP/got" 2>"$TMP/err"
is "a remote reference refuses the schema: exit 2" "$?" 2
like "... naming the reference and why" "$(cat "$TMP/err")" \
    'properties\.a\.\$ref: cannot resolve "https://example\.com/evil\.json": .*remote references are not fetched'
echo '{"type":"strng"}' >"$TMP/typo.json"
"$BIN/hub" schema "$TMP/typo.json" </dev/null 2>"$TMP/err"
is "an unknown type name refuses the schema: exit 2" "$?" 2
like "... saying so" "$(cat "$TMP/err")" 'type: unknown type name "strng"'
"$BIN/hub" schema "$TMP/missing.json" </dev/null 2>/dev/null
is "a missing schema file exits 2" "$?" 2

# The default dialect for a schema without $schema: tuple items in draft-07, prefixItems
# in 2020-12.
echo '{"prefixItems":[{"type":"string"}],"items":false}' >"$TMP/tuple.json"
echo '["a",1]' | "$BIN/hub" schema "$TMP/tuple.json" >"$TMP/got"
like "2020-12 by default: items after prefixItems" "$(cat "$TMP/got")" '^invalid: \$\[1\]: no value is allowed here'
echo '["a",1]' | "$BIN/hub" schema --draft 7 "$TMP/tuple.json" >"$TMP/got"
is "--draft 7: prefixItems is not a keyword there, items false refuses every item" \
    "$(cut -c1-12 "$TMP/got")" 'invalid: $[0'
"$BIN/hub" schema --draft 5 "$TMP/tuple.json" </dev/null 2>/dev/null
is "an unknown --draft exits 2" "$?" 2
"$BIN/hub" schema --help >"$TMP/got"
like "hub schema --help says what it prints" "$(cat "$TMP/got")" 'valid.*invalid: PATH: REASON'
like "hub --help lists schema" "$("$BIN/hub" --help)" 'schema +validate JSON values'

# A hostile value: 100,000 nested anyOf alternatives stop with a message, in bounded time.
python3 -c '
import json
d = {"l%d" % i: {"anyOf": [{"$ref": "#/$defs/l%d" % (i + 1)}, {"$ref": "#/$defs/l%d" % (i + 1)}]} for i in range(30)}
d["l30"] = {"type": "string"}
print(json.dumps({"$defs": d, "$ref": "#/$defs/l0"}))' >"$TMP/bomb.json"
start=$(date +%s%N)
echo 1 | "$BIN/hub" schema "$TMP/bomb.json" >"$TMP/got"
ms=$((($(date +%s%N) - start) / 1000000))
like "2^30 anyOf paths end in 'validation stopped'" "$(cat "$TMP/got")" 'validation stopped: more than [0-9]+ evaluation steps'
# memcheck (make valgrind) runs the hub some 20 times slower: the bound with it.
bound=$((${ISOLATE_VALGRIND:+20} + 0)); bound=$((bound > 0 ? 3000 * bound : 3000))
[ "$ms" -lt "$bound" ] && ok "... within ${ms} ms" || not_ok "... took ${ms} ms (bound ${bound} ms)"
done_testing
