#!/usr/bin/env bash
# Two `hub serve --http` instances behind Debian's HAProxy with the shipped
# configuration (config/haproxy/isolategpt.cfg; only addresses, ports and timings
# changed, no TLS on loopback): sessions are spread over both instances and each stays
# on the one that created it (the stick table learns Mcp-Session-Id from initialize);
# a foreign Host is refused at the front; when one instance is killed, its clients'
# next request is answered 404 by the other (redispatch), and they initialize again
# there and go on. Then, with tokens, a user's apps live on one instance: two sessions of
# one user, through two front-end connections, land on the same instance (the hash of
# their token) and each reads the note the other wrote, though each instance keeps its
# own data; when that instance dies the user starts afresh on the other, and when it
# returns the user is back with their notes.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
command -v haproxy >/dev/null || { skip "$TEST_NAME" "haproxy is not installed (make deps)"; exit 0; }
serve_setup

# Both instances on the same port of two loopback addresses, as two machines would be:
# the Host the front rewrites to (localhost:PORT) is then right for both.
PORT=$(free_port)
start_instance() { # N ADDR [ARGS...]
    local n=$1 addr=$2
    shift 2
    bg "$BIN/hub" serve --http "$addr:$PORT" --config "$CONF" --audit "$TMP/audit$n.jsonl" \
        --standalone "$@" 2>>"$TMP/serve$n.err"
    eval "HUB$n=$BG_PID"
    wait_for "instance $n" 10 curl -s -o /dev/null "http://$addr:$PORT/"
}
start_instance 1 127.0.0.2
start_instance 2 127.0.0.3

HPORT=$(free_port)
front_config() { # the shipped configuration with this test's addresses
sed -e "s|^    bind :443 ssl crt .*|    bind 127.0.0.1:$HPORT|" \
    -e "s|mcp.example.com|127.0.0.1:$HPORT|" \
    -e "s|localhost:8750|localhost:$PORT|" \
    -e "s|10.0.0.11:8750 check inter 2s|127.0.0.2:$PORT check inter 300ms|" \
    -e "s|10.0.0.12:8750 check inter 2s|127.0.0.3:$PORT check inter 300ms|" \
    -e "s|^    log stdout.*|    log stderr format raw local0 notice|" -e "s|^    maxconn .*|    maxconn 2000|" \
    -e "s|^global$|global\n    stats socket $TMP/haproxy.sock|" \
    "$ROOT/config/haproxy/isolategpt.cfg" >"$TMP/haproxy.cfg"
}
front_config
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
    post "$INIT" "$@" >/dev/null
    local s
    s=$(grep -i '^mcp-session-id:' "$TMP/h" | cut -d' ' -f2 | tr -d '\r')
    post "$INITED" -H "Mcp-Session-Id: $s" "$@" >/dev/null
    echo "$s"
}
instance_of() { # SESSION: 1 or 2, from the instances' own audit logs
    grep -l "\"session\":\"$1\"" "$TMP"/audit[1-4].jsonl 2>/dev/null |
        sed -n 's|.*/audit\([1-4]\)\.jsonl|\1|p' | head -1
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

# By user: two instances with tokens, each its own data root (two machines), a front of
# the same shipped configuration.
kill "$HUB2"
wait "$HUB2" 2>/dev/null
"$BIN/hub" serve token add alice --tokens "$TMP/tokens" >"$TMP/alice"
"$BIN/hub" serve token add bob --tokens "$TMP/tokens" >"$TMP/bob"
start_instance 3 127.0.0.2 --tokens "$TMP/tokens" --data-root "$TMP/data3"
start_instance 4 127.0.0.3 --tokens "$TMP/tokens" --data-root "$TMP/data4"
both_up() { # the front's health checks see both instances up
    [ "$($PY -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"show stat\n")
data = b""
while True:
    c = s.recv(65536)
    if not c: break
    data += c
print(sum(1 for l in data.decode().splitlines() if l.startswith("hubs,hub") and ",UP," in l))' "$TMP/haproxy.sock")" = 2 ]
}
wait_for "both instances up at the front" 20 both_up
AUTH=(-H "Authorization: Bearer $(cat "$TMP/alice")")
tool() { # SESSION ID TOOL ARGS: alice's call through the front (a connection of its own)
    post "{\"jsonrpc\":\"2.0\",\"id\":$2,\"method\":\"tools/call\",\"params\":{\"name\":\"$3\",\"arguments\":$4}}" \
        -H "Mcp-Session-Id: $1" "${AUTH[@]}"
}
A1=$(session "${AUTH[@]}")
A2=$(session "${AUTH[@]}")
tool "$A1" 1 alpha__write '{"name":"note1","text":"from session one"}' >/dev/null
tool "$A2" 2 alpha__write '{"name":"note2","text":"from session two"}' >/dev/null
is "two sessions of one user land on one instance (the hash of their token)" \
    "$(instance_of "$A1")" "$(instance_of "$A2")"
tool "$A1" 3 alpha__read '{"path":"note2"}' >/dev/null
like "... session one reads the note session two wrote" "$(cat "$TMP/b")" 'from session two'
tool "$A2" 4 alpha__read '{"path":"note1"}' >/dev/null
like "... and session two the note of session one" "$(cat "$TMP/b")" 'from session one'
home=$(instance_of "$A1")
# Failover: alice's instance dies; she starts afresh on the other, without her notes.
eval "kill -9 \$HUB$home; wait \$HUB$home" 2>/dev/null
is "her instance dies: her session is unknown to the other (404)" "$(tool "$A1" 5 alpha__read '{"path":"note1"}')" 404
A3=$(session "${AUTH[@]}")
other=$(instance_of "$A3")
check "... she initializes again, on the other instance" test -n "$other" -a "$other" != "$home"
tool "$A3" 6 alpha__read '{"path":"note1"}' >/dev/null
like "... where her notes are not (they stay on the instance that is down)" "$(cat "$TMP/b")" '"ok":false'
# It returns: the hash brings her back, to her notes.
if [ "$home" = 3 ]; then start_instance 3 127.0.0.2 --tokens "$TMP/tokens" --data-root "$TMP/data3"
else start_instance 4 127.0.0.3 --tokens "$TMP/tokens" --data-root "$TMP/data4"; fi
wait_for "both instances up at the front again" 20 both_up
A4=$(session "${AUTH[@]}")
is "her instance returns: her next session is there again" "$(instance_of "$A4")" "$home"
tool "$A4" 7 alpha__read '{"path":"note1"}' >/dev/null
like "... with her notes" "$(cat "$TMP/b")" 'from session one'
done_testing
