#!/usr/bin/env bash
# --net veth reachability: the spoke reaches the host side's address and nothing
# else; with --veth-host-netns the host side sits in a gateway netns, so the host's
# own INADDR_ANY listeners (sshd, redis, ...) are out of reach while a listener on the
# host-side address inside the gateway is reachable; the peer is created inside the
# jail's netns directly (never seen in the host side's netns); the host side goes
# away with the jail.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root

veth_pair 2
host_port=$(free_port)
gw_port=$(free_port)
# A host service listening on every address of the root netns.
start_server "$TMP/root.out" "$HOSTILE" serve-tcp 0.0.0.0 "$host_port"
test_netns nsj-gw
gw=$NETNS
start_server "$TMP/gw.out" ip netns exec "$gw" "$HOSTILE" serve-tcp 0.0.0.0 "$gw_port"

# connect_from_jail NSJAIL_OPTIONS... -- ADDR PORT: the outcome of a TCP connect from
# inside a jail.
connect_from_jail() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    "$NSJ" --host-ids "$HOST_IDS" --net "$VETH_ARG" "${opts[@]}" \
        --bind-ro "$HOSTILE:/hostile" -- /hostile connect "$1" "$2" 2>&1
}

# --- host side in the caller's (root) netns: the contract of DESIGN.md ---
is "root netns: the spoke reaches a host listener through the host-side address" \
    "$(connect_from_jail -- "$VETH_HOST" "$host_port")" "ok:hello"
is "root netns: the host's loopback is not the spoke's" \
    "$(connect_from_jail -- 127.0.0.1 "$host_port")" "errno:ECONNREFUSED"
is "root netns: no route to anything else (benchmark range)" \
    "$(connect_from_jail -- 198.18.0.1 "$host_port")" "errno:ENETUNREACH"
is "root netns: no route to the metadata address" \
    "$(connect_from_jail -- 169.254.169.254 80)" "errno:ENETUNREACH"
host_ip=$(ip -4 -o addr show scope global | awk '{sub(/\/.*/, "", $4); print $4; exit}')
if [ -n "$host_ip" ]; then
    is "root netns: no route to the host's own address $host_ip" \
        "$(connect_from_jail -- "$host_ip" "$host_port")" "errno:ENETUNREACH"
fi

# --- host side in a gateway netns ---
gwopt=(--veth-host-netns "/run/netns/$gw")
is "gateway: the spoke reaches the listener on the host-side address in the gateway" \
    "$(connect_from_jail "${gwopt[@]}" -- "$VETH_HOST" "$gw_port")" "ok:hello"
is "gateway: the root netns's INADDR_ANY listener is out of reach" \
    "$(connect_from_jail "${gwopt[@]}" -- "$VETH_HOST" "$host_port")" "errno:ECONNREFUSED"
is "gateway: still no route elsewhere" \
    "$(connect_from_jail "${gwopt[@]}" -- 198.18.0.1 "$gw_port")" "errno:ENETUNREACH"

# While a jail runs: its host side is in the gateway, not in the root netns, and the
# gateway never saw the peer (it was created in the jail's netns, not moved there).
ip -n "$gw" monitor link >"$TMP/monitor.out" 2>&1 &
mon=$!
at_exit "kill $mon"
sleep 0.2
"$NSJ" --host-ids "$HOST_IDS" --net "$VETH_ARG" "${gwopt[@]}" -- /bin/sleep 2 &
jail=$!
wait_for "the host side in the gateway" 5 sh -c "ip -n $gw -o addr show to $VETH_HOST | grep -q ."
is "gateway: the host side has its address in the gateway" \
    "$(ip -n "$gw" -o -4 addr show to "$VETH_HOST" | awk '{print $4}')" "$VETH_HOST/30"
is "gateway: the root netns has no such address" "$(ip -o addr show to "$VETH_HOST")" ""
like "gateway: the host side is up" "$(ip -n "$gw" -o link show | grep vnj)" 'state UP|LOWER_UP'
is "gateway: the host side has no IPv6 address (no link-local)" \
    "$(ip -n "$gw" -6 -o addr show | grep -c vnj)" 0
wait "$jail"
is "the jail ended normally" "$?" 0
wait_for "the host side to go" 10 sh -c "! ip -n $gw -o link show | grep -q vnj"
is "the host side disappeared with the jail" "$(ip -n "$gw" -o link show | grep -c vnj)" 0
kill "$mon" 2>/dev/null
wait "$mon" 2>/dev/null
like "the gateway saw the host side being created" "$(cat "$TMP/monitor.out")" 'vnj'
unlike "the gateway never saw the peer (eth0)" "$(cat "$TMP/monitor.out")" 'eth0'
done_testing
