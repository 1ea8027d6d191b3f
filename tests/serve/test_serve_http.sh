#!/usr/bin/env bash
# hub serve --http from the attacker's side and at its limits, with curl: no token or
# a wrong one (401 + WWW-Authenticate), a foreign Origin and a rebinding Host (403),
# another token's session (404), bad headers and bodies, per-token session limits,
# idle sessions, the refusal to listen beyond loopback without TLS, TLS, the tokens
# file, metrics. Spokes in none mode: this is about the HTTP front.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup

TOKENS=$TMP/tokens
T1=$("$BIN/hub" serve token add tester --tokens "$TOKENS")
T2=$("$BIN/hub" serve token add mallory --tokens "$TOKENS")
like "token add prints a token" "$T1" '^[A-Za-z0-9_-]{43}$'
like "the tokens file holds hashed lines" "$(head -1 "$TOKENS")" '^sha256:[0-9a-f]{64} tester$'
refute "the token itself is not stored" grep -q -- "$T1" "$TOKENS"
is "the tokens file is private" "$(stat -c %a "$TOKENS")" 600

MPORT=$(free_port)
# A generous idle timeout: on a busy machine the steps below may take seconds between
# two uses of one session (the idle end has its own hub, at the end).
serve_http_start --tokens "$TOKENS" --max-sessions-per-token 3 --idle-timeout 600 \
    --metrics "127.0.0.1:$MPORT"
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
CALL='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}'
ACC=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
# post TOKEN BODY [CURL ARGS...]: prints the status, headers in $TMP/h, body in $TMP/b
post() {
    local tok=$1 body=$2; shift 2
    curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' "${ACC[@]}" ${tok:+-H "Authorization: Bearer $tok"} \
        "$@" --data-binary "$body" "$URL"
}
sid() { grep -i '^mcp-session-id:' "$TMP/h" | cut -d' ' -f2 | tr -d '\r'; }

is "no token: 401" "$(post "" "$INIT")" 401
like "401 says how to authenticate" "$(grep -i '^www-authenticate' "$TMP/h")" 'Bearer realm="isolategpt"'
is "a wrong token: 401" "$(post "x$T1" "$INIT")" 401
like "... invalid_token" "$(grep -i '^www-authenticate' "$TMP/h")" 'error="invalid_token"'
is "a foreign Origin: 403" "$(post "$T1" "$INIT" -H 'Origin: https://evil.example')" 403
is "a look-alike Origin: 403" "$(post "$T1" "$INIT" -H 'Origin: http://localhost.evil.example')" 403
is "a rebinding Host: 403" "$(post "$T1" "$INIT" -H "Host: evil.example:$PORT")" 403
is "a loopback Host on another port: 403" "$(post "$T1" "$INIT" -H "Host: localhost:1")" 403
is "a loopback Origin is fine" "$(post "$T1" "$INIT" -H 'Origin: http://localhost:5173')" 200
S1=$(sid)
like "initialize answers with a session id" "$S1" '^[0-9a-f]{32}$'
is "a call in the session" "$(post "$T1" "$CALL" -H "Mcp-Session-Id: $S1")" 200
is "... answered as JSON" "$(jget 'd["result"]["structuredContent"]["text"]' <"$TMP/b")" hi
is "another token cannot use the session: 404" "$(post "$T2" "$CALL" -H "Mcp-Session-Id: $S1")" 404
is "no session id: 400" "$(post "$T1" "$CALL")" 400
is "an unknown session: 404" "$(post "$T1" "$CALL" -H "Mcp-Session-Id: 0123456789abcdef0123456789abcdef")" 404
is "an unknown MCP-Protocol-Version: 400" \
    "$(post "$T1" "$CALL" -H "Mcp-Session-Id: $S1" -H 'MCP-Protocol-Version: 1999-01-01')" 400
is "a batch (JSON array): 400" "$(post "$T1" "[$CALL]" -H "Mcp-Session-Id: $S1")" 400
is "not JSON: 400" "$(post "$T1" "{" -H "Mcp-Session-Id: $S1")" 400
raw() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T1" -H "Mcp-Session-Id: $S1" \
    "$@" --data-binary "$CALL" "$URL"; }
is "a text/plain body: 415" "$(raw -H 'Content-Type: text/plain' -H 'Accept: application/json, text/event-stream')" 415
is "Accept without event-stream: 406" "$(raw -H 'Content-Type: application/json' -H 'Accept: application/json')" 406
head -c 5000000 /dev/zero | tr '\0' ' ' >"$TMP/big"
is "a body over 4 MiB: 413" "$(curl -s -o /dev/null -w '%{http_code}' "${ACC[@]}" -H "Authorization: Bearer $T1" \
    -H "Mcp-Session-Id: $S1" --data-binary @"$TMP/big" "$URL")" 413
is "a notification: 202" "$(post "$T1" '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H "Mcp-Session-Id: $S1")" 202
code=$(curl -s -o "$TMP/sse" -D "$TMP/h" -w '%{http_code}' -m 1 -H 'Accept: text/event-stream' \
    -H "Authorization: Bearer $T1" -H "Mcp-Session-Id: $S1" "$URL")
like "GET opens the session's event stream" "$(grep -i '^content-type' "$TMP/h")" 'text/event-stream'
is "PUT: 405" "$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $T1" "$URL")" 405
is "another path: 404" "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $T1" "${URL%/mcp}/admin")" 404

