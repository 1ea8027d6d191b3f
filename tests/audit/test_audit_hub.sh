#!/usr/bin/env bash
# The hub's audit is chained and signed: hub calls (one process each) share the file's
# chain, a logrotate rename between them is linked over, the key is made beside the data
# root (0600), `hub audit verify --config` checks the set with it and `hub audit pubkey`
# exports it for the SIEM side; a tool call's record deleted is found.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup

hubc alpha.echo '{"text": "one"}' >/dev/null 2>"$TMP/call.err"
is "a first call" "$?" 0
hubc alpha.echo '{"text": "two"}' >/dev/null 2>>"$TMP/call.err"
is "a second call (another hub process)" "$?" 0
mv "$AUDIT" "$AUDIT.1"
hubc alpha.echo '{"text": "three"}' >/dev/null 2>>"$TMP/call.err"
is "a call after logrotate's rename" "$?" 0
is "the key is beside the data root, 0600" "$(stat -c %a "$TMP/audit.key" 2>&1)" 600
is "the new file starts with a link to the rotated one" \
    "$(head -n1 "$AUDIT" | jlines 'd["isolate"]["audit"]["chain"]')" continued
is "each hub process sealed its records" "$(cat "$AUDIT.1" "$AUDIT" | grep -c '"reason":"shutdown"')" 3
"$BIN/hub" audit verify --config "$CONF" "$AUDIT" "$AUDIT.1" >"$TMP/out" 2>&1
is "hub audit verify --config: intact" "$?" 0
like "... says so" "$(cat "$TMP/out")" "^intact: [0-9]+ records .* in 2 file"

"$BIN/hub" audit pubkey --config "$CONF" >"$TMP/pub.pem" 2>"$TMP/pub.err"
is "hub audit pubkey: exit 0" "$?" 0
like "... a PEM public key" "$(head -n1 "$TMP/pub.pem")" "^-----BEGIN PUBLIC KEY-----$"
refute "... never the private key" grep -q PRIVATE "$TMP/pub.pem"
"$BIN/hub" audit verify --key "$TMP/pub.pem" "$AUDIT" "$AUDIT.1" >/dev/null 2>&1
is "the exported key verifies the set (the SIEM side)" "$?" 0

# The attacker deletes the record that a tool was called.
grep -v '"action":"tool-call-start"' "$AUDIT.1" >"$TMP/x" && cat "$TMP/x" >"$AUDIT.1"
"$BIN/hub" audit verify --config "$CONF" "$AUDIT" "$AUDIT.1" >"$TMP/out" 2>&1
is "a tool call's record deleted: exit 1" "$?" 1
like "... named" "$(cat "$TMP/out")" "$AUDIT.1:[0-9]+: 1 record\(s\) missing"
done_testing
