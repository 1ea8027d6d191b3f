#!/usr/bin/env bash
# hub serve --http against the attacks of issue 27's hostile review, each from the
# attacker's side (tests/serve/http_attack.py) and each with the record it leaves:
#   1. DNS rebinding through a name that starts like a loopback address
#      (Host/Origin 127.attacker.example): 403;
#   2. memory before authentication: an anonymous body is refused after its headers,
#      before it is read (413 at once; the hub's peak memory does not grow with 24
#      anonymous 4 MB bodies); a request that trickles in is cut at --request-timeout;
#      connections per source are capped, the oldest anonymous one making room;
#   3. descriptors: with accept() out of descriptors (RLIMIT_NOFILE 64 and a connection
#      cap above it) the listener pauses instead of spinning and logging, and a client
#      with a token is still served;
#  10. a token removed from the tokens file stops working and its sessions end; one added
#      works without a restart (the file followed, and SIGHUP).
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
ATTACK="$PY $ROOT/tests/serve/http_attack.py"
TOKENS=$TMP/tokens
T1=$("$BIN/hub" serve token add tester --tokens "$TOKENS")
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
ACC=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
post() { # post TOKEN [CURL ARGS...]: the status of an initialize
    local tok=$1; shift
    curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' -m 10 "${ACC[@]}" \
        ${tok:+-H "Authorization: Bearer $tok"} "$@" --data-binary "$INIT" "$URL"
}
refusals() { audit_count "g(r,\"event.action\")==\"serve-http-refused\" and ($1)"; }

# 1. Without --tokens, on loopback: the Host and Origin checks are all there is.
serve_http_start
is "a loopback Host and Origin: served" "$(post "" -H "Host: 127.0.0.1:$PORT" -H "Origin: http://localhost:$PORT")" 200
is "... another address of 127/8" "$(post "" -H "Host: 127.0.0.2:$PORT")" 200
is "a rebinding name starting '127.': 403" \
    "$(post "" -H "Host: 127.attacker.example:$PORT" -H "Origin: http://127.attacker.example:$PORT")" 403
is "... and as Origin alone: 403" "$(post "" -H "Origin: http://127.0.0.1.attacker.example:$PORT")" 403
is "... a name under localhost: 403" "$(post "" -H "Host: localhost.attacker.example:$PORT")" 403
is "... an address spelt short (127.1), which inet_pton does not read: 403" \
    "$(post "" -H "Host: 127.1:$PORT")" 403
is "the rebinding attempts are on record" \
    "$(refusals 'g(r,"event.reason")=="Host is not a loopback name"')" 3
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null

# 2. Memory before authentication, slow requests, connections per source.
serve_http_start --tokens "$TOKENS" --request-timeout 2 --max-connections-per-source 8
out=$($ATTACK early "$PORT" 4194304)
is "an anonymous 4 MiB body is refused after its headers: 413" "$(jget 'd["status"]' <<<"$out")" 413
like "... at once, without waiting for the body" "$(jget 'd["seconds"]' <<<"$out")" '^0\.[0-9]+$'
is "... on record, with the reason" \
    "$(refusals 'g(r,"event.reason").startswith("no bearer token, with a body over the limit") and g(r,"http.response.status_code")==413')" 1
out=$($ATTACK early "$PORT" 4194304 "x$T1")
is "... the same with a wrong token" "$(jget 'd["status"]' <<<"$out")" 413
# A small anonymous body still gets its 401 (and how to authenticate), not a 413.
is "a small anonymous request: 401" "$(post "")" 401
like "... whose message says how to send a token" "$(cat "$TMP/b")" "Authorization: Bearer TOKEN"
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$SERVE_PID/status"; }
before=$(hwm)
out=$($ATTACK bodies "$PORT" 8 4000000)
out2=$($ATTACK bodies "$PORT" 8 4000000)
out3=$($ATTACK bodies "$PORT" 8 4000000)
grown=$(( $(hwm) - before ))
diag "24 anonymous 4 MB bodies: $out $out2 $out3; peak memory grew by $grown KiB"
# Each gets 413, or a reset when the hub closes while the client still sends (its reply
# then lost): no anonymous body is read.
refused() { jget 'sum(v for k, v in d["statuses"].items() if k in ("413", "None"))' <<<"$1"; }
is "24 anonymous 4 MB bodies: each refused (413, or reset while still sending)" \
    "$(refused "$out") $(refused "$out2") $(refused "$out3")" "8 8 8"
check "... and the hub's peak memory grew by less than 16 MiB ($grown KiB)" test "$grown" -lt 16384
is "a token holder's own request is still read whole" "$(post "$T1")" 200
out=$($ATTACK slow "$PORT" 0.4 12)
like "a request trickling in a byte at a time is cut at --request-timeout 2" \
    "$(jget 'd["closed_after"]' <<<"$out")" '^[234]\.[0-9]+$'
