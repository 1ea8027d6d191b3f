#!/usr/bin/env bash
# Two `hub serve --http` instances behind Debian's HAProxy with the shipped
# configuration (config/haproxy/isolategpt.cfg; only addresses, ports, timings, the CA
# file and the front's plain bind changed). The test runs in a network namespace of its
# own (unshare: gone with the test) whose loopback also holds 10.200.0.11 and
# 10.200.0.12, the two "machines": each hub listens beyond loopback, with TLS and a
# tokens file as it must there, and the front reaches it with `ssl verify` against the
# test's CA. First the front's refusals (issue 27, finding 2 at the edge and the "also
# seen" items): no token, another path, a trickled body, a flood of connections from one
# address, each stopped before a hub sees it. Then sessions are spread over both
# instances and each stays on the one that created it (the stick table learns
# Mcp-Session-Id from initialize); a foreign Host is refused at the front; when one
# instance is killed, its clients' next request is answered 404 by the other
# (redispatch), and they initialize again there and go on. Then a user's apps live on
# one instance: two sessions of one user, through two front-end connections, land on the
# same instance (the hash of their token) and each reads the note the other wrote, though
# each instance keeps its own data; when that instance dies the user starts afresh on the
# other, and when it returns the user is back with their notes.
[ "$(id -u)" = 0 ] && [ -z "${HAPROXY_TEST_NETNS:-}" ] && command -v haproxy >/dev/null &&
    HAPROXY_TEST_NETNS=1 exec unshare --net -- "$0" "$@"
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
command -v haproxy >/dev/null || { skip "$TEST_NAME" "haproxy is not installed (make deps)"; exit 0; }
ip link set lo up
ip addr add 10.200.0.11/32 dev lo
ip addr add 10.200.0.12/32 dev lo
serve_setup
test_cert hub.isolategpt.test

# Both instances on the same port of their own addresses, as two machines would be.
PORT=$(free_port)
for u in $(seq 1 16); do "$BIN/hub" serve token add "u$u" --tokens "$TMP/tokens" >"$TMP/u$u"; done
"$BIN/hub" serve token add alice --tokens "$TMP/tokens" >"$TMP/alice"
ADDR1=10.200.0.11 ADDR2=10.200.0.12 ADDR3=10.200.0.11 ADDR4=10.200.0.12
start_instance() { # N [ARGS...]
    local n=$1 addr
    shift
    eval "addr=\$ADDR$n"
    bg "$BIN/hub" serve --http "$addr:$PORT" --config "$CONF" --audit "$TMP/audit$n.jsonl" \
        --tls-cert "$TMP/srv.pem" --tls-key "$TMP/srv.key" --tokens "$TMP/tokens" \
        --standalone "$@" 2>>"$TMP/serve$n.err"
    eval "HUB$n=$BG_PID"
    wait_for "instance $n" 10 curl -sk -o /dev/null "https://$addr:$PORT/"
}
start_instance 1
start_instance 2

HPORT=$(free_port)
# The shipped configuration with this test's addresses; the whole request within 3 s
# (10 s shipped), so that the trickled body's check is short.
sed -e "s|^    bind :443 ssl crt .*|    bind 127.0.0.1:$HPORT|" \
    -e "s|mcp.example.com|127.0.0.1:$HPORT|" \
    -e "s|localhost:8750|localhost:$PORT|" \
    -e "s|10.0.0.11:8750|10.200.0.11:$PORT|" -e "s|10.0.0.12:8750|10.200.0.12:$PORT|" \
    -e "s|/etc/haproxy/isolategpt-hubs-ca.pem|$TMP/ca.pem|" -e "s|check inter 2s|check inter 300ms|" \
    -e "s|^    timeout http-request 10s|    timeout http-request 3s|" \
    -e "s|^    log stdout.*|    log stderr format raw local0 notice|" -e "s|^    maxconn 20000|    maxconn 2000|" \
    -e "s|^global$|global\n    stats socket $TMP/haproxy.sock|" \
    "$ROOT/config/haproxy/isolategpt.cfg" >"$TMP/haproxy.cfg"
check "haproxy accepts the configuration (-c)" haproxy -c -q -f "$TMP/haproxy.cfg"
bg haproxy -db -f "$TMP/haproxy.cfg"
FRONT=http://127.0.0.1:$HPORT/mcp
wait_for "haproxy" 10 curl -s -o /dev/null "$FRONT"
stat_field() { # PROXY,SERVER FIELD: a field of haproxy's "show stat" line
    $PY -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"show stat\n")
data = b""
while True:
    c = s.recv(65536)
    if not c: break
    data += c
