#!/usr/bin/env bash
# Secrets in tool traffic (hub/secrets/secretscan.h), from the attacker's side: a spoke
# that returns the value of one of the hub's secrets (its environment) has the result
# blocked and audited with the secret's name, never its value; a caller that passes a
# secret's value in the arguments is refused before the spoke sees them; a key of a
# known shape or a private key block is redacted by default; the manifest's secret_scan
# (log, redact) changes that, and a bad value is refused.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
STORE=$TMP/store
hub_config "{\"secrets\": {\"dir\": \"$STORE\", \"key_file\": \"$TMP/store.key\"}}"
VALUE="tok_$$_3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
printf '%s\n' "$VALUE" | "$BIN/hub" secrets set apitoken --config "$CONF" >/dev/null 2>&1
is "a secret in the hub's store" "$?" 0
# alpha gets it in its environment (env mode: the value itself); policy P if given.
alpha_policy() {
    $PY - "$SPOKES/alpha.json" "${1:-}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["env"] = {"API_TOKEN": {"secret": "apitoken"}}
m.pop("secret_scan", None)
if sys.argv[2]:
    m["secret_scan"] = sys.argv[2]
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
}
# last ACTION EXPR: EXPR over the last audit record with that event.action (r).
last() { $PY -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[3])]
rs = [r for r in rs if r.get("event", {}).get("action") == sys.argv[1]]
v = eval(sys.argv[2], {"r": rs[-1]}) if rs else "no record"
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1" "$2" "$AUDIT"; }
count() { grep -c "\"action\":\"$1\"" "$AUDIT" || true; }
alpha_policy

# ---- the hostile spoke hands back the secret's value ----
: >"$AUDIT"
hubc alpha.env '{"marker": "API_TOKEN"}' >"$TMP/out" 2>"$TMP/err"
is "a result carrying a secret's value: the call fails (exit 3)" "$?" 3
like "... refused by the secret scan" "$(cat "$TMP/err")" "secret-scan.*alpha.env: its result carr.* the secret apitoken: refused"
refute "... the value is not printed" grep -q "$VALUE" "$TMP/out" "$TMP/err"
is "audited: secret-detected, failure" "$(last secret-detected 'r["event"]["outcome"]')" failure
is "... the kind" "$(last secret-detected 'r["isolate"]["secret_scan"]["kinds"]')" '["secret-value"]'
is "... the secret's name" "$(last secret-detected 'r["isolate"]["secret"]["name"]')" apitoken
is "... in the result, blocked" \
    "$(last secret-detected 'r["isolate"]["secret_scan"]["direction"] + " " + r["isolate"]["secret_scan"]["action"]')" \
    "result block"
is "... for the call and the app" "$(last secret-detected 'r["isolate"]["app"] + "." + r["isolate"]["tool"]')" alpha.env
refute "the value is nowhere in the audit" grep -q "$VALUE" "$AUDIT"

# ---- a caller passes the value in the arguments ----
: >"$AUDIT"
hubc alpha.echo "{\"text\": \"here: $VALUE\"}" >"$TMP/out" 2>"$TMP/err"
is "arguments carrying a secret's value: refused (exit 3)" "$?" 3
is "... before the spoke got them: no tool-call-start" "$(count tool-call-start)" 0
is "... audited as in the arguments" "$(last secret-detected 'r["isolate"]["secret_scan"]["direction"]')" arguments

# ---- key shapes and private keys: redacted by default ----
KEY=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8
: >"$AUDIT"
hubc alpha.echo "{\"text\": \"use token=$KEY please\"}" >"$TMP/out" 2>"$TMP/err"
is "a GitHub token in the arguments: the call goes on" "$?" 0
like "... with the token redacted" "$(cat "$TMP/out")" 'use token=\[redacted: a GitHub token \(ghp_\)\] please'
refute "... nowhere in the output" grep -q "$KEY" "$TMP/out"
is "... audited: redact" "$(last secret-detected 'r["isolate"]["secret_scan"]["action"] + " " + r["isolate"]["secret_scan"]["shape"]')" \
    "redact a GitHub token (ghp_)"
