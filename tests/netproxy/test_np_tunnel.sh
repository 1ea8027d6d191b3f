#!/usr/bin/env bash
# netproxy: TLS end to end through the proxy, half-close, audit records field by field,
# metrics, privilege drop (tests/netproxy/np_tunnel.py).
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
/usr/bin/python3 "$ROOT/tests/netproxy/np_tunnel.py"
