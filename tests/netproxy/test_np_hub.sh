#!/usr/bin/env bash
# netproxy in hub mode (np_hub.py): a test hub passes listening sockets over a
# SOCK_SEQPACKET control channel with SCM_RIGHTS (lib/ctl.h), one of them bound inside
# another network namespace; add/remove/ping, hostile control messages, per-spoke and
# global limits, removal with open tunnels, and exit when the hub goes away.
. "$(dirname "$0")/../lib.sh"
require_root
test_netns npx
export TMP NETNS="itest-npx-$$"
/usr/bin/python3 "$ROOT/tests/netproxy/np_hub.py"
