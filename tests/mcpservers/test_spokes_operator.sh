#!/usr/bin/env bash
# What a new operator trips on (issue 38), with raw spokes (tests/hub/rawspoke.c) in
# process mode: a server with more tools than 64 is added (the limit is hub.json's
# max_tools, named in the refusal); an error answer to tools/list is shown as the
# server gave it; a key-like --env value of one app is warned about where that app
# is added or called, not by every command.
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup '{"start_timeout_ms": 5000}'
cp "$BIN/tests/hub/rawspoke" "$BINDIR/"
NEW=$TMP/new
mkdir -p "$NEW"
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$NEW" --yes "$@"; }
LOGS=$RUN/spokes/tester

# ---- item 1: more tools than 64, the limit a setting named in the refusal ----
add many -- rawspoke manytools 600 >"$TMP/out" 2>"$TMP/err"
is "a server listing 600 tools is added" "$?" 0
is "... all 600 pinned" "$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tools"]))' "$NEW/many.json" 2>&1)" 600
"$BIN/hub" call --config "$CONF" --spokes "$NEW" many.tool_599 '{}' >"$TMP/out" 2>"$TMP/err"
is "... and its last tool called" "$?" 0
hub_config '{"start_timeout_ms": 5000, "max_tools": 100}'
add toomany -- rawspoke manytools 101 >"$TMP/out" 2>"$TMP/err"
is "with hub.json max_tools 100, a server listing 101 is refused (exit 3)" "$?" 3
like "... naming the count, the limit and the setting" "$(cat "$TMP/err")" \
    'tools/list lists 101 tools, more than the limit of 100 \(hub.json "max_tools", up to 16384, raises it\)'
like "... and its log" "$(cat "$TMP/err")" "its log: $LOGS/toomany.log"
check "... nothing written" test ! -e "$NEW/toomany.json"
"$BIN/hub" call --config "$CONF" --spokes "$NEW" many.poke '{}' >"$TMP/out" 2>"$TMP/err"
is "a pinned spoke over the lowered limit is refused at start" "$?" 3
like "... saying so" "$(cat "$TMP/err")" "lists 600 tools, more than the limit of 100"
hub_config '{"start_timeout_ms": 5000, "max_tools": 0}'
"$BIN/hub" spokes --config "$CONF" >"$TMP/out" 2>"$TMP/err"
refute "max_tools 0 is a configuration error" test "$?" = 0
like "... naming the field" "$(cat "$TMP/err")" "max_tools"
hub_config '{"start_timeout_ms": 5000}'

# ---- item 6: an error answer to tools/list is shown ----
add failing -- rawspoke listerror >"$TMP/out" 2>"$TMP/err"
is "a server that answers tools/list with an error: add fails (exit 3)" "$?" 3
like "... showing what it said" "$(cat "$TMP/err")" \
    "spoke failing answered tools/list with an error: fetch failed \\(code -32603\\)"
unlike "... not that it gave no tools array" "$(cat "$TMP/err")" "no tools array"

# ---- item 10: a key-like --env value is warned about for its app only, once ----
KEY=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8
add keyed --env GITHUB_TOKEN=$KEY -- rawspoke >"$TMP/out" 2>"$TMP/err"
is "an app added with a key-like --env value" "$?" 0
like "... is warned about at its add" "$(cat "$TMP/err")" "--env GITHUB_TOKEN=...: the value looks like a GitHub token"
"$BIN/hub" call --config "$CONF" --spokes "$NEW" many.poke '{}' >"$TMP/out" 2>"$TMP/err"
is "another app is called" "$?" 0
unlike "... without that app's warning" "$(cat "$TMP/err")" "looks like"
"$BIN/hub" call --config "$CONF" --spokes "$NEW" keyed.poke '{}' >"$TMP/out" 2>"$TMP/err"
is "the app itself is called" "$?" 0
is "... with its warning, once" "$(grep -c 'keyed.json: env.GITHUB_TOKEN looks like a GitHub token' "$TMP/err")" 1
unlike "... never its value" "$(cat "$TMP/err")" "a1B2c3D4"

done_testing
