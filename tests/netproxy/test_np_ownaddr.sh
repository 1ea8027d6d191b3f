#!/usr/bin/env bash
# netproxy and an address the host gains after it started (issue 27, finding 8): the
# proxy learned its own addresses once, so an allowed name resolving to an address
# added later (a VPN, a bridge) passed the guard as public and reached a local service.
# Checked now after connect (the kernel delivered it locally: its source is the
# destination). In a network namespace of the test's own (np_ownaddr.py).
. "$(dirname "$0")/../lib.sh"
require_root
test_netns npo
NETNS="itest-npo-$$"
ip -n "$NETNS" link set lo up
export TMP NETNS
/usr/bin/python3 "$ROOT/tests/netproxy/np_ownaddr.py"
