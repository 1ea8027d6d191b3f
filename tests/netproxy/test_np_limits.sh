#!/usr/bin/env bash
# netproxy limits and timeouts (np_limits.py, run inside a test network namespace so
# that a connect can hang on an address nobody answers): per-spoke 429 and global 503
# with Retry-After, the pending-request limit, and the header, DNS, connect, idle and
# lifetime timeouts with short test values.
. "$(dirname "$0")/../lib.sh"
require_root
test_netns npx
NETNS="itest-npx-$$"
ip -n "$NETNS" link add v0 type veth peer name v1
ip -n "$NETNS" link set v0 up
ip -n "$NETNS" link set v1 up
ip -n "$NETNS" addr add 198.18.0.1/24 dev v0
# 198.18.0.9 "exists" on the link but never answers: a SYN to it is never acknowledged.
ip -n "$NETNS" neigh add 198.18.0.9 lladdr 02:00:00:00:00:09 dev v0
export TMP NETNS
ip netns exec "$NETNS" /usr/bin/python3 "$ROOT/tests/netproxy/np_limits.py"
