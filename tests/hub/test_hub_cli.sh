#!/usr/bin/env bash
# The hub's command line: help that is true, exit codes, `hub spokes`, and manifests
# or configuration that are wrong, refused with the file and the field named.
. "$(dirname "$0")/../lib.sh"
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup

"$BIN/hub" --help >"$TMP/out"; is "hub --help exits 0" "$?" 0
like "hub --help lists call and spokes" "$(cat "$TMP/out")" "call .*spokes"
"$BIN/hub" call --help >"$TMP/out"; is "hub call --help exits 0" "$?" 0
like "hub call --help documents its options" "$(cat "$TMP/out")" "--parallel.*--isolation MODE.*--answers SPEC"
"$BIN/hub" spokes --help >/dev/null; is "hub spokes --help exits 0" "$?" 0
"$BIN/hub" frobnicate >/dev/null 2>&1; is "an unknown command exits 2" "$?" 2
"$BIN/hub" </dev/null >/dev/null 2>"$TMP/err"; is "no command and no LLM configured exits 2" "$?" 2
like "... saying how to point the assistant at an LLM or run the offline demo" "$(cat "$TMP/err")" "no LLM configured.*ollama.*make demo"
"$BIN/hub" call --config "$CONF" alpha.whoami >/dev/null 2>&1; is "a call without arguments is a usage error" "$?" 2
"$BIN/hub" call --config "$CONF" --isolation jail alpha.whoami '{}' >/dev/null 2>&1
is "an unknown isolation mode is a usage error" "$?" 2
"$BIN/hub" call --config "$CONF" --veth-pool 8.8.8.0/24 alpha.whoami '{}' >/dev/null 2>&1
is "a public veth pool is refused" "$?" 2

out=$("$BIN/hub" spokes --config "$CONF" --format json)
is "hub spokes lists every manifest" "$(echo "$out" | jget '",".join(m["name"] for m in d)')" \
    "$(cd "$SPOKES" && ls ./*.json | sed 's|^\./||; s|\.json$||' | LC_ALL=C sort | paste -sd,)"
is "hub spokes shows the network policy" \
    "$(echo "$out" | jget '[m for m in d if m["name"]=="fetch"][0]["network"]["allow"]')" '["example.com", "wikipedia.org"]'
is "hub spokes shows the limits" \
    "$(echo "$out" | jget '[m for m in d if m["name"]=="notes"][0]["limits"]["nproc"]')" 16
like "hub spokes (text) shows tools" "$("$BIN/hub" spokes --config "$CONF")" "clip +Fetches a web page"

cp "$SPOKES/alpha.json" "$SPOKES/broken.json"
sed -i 's/"name": "alpha"/"name": "broken"/; s/"cpu_s": 20/"cpu_sec": 20/' "$SPOKES/broken.json"
"$BIN/hub" call --config "$CONF" alpha.whoami '{}' >/dev/null 2>"$TMP/err"
is "one broken manifest stops the hub" "$?" 2
like "... naming the file and the field" "$(cat "$TMP/err")" "broken.json: limits.cpu_sec: unknown key"
rm "$SPOKES/broken.json"
echo '{"isolation": "none", "max_call_depth": 99}' >"$TMP/bad.json"
"$BIN/hub" call --config "$TMP/bad.json" alpha.whoami '{}' >/dev/null 2>"$TMP/err"
like "a bad hub.json is refused naming the key" "$(cat "$TMP/err")" "bad.json: max_call_depth: must be an integer from 1 to 16"
echo '{"rules": [{"decision": "maybe"}]}' >"$TMP/answers.json"
"$BIN/hub" call --config "$CONF" --answers "$TMP/answers.json" alpha.whoami '{}' >/dev/null 2>"$TMP/err"
like "a bad answers file is refused naming the rule" "$(cat "$TMP/err")" "rules\[0\].decision: must be allow, once, session, always, deny, no or never"
done_testing