is "... on record" "$(refusals 'g(r,"event.reason")=="the request did not arrive whole within 2 s"')" 1
out=$($ATTACK idle "$PORT" 20 1 "$SERVE_PID" "$T1")
diag "20 idle anonymous connections, 8 per source: $out"
is "20 idle anonymous connections from one source, 8 allowed: 12 closed" \
    "$(jget 'd["closed_by_server"]' <<<"$out")" 12
is "... and a client with a token still gets in (it makes room too)" \
    "$(jget 'd["valid_status"]' <<<"$out")" 200
like "... on record" "$(refusals 'g(r,"event.reason").startswith("too many connections from one source (8): the oldest anonymous")')" '^1[0-9]$'
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null

# 3. Out of descriptors: RLIMIT_NOFILE 64 and a connection cap above it, so that accept()
# fails with EMFILE while 150 connections wait.
: >"$TMP/serve.err"
port=$(free_port)
URL=http://127.0.0.1:$port/mcp PORT=$port
bg prlimit --nofile=64:64 -- "$BIN/hub" serve --http "127.0.0.1:$port" --config "$CONF" \
    --tokens "$TOKENS" --max-connections 1000 --max-connections-per-source 1000 --request-timeout 30 \
    2>>"$TMP/serve.err"
SERVE_PID=$BG_PID
wait_for "hub serve on port $port" 10 curl -s -o /dev/null "http://127.0.0.1:$port/"
HUB_PID=$SERVE_PID # prlimit execs the hub
out=$($ATTACK idle "$PORT" 150 2 "$HUB_PID" "$T1")
diag "150 idle connections at RLIMIT_NOFILE 64: $out; $(grep -c accept "$TMP/serve.err") accept lines"
is "out of descriptors: a client with a token is served" "$(jget 'd["valid_status"]' <<<"$out")" 200
check "... within 5 s" $PY -c "import sys; sys.exit(not $(jget 'd["valid_s"]' <<<"$out") < 5)"
check "... the hub used under 0.5 s of CPU in 2 s of it (no accept loop)" \
    $PY -c "import sys; sys.exit(not $(jget 'd["cpu_s"]' <<<"$out") < 0.5)"
check "... and said so in at most 3 lines" test "$(grep -c 'accept' "$TMP/serve.err")" -le 3
like "... the refused connections on record" \
    "$(refusals 'g(r,"event.reason").startswith("out of file descriptors")')" '^[1-9][0-9]*$'
is "... the hub still runs" "$(post "$T1")" 200
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null

# 10. The tokens file followed: a token added works without a restart, a removed one stops
# working and its sessions end; SIGHUP reloads at once.
serve_http_start --tokens "$TOKENS"
T2=$("$BIN/hub" serve token add mallory --tokens "$TOKENS.new" 2>/dev/null)
is "a token not in the file: 401" "$(post "$T2")" 401
cat "$TOKENS.new" >>"$TOKENS"
status_is() { test "$(post "$1")" = "$2"; }
wait_for "the added token" 10 status_is "$T2" 200
is "a token added to the file works without a restart" "$(post "$T2")" 200
S2=$(grep -i '^mcp-session-id:' "$TMP/h" | cut -d' ' -f2 | tr -d '\r')
CALL='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}'
callin() { curl -s -o /dev/null -w '%{http_code}' -m 10 "${ACC[@]}" -H "Authorization: Bearer $1" \
    -H "Mcp-Session-Id: $2" --data-binary "$CALL" "$URL"; }
is "... a call in its session" "$(callin "$T2" "$S2")" 200
grep -v mallory "$TOKENS" >"$TOKENS.tmp" && cat "$TOKENS.tmp" >"$TOKENS"
kill -HUP "$SERVE_PID"
wait_for "the removed token" 10 status_is "$T2" 401
is "a token removed from the file (SIGHUP): 401" "$(post "$T2")" 401
is "... also in its session" "$(callin "$T2" "$S2")" 401
is "... whose sessions (the two it started) ended, on record" "$(audit_count 'g(r,"event.action")=="serve-session-end" and g(r,"event.reason")=="its token was removed from the tokens file"')" 2
like "... and the reload too" "$(audit_count 'g(r,"event.action")=="serve-tokens-reloaded"')" '^[2-9]$'
is "the token that stayed still works" "$(post "$T1")" 200
echo "garbage" >>"$TOKENS"
kill -HUP "$SERVE_PID"
wait_for "the bad file said" 10 grep -q 'the tokens loaded before stay' "$TMP/serve.err"
is "a tokens file that does not load keeps the last good tokens" "$(post "$T1")" 200
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
done_testing
