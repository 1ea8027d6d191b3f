#!/usr/bin/env bash
# hub serve --http --oauth ISSUER, an OAuth 2.1 resource server, against a stand-in
# authorization server on loopback (tests/serve/oauth_issuer.py: RFC 8414 metadata and a
# JWKS with an RSA and a P-256 key): RFC 9728 metadata and the 401 that names it; RS256
# and ES256 tokens let in as their sub, their scopes deciding the apps; and the
# attacker's tokens refused for the right reason, each on record: alg none, another
# key, HS256 with the public key as its secret, kid confusion both ways, claims changed
# after signing, another audience, another issuer, expired, not yet valid, a sub that is
# no user id, no app in the scopes. A key the issuer adds later is fetched once.
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
# The key set is fetched anew for an unknown kid at most every second here (10 s by
# default), so the rotation below is learnt without waiting out the default.
conf_merge '{"serve": {"oauth_jwks_refresh_s": 1}}'
serve_http_start --oauth "$ISSUER"
echo "$URL" >"$ISS/audience"
# The issuer adds a key now; the hub learns of it when a token names it (the end).
$PY "$ROOT/tests/serve/oauth_issuer.py" rotate "$ISS"
# mint KIND [CLAIM=JSON...]: a token, from one minting process for the whole test (a
# Python start with cryptography costs a second or more on a busy machine).
coproc MINTER { exec $PY "$ROOT/tests/serve/oauth_issuer.py" mint-loop "$ISS"; }
MINTER_IN=${MINTER[1]} MINTER_OUT=${MINTER[0]}
at_exit "kill $MINTER_PID 2>/dev/null"
mint() {
    local IFS=$'\t' tok
    printf '%s\n' "$*" >&"$MINTER_IN"
    read -r -t 60 tok <&"$MINTER_OUT" && printf '%s\n' "$tok"
}
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
# post TOKEN BODY [ARGS]: the status; the body in $TMP/body, the headers in $TMP/hdr
post() {
    local t=$1 b=$2; shift 2
    curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' ${t:+-H "Authorization: Bearer $t"} "$@" -d "$b" "$URL"
}
www() { grep -i '^www-authenticate:' "$TMP/hdr" | tr -d '\r'; }
sid() { awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}' "$TMP/hdr" | tr -d '\r'; }

meta=$(curl -s "${URL%/mcp}/.well-known/oauth-protected-resource/mcp")
is "RFC 9728 metadata: this resource and its authorization server" \
    "$(jget '[d["resource"], d["authorization_servers"], d["scopes_supported"][0]]' <<<"$meta")" \
    "[\"$URL\", [\"$ISSUER\"], \"app:*\"]"
is "no token: 401" "$(post "" "$INIT")" 401
like "... WWW-Authenticate names the metadata and the scope" "$(www)" \
    "Bearer resource_metadata=\"${URL%/mcp}/.well-known/oauth-protected-resource/mcp\", scope=\"app:\\*\"$"

T=$(mint rs256)
is "an RS256 token of the issuer: the session starts" "$(post "$T" "$INIT")" 200
S=$(sid)
post "$T" '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H "Mcp-Session-Id: $S" >/dev/null
post "$T" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__whoami","arguments":{}}}' -H "Mcp-Session-Id: $S" >/dev/null
like "... its sub is the hub user of the calls" "$(cat "$TMP/body")" '"user":"alice"|alice'
is "... which are audited as alice's" "$(audit_count 'g(r,"event.action")=="serve-call" and g(r,"isolate.user")=="alice"')" 1
post "$T" '{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}' -H "Mcp-Session-Id: $S" >/dev/null
like "... app:* reaches every app" "$(jget '" ".join(sorted({t["name"].split("__")[0] for t in d["result"]["tools"]}))' <"$TMP/body")" 'alpha beta'

E=$(mint es256 'scope="app:alpha openid"')
is "an ES256 token: the session starts" "$(post "$E" "$INIT")" 200
S2=$(sid)
post "$E" '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}' -H "Mcp-Session-Id: $S2" >/dev/null
is "... scope app:alpha: only alpha's tools are listed" "$(jget '" ".join(sorted({t["name"].split("__")[0] for t in d["result"]["tools"]}))' <"$TMP/body")" alpha
post "$E" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"beta__echo","arguments":{"text":"x"}}}' -H "Mcp-Session-Id: $S2" >/dev/null
like "... and another app's tool is not there for it" "$(cat "$TMP/body")" 'unknown tool'
B=$(mint rs256 'sub="bob"')
is "bob's token cannot use alice's session" "$(post "$B" '{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}' -H "Mcp-Session-Id: $S")" 404

refused() { # DESC KIND REASON [CLAIMS...]
    local desc=$1 kind=$2 reason=$3; shift 3
    local t
    t=$(mint "$kind" "$@")
    is "$desc: 401" "$(post "$t" "$INIT")" 401
    like "... invalid_token, saying why" "$(www)" "error=\"invalid_token\", error_description=\"[^\"]*$reason"
}
refused "alg none" none "algorithm none is not accepted"
refused "signed by another key under the issuer's kid" wrong-key "the signature does not verify"
refused "HS256 with the issuer's public key as the secret" hs256-pubkey "algorithm HS256 is not accepted"
refused "ES256 under the RSA key's kid" kid-confusion "no ES256 key of kid rsa1"
refused "RS256 under the EC key's kid" alg-swap "no RS256 key of kid ec1"
refused "claims changed after signing" tampered "the signature does not verify"
refused "meant for another resource" rs256 "not meant for this resource" 'aud="https://other.example/mcp"'
refused "issued by another issuer" rs256 "issued by https://evil.example" 'iss="https://evil.example"'
refused "expired" rs256 "expired" "exp=$(($(date +%s) - 3600))"
refused "no exp" rs256 "expired \\(or names no exp\\)" 'exp=null'
refused "not valid yet" rs256 "not valid yet" "nbf=$(($(date +%s) + 3600))"
refused "a sub that is no user id" rs256 "sub claim is not a hub user id" 'sub="../root"'
t=$(mint rs256 'scope="openid profile"')
is "no app in the scopes: 403" "$(post "$t" "$INIT")" 403
like "... insufficient_scope" "$(www)" 'error="insufficient_scope"'
is "every refusal is on record with its reason" \
    "$(audit_count 'g(r,"event.action")=="serve-http-refused" and g(r,"http.response.status_code") in (401,403)')" 14
like "... the reasons as said" "$(audit_count '"algorithm none" in (g(r,"event.reason") or "")')" '^[1-9]'

# A token under the key added at the start: taken once the set is fetched anew, which
# happens at most every serve.oauth_jwks_refresh_s (1 s here; the first fetch was at the
# hub's start).
fetches=$(wc -l <"$ISS/jwks-fetches")
t=$(mint rsa2)
for _ in $(seq 150); do
    code=$(post "$t" "$INIT")
    [ "$code" = 200 ] && break
    sleep 0.2
done
is "a key the issuer added later: the set is fetched anew and the token taken" "$code" 200
is "... with one fetch more (not one per request)" "$(wc -l <"$ISS/jwks-fetches")" $((fetches + 1))
out=$("$BIN/hub" serve --http 127.0.0.1:1 --oauth "$ISSUER" --tokens "$TMP/none" --config "$CONF" 2>&1)
like "--oauth with --tokens is refused" "$out" 'give one'
out=$("$BIN/hub" serve --http 127.0.0.1:0 --oauth http://198.51.100.1/ --config "$CONF" 2>&1)
like "an issuer over plain http beyond this machine is refused" "$out" 'must be an https URL'
done_testing
