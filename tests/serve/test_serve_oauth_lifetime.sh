#!/usr/bin/env bash
# hub serve --oauth caps the lifetime of the tokens it takes (issue 34, finding 10): a
# token signed by the issuer's own key and right in every other claim, but valid for
# 100 years, would be a key for good once stolen. Against the stand-in authorization
# server of test_serve_oauth.sh (tests/serve/oauth_issuer.py): the hub's default cap
# (hub.json serve.oauth_max_token_lifetime_s, 24 h) lets a 23-hour token in and refuses,
# with the reason on record, a 100-year token, one without iat, one whose iat is a
# century old, one whose iat is put just before a far exp, and a 25-hour one.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
if ! $PY -c 'import cryptography' 2>/dev/null; then
    skip "hub serve --oauth" "python3-cryptography is not installed (make deps)"
    exit 0
fi
ISS=$TMP/issuer
mkdir -p "$ISS"
bg $PY "$ROOT/tests/serve/oauth_issuer.py" serve "$ISS"
wait_for "the stand-in issuer" 20 test -s "$ISS/port"
ISSUER=$(cat "$ISS/issuer")
serve_http_start --oauth "$ISSUER"
echo "$URL" >"$ISS/audience"
coproc MINTER { exec $PY "$ROOT/tests/serve/oauth_issuer.py" mint-loop "$ISS"; }
MINTER_IN=${MINTER[1]} MINTER_OUT=${MINTER[0]}
at_exit "kill $MINTER_PID 2>/dev/null"
mint() {
    local IFS=$'\t' tok
    printf '%s\n' "$*" >&"$MINTER_IN"
    read -r -t 60 tok <&"$MINTER_OUT" && printf '%s\n' "$tok"
}
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
post() {
    curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H "Authorization: Bearer $1" -d "$INIT" "$URL"
}
www() { grep -i '^www-authenticate:' "$TMP/hdr" | tr -d '\r'; }
NOW=$(date +%s)
CENTURY=$((100 * 366 * 86400))

is "a token valid for 23 hours (under the 24 h default): the session starts" \
    "$(post "$(mint rs256 "iat=$NOW" "exp=$((NOW + 23 * 3600))")")" 200
refused() { # DESC CLAIMS...
    local desc=$1; shift
    is "$desc: 401" "$(post "$(mint rs256 "$@")")" 401
    like "... invalid_token, saying why" "$(www)" \
        'error="invalid_token", error_description="the token is valid for longer than this hub accepts \(86400 s'
}
refused "a token valid for 100 years" "iat=$NOW" "exp=$((NOW + CENTURY))"
refused "... without iat" 'iat=null' "exp=$((NOW + CENTURY))"
refused "... whose iat says it was issued a moment before its far exp" \
    "iat=$((NOW + CENTURY - 60))" "exp=$((NOW + CENTURY))"
refused "a token issued a century ago that ends in 5 minutes" "iat=$((NOW - CENTURY))" "exp=$((NOW + 300))"
refused "a token valid for 25 hours" "iat=$NOW" "exp=$((NOW + 25 * 3600))"
is "each refusal is on record with its reason" \
    "$(audit_count 'g(r,"event.action")=="serve-http-refused" and "valid for longer" in (g(r,"event.reason") or "")')" 5

$PY - "$CONF" "$TMP/bad.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c.setdefault("serve", {})["oauth_max_token_lifetime_s"] = 10
json.dump(c, open(sys.argv[2], "w"))
PYEOF
out=$("$BIN/hub" spokes --config "$TMP/bad.json" 2>&1)
like "a cap under a minute in hub.json is refused" "$out" "oauth_max_token_lifetime_s"
done_testing
