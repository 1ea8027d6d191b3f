#!/usr/bin/env bash
# Fault: the hub itself killed with SIGKILL mid-session, in process and namespace modes,
# while a spoke is in the middle of a call and has forked children of its own (a fork
# bomb's, which carry no death signal), and another spoke has started a process that
# left its process group and session (a daemon's double fork). Then, checked from outside, one by one: no
# process the hub had started is left (spokes, their children, monitors, netproxy and
# its log writer), no process holds any of the spoke's namespaces, no veth is left, the
# spokes' host-id locks under /run/nsjail-lite are free again, no socket or pid file is
# left in the run directory. In namespace mode the gateway namespace, published under
# /run/netns, outlives its hub (a mount, which only its creator removes): it is left
# empty and the next hub removes it and starts. After the restart the "always" grant
# of the first session decides without a question, the planner sees the requests of the
# killed session (history from Redis), a spoke starts (in namespace mode: a new gateway,
# veth and netproxy), and a normal exit then leaves nothing at all.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/faults/faults_lib.sh"
fault_setup
redis_start
SOCK=${MEM#unix:}
at_exit "ip netns del $GW_NS" # only if a check below failed: the hub removes it
# Only if a check failed: whatever of this test's spoke binary still runs.
at_exit 'for p in $(spoke_pids); do kill -9 $p; done'
echo '{"default": "always"}' >"$TMP/always.json"
echo '{"default": "deny", "rules": [{"app": "alpha", "decision": "once"}]}' >"$TMP/deny.json"

# Not a zombie: a process that exited but was not reaped yet is gone for our purpose.
running() {
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}
still_running() {
    local p
    for p in "$@"; do running "$p" && echo "$p"; done
}
none_running() { [ -z "$(still_running "$@")" ]; }
spoke_pids() { pids_of_exe "$BINDIR/testspoke" && pids_of_exe "$BINDIR/escapespoke"; }
spoke_count() { spoke_pids | wc -l; }
# Processes that have one of the namespaces given (inode numbers), from one stat over
# every /proc/PID/ns/* link.
ns_holders() {
    [ $# -gt 0 ] || return 0
    stat -L -c '%n %i' /proc/[0-9]*/ns/* 2>/dev/null | awk -v ids=" $* " '
        index(ids, " " $2 " ") { split($1, a, "/"); if (!(a[3] in seen)) { seen[a[3]]; print a[3] } }'
}
no_ns_holders() { [ -z "$(ns_holders "$@")" ]; }
# The nsjail host-id locks of this test's range that someone still holds.
held_locks() {
    local n
    for ((n = HOST_ID_BASE; n < HOST_ID_BASE + 64; n++)); do
        [ -e "/run/nsjail-lite/id-$n.lock" ] || continue
        flock -n "/run/nsjail-lite/id-$n.lock" true || echo "/run/nsjail-lite/id-$n.lock"
    done
}
start_hub() { # ANSWERS OUT
    rm -f "$TMP/in"
    mkfifo "$TMP/in"
    "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory "$MEM" --answers "$1" --json \
        <"$TMP/in" >"$2" 2>>"$TMP/err" 3>&- &
    HUB_PID=$!
    at_exit "kill -9 $HUB_PID"
    exec 3>"$TMP/in"
}
lines_in() { [ "$(grep -c '"status"' "$1" 2>/dev/null)" -ge "$2" ]; }

FARE='plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")'
HANG='plan(("escape__detach", {}), ("hostile__forkbomb", {"max": 3}), ("hostile__silent", {}))'
for mode in ${FAULT_MODES:-process namespace}; do
    AUSER=user-$mode
    MODE=$mode
    fault_config '{"call_timeout_ms": 60000}'
    : >"$TMP/err"
    hist="isolategpt:$AUSER:history"

    # Session 1: an "always" grant and a first exchange, then a call that hangs in a
    # spoke that has forked; the hub is killed there.
    standin_start "[$FARE, $HANG]"
    start_hub "$TMP/always.json" "$TMP/out1"
    echo "fare please" >&3
    wait_for "$mode: the first answer" 30 lines_in "$TMP/out1" 1
    is "$mode: the first request ran" "$(sed -n 1p "$TMP/out1" | jget 'd["calls"][0]["outcome"]')" ok
    diag "$(date +%T) $mode: the hanging request"
    echo "hang please" >&3
    # escape and its detached process, hostile and its three children run, and the
    # silent call was sent.
    in_call() { [ "$(spoke_count)" -ge 6 ] && [ "$(standin_requests)" -ge 3 ]; }
    if ! wait_for "$mode: the spoke mid-call with children" 30 in_call; then
        not_ok "$mode: the hanging call is under way (spokes: $(spoke_count))"
        kill -9 $HUB_PID
        exec 3>&-
        continue
    fi
    sleep 0.5
    diag "$(date +%T) $mode: in the call"
    seen=$(descendants "$HUB_PID" | tr '\n' ' ')
    spokes=$(spoke_pids | tr '\n' ' ')
    proxy=$(for p in $seen; do
        [ "$(readlink "/proc/$p/exe")" = "$BIN/netproxy" ] &&
            [ "$(awk '{print $4}' "/proc/$p/stat")" = "$HUB_PID" ] && echo "$p"
    done)
    # The spokes' namespaces that are not the host's (none in process mode).
    host_ns=$(stat -L -c %i /proc/$$/ns/* | sort -u)
    # shellcheck disable=SC2086
    nsids=$(for p in $spokes; do echo /proc/$p/ns/*; done | xargs stat -L -c %i 2>/dev/null |
        sort -u | grep -vxF "$host_ns" | xargs)
    locks_before=$(held_locks | wc -l)
    diag "$mode: hub $HUB_PID; below it: $seen; spokes: $spokes; netproxy: ${proxy:-none}"
    if [ "$mode" = namespace ]; then
        like "namespace: the spokes have namespaces of their own" "$nsids" '[0-9]'
        like "namespace: netproxy runs" "$proxy" '^[0-9]+$'
        check "namespace: the gateway is published under /run/netns" test -e "/run/netns/$GW_NS"
        check "namespace: a spoke's veth is in the gateway namespace" \
            test "$(ip -n "$GW_NS" -o link show type veth | wc -l)" -ge 1
        check "namespace: the running spoke holds a host-id lock" test "$locks_before" -ge 1
        # A second hub with the same gateway name must not take a live hub's namespace
        # for a leftover: it takes the next name of the pool and runs its spoke there.
        gw_before=$(stat -L -c %i "/run/netns/$GW_NS")
        second=$(timeout 60 "$BIN/hub" call --config "$CONF" alpha.whoami '{}' 2>&1)
        like "namespace: a second hub with the same gateway name takes $GW_NS-2" "$second" \
            "in use by another hub: this hub's is $GW_NS-2"
        like "namespace: ... and its namespace spoke answers" "$second" '"structuredContent"'
        check "namespace: ... and removes $GW_NS-2 when it ends" test ! -e "/run/netns/$GW_NS-2"
        is "namespace: ... and the running hub's gateway is untouched" \
            "$(stat -L -c %i "/run/netns/$GW_NS")" "$gw_before"
    else
        is "process: the spokes share the host's namespaces" "$nsids" ""
    fi

    asked=$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.user')=='$AUSER' and g(r,'isolate.app')=='fare'")
    diag "$(date +%T) $mode: kill -9 of the hub"
    kill -9 "$HUB_PID"
    wait "$HUB_PID" 2>/dev/null
    exec 3>&-
    # shellcheck disable=SC2086
    if wait_for "$mode: what the hub started to end" 10 none_running $seen; then
        ok "$mode: every process below the killed hub ended (${seen})"
    else
        # shellcheck disable=SC2086
        not_ok "$mode: every process below the killed hub ended: left $(still_running $seen)"
    fi
    is "$mode: no process of the spokes' binaries is left (forked and detached too)" "$(spoke_count)" 0
    # shellcheck disable=SC2086
    is "$mode: no netproxy is left" "$(still_running $proxy)" ""
    # shellcheck disable=SC2086
    # The kernel ends the rest of a pid namespace after its init, asynchronously: give
    # a loaded machine a moment, then name any holder that is really left.
    # shellcheck disable=SC2086
    [ -n "$nsids" ] && wait_for "$mode: the spoke's namespaces released" 10 no_ns_holders $nsids
    # shellcheck disable=SC2086
    is "$mode: no process holds a namespace of the spoke" \
        "$([ -n "$nsids" ] && ns_holders $nsids | while read -r p; do
            echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
        done)" ""
    is "$mode: no veth of ours in the host namespace" "$(ip -o link show type veth | grep -c ": vft")" 0
    no_held_locks() { [ -z "$(held_locks)" ]; } # run anew by each poll of wait_for
    wait_for "$mode: the host-id locks to be free" 30 no_held_locks
    is "$mode: the spoke's host-id lock is free" "$(held_locks)" ""
    is "$mode: no socket or pid file left in the run directory" \
        "$(find "$RUN" \( -type s -o -name '*.pid' \) 2>/dev/null)" ""
    is "$mode: no mount of this test's directories on the host" "$(grep -c "$TMP" /proc/mounts)" 0
    if [ "$mode" = namespace ]; then
        gw_ino=$(stat -L -c %i "/run/netns/$GW_NS" 2>/dev/null)
        is "namespace: the published gateway is left holding no veth" \
            "$(ip -n "$GW_NS" -o link show type veth 2>/dev/null | wc -l)" 0
        is "namespace: ... and no process" "$([ -n "$gw_ino" ] && ns_holders "$gw_ino")" ""
    else
        is "process: nothing under /run/netns with our name" "$(ip netns list | grep -c "$GW_NS")" 0
    fi
    is "$mode: Redis has the history of the killed session (both requests)" \
        "$(redis-cli -s "$SOCK" lrange "$hist" 0 -1 | jlines 'd["role"] + "=" + d["text"]')" \
        "user=fare please assistant=23 USD user=hang please"

    # Session 2, after the restart: nothing may be asked (deny would refuse it).
    diag "$(date +%T) $mode: restart"
    standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"}), ("alpha__whoami", {})), text("23 USD")]'
    start_hub "$TMP/deny.json" "$TMP/out2"
    echo "fare again" >&3
    exec 3>&-
    if wait_for "$mode: the restarted hub to end" 30 none_running "$HUB_PID"; then
        wait "$HUB_PID"
        is "$mode: the restarted hub ends normally" "$?" 0
    else
        not_ok "$mode: the restarted hub ends normally"
    fi
    is "$mode: after the restart the step runs on the stored always grant" \
        "$(jget 'd["calls"][0]["outcome"]' <"$TMP/out2")" ok
    is "$mode: ... without a question" \
        "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.user')=='$AUSER' and g(r,'isolate.app')=='fare'")" "$asked"
    is "$mode: ... and a spoke$([ "$mode" = namespace ] && echo " with a veth") starts and answers" \
        "$(jget 'd["calls"][1]["outcome"]' <"$TMP/out2")" ok
    is "$mode: the planner is shown the killed session's requests" \
        "$(standin_requests '"- fare please" in b["messages"][1]["content"] and "- hang please" in b["messages"][1]["content"]')" 1
    if [ "$mode" = namespace ]; then
        like "namespace: the restarted hub said it removed the stale gateway" "$(cat "$TMP/err")" \
            "removing the gateway namespace /run/netns/$GW_NS"
    fi
    is "$mode: after the normal exit no namespace of ours is published" \
        "$(ip netns list | grep -c "$GW_NS")" 0
    is "$mode: ... and no spoke process is left" "$(spoke_count)" 0
done
done_testing
