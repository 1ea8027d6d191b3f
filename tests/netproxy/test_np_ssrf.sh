#!/usr/bin/env bash
# netproxy's address guard from the attacker's side (np_ssrf.py): allowed names that
# resolve to loopback, 0.0.0.0, ::1, private, link-local (metadata), CGNAT, ULA,
# NAT64/6to4/Teredo and mixed answers are refused before any dial: a listener on every
# local address of a test network namespace counts zero connections. The control run
# with --upstream-allow-cidr reaches the same listener. DNS rebinding: the first answer
# is dialled and the name is never asked twice.
. "$(dirname "$0")/../lib.sh"
require_root
test_netns npx
NETNS="itest-npx-$$"
ip -n "$NETNS" link add v0 type veth peer name v1
ip -n "$NETNS" link set v0 up
ip -n "$NETNS" link set v1 up
ip -n "$NETNS" addr add 198.18.0.1/24 dev v0
for a in 10.1.2.3/32 192.168.7.7/32 172.16.0.5/32 169.254.169.254/32 100.64.0.9/32; do
    ip -n "$NETNS" addr add "$a" dev lo
done
ip -n "$NETNS" addr add fd00::5/128 dev lo
export TMP NETNS
/usr/bin/python3 "$ROOT/tests/netproxy/np_ssrf.py"
