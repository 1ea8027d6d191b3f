#!/usr/bin/env bash
# `hub spokes add` limits and failures (issue 25, item 6), with raw spokes
# (tests/hub/rawspoke.c) in process mode: --memory-mb, --nofile, --pids, --cpu-percent
# and --timeout-s land in the manifest's limits (the last also gives a slow server
# that long to start); a server that fails at start leaves no manifest, and add prints
# the last lines of its log and the log's path; `hub call` names the log of a spoke
# that could not start or exited.
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup '{"start_timeout_ms": 1000}'
cp "$BIN/tests/hub/rawspoke" "$BINDIR/"
NEW=$TMP/new
mkdir -p "$NEW"
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$NEW" --yes "$@"; }
LOGS=$RUN/spokes/tester

# ---- limits ----
add limited --memory-mb 300 --nofile 2048 --pids 50 --cpu-percent 50 --timeout-s 30 -- \
    rawspoke >"$TMP/out" 2>&1
is "add with the limit options works" "$?" 0
is "... the limits are in the manifest (--timeout-s also the start's)" \
    "$(jget 'json.dumps(d["limits"], sort_keys=True)' <"$NEW/limited.json" 2>/dev/null ||
        $PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["limits"], sort_keys=True))' "$NEW/limited.json")" \
    '{"call_s": 30, "cpu_percent": 50, "memory_mb": 300, "nofile": 2048, "pids": 50, "start_s": 30}'
add badlimit --nofile 0 -- rawspoke >/dev/null 2>"$TMP/err"
is "a limit out of range is a usage error (exit 2)" "$?" 2
like "... saying the range" "$(cat "$TMP/err")" "--nofile must be a number from 1 to"

# ---- a server that fails at start: nothing written, its log shown ----
add dies -- rawspoke dies >"$TMP/out" 2>"$TMP/err"
is "a server that exits at start: add fails (exit 3)" "$?" 3
check "... and writes nothing" test ! -e "$NEW/dies.json"
like "... the error names the spoke's log" "$(cat "$TMP/err")" "exited with status 1 \\(its log: $LOGS/dies.log\\)"
like "... and add shows the log's last lines, quoted" "$(cat "$TMP/err")" \
    "  \\| Error: GITHUB_PERSONAL_ACCESS_TOKEN is not set"
like "... after naming the file" "$(cat "$TMP/err")" "the last lines of its log, $LOGS/dies.log:"
add mute -- rawspoke mute >"$TMP/out" 2>"$TMP/err"
is "a server that never answers initialize: add fails (exit 3)" "$?" 3
like "... with the start timeout, naming the log" "$(cat "$TMP/err")" \
    "did not finish initializing within 1000 ms \\(its log: $LOGS/mute.log\\)"
check "... and writes nothing" test ! -e "$NEW/mute.json"

# ---- --timeout-s gives a slow server the time it needs to start ----
add slow -- rawspoke slowinit 2500 >"$TMP/out" 2>"$TMP/err"
is "a server that needs 2.5 s to start, hub.json allowing 1 s: add fails" "$?" 3
add slow --timeout-s 20 -- rawspoke slowinit 2500 >"$TMP/out" 2>"$TMP/err"
is "... with --timeout-s 20 it is added" "$?" 0
"$BIN/hub" call --config "$CONF" --spokes "$NEW" slow.poke '{}' >"$TMP/out" 2>"$TMP/err"
is "... and called (its start gets 20 s every time)" "$?" 0

# ---- hub call names the log of a spoke that cannot start ----
$PY - <<EOF
import json
m = json.load(open("$NEW/slow.json"))
m["name"] = "broken"; m["command"] = ["rawspoke", "dies"]; m.pop("limits")
json.dump(m, open("$NEW/broken.json", "w"))
EOF
"$BIN/hub" call --config "$CONF" --spokes "$NEW" broken.poke '{}' >"$TMP/out" 2>"$TMP/err"
is "hub call of a spoke that exits at start fails (exit 3)" "$?" 3
like "... naming its log" "$(cat "$TMP/err")" "\\(its log: $LOGS/broken.log\\)"
# ---- --allow of a public suffix: refused, naming what the server asked for ----
add gmaps --allow googleapis.com -- rawspoke >"$TMP/out" 2>"$TMP/err"
is "--allow googleapis.com (a public suffix) is refused before anything starts (exit 2)" "$?" 2
like "... saying why" "$(cat "$TMP/err")" "--allow googleapis.com: a public suffix, which would allow every site"
like "... and, with no record of what the server asked, how to find out" "$(cat "$TMP/err")" \
    "once it has run, netproxy's refusals in $PROXY_AUDIT name what it asked for"
# What netproxy writes when it refuses the server's CONNECT and its resolver's query.
cat >>"$PROXY_AUDIT" <<EOF
{"event":{"action":"connect","outcome":"failure","reason":"not-allowed"},"isolate":{"spoke":"gmaps-1a2b3c4d"},"destination":{"domain":"maps.googleapis.com","port":443}}
{"event":{"action":"dns-query","outcome":"failure"},"isolate":{"spoke":"gmaps-5e6f7a8b"},"dns":{"question":{"name":"roads.googleapis.com"}}}
{"event":{"action":"connect","outcome":"failure"},"isolate":{"spoke":"other-1a2b3c4d"},"destination":{"domain":"storage.googleapis.com","port":443}}
EOF
add gmaps --allow googleapis.com -- rawspoke >"$TMP/out" 2>"$TMP/err"
is "after netproxy refused the server's names: still refused (exit 2)" "$?" 2
like "... naming the names it asked for under the suffix, as an --allow to use" "$(cat "$TMP/err")" \
    "the server asked for these names under it \\(refused by netproxy, $PROXY_AUDIT\\): --allow maps.googleapis.com,roads.googleapis.com"
unlike "... and only this server's" "$(cat "$TMP/err")" "storage.googleapis.com"
check "... nothing written" test ! -e "$NEW/gmaps.json"

# ---- code under /tmp (where the jail has its own): bound elsewhere, the command rewritten ----
mkdir -p "$TMP/code"
echo data >"$TMP/code/server.js"
add tmpcode -- rawspoke proto 2025-06-18 "$TMP/code/server.js" >"$TMP/out" 2>"$TMP/err"
is "a server whose code is under /tmp is added" "$?" 0
is "... its code is bound at /opt/spoke-code/N, keeping its last name" \
    "$(jget 'd["mounts"][0]' <"$NEW/tmpcode.json")" "$TMP/code:/opt/spoke-code/0/code"
is "... and its command names it there" "$(jget 'd["command"][-1]' <"$NEW/tmpcode.json")" \
    /opt/spoke-code/0/code/server.js
"$BIN/hub" call --config "$CONF" --spokes "$NEW" tmpcode.poke '{}' >"$TMP/out" 2>"$TMP/err"
is "... and called in process mode (the path mapped back to the host's)" "$?" 0
is "no process is left behind" "$(leftover_procs)" 0
done_testing
