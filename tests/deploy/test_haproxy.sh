#!/usr/bin/env bash
# Two `hub serve --http` instances behind Debian's HAProxy with the shipped
# configuration (config/haproxy/isolategpt.cfg; only addresses, ports and timings
# changed, no TLS on loopback): sessions are spread over both instances and each stays
# on the one that created it (the stick table learns Mcp-Session-Id from initialize);
# a foreign Host is refused at the front; when one instance is killed, its clients'
# next request is answered 404 by the other (redispatch), and they initialize again
# there and go on.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
command -v haproxy >/dev/null || { skip "$TEST_NAME" "haproxy is not installed (make deps)"; exit 0; }
serve_setup

# Both instances on the same port of two loopback addresses, as two machines would be:
# the Host the front rewrites to (localhost:PORT) is then right for both.
PORT=$(free_port)
start_instance() { # N ADDR
    bg "$BIN/hub" serve --http "$2:$PORT" --config "$CONF" --audit "$TMP/audit$1.jsonl" \
        2>>"$TMP/serve$1.err"
    eval "HUB$1=$BG_PID"
    wait_for "instance $1" 10 curl -s -o /dev/null "http://$2:$PORT/"
}
start_instance 1 127.0.0.2
start_instance 2 127.0.0.3

HPORT=$(free_port)
sed -e "s|^    bind :443 ssl crt .*|    bind 127.0.0.1:$HPORT|" \
    -e "s|mcp.example.com|127.0.0.1:$HPORT|" \
    -e "s|localhost:8750|localhost:$PORT|" \
    -e "s|10.0.0.11:8750 check inter 2s|127.0.0.2:$PORT check inter 300ms|" \
    -e "s|10.0.0.12:8750 check inter 2s|127.0.0.3:$PORT check inter 300ms|" \
    -e "s|^    log stdout.*|    log stderr format raw local0 notice|" -e "s|^    maxconn .*|    maxconn 2000|" \
    "$ROOT/config/haproxy/isolategpt.cfg" >"$TMP/haproxy.cfg"
check "haproxy accepts the configuration (-c)" haproxy -c -q -f "$TMP/haproxy.cfg"
bg haproxy -db -f "$TMP/haproxy.cfg"
FRONT=http://127.0.0.1:$HPORT/mcp
wait_for "haproxy" 10 curl -s -o /dev/null "$FRONT"

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
ACC=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
post() { # BODY [CURL ARGS...]: the status; headers in $TMP/h, body in $TMP/b
    local body=$1; shift
    curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' "${ACC[@]}" "$@" --data-binary "$body" "$FRONT"
}
call() { # SESSION N: alpha__echo through the front
    post "{\"jsonrpc\":\"2.0\",\"id\":$2,\"method\":\"tools/call\",\"params\":{\"name\":\"alpha__echo\",\"arguments\":{\"text\":\"n$2\"}}}" \
        -H "Mcp-Session-Id: $1"
}
session() { # a new session through the front; prints its id
    post "$INIT" >/dev/null
    local s
    s=$(grep -i '^mcp-session-id:' "$TMP/h" | cut -d' ' -f2 | tr -d '\r')
    post "$INITED" -H "Mcp-Session-Id: $s" >/dev/null
    echo "$s"
}
instance_of() { # SESSION: 1 or 2, from the instances' own audit logs
    grep -l "\"session\":\"$1\"" "$TMP/audit1.jsonl" "$TMP/audit2.jsonl" 2>/dev/null |
        sed -n 's|.*/audit\([12]\)\.jsonl|\1|p' | head -1
}

is "a foreign Host is refused at the front" \
    "$(post "$INIT" -H 'Host: evil.example' 2>/dev/null)" 403
CLIENTS=8
declare -a S
for i in $(seq 1 $CLIENTS); do S[i]=$(session); done
ids_ok=0
for i in $(seq 1 $CLIENTS); do [[ "${S[i]}" =~ ^[0-9a-f]{32}$ ]] && ids_ok=$((ids_ok + 1)); done
is "$CLIENTS sessions initialized through the front" "$ids_ok" $CLIENTS
on1=0 on2=0
for i in $(seq 1 $CLIENTS); do
    case "$(instance_of "${S[i]}")" in 1) on1=$((on1 + 1)) ;; 2) on2=$((on2 + 1)) ;; esac
done
is "the sessions are spread over both instances" "$((on1 > 0 && on2 > 0)):$((on1 + on2))" "1:$CLIENTS"
good=0
for i in $(seq 1 $CLIENTS); do
    for n in 1 2 3 4 5; do
        [ "$(call "${S[i]}" $((i * 10 + n)))" = 200 ] && grep -q "\"n$((i * 10 + n))\"" "$TMP/b" &&
            good=$((good + 1))
    done
done
is "every call of every session reaches the instance that holds it (sticky)" "$good" $((CLIENTS * 5))

# One instance dies: its clients are redispatched, told the session is gone, and start
# again on the other.
kill -9 "$HUB1"
wait "$HUB1" 2>/dev/null
victim=
for i in $(seq 1 $CLIENTS); do [ "$(instance_of "${S[i]}")" = 1 ] && victim=$i && break; done
code=$(call "${S[victim]}" 99)
is "a session of the dead instance: the other answers 404 (no such session)" "$code" 404
s=$(session)
is "... the client initializes again through the front" "$(instance_of "$s")" 2
is "... and its calls work there" "$(call "$s" 100)" 200
survivors=0
for i in $(seq 1 $CLIENTS); do
    [ "$(instance_of "${S[i]}")" = 2 ] || continue
    [ "$(call "${S[i]}" $((i * 10 + 7)))" = 200 ] && survivors=$((survivors + 1))
done
is "the other instance's sessions carry on" "$survivors" "$on2"
done_testing
