#!/usr/bin/env bash
# From the attacker's side, end to end in namespace mode (issue 34, findings 3 and 4):
# a tool that holds a stand-in and wants the real key puts the stand-in into a header
# the API reflects (X-Echo here; an echoed Origin, a request id or an error page in the
# wild). A secret set without --header is now injected into Authorization only, so the
# reflected header carries the stand-in both ways; Authorization still gets the value
# (control); `--header any` is the operator's explicit choice of the old behaviour. And
# `hub spokes add` in namespace mode refuses a --secret whose hosts its --allow does not
# cover.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
if ! command -v node >/dev/null; then
    skip "$TEST_NAME" "node is missing (make deps)"
    exit 0
fi
. "$ROOT/tests/secrets/secrets_lib.sh"
hub_setup
upstream_start api.service.example any.service.example
secrets_config api.service.example any.service.example
H() {
    if [ "$1 ${2:-}" = "spokes add" ]; then
        "$BIN/hub" spokes add --config "$CONF" "${@:3}"
    else
        "$BIN/hub" "$@" --config "$CONF"
    fi
}
KEY=sv_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
ANYKEY=sv_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
echo "$KEY" | H secrets set svc --hosts api.service.example >/dev/null
echo "$ANYKEY" | H secrets set svcany --hosts any.service.example --header any >/dev/null

out=$(H spokes add narrow --allow example.org --secret SVC_TOKEN=svc --yes \
    -- node "$ROOT/tests/secrets/probe.mjs" 2>&1)
is "namespace mode: --secret whose hosts --allow does not cover is refused" "$?" 2
like "... naming the host and the fixes" "$out" \
    "allowlist does not cover api.service.example.*--allow.*--secret-plain SVC_TOKEN=svc"
check "... nothing written" test ! -e "$SPOKES/narrow.json"

out=$(H spokes add probe --allow service.example --secret SVC_TOKEN=svc --secret ANY_TOKEN=svcany \
    --yes -- node "$ROOT/tests/secrets/probe.mjs" 2>&1)
is "spokes add probe with both secrets" "$?" 0 || diag "$out"
call() { hubc "$@" 2>>"$TMP/calls.err"; }
at_exit '[ -s "$TMP/calls.err" ] && sed "s/^/# /" "$TMP/calls.err" | head -40'
# Each `hub call` starts the spoke anew, with a new stand-in: compared within one call.
r=$(call probe.get "{\"url\":\"https://api.service.example/echo\",\"headers\":{\"X-Echo\":\"\${SVC_TOKEN}\"}}")
is "the stand-in in a reflected header: the request goes through" \
    "$(echo "$r" | jget 'd["structuredContent"]["status"]')" 200
got=$(records 'r["headers"].get("x-echo")' | tail -1)
check "... the API received a stand-in there (the value's length, not the value)" \
    test "${#got}" = "${#KEY}" -a "$got" != "$KEY"
body=$(echo "$r" | jget 'd["structuredContent"]["body"]')
is "... and what it reflected back to the spoke is that stand-in" "$(echo "$body" | jget 'd["echo"]')" "$got"
unlike "... the value is nowhere in the answer" "$r" "$KEY"
r=$(call probe.get "{\"url\":\"https://api.service.example/user\",\"headers\":{\"Authorization\":\"Bearer \${SVC_TOKEN}\"}}")
is "in Authorization the value is put in (control)" \
    "$(records 'r["headers"].get("authorization")' | tail -1)" "Bearer $KEY"
r=$(call probe.get "{\"url\":\"https://any.service.example/echo\",\"headers\":{\"X-Echo\":\"\${ANY_TOKEN}\"}}")
is "--header any: the operator's choice, the value goes into any header (control)" \
    "$(records 'r["headers"].get("x-echo")' | tail -1)" "$ANYKEY"
done_testing
