#!/usr/bin/env bash
# Transparent egress from the attacker's side (np_egress.py), on the gateway the hub
# builds: a gateway namespace with the hub's own nftables tproxy rules
# (np_egress_rules, from hub/net/net_egress.c), two "spoke" namespaces on veths
# with a default route to it and resolv.conf naming it, and netproxy in a namespace of
# its own (the host's role) with its stand-in upstreams. A test hub passes each
# spoke's transparent listener and resolver socket as the real one does.
. "$(dirname "$0")/../lib.sh"
require_root
P=$$
NSH=itest-eh-$P GW=itest-egw-$P SA=itest-esa-$P SB=itest-esb-$P
for ns in "$NSH" "$GW" "$SA" "$SB"; do
    ip netns add "$ns" && at_exit "ip netns del $ns"
    ip -n "$ns" link set lo up
done
if ! ip netns exec "$GW" "$BIN/tests/netproxy/np_egress_rules" 3128 2>"$TMP/rules.err"; then
    skip "transparent egress" "this kernel refuses the gateway rules: $(head -1 "$TMP/rules.err")"
    exit 0
fi
ok "the hub's gateway rules install in a fresh namespace"
# The upstreams' side: addresses a tcp grant names (and one it does not).
ip -n "$NSH" addr add 10.77.0.1/32 dev lo
ip -n "$NSH" addr add 10.77.0.2/32 dev lo
# spoke NS, gateway-side veth name, gateway address, spoke address
veth() {
    ip link add "$2" type veth peer name eth0 netns "$1"
    ip link set "$2" netns "$GW"
    ip -n "$GW" addr add "$3/30" dev "$2"
    ip -n "$GW" link set "$2" up
    ip -n "$1" addr add "$4/30" dev eth0
    ip -n "$1" link set eth0 up
    ip -n "$1" route add default via "$3"
    # `ip netns exec` binds /etc/netns/NS/* over /etc: the jail's resolv.conf.
    mkdir -p "/etc/netns/$1" && at_exit "rm -rf /etc/netns/$1"
    echo "nameserver $3" >"/etc/netns/$1/resolv.conf"
    # As nsjail-lite writes it: the hosts file first, then the resolver.
    echo "hosts: files dns" >"/etc/netns/$1/nsswitch.conf"
}
veth "$SA" "ega$P" 169.254.200.1 169.254.200.2
veth "$SB" "egb$P" 169.254.200.5 169.254.200.6
export TMP NSH GW SA SB
/usr/bin/python3 "$ROOT/tests/netproxy/np_egress.py"
