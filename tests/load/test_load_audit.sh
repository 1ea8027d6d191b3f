#!/usr/bin/env bash
# The correctness part of netproxy's load run (scripts/load/proxy, make load) at a size
# the suite can afford: a burst of 5,000 CONNECTs (128 at a time) beside 1,000 to a name
# outside the policy (32 at a time), then the audit log is counted against what the
# clients saw: one decision per request, allowed exactly for the 200s and refused with
# its reason for the 403s, one close record per tunnel sharing its decision's id, no
# malformed line, no id twice.
. "$(dirname "$0")/../lib.sh"
require_root
LOAD=$BIN/tests/netproxy/np_load
echo_port=$(free_port) src_port=$(free_port) px_port=$(free_port)
bg "$LOAD" serve "127.0.0.1:$echo_port" "127.0.0.1:$src_port"
wait_for "the echo upstream" 10 bash -c "echo >/dev/tcp/127.0.0.1/$echo_port"
AUDIT=$TMP/netproxy.jsonl
bg "$BIN/netproxy" --listen "127.0.0.1:$px_port" --allow load.example --ports "$echo_port" \
    --resolve "load.example:$echo_port:127.0.0.1" --resolve "denied.example:$echo_port:127.0.0.1" \
    --upstream-allow-cidr 127.0.0.1/32 --dns-server 127.0.0.1:9 --audit "$AUDIT" \
    --max-tunnels 2000 --max-tunnels-per-spoke 2000 --max-pending 1024 --max-pending-per-spoke 1024
# Wait for the listener without connecting to it: a probe would be a request of its own
# in the audit log, one the counts below do not expect.
wait_for "netproxy" 10 bash -c "ss -Hltn 'sport = :$px_port' | grep -q ."
via=(--via "127.0.0.1:$px_port" --addr "127.0.0.1:$echo_port")
"$LOAD" burst "${via[@]}" --target "denied.example:$echo_port" -n 1000 -c 32 >"$TMP/denied.json" &
den_pid=$!
"$LOAD" burst "${via[@]}" --target "load.example:$echo_port" -n 5000 -c 128 >"$TMP/ok.json"
is "the burst ran" "$?" 0
wait $den_pid
is "the refused burst ran" "$?" 0
ok_n=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ok"])' "$TMP/ok.json")
den_n=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["refused"].get("403", 0))' "$TMP/denied.json")
is "every allowed CONNECT got its tunnel" "$ok_n" 5000
is "every CONNECT outside the policy got 403" "$den_n" 1000
# The close records follow the tunnels' ends: wait for them, then count.
wait_for "the close records" 20 bash -c "[ \$(grep -c '\"action\":\"close\"' '$AUDIT') -ge 5000 ]"
/usr/bin/python3 - "$AUDIT" <<'PYEOF'
import json, sys
recs, bad = [], 0
data = open(sys.argv[1], "rb").read()
for line in data.split(b"\n")[:-1]:
    try:
        recs.append(json.loads(line))
    except ValueError:
        bad += 1
ev = lambda r: r.get("event", {})
dec = [r for r in recs if ev(r).get("action") == "connect"]
ok = [r for r in dec if ev(r).get("outcome") == "success"]
no = [r for r in dec if ev(r).get("outcome") == "failure"]
closes = [r for r in recs if ev(r).get("action") == "close"]
ok_ids = {ev(r).get("id") for r in ok}
ids = [ev(r).get("id") for r in dec]
def line(cond, desc, got=""):
    print(("ok - " if cond else "not ok - ") + desc + ("" if cond else ": got %s" % got))
line(data.endswith(b"\n") and bad == 0, "no malformed line in %d" % len(recs), bad)
line(len(dec) == 6000, "one decision record per request (6000)", len(dec))
line(len(ok) == 5000, "5000 allowed decisions, one per tunnel", len(ok))
line(len(no) == 1000 and all(ev(r).get("reason") == "domain-not-allowed" for r in no),
     "1000 refusals, each with its reason", len(no))
line(len(closes) == 5000 and all(ev(r).get("id") in ok_ids for r in closes),
     "one close record per tunnel, sharing its decision's id", len(closes))
line(len(set(ids)) == len(ids), "no event.id twice", len(ids) - len(set(ids)))
PYEOF
done_testing
