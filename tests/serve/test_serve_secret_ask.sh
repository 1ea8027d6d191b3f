#!/usr/bin/env bash
# secret_scan "ask" through a client (tests/serve/secret_ask_probe.py): a spoke's result
# carries the value of one of the hub's secrets; the client is asked through
# elicitation without the value in the question, with "once" and "no" as the only
# choices; once lets that result through, an answer never offered ("session") counts for
# that time only (the next result is asked about again), and a decline refuses it. Each
# answer is on record with the kind, never the value.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
conf_merge "{\"secrets\": {\"dir\": \"$TMP/store\", \"key_file\": \"$TMP/store.key\"}}"
VALUE="tok_$$_5e4f3a2b1c0d9e8f7a6b5c3f9a8b7c6d"
printf '%s\n' "$VALUE" | "$BIN/hub" secrets set apitoken --config "$CONF" >/dev/null 2>&1
is "a secret in the hub's store" "$?" 0
$PY - "$SPOKES/alpha.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["env"] = {"API_TOKEN": {"secret": "apitoken"}}
m["secret_scan"] = "ask"
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
$PY "$ROOT/tests/serve/secret_ask_probe.py" "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$VALUE" \
    >"$TMP/probe.out" 2>"$TMP/probe.err"
got() { sed -n "s/^$1 //p" "$TMP/probe.out"; }
is "the client is asked about the secret in the result" "$(got asked1)" yes
like "... the question says what was found, and that its value is not shown" "$(got text1)" \
    "The result of alpha.env carries the secret apitoken.*not shown"
is "... the value is nowhere in the question" "$(got value_in_question1)" no
is "... the choices are once and no (nothing is kept)" "$(got choices1)" "once,no"
is "once: the result comes through, untouched" "$(got value_in_result1)" yes
is "the next result is asked about again" "$(got asked2)" yes
is "... \"session\", never offered, lets it through this time" "$(got value_in_result2)" yes
is "... and is not kept: the third is asked about too" "$(got asked3)" yes
is "a decline: the result is refused" "$(got denied3)" yes
is "... and its value does not reach the client" "$(got value_in_result3)" no
is "the hub ended cleanly" "$(got rc)" 0
is "three answers on record: two allowed, one denied" \
    "$(audit_count 'g(r,"event.action")=="secret-detected" and g(r,"isolate.secret_scan.answer")=="allowed"') $(audit_count 'g(r,"event.action")=="secret-detected" and g(r,"isolate.secret_scan.answer")=="denied"')" \
    "2 1"
refute "the value is nowhere in the audit" grep -rq "$VALUE" "$AUDIT"
diag "$(cat "$TMP/probe.err")"
done_testing