# Sessions per token: 3. A client that never sends DELETE (most do not) is not locked
# out: at the limit its token's oldest idle session makes room; one busy with a stream is
# never taken, so a token whose sessions are all busy gets 429. Another token is not
# affected.
post "$T1" "$INIT" >/dev/null
S2=$(sid)
post "$T1" "$INIT" >/dev/null
S3=$(sid)
is "the fourth session of one token: served" "$(post "$T1" "$INIT")" 200
S4=$(sid)
is "... in place of its oldest idle one" "$(post "$T1" "$CALL" -H "Mcp-Session-Id: $S1")" 404
is "... on record" "$(audit_count 'g(r,"event.action")=="serve-session-end" and g(r,"event.reason").startswith("replaced by a new session of the same token")')" 1
getting() { # the session has its event stream open: HEAD (which opens none) says 409
    test "$(curl -s -o /dev/null -w '%{http_code}' -m 2 -I -H 'Accept: text/event-stream' \
        -H "Authorization: Bearer $T1" -H "Mcp-Session-Id: $1" "$URL")" = 409
}
STREAMS=()
for S in "$S2" "$S3" "$S4"; do
    bg curl -s -N -o /dev/null -m 30 -H 'Accept: text/event-stream' -H "Authorization: Bearer $T1" \
        -H "Mcp-Session-Id: $S" "$URL"
    STREAMS+=("$BG_PID")
    wait_for "the event stream of $S" 10 getting "$S"
done
is "every session of the token busy (a stream open): 429" "$(post "$T1" "$INIT")" 429
is "... another token still gets one" "$(post "$T2" "$INIT")" 200
SM=$(sid)
WHO='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__whoami","arguments":{}}}'
post "$T2" "$WHO" -H "Mcp-Session-Id: $SM" >/dev/null
like "the token's user is the spoke's user: mallory's own data directory" \
    "$(jget 'd["result"]["structuredContent"]["data"]' <"$TMP/b")" "/mallory/alpha\$"
M_PID=$(jget 'd["result"]["structuredContent"]["pid"]' <"$TMP/b")
post "$T1" "$WHO" -H "Mcp-Session-Id: $S2" >/dev/null
like "... and tester's token gets tester's" "$(jget 'd["result"]["structuredContent"]["data"]' <"$TMP/b")" "/tester/alpha\$"
unlike "... in another spoke process" "$(jget 'd["result"]["structuredContent"]["pid"]' <"$TMP/b")" "^$M_PID\$"
is "DELETE ends a session" "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $T1" \
    -H "Mcp-Session-Id: $S2" "$URL")" 200
is "... which is gone afterwards" "$(post "$T1" "$CALL" -H "Mcp-Session-Id: $S2")" 404
is "... and makes room for a new one" "$(post "$T1" "$INIT")" 200
kill "${STREAMS[@]}" 2>/dev/null
wait "${STREAMS[@]}" 2>/dev/null

M=$(curl -s "http://127.0.0.1:$MPORT/metrics")
like "metrics: sessions" "$M" 'isolate_serve_sessions_total [1-9]'
like "metrics: calls by outcome" "$M" 'isolate_serve_calls_total\{outcome="success"\} 3'
like "metrics: 401s counted" "$M" 'isolate_serve_http_refused_total\{reason="unauthorized"\} 2'
like "metrics: 403s counted" "$M" 'isolate_serve_http_refused_total\{reason="forbidden"\} 4'
like "metrics: latency histogram" "$M" 'isolate_serve_call_seconds_count 3'
is "refusals are in the audit log" "$(audit_count 'g(r,"event.action")=="serve-http-refused"')" 6

# What clients expect of HTTP (issue 26, point 3).
like "a 401 says how to send a token" "$(post "" "$INIT"; cat "$TMP/b")" "send the header 'Authorization: Bearer TOKEN'"
for p in /.well-known/oauth-protected-resource /.well-known/oauth-protected-resource/mcp \
    /.well-known/oauth-authorization-server /.well-known/openid-configuration; do
    is "OAuth discovery $p: 404" "$(curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' "${URL%/mcp}$p")" 404
    like "... as JSON saying to use the configured token" \
        "$(grep -i '^content-type' "$TMP/h") $(jget 'd["error_description"]' <"$TMP/b")" \
        'application/json.* static bearer token, not OAuth'
