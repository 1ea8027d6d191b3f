#!/usr/bin/env bash
# Secrets fail closed, from the attacker's side (issue 34, findings 3 and 4): a secret set
# with --hosts reaches a spoke only as a stand-in put into requests by netproxy. A spoke
# that cannot reach those hosts through netproxy (here: isolation "none", which has no
# netproxy; also no network, or an allowlist that does not cover them) is refused by
# `hub spokes add` and, with a manifest that asks for the secret anyway, does not start:
# the tool (testspoke's env, which looks for a value in every /proc/*/environ it can
# read) never sees the value. Only --secret-plain hands the value out, recorded in the
# manifest and audited at each start. And `hub secrets set` without --header puts the
# value into Authorization only (or the header of a known key shape), so that an API
# that reflects another header cannot hand it back; --header any is a choice.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
STORE=$TMP/store
hub_config "{\"secrets\": {\"dir\": \"$STORE\", \"key_file\": \"$TMP/store.key\"},
             \"audit\": {\"path\": \"$AUDIT\", \"content\": \"hashes\"}}"
H() {
    if [ "$1 ${2:-}" = "spokes add" ]; then
        "$BIN/hub" spokes add --config "$CONF" "${@:3}"
    else
        "$BIN/hub" "$@" --config "$CONF"
    fi
}
VALUE="tok_$$_$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32)"
printf '%s\n' "$VALUE" | H secrets set api --hosts api.service.example,*.files.example >/dev/null 2>&1
is "a secret set with --hosts" "$?" 0

# ---- spokes add refuses, naming the fixes ----
out=$(H spokes add nonet --secret API_TOKEN=api --yes -- "$BINDIR/testspoke" 2>&1)
is "spokes add --secret of a host secret, no network: refused" "$?" 2
like "... saying why and naming both fixes" "$out" \
    "--secret API_TOKEN=api: .*api.service.example.*no network.*--allow.*--secret-plain API_TOKEN=api"
check "... nothing written" test ! -e "$SPOKES/nonet.json"
out=$(H spokes add covered --allow service.example,files.example --secret API_TOKEN=api --yes \
    -- "$BINDIR/testspoke" 2>&1)
is "... an allowlist that covers the hosts, in an isolation mode without netproxy: refused" "$?" 2
like "... naming the mode" "$out" "no netproxy.*\\(none isolation\\)"
check "... nothing written" test ! -e "$SPOKES/covered.json"

# ---- --secret-plain: the value on purpose, in the manifest, audited ----
out=$(H spokes add plain --secret-plain API_TOKEN=api --yes -- "$BINDIR/testspoke" 2>&1)
is "spokes add --secret-plain API_TOKEN=api" "$?" 0 || diag "$out"
like "... said when it is added" "$out" "given to the server as it is \\(--secret-plain\\)"
is "the manifest records it as plain" "$(jget 'd["env"]["API_TOKEN"]' <"$SPOKES/plain.json")" \
    '{"secret": "api", "plain": true}'
refute "... and holds no value" grep -qF "$VALUE" "$SPOKES/plain.json"
# The calls below hand the spoke the value as their marker, to see whether its environ
# holds it: the secret scan's default (block a value of the hub's secrets) would refuse
# them before the spoke starts, so this spoke's scan only logs.
$PY - "$SPOKES/plain.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["secret_scan"] = "log"
json.dump(m, open(sys.argv[1], "w"))
PYEOF
: >"$AUDIT"
for i in 1 2; do
    res=$(hubc plain.env "{\"marker\": \"$VALUE\"}" 2>"$TMP/plain.err")
    is "start $i of the plain spoke: the call runs" "$?" 0 || diag "$(cat "$TMP/plain.err")"
done
is "... the spoke holds the value (control: the tool would see it)" \
    "$(echo "$res" | jget 'd["structuredContent"]["in_environ"]')" true
is "... each start is audited as secret-plain, naming the spoke and the secret" \
    "$(audit_count 'g(r,"event.action")=="secret-plain" and g(r,"isolate.secret.name")=="api" and "plain" in (g(r,"message") or "")')" 2

# ---- a manifest that asks for the secret without plain does not start ----
# What an older hub wrote, or a manifest edited by hand: "env": {"API_TOKEN": {"secret": "api"}}.
$PY - "$SPOKES/plain.json" "$SPOKES/sneaky.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "sneaky"
m["env"]["API_TOKEN"] = {"secret": "api"}
m["network"] = {"allow": ["service.example", "files.example"]}
json.dump(m, open(sys.argv[2], "w"))
PYEOF
: >"$AUDIT"
out=$(hubc sneaky.env "{\"marker\": \"$VALUE\"}" 2>&1)
is "a spoke whose manifest names a host secret, where netproxy cannot put it into requests, does not start" "$?" 3
unlike "... the tool never ran, so never saw the value" "$out" "in_environ"
like "... saying why and what to do" "$out" \
    "secret api \\(env API_TOKEN of spoke sneaky\\) .* refused rather than handing the spoke the value.*--secret-plain API_TOKEN=api"
is "... the refused start is audited" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="failure" and "refused rather than" in (g(r,"event.reason") or "")')" 1
out=$(H spokes update sneaky --yes 2>&1)
check "spokes update of that spoke fails too" test $? -ne 0
like "... for the same reason" "$out" "secret api \\(env API_TOKEN of spoke sneaky\\) .* refused rather than handing"
is "the value is in no log or audit file" "$(grep -rlF "$VALUE" "$RUN" "$AUDIT" 2>/dev/null)" ""

# ---- which header: Authorization unless the key's shape or the operator says ----
ANT="sk-ant-api03-$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40)"
printf '%s\n' "$VALUE" | H secrets set noheader --hosts api.service.example >/dev/null 2>&1
printf '%s\n' "$ANT" | H secrets set anthropic --hosts api.anthropic.com >/dev/null 2>&1
printf '%s\n' "$VALUE" | H secrets set anyheader --hosts api.service.example --header any >/dev/null 2>&1
printf '%s\n' "$VALUE" | H secrets set named --hosts api.service.example --header X-Api-Token >/dev/null 2>&1
is "set without --header: Authorization; an Anthropic key: x-api-key; --header any; a named one" \
    "$(H secrets list --format json | jget '[(s["name"], s.get("header")) for s in d if s["name"] != "api"]')" \
    '[["anthropic", "x-api-key"], ["anyheader", "*"], ["named", "X-Api-Token"], ["noheader", "Authorization"]]'
list=$(H secrets list 2>&1)
like "list says when a secret goes into any header" "$list" "anyheader
  put into requests to api.service.example \\(any header\\)"
like "... and which header otherwise" "$list" "noheader
  put into requests to api.service.example \\(header Authorization\\)"
printf '%s\n' "$VALUE" | H secrets set noheader >/dev/null 2>&1
is "a new value alone keeps the header" \
    "$(H secrets list --format json | jget '[s.get("header") for s in d if s["name"] == "noheader"]')" '["Authorization"]'
done_testing