lines = data.decode().splitlines()
head = lines[0].lstrip("# ").split(",")
for l in lines[1:]:
    f = l.split(",")
    if ",".join(f[:2]) == sys.argv[2]: print(f[head.index(sys.argv[3])])' "$TMP/haproxy.sock" "$1" "$2"
}
both_up() { # the front's health checks see both instances up (over TLS)
    [ "$(stat_field hubs,hub1 status)" = UP ] && [ "$(stat_field hubs,hub2 status)" = UP ]
}
check "the front reaches both hubs over TLS, verified against the hubs' CA" wait_for "both up" 20 both_up

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
ACC=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
post() { # BODY [CURL ARGS...]: the status; headers in $TMP/h, body in $TMP/b
    local body=$1; shift
    curl -s -o "$TMP/b" -D "$TMP/h" -w '%{http_code}' "${ACC[@]}" "$@" --data-binary "$body" "$FRONT"
}
hub_records() { cat "$TMP"/audit[1-4].jsonl 2>/dev/null | wc -l; }

# ---- what the front stops before a hub sees it ----
before=$(hub_records)
is "no bearer token: 401 at the front" "$(post "$INIT")" 401
like "... in JSON that says how to send one" "$(cat "$TMP/b")" "Authorization: Bearer TOKEN"
is "... with WWW-Authenticate" "$(grep -ic '^www-authenticate: Bearer realm=' "$TMP/h")" 1
is "an OAuth discovery path: 404 at the front" \
    "$(curl -s -o "$TMP/b" -w '%{http_code}' "http://127.0.0.1:$HPORT/.well-known/oauth-authorization-server")" 404
like "... in JSON that names the static token" "$(cat "$TMP/b")" '"error":"not_found".*static bearer token'
head -c 4200000 /dev/zero | tr '\0' x >"$TMP/big"
anon=0 codes=
for i in 1 2 3 4 5 6 7 8; do
    # Without curl's "Expect: 100-continue": the body follows the head at once.
    code=$(curl -s -o /dev/null -w '%{http_code}' "${ACC[@]}" -H 'Expect:' --data-binary @"$TMP/big" "$FRONT")
    codes="$codes $code"
    # 000: the front answered 401 and closed while curl was still sending.
    case $code in 401 | 000) anon=$((anon + 1)) ;; esac
done
diag "anonymous bodies answered:$codes"
is "8 anonymous 4.2 MB bodies: each refused at the front (401, or cut after it)" "$anon" 8
# The front answers 413 and closes while curl may still be sending: on a busy host the
# reset can reach curl before it has read the answer (it then shows only the interim
# 100 or 000). Three tries at most; a hub never sees any (checked below).
codes=
for i in 1 2 3; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "${ACC[@]}" -H "Authorization: Bearer $(cat "$TMP/u1")" \
        --data-binary @"$TMP/big" "$FRONT")
    codes="$codes $code"
    [ "$code" = 413 ] && break
done
diag "a 4.2 MB body with a token answered:$codes"
is "... one with a token: 413 at the front (over 4 MiB)" "${codes##* }" 413
# A request with a token whose body trickles in (a byte every 0.4 s of 100 declared):
# the front holds it (http-buffer-request) and ends it at `timeout http-request`.
out=$($PY - "$HPORT" "$(cat "$TMP/u1")" <<'EOF2'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           "Content-Length: 100\r\n\r\n" % (sys.argv[1], sys.argv[2])).encode())
start = time.monotonic(); s.settimeout(0.4); got = b""
while time.monotonic() - start < 20:
    try:
        c = s.recv(4096)
        if not c: break
        got += c
    except socket.timeout:
        try: s.sendall(b"{")
        except OSError: break
    except OSError: break
print("%.1f %s" % (time.monotonic() - start, got.split(b"\r\n")[0].decode(errors="replace")))
EOF2
)
diag "trickled body: $out"
secs=${out%% *}
check "a trickled body is cut by the front within 8 s: ${secs}s" test "${secs%.*}" -lt 8
like "... with 408" "$out" ' 408'
is "none of these reached a hub (their audit logs: no new record)" "$(hub_records)" "$before"
# 70 idle connections from one address: the front takes 64 and refuses the rest at once.
$PY - "$HPORT" "$TMP/hold" <<'EOF2' &
import socket, sys, time, os
socks = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(70)]
open(sys.argv[2], "w").close()
time.sleep(2.5)
EOF2
HOLDER=$!
at_exit "kill $HOLDER"
wait_for "the holder's connections" 20 test -e "$TMP/hold"
wait_for "refusals" 10 test "$(stat_field mcp,FRONTEND dcon)" -ge 6
dcon=$(stat_field mcp,FRONTEND dcon)
check "70 connections at once from one address: at least 6 refused at the front: $dcon" test "$dcon" -ge 6
wait "$HOLDER"
is "... none reached a hub" "$(hub_records)" "$before"
refute "a hub's port does not speak plain HTTP (tokens travel only inside TLS)" \
    curl -sf -m 5 -o /dev/null -H "Authorization: Bearer $(cat "$TMP/u1")" "http://10.200.0.11:$PORT/mcp"