done
is "dynamic client registration (POST /register): 404" \
    "$(curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary '{"client_name":"x","redirect_uris":["http://localhost:1/cb"]}' "${URL%/mcp}/register")" 404
is "... with a JSON error" "$(jget 'd["error"]' <"$TMP/b")" not_found
is "HEAD /mcp without a token: 401, not 501" "$(curl -s -o /dev/null -w '%{http_code}' -I "$URL")" 401
post "$T1" "$INIT" >/dev/null
S5=$(sid)
is "HEAD /mcp of a session: 200" "$(curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' -I -H 'Accept: text/event-stream' \
    -H "Authorization: Bearer $T1" -H "Mcp-Session-Id: $S5" "$URL")" 200
like "... with GET's content type" "$(grep -i '^content-type' "$TMP/h")" 'text/event-stream'
is "... and no stream opened (a GET still gets one)" "$(curl -s -o /dev/null -w '%{http_code}' -m 1 \
    -H 'Accept: text/event-stream' -H "Authorization: Bearer $T1" -H "Mcp-Session-Id: $S5" "$URL")" 200
is "a CORS preflight from a loopback page: 204" "$(curl -s -o /dev/null -D "$TMP/h" -w '%{http_code}' -X OPTIONS \
    -H 'Origin: http://localhost:5173' -H 'Access-Control-Request-Method: POST' \
    -H 'Access-Control-Request-Headers: authorization, content-type, mcp-session-id' "$URL")" 204
like "... allowing that origin" "$(grep -i '^access-control-allow-origin' "$TMP/h")" 'http://localhost:5173'
like "... and the MCP headers" "$(grep -i '^access-control-allow-headers' "$TMP/h")" 'Mcp-Session-Id'
is "a preflight from a foreign page: 403" "$(curl -s -o /dev/null -w '%{http_code}' -X OPTIONS \
    -H 'Origin: https://evil.example' -H 'Access-Control-Request-Method: POST' "$URL")" 403
is "a notification's 202" "$(post "$T1" '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H "Mcp-Session-Id: $S5")" 202
is "... has no content type (no text/html)" "$(grep -ci '^content-type' "$TMP/h")" 0
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null

# An idle session ends: its end is on record (serve-session-end, idle), and its id is
# gone. Waited for on the audit log, not for a fixed time, and without touching the
# session (a request is activity).
: >"$AUDIT"
serve_http_start --tokens "$TOKENS" --idle-timeout 1
post "$T1" "$INIT" >/dev/null
SI=$(sid)
wait_for "the idle session's end" 60 audit_at_least 1 \
    'g(r,"event.action")=="serve-session-end" and g(r,"event.reason")=="idle"'
is "an idle session ends (--idle-timeout 1)" "$(post "$T1" "$CALL" -H "Mcp-Session-Id: $SI")" 404
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null

# Beyond loopback: refused without TLS (nothing is bound), and without tokens.
P=$(free_port)
"$BIN/hub" serve --http "0.0.0.0:$P" --config "$CONF" --tokens "$TOKENS" 2>"$TMP/err"
is "plain HTTP beyond loopback is refused" "$?" 2
like "... saying what to do" "$(cat "$TMP/err")" 'give --tls-cert/--tls-key, or --insecure-http'
"$BIN/hub" serve --http "0.0.0.0:$P" --config "$CONF" --insecure-http 2>"$TMP/err"
like "beyond loopback without tokens is refused" "$(cat "$TMP/err")" '--tokens FILE is required'
echo "sha256:abc tester" >"$TMP/badtokens"
"$BIN/hub" serve --http "127.0.0.1:$P" --config "$CONF" --tokens "$TMP/badtokens" 2>"$TMP/err"
like "a bad tokens line is named" "$(cat "$TMP/err")" 'badtokens:1: expected'

# TLS through libevent's OpenSSL bufferevents.
test_cert localhost
serve_http_start --tokens "$TOKENS" --tls-cert "$TMP/srv.pem" --tls-key "$TMP/srv.key"
TURL=https://localhost:$PORT/mcp
is "TLS: initialize over https" "$(curl -s -o "$TMP/b" -w '%{http_code}' --cacert "$TMP/ca.pem" "${ACC[@]}" \
    -H "Authorization: Bearer $T1" --data-binary "$INIT" "$TURL")" 200
is "... answered" "$(jget 'd["result"]["serverInfo"]["name"]' <"$TMP/b")" isolategpt-hub
refute "TLS: plain HTTP to the TLS port gets no MCP answer" \
    curl -sf -m 2 "${ACC[@]}" -H "Authorization: Bearer $T1" --data-binary "$INIT" "http://127.0.0.1:$PORT/mcp"
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
done_testing
