#!/usr/bin/env bash
# Several hubs of one configuration on one host at once (issue 14, item 6): the host
# ids, veth /30s, gateway namespace names and proxy listeners come from host-wide pools,
# so four hubs with the same hub.json run their namespace spokes side by side. Also: a
# call that cannot get a host id fails with a non-zero exit, and a host id range that
# overlaps /etc/subuid or /etc/subgid is refused at start.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
# Ranges of this test only: host ids 5000000+ and a /27 of 169.254.96.0/22, exactly
# as many as the four hubs' spokes need together (12 stable ids, the upper half of
# host_id_count 24, one per user and app; 8 /30s): a hub that took another's id or /30
# would leave a third hub short.
HOST_ID_BASE=$((5000000 + ($$ % 4000) * 64))
_k=$(($$ % 32))
VETH_POOL=169.254.$((96 + _k / 8)).$(((_k % 8) * 32))/27
hub_setup
$PY - <<EOF
import json
for name in ("neta", "netb"):
    m = json.load(open("$SPOKES/alpha.json"))
    m["name"] = name
    m["network"] = {"allow": ["allowed.example"], "ports": [443]}
    json.dump(m, open("$SPOKES/%s.json" % name, "w"))
EOF
hub_config "{\"network\": {\"veth_pool\": \"$VETH_POOL\", \"gateway_netns\": \"$GW_NS\",
    \"proxy_port\": 3128, \"host_id_base\": $HOST_ID_BASE, \"host_id_count\": 24}}"
at_exit "for n in $GW_NS $GW_NS-2 $GW_NS-3 $GW_NS-4; do ip netns del \$n; done"

# ---- four hubs, one configuration, at once ----
UIDMAP='{"path":"/proc/self/uid_map"}'
pids=()
for i in 1 2 3 4; do
    hubc --user "u$i" --parallel alpha.sleep '{"ms":1500}' alpha.read "$UIDMAP" \
        neta.read "$UIDMAP" netb.read "$UIDMAP" neta.env '{"marker":"xxxx"}' \
        netb.env '{"marker":"xxxx"}' >"$TMP/out.$i" 2>"$TMP/err.$i" &
    pids+=($!)
    at_exit "kill -9 $!"
done
rcs=""
for p in "${pids[@]}"; do
    wait "$p"
    rcs="$rcs$? "
done
is "four hubs with the same configuration all succeed" "$rcs" "0 0 0 0 "
for i in 1 2 3 4; do
    [ -s "$TMP/err.$i" ] && diag "hub $i: $(head -c 600 "$TMP/err.$i")"
done
is "... every call of every hub answered (24 results, no error)" \
    "$(cat "$TMP"/out.* | jlines '"result" in d and not d["result"].get("isError")' | grep -c true)" 24
uids=$(cat "$TMP"/out.* | jlines 'd["result"]["structuredContent"]["text"].split()[1] if d["tool"].endswith(".read") else ""' | grep . | sort -u)
is "... twelve spokes ran as twelve distinct host ids" "$(echo "$uids" | wc -l)" 12
is "... all from the range's stable half" \
    "$(echo "$uids" | awk -v b="$HOST_ID_BASE" '$1 >= b + 12 && $1 < b + 24' | wc -l)" 12
proxies=$(cat "$TMP"/out.* | jlines '[e for e in d["result"]["structuredContent"]["environ"] if e.startswith("HTTPS_PROXY=")][0] if d["tool"].endswith(".env") else ""' | grep . | sort -u)
is "... eight networked spokes got eight distinct veth /30s (proxy addresses)" \
    "$(echo "$proxies" | wc -l)" 8
