#!/usr/bin/env bash
# The correctness part of the hub's load run (scripts/load/hub, make load) at a size the
# suite can afford: 16 instances of a networked app started at once beside a warm one,
# then each keeps a call outstanding for a second. Every start and every call must
# succeed, every namespace spoke must have its veth in the hub's gateway namespace, and
# once they are closed and the hub freed, no process, namespace or veth may be left.
. "$(dirname "$0")/../lib.sh"
require_root
N=16
for mode in process namespace; do
    if ! "$BIN/tests/load/hub_load" --mode $mode --spokes $N --seconds 1 >"$TMP/$mode.json" \
        2>"$TMP/$mode.err"; then
        not_ok "$mode: hub_load ran: $(tail -3 "$TMP/$mode.err")"
        continue
    fi
    get() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d = d[k]
print(d)' "$TMP/$mode.json" "$1"; }
    is "$mode: $N spokes started at once, none failed" "$(get start_failures)" 0
    is "$mode: no call failed" "$(get failures)" 0
    check "$mode: calls were answered under load" test "$(get loaded.calls)" -gt "$N"
    if [ $mode = namespace ]; then
        is "$mode: each spoke had its veth in the gateway namespace" "$(get veths_in_gateway)" $((N + 1))
    fi
    is "$mode: no spoke left after closing them" "$(get left_after_close)" 0
    is "$mode: no process left after the hub" "$(get left_processes)" 0
    is "$mode: no gateway namespace left" "$(get left_netns)" 0
    is "$mode: no veth left" "$(get left_veths)" 0
done
done_testing