# ---- sessions spread, sticky, redispatched ----
is "a foreign Host is refused at the front" \
    "$(post "$INIT" -H 'Host: evil.example' -H "Authorization: Bearer $(cat "$TMP/u1")")" 403
declare -a S T
session() { # a new session through the front; prints its id
    post "$INIT" "$@" >/dev/null
    local s
    s=$(grep -i '^mcp-session-id:' "$TMP/h" | cut -d' ' -f2 | tr -d '\r')
    post "$INITED" -H "Mcp-Session-Id: $s" "$@" >/dev/null
    echo "$s"
}
instance_of() { # SESSION: 1 to 4, from the instances' own audit logs
    grep -l "\"session\":\"$1\"" "$TMP"/audit[1-4].jsonl 2>/dev/null |
        sed -n 's|.*/audit\([1-4]\)\.jsonl|\1|p' | head -1
}
call() { # CLIENT N: alpha__echo through the front, as that client
    post "{\"jsonrpc\":\"2.0\",\"id\":$2,\"method\":\"tools/call\",\"params\":{\"name\":\"alpha__echo\",\"arguments\":{\"text\":\"n$2\"}}}" \
        -H "Mcp-Session-Id: ${S[$1]}" -H "Authorization: Bearer ${T[$1]}"
}
# A client per user (the front balances by token): until both instances hold sessions.
CLIENTS=0 on1=0 on2=0 ids_ok=0
while [ $CLIENTS -lt 16 ] && { [ $on1 -lt 2 ] || [ $on2 -lt 2 ] || [ $CLIENTS -lt 8 ]; }; do
    CLIENTS=$((CLIENTS + 1))
    T[CLIENTS]=$(cat "$TMP/u$CLIENTS")
    S[CLIENTS]=$(session -H "Authorization: Bearer ${T[CLIENTS]}")
    [[ "${S[CLIENTS]}" =~ ^[0-9a-f]{32}$ ]] && ids_ok=$((ids_ok + 1))
    case "$(instance_of "${S[CLIENTS]}")" in 1) on1=$((on1 + 1)) ;; 2) on2=$((on2 + 1)) ;; esac
done
is "$CLIENTS sessions initialized through the front" "$ids_ok" $CLIENTS
is "the sessions are spread over both instances" "$((on1 > 0 && on2 > 0)):$((on1 + on2))" "1:$CLIENTS"
good=0
for i in $(seq 1 $CLIENTS); do
    for n in 1 2 3 4 5; do
        [ "$(call "$i" $((i * 10 + n)))" = 200 ] && grep -q "\"n$((i * 10 + n))\"" "$TMP/b" &&
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
code=$(call "$victim" 99)
is "a session of the dead instance: the other answers 404 (no such session)" "$code" 404
S[victim]=$(session -H "Authorization: Bearer ${T[victim]}")
is "... the client initializes again through the front" "$(instance_of "${S[victim]}")" 2
is "... and its calls work there" "$(call "$victim" 100)" 200
survivors=0
for i in $(seq 1 $CLIENTS); do
    [ "$i" = "$victim" ] && continue
    [ "$(instance_of "${S[i]}")" = 2 ] || continue
    [ "$(call "$i" $((i * 10 + 7)))" = 200 ] && survivors=$((survivors + 1))
done
is "the other instance's sessions carry on" "$survivors" "$on2"

# By user: two instances, each its own data root (two machines), a front of the same
# shipped configuration.
kill "$HUB2"
wait "$HUB2" 2>/dev/null
start_instance 3 --data-root "$TMP/data3"
start_instance 4 --data-root "$TMP/data4"
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
if [ "$home" = 3 ]; then start_instance 3 --data-root "$TMP/data3"
else start_instance 4 --data-root "$TMP/data4"; fi
wait_for "both instances up at the front again" 20 both_up
A4=$(session "${AUTH[@]}")
is "her instance returns: her next session is there again" "$(instance_of "$A4")" "$home"
tool "$A4" 7 alpha__read '{"path":"note1"}' >/dev/null
like "... with her notes" "$(cat "$TMP/b")" 'from session one'
done_testing
