#!/usr/bin/env bash
# The memory as operators run it: Debian's redis-server and redis-sentinel on loopback
# (a master, a replica, three sentinels, free ports, private directories), and two hub
# processes sharing it through memory.redis = sentinel://.../NAME.
#  - a grant made through one hub is honoured by the other at its next question, and a
#    revoke likewise (no cache between a hub and Redis);
#  - kill -9 of the master in the middle of the sessions: the hubs ask the sentinels
#    again, follow the failover, say so on stderr and in the audit, and go on; the
#    grant acknowledged (WAIT 1) before the kill is still there and honoured. The time
#    from the kill to the next answer is printed as a figure.
. "$(dirname "$0")/../lib.sh"
require_root
for b in redis-server redis-sentinel redis-cli; do
    command -v $b >/dev/null || { skip "$TEST_NAME" "$b is not installed (make deps)"; exit 0; }
done
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup

RDIR=/tmp/itest-sentinel-$$
NAME=itest$$
mkdir -p "$RDIR"
at_exit "rm -rf '$RDIR'"
# Every daemon is stopped by its pid file (ours only), whatever happens to the test.
stop_all() {
    [ -n "${KEEP_SENTINEL_LOGS:-}" ] && cp -r "$RDIR" "$KEEP_SENTINEL_LOGS"
    local f
    for f in "$RDIR"/*/pid; do
        [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
    done
    return 0
}
at_exit stop_all

MPORT=$(free_port)
RPORT=$(free_port)
while [ "$RPORT" = "$MPORT" ]; do RPORT=$(free_port); done
server() { # server NAME PORT [ARGS...]
    local n=$1 p=$2; shift 2
    mkdir -p "$RDIR/$n"
    redis-server --port "$p" --bind 127.0.0.1 --daemonize yes --dir "$RDIR/$n" \
        --pidfile "$RDIR/$n/pid" --logfile "$RDIR/$n/log" --save '' --appendonly no "$@"
}
server master "$MPORT"
server replica "$RPORT" --replicaof 127.0.0.1 "$MPORT"
SPORTS=()
for i in 1 2 3; do
    p=$(free_port)
    SPORTS+=("$p")
    mkdir -p "$RDIR/s$i"
    cat >"$RDIR/s$i/sentinel.conf" <<EOF
port $p
bind 127.0.0.1
daemonize yes
pidfile $RDIR/s$i/pid
logfile $RDIR/s$i/log
dir $RDIR/s$i
sentinel monitor $NAME 127.0.0.1 $MPORT 2
sentinel down-after-milliseconds $NAME 500
sentinel failover-timeout $NAME 4000
sentinel parallel-syncs $NAME 1
EOF
    redis-sentinel "$RDIR/s$i/sentinel.conf"
done
scli() { redis-cli -p "${SPORTS[0]}" "$@"; }
linked() { [ "$(redis-cli -p "$RPORT" info replication | tr -d '\r' | grep -c '^master_link_status:up')" = 1 ]; }
sentinels_ready() {
    local p
    for p in "${SPORTS[@]}"; do
        redis-cli -p "$p" sentinel master "$NAME" | tr -d '\r' |
            awk 'prev=="num-other-sentinels"{s=$0} prev=="num-slaves"{r=$0} {prev=$0} END{exit !(s==2 && r==1)}' ||
            return 1
    done
}
check "the replica follows the master" wait_for "the replica link" 10 linked
check "the three sentinels know each other and the replica" \
    wait_for "the sentinels to meet" 20 sentinels_ready

MEM="sentinel://127.0.0.1:${SPORTS[0]},127.0.0.1:${SPORTS[1]},127.0.0.1:${SPORTS[2]}/$NAME"
agent_config '{"memory": {"reconnect_ms": 20000, "wait_timeout_ms": 1500, "command_timeout_ms": 2000}}'
mcli() { redis-cli -p "$1" "${@:2}"; }
asked() { audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.tool')=='$1'"; }

FARE='plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")'
MAIL='plan(("mail__read", {})), text("one mail")'
# Hub A answers "always" to every question; hub B "no". Each reads its requests from a
# FIFO held open here, so both sessions last the whole test.
standin_start "[$FARE, $MAIL, $FARE]"
URL_A=$LLM_URL
standin_start "[$FARE, $FARE, $MAIL]"
URL_B=$LLM_URL
echo '{"default": "always"}' >"$TMP/always.json"
echo '{"default": "no"}' >"$TMP/no.json"
start_hub() { # start_hub A|B URL ANSWERS
    mkfifo "$TMP/$1.in"
    "$BIN/hub" --config "$CONF" --llm "$2" --json --memory "$MEM" --answers "$3" \
        <"$TMP/$1.in" >"$TMP/$1.out" 2>"$TMP/$1.err" &
    eval "PID_$1=$!"
    at_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
}
start_hub A "$URL_A" "$TMP/always.json"
exec 7<>"$TMP/A.in"
start_hub B "$URL_B" "$TMP/no.json"
exec 8<>"$TMP/B.in"
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# say HUB TEXT: sends one request and waits for its answer (one JSON line each);
# slash commands print no JSON line, so they are followed by a marker request.
answered() { [ "$(grep -c '^{' "$TMP/$1.out")" -ge "$2" ]; }
say() {
    local fd=7
    [ "$1" = B ] && fd=8
    local n
    n=$(grep -c '^{' "$TMP/$1.out")
    echo "$2" >&$fd
    wait_for "hub $1 to answer \"$2\"" 40 answered "$1" $((n + 1))
}
last() { grep '^{' "$TMP/$1.out" | tail -n1 | jget "$2"; }

# ---- grants and revokes across hubs ----
say A fare
is "hub A: asked, answered always, the step ran" "$(last A 'd["calls"][0]["outcome"]')" ok
is "hub A: the grant is on the master" \
    "$(mcli "$MPORT" hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always
is "hub A: ... and on the replica (WAIT 1 confirmed it)" \
    "$(mcli "$RPORT" hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always
say B fare
is "hub B: A's grant is honoured at its next question" "$(last B 'd["calls"][0]["outcome"]')" ok
is "hub B: ... without asking (one question in all)" "$(asked estimate)" 1
echo "/revoke fare" >&7
wait_for "hub A's revoke" 10 grep -q "grant removed" "$TMP/A.out"
like "hub A: /revoke fare removed the grant" "$(cat "$TMP/A.out")" "1 grant removed"
say B fare
is "hub B: after A's revoke it asks again (and its no is honoured)" \
    "$(last B 'd["calls"][0]["outcome"]')" denied
is "hub B: ... one more question" "$(asked estimate)" 2

say A mail
is "hub A: mail.read granted always" "$(last A 'd["calls"][0]["outcome"]')" ok
is "hub A: the mail grant was confirmed by the replica before the answer" \
    "$(mcli "$RPORT" hget "isolategpt:$AUSER:grants" 'exec|mail|read|*' | jget 'd["scope"]')" always
hist_before=$(mcli "$RPORT" llen "isolategpt:$AUSER:history")
check "the history is on the replica too ($hist_before entries)" test "$hist_before" -ge 8

# ---- kill -9 the master in the middle of both sessions ----
t0=$(date +%s%N)
kill -9 "$(cat "$RDIR/master/pid")"
say B mail
t1=$(date +%s%N)
recover_ms=$(( (t1 - t0) / 1000000 ))
is "after the failover hub B goes on: the grant acknowledged before the kill is honoured" \
    "$(last B 'd["calls"][0]["outcome"]')" ok
is "hub B: ... without a question" "$(asked read)" 1
diag "figure: kill -9 of the master -> hub B's next answer (failover followed): $recover_ms ms"
check "recovered within 20 s" test "$recover_ms" -lt 20000
new_master=$(scli sentinel get-master-addr-by-name "$NAME" | tail -n1 | tr -d '\r')
is "the sentinels promoted the replica" "$new_master" "$RPORT"
say A fare
is "hub A goes on too: a new grant after the failover" "$(last A 'd["calls"][0]["outcome"]')" ok
is "hub A: ... stored on the new master" \
    "$(mcli "$RPORT" hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always
is "no acknowledged grant lost: mail's is on the new master" \
    "$(mcli "$RPORT" hget "isolategpt:$AUSER:grants" 'exec|mail|read|*' | jget 'd["scope"]')" always
hist_after=$(mcli "$RPORT" llen "isolategpt:$AUSER:history")
check "no acknowledged history lost ($hist_before before, $hist_after after)" \
    test "$hist_after" -ge $((hist_before + 4))

# ---- what the hubs said ----
is "the audit names the failover, once per hub, with the new master" \
    "$(audit_count "g(r,'event.action')=='memory-failover' and g(r,'server.port')==$RPORT")" 2
check "the audit has the lost connection" \
    test "$(audit_count "g(r,'event.action')=='memory-connection-lost'")" -ge 2
check "the audit says writes go on without a replica to confirm them" \
    test "$(audit_count "g(r,'event.action')=='memory-replication-degraded'")" -ge 1
like "hub B's stderr says where the master went" "$(cat "$TMP/B.err")" \
    "master $NAME moved from 127.0.0.1:$MPORT to 127.0.0.1:$RPORT"

exec 7>&- 8>&-
wait_for "hub A to end" 10 sh -c "! kill -0 $PID_A 2>/dev/null"
wait_for "hub B to end" 10 sh -c "! kill -0 $PID_B 2>/dev/null"
done_testing
