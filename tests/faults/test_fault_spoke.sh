#!/usr/bin/env bash
# Fault: a spoke killed with SIGKILL in the middle of a call, in every isolation mode.
# The hub must report the death to the caller promptly (an error naming the spoke
# layer, long before the call's deadline), audit the exit with its signal, keep
# serving, and start the app afresh on the next call (a new process answers).
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup

# spoke_pids: pids of running processes of this test's testspoke copy.
spoke_pids() { pids_by_exe "$BINDIR/testspoke"; }

# The call sleeps 30 s under a deadline of 120 s (this test's copy of alpha's manifest;
# its own call_s is 20 s): the kill must come long before the deadline whatever the
# machine's load, so that only the death can end the call.
/usr/bin/python3 - "$SPOKES/alpha.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["limits"]["call_s"] = 120
json.dump(m, open(sys.argv[1], "w"))
PY

modes="none process namespace"
if [ -n "${ISOLATE_VALGRIND:-}" ]; then
    # Under valgrind (tests/valgrind/run) the hub cannot load a spoke's seccomp filter.
    skip "a spoke killed mid-call in process and namespace modes" "the hub runs under valgrind"
    modes=none
fi
for mode in $modes; do
    hub_config "{\"isolation\": \"$mode\", \"call_timeout_ms\": 120000}"
    : >"$AUDIT"
    # Call 1 sleeps 30 s (the deadline is 120 s); it is killed after it started. Call 2
    # runs in the same hub afterwards.
    "$BIN/hub" call --config "$CONF" alpha.sleep '{"ms": 30000}' alpha.whoami '{}' \
        >"$TMP/out" 2>"$TMP/err" &
    hub_pid=$!
    at_exit "kill -9 $hub_pid"
    started() { grep -q '"spoke-start".*"success"\|"success".*"spoke-start"' "$AUDIT" && [ -n "$(spoke_pids)" ]; }
    if ! wait_for "$mode: the spoke mid-call" 20 started; then
        not_ok "$mode: the spoke started and took the call"
        kill -9 $hub_pid
        continue
    fi
    sleep 0.5 # ready: the tools/call is sent right after the start record
    victims=$(spoke_pids)
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    kill -9 $victims
    wait $hub_pid
    rc=$?
    took_ms=$((($(date +%s%N) - t0) / 1000000))
    is "$mode: hub call exits 3 (a call failed)" "$rc" 3
    first=$(sed -n 1p "$TMP/out")
    second=$(sed -n 2p "$TMP/out")
    is "$mode: the killed call fails at the spoke layer" \
        "$(echo "$first" | jget 'd["error"]["layer"]')" spoke
    like "$mode: ... and says the spoke died" "$(echo "$first" | jget 'd["error"]["message"]')" \
        "exit|signal|died|killed|ended"
    check "$mode: ... within 5 s of the kill, not at the deadline (${took_ms} ms)" \
        test "$took_ms" -lt 5000
    newpid=$(echo "$second" | jget 'd["result"]["structuredContent"]["pid"]')
    like "$mode: the next call is answered by a fresh spoke" "$newpid" '^[0-9]+$'
    is "$mode: the hub audited two starts of alpha" \
        "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success" and g(r,"isolate.app")=="alpha"')" 2
    check "$mode: the death is audited with its signal" \
        test "$(audit_count 'g(r,"event.action")=="spoke-exit" and g(r,"process.exit_code")==137')" -ge 1
    is "$mode: no process of the killed spoke is left" "$(leftover_procs)" 0
done
done_testing
