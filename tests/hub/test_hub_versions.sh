#!/usr/bin/env bash
# Every MCP revision a spoke may speak (issue 25, item 1), with raw spokes
# (tests/hub/rawspoke.c) in process mode: 2024-11-05 to 2025-11-25 through
# initialize, and a server of the stateless 2026-07-28 revision only (server/discover,
# _meta on every request, an InputRequiredResult answered with roots). What the hub
# checks follows the revision: no structuredContent is passed on before 2025-06-18, a
# content type the revision lacks is refused, and the revision is pinned and audited.
# roots/list is answered with the spoke's data directory.
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
cp "$BIN/tests/hub/rawspoke" "$BINDIR/"
raw_manifest() { # NAME PROTOCOL|"" ARGS...
    local name=$1 proto=$2
    shift 2
    $PY - "$name" "$proto" "$@" <<EOF
import json, sys
m = {"name": sys.argv[1], "description": "Raw protocol probe.",
     "command": ["rawspoke"] + sys.argv[3:], "runtime": "c",
     "tools": [{"name": "poke", "description": "Hostile terminal probe.",
                "inputSchema": {"type": "object"}}]}
if sys.argv[2]:
    m["protocol"] = sys.argv[2]
json.dump(m, open("$SPOKES/%s.json" % m["name"], "w"))
EOF
}
raw_manifest v20241105 "" proto 2024-11-05
raw_manifest v20250326 "" proto 2025-03-26 audio
raw_manifest v20250618 "" proto 2025-06-18
raw_manifest old_audio "" proto 2024-11-05 audio
raw_manifest v19990101 "" proto 1999-01-01
raw_manifest downgraded 2025-06-18 proto 2024-11-05
raw_manifest stateless "" stateless
raw_manifest roots "" roots

: >"$AUDIT"
out=$(hubc v20241105.poke '{}' 2>"$TMP/err")
is "a server on MCP 2024-11-05 (the SDK 1.0.x line) is taken: the call works" "$?" 0
is "... and answers as that revision" "$(echo "$out" | jget 'd["content"][0]["text"]')" 2024-11-05
is "... its structuredContent (no part of 2024-11-05, never validated) is not passed on" \
    "$(echo "$out" | jget '"structuredContent" in d')" false
is "... its start is audited with the revision it speaks" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success" and g(r,"isolate.app")=="v20241105" and g(r,"isolate.mcp.protocol_version")=="2024-11-05"')" 1
out=$(hubc v20250326.poke '{}' 2>"$TMP/err")
is "2025-03-26 with an audio block (which it has): the call works" "$?" 0
out=$(hubc v20250618.poke '{}' 2>"$TMP/err")
is "2025-06-18: the call works" "$?" 0
is "... and its structuredContent is passed on" "$(echo "$out" | jget 'd["structuredContent"]["unchecked"]')" data
hubc old_audio.poke '{}' >/dev/null 2>"$TMP/err"
is "2024-11-05 with an audio block (which it does not have): refused (exit 3)" "$?" 3
like "... saying why" "$(cat "$TMP/err")" 'content type "audio", which MCP 2024-11-05 does not have'
hubc v19990101.poke '{}' >/dev/null 2>"$TMP/err"
is "a revision the hub does not know is refused (exit 3)" "$?" 3
like "... by name" "$(cat "$TMP/err")" 'unsupported MCP protocol version "1999-01-01"'
hubc downgraded.poke '{}' >/dev/null 2>"$TMP/err"
is "a server that now speaks another revision than pinned is refused (exit 3)" "$?" 3
like "... naming both and the way out" "$(cat "$TMP/err")" \
    'speaks MCP 2024-11-05, pinned with 2025-06-18 \(`hub spokes update downgraded`'

# ---- the stateless revision ----
: >"$AUDIT"
out=$(hubc stateless.poke '{}' 2>"$TMP/err")
rc=$?
diag "stateless: $(head -c 400 "$TMP/err")"
is "a server of 2026-07-28 only (refuses initialize): found by server/discover, the call works" "$rc" 0
like "... after the hub answered its InputRequiredResult with the roots" \
    "$(echo "$out" | jget 'd["content"][0]["text"]')" '"uri": ?"file:///'
is "... and sent its requestState back with the retry" \
    "$(echo "$out" | jget 'd["structuredContent"]["state"]')" asked-once
is "... every request carried the revision in _meta (none was refused with -32022)" \
    "$(grep -c 'Unsupported protocol version' "$TMP/err")" 0
is "... audited as 2026-07-28" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.app")=="stateless" and g(r,"isolate.mcp.protocol_version")=="2026-07-28"')" 1

# ---- spokes add pins the revision; a pinned 2026-07-28 server is never sent initialize ----
mkdir -p "$TMP/added"
for s in stateless v20241105; do
    args=(rawspoke stateless)
    [ $s = v20241105 ] && args=(rawspoke proto 2024-11-05)
    "$BIN/hub" spokes add "${s}_added" --config "$CONF" --spokes "$TMP/added" --yes -- \
        "$BINDIR/${args[0]}" "${args[@]:1}" >"$TMP/add.out" 2>&1
    is "spokes add of the $s server works" "$?" 0
done
is "... the stateless one is pinned with its revision" \
    "$(jget 'd["protocol"]' <"$TMP/added/stateless_added.json")" 2026-07-28
is "... and the 2024-11-05 one with its" "$(jget 'd["protocol"]' <"$TMP/added/v20241105_added.json")" 2024-11-05
like "... whose summary names the revision" "$(cat "$TMP/add.out")" '\(MCP 2024-11-05\)'
log=$RUN/spokes/tester/stateless_added.log
: >"$log"
"$BIN/hub" call --config "$CONF" --spokes "$TMP/added" stateless_added.poke '{}' >"$TMP/out" 2>&1
is "the pinned stateless spoke answers" "$?" 0
is "... and was never sent initialize (it opened with server/discover)" \
    "$(grep -c 'got initialize' "$log")" 0
check "... but was sent server/discover" grep -q 'got server/discover' "$log"

# ---- roots/list from a legacy server ----
out=$(hubc roots.poke '{}' 2>"$TMP/err")
is "roots/list during a call is answered" "$?" 0
root_uri=$(echo "$out" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(json.loads(d["content"][0]["text"])["result"]["roots"][0]["uri"])')
is "... with the spoke's data directory as its root (process mode: the host path)" \
    "$root_uri" "file://$(cd "$DATA/tester/roots" && pwd -P)"
is "no process is left behind" "$(leftover_procs)" 0
done_testing
