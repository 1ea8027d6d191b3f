#!/usr/bin/env bash
# Framing as lenient as the MCP SDKs and as bounded (issue 25, item 5), with raw
# spokes (tests/hub/rawspoke.c): text, a JSON log line, console.log output and a blank
# line on stdout are skipped into the spoke's log (neutralised, once on record) and
# the call works; the same past the noise budget kills the spoke; a burst of log
# messages before initialize is answered passes the idle token bucket, a flood does
# not; a frame that claims JSON-RPC and breaks its envelope is still an attack; a
# 2025-03-26 spoke's batch is taken.
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
cp "$BIN/tests/hub/rawspoke" "$BINDIR/"
raw_manifest() { # NAME ARGS...
    local name=$1
    shift
    $PY - "$name" "$@" <<EOF
import json, sys
m = {"name": sys.argv[1], "description": "Raw framing probe.",
     "command": ["rawspoke"] + sys.argv[2:], "runtime": "c",
     "tools": [{"name": "poke", "description": "Hostile terminal probe.",
                "inputSchema": {"type": "object"}}]}
json.dump(m, open("$SPOKES/%s.json" % m["name"], "w"))
EOF
}
raw_manifest noisy noise
raw_manifest noiseflood noiseflood 256
raw_manifest burst startburst 40
raw_manifest idleflood startburst 100000
raw_manifest badenv badenvelope
raw_manifest batched batch

# ---- noise before the first frame and during the call: skipped, logged, audited ----
: >"$AUDIT"
hubc noisy.poke '{}' >"$TMP/out" 2>"$TMP/err"
rc=$?
diag "noisy: exit $rc; $(head -c 300 "$TMP/err")"
is "text and other JSON on stdout do not end the spoke: the call works" "$rc" 0
is "... and its result is the spoke's" "$(jget 'd["content"][0]["text"]' <"$TMP/out")" poked
log=$RUN/spokes/tester/noisy.log
check "the skipped lines are in the spoke's log ($log)" \
    grep -q "not JSON-RPC, skipped\] Starting rawspoke MCP server on stdio" "$log"
is "... all of them, before the first frame and during the call (2 x 4 non-blank lines)" \
    "$(grep -c 'not JSON-RPC, skipped\] [^ ]' "$log")" 8
check "... a JSON object without \"jsonrpc\" (a JSON logger's line) among them" \
    grep -q 'skipped\] {"level":30' "$log"
is "... neutralised: no ESC and no bidi override reaches the log" \
    "$($PY -c 'import sys; d=open(sys.argv[1],"rb").read(); print(d.count(b"\x1b")+d.count(b"\xe2\x80\xae"))' "$log")" 0
is "the first skipped line of the instance is on record (spoke-noise), once" \
    "$(audit_count 'g(r,"event.action")=="spoke-noise" and g(r,"isolate.app")=="noisy"')" 1
is "no spoke-kill for noise within the budget" \
    "$(audit_count 'g(r,"event.action")=="spoke-kill" and g(r,"isolate.app")=="noisy"')" 0

# ---- past the byte budget: killed, with the reason and a record ----
: >"$AUDIT"
hubc noiseflood.poke '{}' >"$TMP/out" 2>"$TMP/err"
rc=$?
is "256 KiB of text lines in one go: the call fails (exit 3)" "$rc" 3
like "... because the spoke wrote more non-JSON-RPC output than the hub skips" \
    "$(cat "$TMP/err")" "more output on stdout that is not JSON-RPC than the hub skips \\(65536 bytes"
is "... audited as a flood kill" \
    "$(audit_count 'g(r,"event.action")=="spoke-kill" and g(r,"isolate.app")=="noiseflood" and g(r,"event.reason")=="flood"')" 1

# ---- notifications before initialize is answered: a token bucket, not a count ----
: >"$AUDIT"
hubc burst.poke '{}' >"$TMP/out" 2>"$TMP/err"
rc=$?
diag "burst: $(head -c 300 "$TMP/err")"
is "40 log messages at start (desktop-commander sends about 17) pass: the call works" "$rc" 0
is "... and they are in the spoke's log, not lost" \
    "$(grep -c 'notifications/message, info\] starting up' "$RUN/spokes/tester/burst.log")" 40
hubc idleflood.poke '{}' >"$TMP/out" 2>"$TMP/err"
rc=$?
is "100000 at start: the call fails (exit 3)" "$rc" 3
like "... the spoke killed for too many frames outside a call" "$(cat "$TMP/err")" \
    "too many frames outside a call"
is "... audited with the reason flood" \
    "$(audit_count 'g(r,"event.action")=="spoke-kill" and g(r,"isolate.app")=="idleflood" and g(r,"event.reason")=="flood"')" 1

# ---- a frame that claims JSON-RPC and breaks it is still refused ----
: >"$AUDIT"
hubc badenv.poke '{}' >"$TMP/out" 2>"$TMP/err"
rc=$?
is "a response with both result and error: the call fails (exit 3)" "$rc" 3
like "... as a malformed frame, saying what is wrong" "$(cat "$TMP/err")" \
    "malformed frame: a response carries exactly one of"
is "... audited as malformed-frame" \
    "$(audit_count 'g(r,"event.action")=="spoke-kill" and g(r,"event.reason")=="malformed-frame"')" 1

# ---- protocol 2025-03-26: a JSON-RPC batch is taken ----
hubc batched.poke '{}' >"$TMP/out" 2>"$TMP/err"
rc=$?
diag "batch: $(head -c 300 "$TMP/err")"
is "a 2025-03-26 spoke's answer inside a batch: the call works" "$rc" 0
is "... with the batched result" "$(jget 'd["content"][0]["text"]' <"$TMP/out")" batched
like "... and the log message of the same batch reached the caller" "$(cat "$TMP/err")" "in a batch"
is "no process is left behind" "$(leftover_procs)" 0
done_testing
