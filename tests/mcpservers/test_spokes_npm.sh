#!/usr/bin/env bash
# `hub spokes add NAME -- npm:PACKAGE[@VERSION]` and a pasted `npx -y PACKAGE` (issue
# 25, item 7), against a stand-in npm registry on loopback (npmref/registry.py) that
# serves a one-tool MCP server published by npmref/publish.py: the package is
# installed into the hub's store with --ignore-scripts, its version and integrity are
# pinned, the server answers; `hub spokes update` installs the spec again and moves the
# pin to a new version, showing what changed; a package that does not exist leaves
# nothing behind.
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
v1=$($PY "$REF/publish.py" "$REG" "$PORT" 1.0.0 "Echoes the message back.")
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$TMP/new" --yes "$@"; }
STORE=$DATA/.spoke-packages

add demo -- npm:isolate-test-mcp >"$TMP/out" 2>"$TMP/err"
is "spokes add demo -- npm:isolate-test-mcp works" "$?" 0
diag "$(cat "$TMP/err")"
like "... installing it with npm --ignore-scripts, saying so" "$(cat "$TMP/err")" \
    "installing isolate-test-mcp with npm into $STORE/demo \\(--ignore-scripts\\)"
is "... the version installed is pinned" "$(jget 'd["package"]["version"]' <"$TMP/new/demo.json")" 1.0.0
is "... with the registry's integrity" "$(jget 'd["package"]["integrity"]' <"$TMP/new/demo.json")" "$v1"
like "... its command is node and the package's bin script in the store" \
    "$(jget '" ".join(d["command"])' <"$TMP/new/demo.json")" \
    "^node (/opt/spoke-code/0|$STORE/demo/1.0.0)/node_modules/isolate-test-mcp/server.js$"
out=$("$BIN/hub" call --config "$CONF" --spokes "$TMP/new" demo.echo '{"message":"from npm"}' 2>&1)
is "... and the server answers" "$(echo "$out" | jget 'd["content"][0]["text"]')" "from npm"

add pasted -- npx -y isolate-test-mcp@1.0.0 >"$TMP/out" 2>"$TMP/err"
is "a pasted \"npx -y isolate-test-mcp@1.0.0\" is added" "$?" 0
like "... recognised as npm:" "$(cat "$TMP/out")" 'taken as npm:isolate-test-mcp@1.0.0'
is "... pinned like npm:" "$(jget 'd["package"]["spec"] + " " + d["package"]["version"]' <"$TMP/new/pasted.json")" \
    "1.0.0 1.0.0"

# ---- update moves the pin to the new version ----
$PY "$REF/publish.py" "$REG" "$PORT" 1.1.0 "Echoes the message back, and sends it elsewhere." >/dev/null
"$BIN/hub" spokes verify demo --config "$CONF" --spokes "$TMP/new" >"$TMP/out" 2>&1
is "verify does not install anything: the installed 1.0.0 still matches its pin" "$?" 0
"$BIN/hub" spokes update demo --config "$CONF" --spokes "$TMP/new" --yes >"$TMP/out" 2>"$TMP/err"
is "update of an npm: spoke whose package has a new version works" "$?" 0
like "... showing the version move" "$(cat "$TMP/out")" 'package: npm isolate-test-mcp 1.0.0 -> 1.1.0'
like "... and the tool that changed with it" "$(cat "$TMP/out")" \
    'tool "echo": description changed: pinned "Echoes the message back.", listed "Echoes the message back, and sends it elsewhere."'
is "... the pin is the new version" "$(jget 'd["package"]["version"]' <"$TMP/new/demo.json")" 1.1.0
check "... the old version is gone from the store" test ! -e "$STORE/demo/1.0.0"
"$BIN/hub" call --config "$CONF" --spokes "$TMP/new" demo.echo '{"message":"x"}' >/dev/null 2>&1
is "... and the spoke runs it" "$?" 0

# ---- a package that does not exist ----
add ghost -- npm:isolate-no-such-package >"$TMP/out" 2>"$TMP/err"
is "npm:isolate-no-such-package fails (exit 3)" "$?" 3
like "... with npm's own words" "$(cat "$TMP/err")" '\| npm error (code E404|404)'
check "... and writes nothing" test ! -e "$TMP/new/ghost.json"
check "... and leaves nothing in the store" test ! -e "$STORE/ghost"
add bad -- "npm:not a name" >"$TMP/out" 2>"$TMP/err"
is "a spec that is no package name is refused (exit 3)" "$?" 3
like "... saying so" "$(cat "$TMP/err")" 'is not an npm package name'
is "no process is left behind" "$(leftover_procs)" 0
done_testing
