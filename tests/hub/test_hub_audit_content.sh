#!/usr/bin/env bash
# audit.content: what the audit keeps of a call's arguments and results.
#   hashes (the default): a SHA-256 per argument and of the result, never the values;
#   none: neither; full: the hashes, and the values in a separate transcript log, mode
#   0600 (also when the file was there with a wider mode), beside the audit log or at
#   audit.transcript, whose records match the audit's hashes. A transcript that cannot
#   be opened stops the hub at start; a bad setting is refused with a reason.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup

SECRET="secret-$$-xyz"
ARGS="{\"text\": \"$SECRET\"}"
TRANSCRIPT=$TMP/audit.transcript.jsonl
# sha EXPR_JSON: SHA-256 of the canonical JSON (compact, keys sorted) of a value.
sha() { $PY -c 'import hashlib,json,sys
v = json.loads(sys.argv[1])
print(hashlib.sha256(json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()).hexdigest())' "$1"; }
# rec ACTION EXPR [FILE]: EXPR over the last record with that event.action (r).
rec() { $PY -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[3])]
rs = [r for r in rs if r.get("event", {}).get("action") == sys.argv[1]]
v = eval(sys.argv[2], {"r": rs[-1]}) if rs else "no record"
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1" "$2" "${3:-$AUDIT}"; }
call() { : >"$AUDIT"; hubc alpha.echo "$ARGS" >"$TMP/result.json" 2>"$TMP/call.err"; }

# ---- hashes, the default ----
call
is "hashes: the call ran" "$?" 0
is "hashes: the start record has the argument's SHA-256" \
    "$(rec tool-call-start 'r["isolate"]["arguments_sha256"]["text"]')" "$(sha "\"$SECRET\"")"
is "hashes: the end record has the result's SHA-256" \
    "$(rec tool-call 'r["isolate"]["result_sha256"]')" "$(sha "$(cat "$TMP/result.json")")"
refute "hashes: the argument's value is nowhere in the audit" grep -q "$SECRET" "$AUDIT"
check "hashes: no transcript" test ! -e "$TRANSCRIPT"

# ---- none ----
hub_config "{\"audit\": {\"path\": \"$AUDIT\", \"content\": \"none\"}}"
call
is "none: the call ran" "$?" 0
is "none: no argument hash" "$(rec tool-call-start '"arguments_sha256" in r["isolate"]')" false
is "none: no result hash" "$(rec tool-call '"result_sha256" in r["isolate"]')" false
refute "none: no value either" grep -q "$SECRET" "$AUDIT"

# ---- full: beside the audit log ----
hub_config "{\"audit\": {\"path\": \"$AUDIT\", \"content\": \"full\"}}"
call
is "full: the call ran" "$?" 0
is "full: the transcript is beside the audit log, mode 0600" "$(stat -c %a "$TRANSCRIPT")" 600
refute "full: the audit itself still has no value" grep -q "$SECRET" "$AUDIT"
id=$(rec tool-call-start 'r["isolate"]["call"]["id"]')
is "full: the transcript has the arguments under the call's id" \
    "$(rec tool-call-start 'r["isolate"]["call"]["id"] + " " + r["isolate"]["arguments"]["text"]' "$TRANSCRIPT")" \
    "$id $SECRET"
is "full: ... and the result" \
    "$(rec tool-call 'r["isolate"]["result"]["structuredContent"]["text"]' "$TRANSCRIPT")" "$SECRET"
is "full: the transcript's result matches the audit's hash" \
    "$(sha "$(rec tool-call 'r["isolate"]["result"]' "$TRANSCRIPT")")" \
    "$(rec tool-call 'r["isolate"]["result_sha256"]')"
is "full: the transcript's records are its own service" \
    "$(rec tool-call 'r["service"]["name"]' "$TRANSCRIPT")" hub-transcript

# ---- full: audit.transcript, over a file that was world-readable ----
OTHER=$TMP/t/other.jsonl
mkdir -p "$TMP/t"
: >"$OTHER"
chmod 644 "$OTHER"
hub_config "{\"audit\": {\"path\": \"$AUDIT\", \"content\": \"full\", \"transcript\": \"$OTHER\"}}"
call
is "full: audit.transcript names the file" "$(rec tool-call-start 'r["isolate"]["arguments"]["text"]' "$OTHER")" "$SECRET"
is "full: a transcript found with mode 0644 is made 0600" "$(stat -c %a "$OTHER")" 600

# ---- refusals ----
hub_config "{\"audit\": {\"path\": \"$AUDIT\", \"content\": \"full\", \"transcript\": \"$TMP/t\"}}"
out=$(hubc alpha.echo "$ARGS" 2>&1)
check "full: a transcript that cannot be opened stops the hub" test $? -ne 0
like "... saying which and why" "$out" "cannot open audit log $TMP/t"
hub_config '{"audit": {"path": "-", "content": "full"}}'
out=$(hubc alpha.echo "$ARGS" 2>&1 >/dev/null)
like "full with the audit on stdout needs audit.transcript" "$out" "audit.transcript"
hub_config "{\"audit\": {\"path\": \"$AUDIT\", \"content\": \"everything\"}}"
out=$(hubc alpha.echo "$ARGS" 2>&1)
like "an unknown content setting is refused" "$out" 'audit.content: must be "none", "hashes" or "full"'
hub_config "{\"audit\": {\"path\": \"$AUDIT\", \"contents\": \"full\"}}"
out=$(hubc alpha.echo "$ARGS" 2>&1)
like "an unknown key in audit is refused" "$out" "contents"
done_testing