names=$(cat "$TMP"/err.* | grep -o "this hub's is $GW_NS-[0-9]*" | sort -u | wc -l)
is "... three hubs took the next gateway names of the pool ($GW_NS-2..4)" "$names" 3
left=0
for n in "$GW_NS" "$GW_NS-2" "$GW_NS-3" "$GW_NS-4"; do [ -e "/run/netns/$n" ] && left=$((left + 1)); done
is "... and every gateway namespace is gone with its hub" "$left" 0
is "... no spoke process is left" "$(leftover_procs)" 0
held=0
for id in $uids; do
    flock -n "/run/nsjail-lite/id-$id.lock" true || held=$((held + 1))
done
is "... no host id lock is left held" "$held" 0

# ---- no free host id: the call fails and hub call says so in its exit status ----
hub_config "{\"network\": {\"veth_pool\": \"$VETH_POOL\", \"gateway_netns\": \"$GW_NS\",
    \"proxy_port\": 3128, \"host_id_base\": $HOST_ID_BASE, \"host_id_count\": 1}}"
# The holder's spoke has the id once its start is on record (spoke-start, success). Not
# probed with flock: a probe that holds the lock at the moment the holder's jail tries
# it makes that jail, not the second, find every id in use (on a busy machine the
# probe's own lock is held long enough for that).
: >"$AUDIT"
"$BIN/hub" call --config "$CONF" --user holder --timeout 120000 alpha.sleep '{"ms":60000}' \
    >"$TMP/holder.out" 2>&1 &
holder=$!
at_exit "kill -9 $holder"
wait_for "the holder's spoke to take the only id" 60 audit_at_least 1 \
    'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success" and g(r,"isolate.user")=="holder"'
hubc --user second alpha.whoami '{}' >"$TMP/second.out" 2>"$TMP/second.err"
is "a hub whose only call got no host id exits 3" "$?" 3
like "... and says why" "$(cat "$TMP/second.err")" "all 1 host ids from $HOST_ID_BASE are in use"
# The holder's call was still running, unharmed by the second hub: it ends only now,
# interrupted (the hub ends on SIGTERM), rather than waiting out its minute.
kill -TERM "$holder"
wait "$holder"
like "... while the hub holding the id was still running its call (ended when interrupted)" \
    "$(cat "$TMP/holder.out")" "alpha.sleep failed \\[hub\\]: interrupted"
is "... and left no spoke process behind" "$(leftover_procs)" 0

# ---- a host id range that overlaps /etc/subuid or /etc/subgid is refused ----
printf 'root:100000:65536\nsomeone:%s:65536\n' "$((HOST_ID_BASE - 10))" >"$TMP/subuid"
printf 'someone:%s:65536\n' "$((HOST_ID_BASE + 100))" >"$TMP/subgid"
overlap() { # FILE_TO_BIND CMD...: runs CMD with FILE bound over /etc/sub{u,g}id
    local file=$1
    shift
    unshare -m --propagation private bash -c 'mount --bind "$1" "/etc/$(basename "$1")" && shift && exec "$@"' \
        _ "$file" "$@"
}
out=$(overlap "$TMP/subuid" "$BIN/hub" call --config "$CONF" alpha.whoami '{}' 2>&1)
is "hub: a range that overlaps /etc/subuid is refused at start (exit 2)" "$?" 2
like "... naming the file, the line and both ranges" "$out" \
    "host id range $HOST_ID_BASE-$HOST_ID_BASE overlaps /etc/subuid line 2 \\(someone: $((HOST_ID_BASE - 10))-"
out=$(overlap "$TMP/subgid" "$BIN/nsjail-lite" --host-ids "$((HOST_ID_BASE + 50)):100" -- /bin/true 2>&1)
is "nsjail-lite: a range that overlaps /etc/subgid is refused (exit 125)" "$?" 125
like "... naming the file" "$out" "overlaps /etc/subgid line 1"
out=$(overlap "$TMP/subgid" "$BIN/nsjail-lite" --host-ids "$HOST_ID_BASE:100" -- /bin/true 2>&1)
is "nsjail-lite: a range next to it runs (control)" "$?" 0
done_testing