PEM='-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----'
hubc alpha.echo "{\"text\": \"key: $PEM end\"}" >"$TMP/out" 2>"$TMP/err"
is "a private key block: the call goes on" "$?" 0
like "... the block redacted" "$(cat "$TMP/out")" 'key: \[redacted: a private key \(PEM\)\] end'
refute "... nothing of it left" grep -q "b3BlbnNzaC1rZXkt" "$TMP/out"
hubc alpha.echo '{"text": "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 and sk-short"}' >"$TMP/out" 2>&1
is "ordinary text (a hash, a short sk-) passes untouched" "$(grep -c redacted "$TMP/out")" 0

# ---- the manifest's policy ----
alpha_policy log
: >"$AUDIT"
hubc alpha.env '{"marker": "API_TOKEN"}' >"$TMP/out" 2>"$TMP/err"
is "secret_scan log: the result goes on" "$?" 0
is "... and is audited (log)" "$(last secret-detected 'r["event"]["outcome"] + " " + r["isolate"]["secret_scan"]["action"]')" "success log"
alpha_policy redact
hubc alpha.env '{"marker": "API_TOKEN"}' >"$TMP/out" 2>"$TMP/err"
is "secret_scan redact: the result goes on" "$?" 0
like "... with the value replaced by the secret's name" "$(cat "$TMP/out")" 'API_TOKEN=\[secret apitoken\]'
refute "... the value gone" grep -q "$VALUE" "$TMP/out"
# ---- ask: the user decides, each time, without seeing the value ----
alpha_policy ask
: >"$AUDIT"
hubc alpha.env '{"marker": "API_TOKEN"}' >"$TMP/out" 2>"$TMP/err"
is "secret_scan ask, nobody to say yes (--answers deny, hub call's default): refused (exit 3)" "$?" 3
like "... as the user's no" "$(cat "$TMP/err")" "alpha.env: letting the secret in its result through was denied"
refute "... the value is not printed" grep -q "$VALUE" "$TMP/out" "$TMP/err"
is "... audited: asked, denied" \
    "$(last secret-detected 'r["isolate"]["secret_scan"]["action"] + " " + r["isolate"]["secret_scan"]["answer"] + " " + r["event"]["outcome"]')" \
    "ask denied failure"
hubc --answers allow alpha.env '{"marker": "API_TOKEN"}' >"$TMP/out" 2>"$TMP/err"
is "secret_scan ask, the user says yes (--answers allow): the result goes on" "$?" 0
check "... untouched (the value itself: the user let it through)" grep -q "$VALUE" "$TMP/out"
is "... audited: asked, allowed" \
    "$(last secret-detected 'r["isolate"]["secret_scan"]["answer"] + " " + r["event"]["outcome"]')" "allowed success"
refute "... the value is nowhere in the audit" grep -q "$VALUE" "$AUDIT"
# A rule for the category secret alone: exec and other questions keep their answers.
cat >"$TMP/answers.json" <<'EOF_A'
{"default": "once", "rules": [{"category": "secret", "stage": "call", "decision": "no"}]}
EOF_A
: >"$AUDIT"
hubc --answers "$TMP/answers.json" alpha.echo "{\"text\": \"here: $VALUE\"}" >"$TMP/out" 2>"$TMP/err"
is "arguments with a secret, a rule says no for category secret, stage call: refused (exit 3)" "$?" 3
is "... before the spoke got them: no tool-call-start" "$(count tool-call-start)" 0
hubc --answers "$TMP/answers.json" alpha.env '{"marker": "API_TOKEN"}' >"$TMP/out" 2>"$TMP/err"
is "... while the result (stage relay) falls to the default once: it goes on" "$?" 0
: >"$AUDIT"
hubc --answers allow alpha.echo "{\"text\": \"here: $VALUE\"}" >"$TMP/out" 2>"$TMP/err"
is "arguments with a secret, the user says yes: the call goes on" "$?" 0
is "... and reaches the spoke (tool-call-start)" "$(count tool-call-start)" 1

alpha_policy sometimes
hubc alpha.echo '{"text": "x"}' >"$TMP/out" 2>"$TMP/err"
is "a bad secret_scan: the manifest is refused" "$?" 2
like "... saying what it may be" "$(cat "$TMP/err")" 'secret_scan: must be "block", "redact", "ask" or "log"'
done_testing
