#!/usr/bin/env bash
# netproxy: malformed, oversized and hostile requests, slowloris (np_badinput.py).
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
/usr/bin/python3 "$ROOT/tests/netproxy/np_badinput.py"
