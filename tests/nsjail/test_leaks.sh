#!/usr/bin/env bash
# 200 jails (two loops of 100 side by side, each jail with a veth whose host side is
# in a gateway netns of this test) leave nothing behind: no veth, no mount, no
# process, no zombie, no held host-id lock; and jails that run at the same time get
# distinct host ids. (Descriptor leaks in a long-running caller are checked by
# test_jail_api, which starts 200 jails from one process.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root

test_netns nsj-leak
gw=$NETNS
# Mount points of the host, but for network namespace files (other suites on this
# machine add and delete theirs at any time) and nsjail-lite's pool of them, which is
# kept on purpose (at most 4 per mount namespace, counted below; test_netns_pool.sh).
host_mounts() {
    awk '$5 !~ "^/run/netns/" && $5 !~ "^/run/nsjail-lite/netns(/|$)" {print $5}' \
        /proc/self/mountinfo | sort
}
host_mounts >"$TMP/mounts.before"

# --- concurrent jails get distinct host ids (uid_map shows the host side) ---
for i in 1 2 3; do
    "$NSJ" --host-ids "$HOST_IDS" -- /bin/sh -c 'cat /proc/self/uid_map; sleep 1' \
        >"$TMP/ids.$i" 2>&1 &
done
wait
ids=$(cat "$TMP"/ids.* | awk '{print $2}' | sort -u | tr '\n' ' ')
is "three concurrent jails got three distinct host uids" "$(wc -w <<<"$ids")" 3
for id in $ids; do
    check "host uid $id is in the configured range" \
        test "$id" -ge "$HOST_IDS_BASE" -a "$id" -lt $((HOST_IDS_BASE + 64))
done

# --- 200 runs ---
loop() { # N VETH_ARG
    local fails=0 i
    for ((i = 0; i < 100; i++)); do
        "$NSJ" --host-ids "$HOST_IDS" --net "$2" --veth-host-netns "/run/netns/$gw" \
            -- /bin/true </dev/null >/dev/null 2>>"$TMP/loop.err" || fails=$((fails + 1))
    done
    echo "$fails" >"$TMP/fails.$1"
}
veth_pair 3
loop 1 "$VETH_ARG" &
veth_pair 4
loop 2 "$VETH_ARG" &
start=$(date +%s)
wait
diag "200 jails in $(( $(date +%s) - start )) s"
is "all 200 jails exited 0" "$(cat "$TMP/fails.1") $(cat "$TMP/fails.2")" "0 0"
[ -s "$TMP/loop.err" ] && diag "errors: $(sort "$TMP/loop.err" | uniq -c | head -5)"

# The kernel deletes each host side when the jail's netns dies, asynchronously.
wait_for "the gateway's veths to go" 20 sh -c "! ip -n $gw -o link show | grep -q vnj"
is "no veth left in the gateway" "$(ip -n "$gw" -o link show | grep -c vnj)" 0
host_mounts >"$TMP/mounts.after"
is "no mount added to the host" "$(comm -13 "$TMP/mounts.before" "$TMP/mounts.after")" ""
pool=/run/nsjail-lite/netns/$(stat -Lc %i /proc/self/ns/mnt)
n=$(awk -v p="$pool/" 'index($5, p) == 1' /proc/self/mountinfo | wc -l)
# 4 ready, and at a given moment a few more being claimed or made (no leak: 200 jails)
check "  the network namespace pool stays bounded after 200 jails ($n mounts)" test "$n" -le 8
is "no zombie among our children" "$(ps --ppid $$ -o stat= | grep -c Z)" 0
in_range=$(ps -eo uid= | awk -v b="$HOST_IDS_BASE" '$1 >= b && $1 < b + 64' | wc -l)
is "no process runs as one of the jail host ids" "$in_range" 0
held=0 files=0
for f in /run/nsjail-lite/id-*.lock; do
    id=${f##*/id-}
    id=${id%.lock}
    [ "$id" -ge "$HOST_IDS_BASE" ] && [ "$id" -lt $((HOST_IDS_BASE + 64)) ] || continue
    files=$((files + 1))
    flock -n -x "$f" true || held=$((held + 1))
done
is "no host-id lock is still held" "$held" 0
check "the two loops used distinct ids ($files lock files)" test "$files" -ge 2
done_testing
